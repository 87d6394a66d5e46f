// The K-quant formats q4_K and q6_K (ggml's 256-value super-blocks): hand-made super-blocks
// decoded through unaligned views and checked against values worked out by hand from the
// layouts (src/encoded/k_blocks.cpp, docs/encoded.md), ct's reference quantizer on blocks worked
// out by hand, the documented round-trip bounds, and the errors.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ct/ct.hpp"
#include "encoded/helpers.hpp"

using ct::index_t;

namespace {

using ct_test::bytes_of;
using ct_test::row_of;

unsigned char byte_of(int v) { return static_cast<unsigned char>(static_cast<std::int8_t>(v)); }

}  // namespace

TEST_CASE("q4_K and q6_K are registered with ggml's super-block sizes", "[encoded]") {
  const ct::format q4 = ct::find_format("q4_K"), q6 = ct::find_format("q6_K");
  CHECK(q4.block_elements() == 256);
  CHECK(q4.block_bytes() == 144);
  CHECK(q6.block_elements() == 256);
  CHECK(q6.block_bytes() == 210);
  CHECK(q4.row_bytes(512) == 288);
  CHECK(q6.row_bytes(768) == 630);
  const auto names = ct::format_names();
  CHECK(std::find(names.begin(), names.end(), "q4_K") != names.end());
  CHECK(std::find(names.begin(), names.end(), "q6_K") != names.end());
}

TEST_CASE("q4_K: hand-made super-blocks decode per ggml's layout, through an unaligned view", "[encoded]") {
  // Two super-blocks (288 bytes) at an odd address.
  std::vector<unsigned char> buf(1 + 288, 0);
  unsigned char* b = buf.data() + 1;
  // Super-block 0: d = 0.5 (float16 0x3800), dmin = 0.25 (0x3400), little-endian.
  b[0] = 0x00;
  b[1] = 0x38;
  b[2] = 0x00;
  b[3] = 0x34;
  // Scales sc = {1, 2, 3, 0, 37, 16, 0, 63} and mins m = {0, 4, 8, 0, 58, 0, 0, 17} in the 12
  // bytes at 4..15. Bytes 0-3 hold sc0..sc3 in their low 6 bits and, in their top 2 bits, the
  // high 2 bits of sc4..sc7; bytes 4-7 the same for the mins; bytes 8-11 the low 4 bits of
  // sc4..sc7 (low nibble) and m4..m7 (high nibble).
  //   sc4 = 37 = 0b10'0101: 5 in byte 8's low nibble, 0b10 on top of byte 0 -> byte 0 = 0x80 | 1
  //   sc5 = 16 = 0b01'0000: 0 in byte 9,               0b01 on top of byte 1 -> byte 1 = 0x40 | 2
  //   sc7 = 63 = 0b11'1111: 15 in byte 11,             0b11 on top of byte 3 -> byte 3 = 0xc0 | 0
  //   m4  = 58 = 0b11'1010: 10 in byte 8's high nibble, 0b11 on top of byte 4 -> byte 4 = 0xc0 | 0
  //   m7  = 17 = 0b01'0001: 1 in byte 11's high nibble, 0b01 on top of byte 7 -> byte 7 = 0x40 | 0
  const unsigned char packed[12] = {0x81, 0x42, 0x03, 0xc0, 0xc0, 0x04, 0x08, 0x40, 0xa5, 0x00, 0x00, 0x1f};
  std::copy(std::begin(packed), std::end(packed), b + 4);
  // Quants at 16..143: chunk c (values 64c..64c+63) is bytes 16 + 32c + l; the low nibble is value
  // 64c + l (sub-block 2c), the high nibble value 64c + 32 + l (sub-block 2c + 1).
  unsigned char* qs = b + 16;
  qs[0] = 0x3f;        // value 0: q 15 (sub-block 0);  value 32: q 3 (sub-block 1)
  qs[5] = 0x0a;        // value 5: q 10;                value 37: q 0
  qs[32 + 7] = 0x51;   // value 71: q 1 (sub-block 2);  value 103: q 5 (sub-block 3)
  qs[64 + 1] = 0xc7;   // value 129: q 7 (sub-block 4); value 161: q 12 (sub-block 5)
  qs[96 + 31] = 0xf2;  // value 223: q 2 (sub-block 6); value 255: q 15 (sub-block 7)
  // Super-block 1: d = 2 (0x4000), dmin = -1 (0xbc00), sc0 = 1, m0 = 2; byte 0 = 0x04.
  unsigned char* b1 = b + 144;
  b1[1] = 0x40;
  b1[3] = 0xbc;
  b1[4] = 0x01;
  b1[8] = 0x02;
  b1[16] = 0x04;

  const auto v = ct::encoded_tensor::view(ct::find_format("q4_K"), {1, 512}, b, 288);
  CHECK_FALSE(v.owns_bytes());
  const auto y = ct::decode(v);
  // value = (d * sc) * q - dmin * m
  CHECK(y(0, 0) == 7.5f);     // 0.5 * 1 * 15 - 0.25 * 0
  CHECK(y(0, 1) == 0.0f);     // q 0, m 0
  CHECK(y(0, 5) == 5.0f);     // 0.5 * 1 * 10
  CHECK(y(0, 32) == 2.0f);    // 0.5 * 2 * 3 - 0.25 * 4
  CHECK(y(0, 37) == -1.0f);   // 0 - 0.25 * 4
  CHECK(y(0, 64) == -2.0f);   // 0 - 0.25 * 8
  CHECK(y(0, 71) == -0.5f);   // 0.5 * 3 * 1 - 0.25 * 8
  CHECK(y(0, 103) == 0.0f);   // sc3 = m3 = 0
  CHECK(y(0, 128) == -14.5f); // 0 - 0.25 * 58 (m4: split bits)
  CHECK(y(0, 129) == 115.0f); // 0.5 * 37 * 7 - 0.25 * 58 = 129.5 - 14.5
  CHECK(y(0, 161) == 96.0f);  // 0.5 * 16 * 12 - 0 (sc5: only its high bits are set)
  CHECK(y(0, 160) == 0.0f);
  CHECK(y(0, 223) == 0.0f);     // sc6 = m6 = 0
  CHECK(y(0, 224) == -4.25f);   // 0 - 0.25 * 17
  CHECK(y(0, 255) == 468.25f);  // 0.5 * 63 * 15 - 0.25 * 17 = 472.5 - 4.25
  // Super-block 1 follows at byte 144: 2 * 1 * 4 - (-1) * 2 = 10; q 0 gives 2; sub-block 1 is 0.
  CHECK(y(0, 256) == 10.0f);
  CHECK(y(0, 257) == 2.0f);
  CHECK(y(0, 288) == 0.0f);
}

TEST_CASE("q6_K: a hand-made super-block decodes per ggml's layout, through an unaligned view", "[encoded]") {
  // ql at 0..127, qh at 128..191, int8 scales at 192..207, float16 d at 208..209. In half h
  // (values 128h..128h+127; ql bytes 64h.., qh bytes 32h..), value 128h + 32k + l takes its low
  // 4 bits from ql byte 32 * (k % 2) + l (low nibble for k = 0, 1; high nibble for k = 2, 3) and
  // its high 2 bits from bits 2k, 2k+1 of qh byte l; value v has scale scales[v / 16].
  std::vector<unsigned char> buf(1 + 210, 0);
  unsigned char* b = buf.data() + 1;  // odd address
  unsigned char* ql = b;
  unsigned char* qh = b + 128;
  unsigned char* sc = b + 192;
  b[208] = 0x00;
  b[209] = 0x34;  // d = 0.25
  sc[0] = byte_of(1);
  sc[2] = byte_of(-2);
  sc[4] = byte_of(-3);
  sc[5] = byte_of(3);
  sc[6] = byte_of(4);
  sc[8] = byte_of(5);
  sc[11] = byte_of(-1);
  sc[15] = byte_of(127);
  // Half 0.
  ql[0] = 0x2f;   // value 0: low 15; value 64: low 2
  qh[0] = 0x23;   // value 0: high 3 (bits 0-1); value 32: high 0; value 64: high 2 (bits 4-5)
  ql[33] = 0x05;  // value 33 (k 1, l 1): low 5
  qh[1] = 0x08;   // value 33: high 2 (bits 2-3)
  ql[19] = 0xc0;  // value 83 (k 2, l 19): low 12 in the high nibble
  qh[19] = 0x10;  // value 83: high 1 (bits 4-5)
  qh[2] = 0xc0;   // value 98 (k 3, l 2): high 3 (bits 6-7); its low bits (ql[34] >> 4) are 0
  // Half 1: ql from byte 64, qh from byte 32.
  ql[64] = 0x01;        // value 128: low 1
  qh[32] = 0x02;        // value 128: high 2
  ql[64 + 53] = 0x0a;   // value 181 = 128 + 32 + 21 (k 1, l 21): low 10
  qh[32 + 21] = 0x04;   // value 181: high 1 (bits 2-3)
  ql[64 + 63] = 0xf0;   // value 255 = 128 + 96 + 31 (k 3, l 31): low 15; value 191: low 0
  qh[32 + 31] = 0xc0;   // value 255: high 3 (bits 6-7); value 191: high 0

  const auto v = ct::encoded_tensor::view(ct::find_format("q6_K"), {1, 256}, b, 210);
  const auto y = ct::decode(v);
  // value = (d * scale) * (q - 32)
  CHECK(y(0, 0) == 7.75f);     // q 63: 0.25 * 1 * 31
  CHECK(y(0, 1) == -8.0f);     // q 0: 0.25 * 1 * -32
  CHECK(y(0, 19) == 0.0f);     // scale 1 is 0
  CHECK(y(0, 32) == 16.0f);    // q 0, scale -2: 0.25 * -2 * -32
  CHECK(y(0, 33) == -2.5f);    // q 0b10'0101 = 37: 0.25 * -2 * 5
  CHECK(y(0, 64) == -1.5f);    // q 0b10'0010 = 34, scale -3: 0.25 * -3 * 2
  CHECK(y(0, 83) == -3.0f);    // q 0b01'1100 = 28, scale 3: 0.25 * 3 * -4
  CHECK(y(0, 96) == -32.0f);   // q 0, scale 4
  CHECK(y(0, 98) == 16.0f);    // q 0b11'0000 = 48, scale 4: 0.25 * 4 * 16
  CHECK(y(0, 127) == 0.0f);    // scale 7 is 0
  CHECK(y(0, 128) == 1.25f);   // q 0b10'0001 = 33, scale 5: 0.25 * 5 * 1
  CHECK(y(0, 181) == 1.5f);    // q 0b01'1010 = 26, scale -1: 0.25 * -1 * -6
  CHECK(y(0, 191) == 8.0f);    // q 0, scale -1
  CHECK(y(0, 255) == 984.25f); // q 63, scale 127: 0.25 * 127 * 31
}

TEST_CASE("q4_K / q6_K: ct's reference quantizer on blocks worked out by hand", "[encoded]") {
  SECTION("q4_K") {
    // Sub-block 0 holds 945 and zeros, sub-block 1 holds 30 and 3, sub-block 2 holds -63 and zeros.
    // Mins: m_real = {0, 0, 63, 0...}, so dmin = 63 / 63 = 1 and m2 = 63. Tops t = max x + dmin*m
    // = {945, 30, 63, 0...}, so d = 945 / 945 = 1 and sc = ceil(t / 15) = {63, 2, 5 (4.2), 0...}.
    // q = round((x + dmin*m) / (d*sc)): 945 -> 15, 30 -> 15, 3 -> 1.5 -> 2, -63 -> 0, the zeros
    // of sub-block 2 -> 63 / 5 = 12.6 -> 13 (decoding to 65 - 63 = 2, within half a step).
    std::vector<float> x(256, 0.0f);
    x[0] = 945.0f;
    x[32] = 30.0f;
    x[33] = 3.0f;
    x[64] = -63.0f;
    const auto e = ct::encode(row_of(x), ct::find_format("q4_K"));
    const auto got = bytes_of(e);
    REQUIRE(got.size() == 144);
    std::vector<unsigned char> want(144, 0);
    want[1] = 0x3c;   // d = 1
    want[3] = 0x3c;   // dmin = 1
    want[4] = 63;     // sc0
    want[5] = 2;      // sc1
    want[6] = 5;      // sc2
    want[4 + 6] = 63; // m2
    want[16] = 0xff;  // values 0 and 32: q 15, 15
    want[17] = 0x20;  // values 1 and 33: q 0, 2
    for (int l = 1; l < 32; ++l) want[16 + 32 + static_cast<std::size_t>(l)] = 0x0d;  // values 65..95: q 13
    CHECK(got == want);
    const auto y = ct::decode(e);
    CHECK(y(0, 0) == 945.0f);
    CHECK(y(0, 33) == 4.0f);
    CHECK(y(0, 64) == -63.0f);
    CHECK(y(0, 65) == 2.0f);
    CHECK(y(0, 200) == 0.0f);
  }
  SECTION("q6_K") {
    // max|x| = 1968.5 = 0.5 * 127 * 31, so d = 0.5 (0x3800). Group 0: sc = ceil(1968.5 / 15.5) =
    // 127, step 63.5: 1968.5 -> q - 32 = 31, -100 -> round(-1.575) = -2. Group 1: max|x| = 3,
    // sc = ceil(3 / 15.5) = 1, step 0.5: 3 -> 6, -0.25 -> round(-0.5) = -1 (half away from zero).
    // A zero is q = 32 = 0b10'0000: low bits 0, high bits 2, so untouched qh bytes are 0xaa.
    std::vector<float> x(256, 0.0f);
    x[0] = 1968.5f;
    x[1] = -100.0f;
    x[16] = 3.0f;
    x[17] = -0.25f;
    const auto e = ct::encode(row_of(x), ct::find_format("q6_K"));
    const auto got = bytes_of(e);
    REQUIRE(got.size() == 210);
    std::vector<unsigned char> want(210, 0);
    for (int j = 128; j < 192; ++j) want[static_cast<std::size_t>(j)] = 0xaa;
    want[0] = 0x0f;        // value 0: q 63 = 0b11'1111
    want[128] = 0xab;
    want[1] = 0x0e;        // value 1: q 30 = 0b01'1110
    want[129] = 0xa9;
    want[16] = 0x06;       // value 16: q 38 = 0b10'0110 (qh stays 0xaa)
    want[17] = 0x0f;       // value 17: q 31 = 0b01'1111
    want[128 + 17] = 0xa9;
    want[192] = 127;
    want[193] = 1;
    want[209] = 0x38;
    CHECK(got == want);
    const auto y = ct::decode(e);
    CHECK(y(0, 0) == 1968.5f);
    CHECK(y(0, 1) == -127.0f);
    CHECK(y(0, 16) == 3.0f);
    CHECK(y(0, 17) == -0.5f);
    CHECK(y(0, 2) == 0.0f);
  }
  SECTION("a block of zeros") {
    const std::vector<float> z(256, 0.0f);
    const auto g4 = bytes_of(ct::encode(row_of(z), ct::find_format("q4_K")));
    CHECK(g4 == std::vector<unsigned char>(144, 0));
    const auto g6 = bytes_of(ct::encode(row_of(z), ct::find_format("q6_K")));
    for (std::size_t j = 0; j < 210; ++j) CHECK(g6[j] == (j >= 128 && j < 192 ? 0xaa : 0));
  }
}

TEST_CASE("q4_K / q6_K: encode -> decode stays within the documented bound", "[encoded]") {
  const index_t n = 40, k = 512;
  // Rows of different scales, a row of zeros, an outlier, rows of one sign, a constant row, and
  // a row whose sub-blocks differ in scale by up to 2^11.
  auto x = ct::random_uniform<float>({n, k}, 11, -1.0f, 1.0f);
  for (index_t r = 0; r < n; ++r)
    for (index_t j = 0; j < k; ++j) x(r, j) = x(r, j) * std::ldexp(1.0f, static_cast<int>(r % 9) - 4);
  for (index_t j = 0; j < k; ++j) {
    x(3, j) = 0.0f;
    x(5, j) = std::fabs(x(5, j)) + 0.5f;
    x(6, j) = -std::fabs(x(6, j)) - 2.0f;
    x(7, j) = -0.3f;
    x(8, j) = x(8, j) * std::ldexp(1.0f, -static_cast<int>((j / 16) % 12));
  }
  x(4, 17) = 1000.0f;
  x(9, 300) = -1000.0f;
  // The bounds (docs/encoded.md, "Accuracy"): every error is at most half a step d * sc / 2;
  // with scales rounded up and float16 rounding at most one unit (2^-10 relative, 2^-24
  // absolute for subnormals) above what the block needs, that is
  //   q4_K, sub-block j: (R_j + dmin) / 30 + d / 2, R_j = max x - min(0, min x),
  //         dmin <= M / 63 * (1 + 2^-10) + 2^-24, M = max over sub-blocks of max(0, -min x),
  //         d <= (R + dmin) / 945 * (1 + 2^-10) + 2^-24, R = max R_j;
  //   q6_K, group g of 16: A_g / 62 + d / 2, A_g = max|x| of the group,
  //         d <= A / 3937 * (1 + 2^-10) + 2^-24, A = max|x| of the super-block;
  // plus float rounding, at most 2^-20 * (max|x| + 64 * dmin).
  const double grow = 1 + 0x1p-10, sub = 0x1p-24, slack = 0x1p-20;
  for (const char* name : {"q4_K", "q6_K"}) {
    INFO(name);
    const ct::format f = ct::find_format(name);
    const bool q4 = f == ct::find_format("q4_K");
    const auto e = ct::encode(x, f);
    CHECK(e.size_bytes() == static_cast<std::size_t>(n) * f.row_bytes(k));
    const auto y = ct::decode(e);
    const index_t part = q4 ? 32 : 16;  // values per sub-block / group
    int outside = 0;
    double worst = 0;  // the largest err / bound seen
    for (index_t r = 0; r < n; ++r)
      for (index_t s0 = 0; s0 < k; s0 += 256) {
        double amax = 0, lo_max = 0, range_max = 0;
        for (index_t p0 = s0; p0 < s0 + 256; p0 += part) {
          double lo = 0, hi = x(r, p0);
          for (index_t j = p0; j < p0 + part; ++j) {
            lo = std::max(lo, -static_cast<double>(x(r, j)));
            hi = std::max(hi, static_cast<double>(x(r, j)));
            amax = std::max(amax, std::fabs(static_cast<double>(x(r, j))));
          }
          lo_max = std::max(lo_max, lo);
          range_max = std::max(range_max, hi + lo);
        }
        const double dmin = q4 ? lo_max / 63 * grow + sub : 0;
        const double d = q4 ? (range_max + dmin) / 945 * grow + sub : amax / 3937 * grow + sub;
        for (index_t p0 = s0; p0 < s0 + 256; p0 += part) {
          double lo = 0, hi = x(r, p0), a = 0;
          for (index_t j = p0; j < p0 + part; ++j) {
            lo = std::max(lo, -static_cast<double>(x(r, j)));
            hi = std::max(hi, static_cast<double>(x(r, j)));
            a = std::max(a, std::fabs(static_cast<double>(x(r, j))));
          }
          const double bound = (q4 ? (hi + lo + dmin) / 30 : a / 62) + d / 2 + slack * (amax + 64 * dmin);
          for (index_t j = p0; j < p0 + part; ++j) {
            const double err = std::fabs(static_cast<double>(y(r, j)) - static_cast<double>(x(r, j)));
            outside += err > bound;
            if (bound > 0) worst = std::max(worst, err / bound);
          }
        }
      }
    CHECK(outside == 0);
    // The bound is tight: some error reaches more than half of it (halving it fails this test:
    // about 9000 values of each format go outside, the worst at 1.99 times the halved bound).
    CHECK(worst > 0.5);
    for (index_t j = 0; j < k; ++j) {
      CHECK(y(3, j) == 0.0f);  // rows of zeros decode to zeros
      CHECK(std::fabs(y(7, j) + 0.3f) <= 0.3f / 62);
    }
  }
}

TEST_CASE("q4_K / q6_K: clear errors before any work", "[encoded]") {
  for (const char* name : {"q4_K", "q6_K"}) {
    INFO(name);
    const ct::format f = ct::find_format(name);
    // K must be a whole number of 256-value super-blocks.
    CHECK_THROWS_AS(ct::encode(ct::random_uniform<float>({2, 384}, 1, -1.0f, 1.0f), f), ct::format_error);
    CHECK_THROWS_WITH(ct::encode(ct::random_uniform<float>({2, 32}, 1, -1.0f, 1.0f), f),
                      Catch::Contains("[2, 32]") && Catch::Contains("256-value blocks"));
    const std::vector<unsigned char> bytes(f.row_bytes(256), 0);
    CHECK_THROWS_AS(ct::encoded_tensor::view(f, {1, 128}, bytes.data(), bytes.size()), ct::format_error);
    // NaN and infinity are refused, naming the format, the row and the column.
    auto y = ct::zeros<float>({3, 512});
    y(2, 300) = std::numeric_limits<float>::quiet_NaN();
    CHECK_THROWS_AS(ct::encode(y, f), ct::format_error);
    CHECK_THROWS_WITH(ct::encode(y, f), Catch::Contains(name) && Catch::Contains("row 2") && Catch::Contains("column 300") &&
                                            Catch::Contains("NaN"));
    y(2, 300) = 0.0f;
    y(1, 5) = std::numeric_limits<float>::infinity();
    CHECK_THROWS_WITH(ct::encode(y, f), Catch::Contains("row 1") && Catch::Contains("column 5") && Catch::Contains("infinity"));
  }
}
