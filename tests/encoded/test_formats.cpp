// Block formats: layouts checked against blocks worked out by hand from each format's
// definition (docs/encoded.md), round-trip error bounds, views over foreign bytes, the
// registry with a user format, and the errors.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "ct/ct.hpp"
#include "encoded/helpers.hpp"
#include "support/reference.hpp"

using ct::index_t;

namespace {

using ct_test::bytes_of;
using ct_test::row_of;

}  // namespace

TEST_CASE("q8_0: a block by hand — scale max|x|/127 as float16, q rounded half away from zero", "[encoded]") {
  // max|x| = 127, so d = 1 (float16 0x3c00) and q = round(x): 2.5 -> 3, -2.5 -> -3, 0.5 -> 1.
  std::vector<float> x(32, 0.0f);
  const float head[] = {127.0f, -127.0f, 2.5f, -2.5f, 0.5f, -0.5f, 1.49f, -0.49f, 100.7f};
  std::copy(std::begin(head), std::end(head), x.begin());
  const auto e = ct::encode(row_of(x), ct::formats::q8_0());
  const std::vector<unsigned char> want_head = {0x00, 0x3c, 0x7f, 0x81, 0x03, 0xfd, 0x01, 0xff, 0x01, 0x00, 0x65};
  auto got = bytes_of(e);
  REQUIRE(got.size() == 34);
  CHECK(std::vector<unsigned char>(got.begin(), got.begin() + 11) == want_head);
  for (std::size_t j = 11; j < 34; ++j) CHECK(got[j] == 0);
  // A second block: x = (j - 16) / 4, max|x| = 4, d = 4/127 = 0.0314961 = 2^-5 * 1.007874, whose
  // 10-bit fraction rounds to 8/1024: float16 0x2808 = 0.031494140625. q = round(x * 127/4):
  // j = 0 -> -127, j = 1 -> round(-119.0625) = -119.
  std::vector<float> y(32);
  for (int j = 0; j < 32; ++j) y[static_cast<std::size_t>(j)] = static_cast<float>(j - 16) / 4.0f;
  const auto b = bytes_of(ct::encode(row_of(y), ct::formats::q8_0()));
  CHECK(b[0] == 0x08);
  CHECK(b[1] == 0x28);
  CHECK(static_cast<std::int8_t>(b[2]) == -127);
  CHECK(static_cast<std::int8_t>(b[3]) == -119);
  CHECK(static_cast<std::int8_t>(b[2 + 16]) == 0);
  CHECK(static_cast<std::int8_t>(b[2 + 18]) == 16);  // 0.5 * 31.75 = 15.875 -> 16
  // Decoding multiplies by the stored float16 scale: q * 0.031494140625.
  const auto d = ct::decode(ct::encode(row_of(y), ct::formats::q8_0()));
  CHECK(d(0, 0) == -127.0f * 0.031494140625f);
  CHECK(d(0, 18) == 16.0f * 0.031494140625f);
}

TEST_CASE("q4_0: a block by hand — d = (value of largest magnitude) / -8, nibbles low half then high half", "[encoded]") {
  // The largest magnitude is -8, so d = 1 (0x3c00) and q = min(15, trunc(x + 8.5)).
  std::vector<float> x(32, 0.0f);
  x[0] = -8.0f;   // q 0
  x[1] = 7.0f;    // q 15
  x[2] = 3.5f;    // q 12
  x[3] = -3.4f;   // q 5 (5.1)
  x[4] = 7.6f;    // 16.1 -> clamped to 15
  x[16] = 2.0f;   // q 10, high nibble of byte 0
  x[17] = -1.0f;  // q 7 (7.5 -> 7)
  const auto b = bytes_of(ct::encode(row_of(x), ct::formats::q4_0()));
  REQUIRE(b.size() == 18);
  CHECK(b[0] == 0x00);
  CHECK(b[1] == 0x3c);
  CHECK(b[2] == 0xa0);  // q[0] = 0 | q[16] = 10 << 4
  CHECK(b[3] == 0x7f);  // q[1] = 15 | q[17] = 7 << 4
  CHECK(b[4] == 0x8c);  // q[2] = 12 | q[18] = 8 (x = 0)
  CHECK(b[5] == 0x85);
  CHECK(b[6] == 0x8f);
  for (std::size_t j = 7; j < 18; ++j) CHECK(b[j] == 0x88);
  // A positive largest value: m = 4 gives d = -0.5 (0xb800): 4 -> q 0 -> 4, -4 -> 16.5 -> 15 -> -3.5.
  std::vector<float> y(32, 0.0f);
  y[0] = 4.0f;
  y[1] = -4.0f;
  const auto e = ct::encode(row_of(y), ct::formats::q4_0());
  const auto c = bytes_of(e);
  CHECK(c[0] == 0x00);
  CHECK(c[1] == 0xb8);
  CHECK((c[2] & 0x0f) == 0);
  CHECK((c[3] & 0x0f) == 15);
  const auto d = ct::decode(e);
  CHECK(d(0, 0) == 4.0f);
  CHECK(d(0, 1) == -3.5f);
  CHECK(d(0, 2) == -0.0f);  // (8 - 8) * -0.5
}

TEST_CASE("q8_0 and q4_0: a block too small for its scale encodes as zeros", "[encoded]") {
  // max|x| = 3.2e-39 (subnormal): d = max / 127 (or / -8) is far below float16's smallest
  // subnormal, and 1 / d overflows float; the quants are 0 (q8_0) and 8 (q4_0: the value 0),
  // the scale 0, and the block decodes to zeros.
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[static_cast<std::size_t>(j)] = (j % 2 ? -1.0f : 1.0f) * 1e-40f * static_cast<float>(j + 1);
  const auto q8 = bytes_of(ct::encode(row_of(x), ct::formats::q8_0()));
  for (std::size_t j = 0; j < 34; ++j) CHECK(q8[j] == 0);
  const auto q4 = bytes_of(ct::encode(row_of(x), ct::formats::q4_0()));
  CHECK((q4[0] | (q4[1] & 0x7f)) == 0);  // +-0
  for (std::size_t j = 2; j < 18; ++j) CHECK(q4[j] == 0x88);
  for (const auto& f : {ct::formats::q8_0(), ct::formats::q4_0()}) {
    const auto d = ct::decode(ct::encode(row_of(x), f));
    for (ct::index_t j = 0; j < 32; ++j) CHECK(d(0, j) == 0.0f);
  }
}

TEST_CASE("encoded blocks decode from hand-made bytes, through an unaligned view", "[encoded]") {
  // q8_0 block: d = 0.5 (float16 0x3800), q = 0, 1, -1, 127, -128, ...; q4_0 block: d = 2 (0x4000),
  // byte 0 = 0x3f: value 0 = (15 - 8) * 2 = 14, value 16 = (3 - 8) * 2 = -10.
  std::vector<unsigned char> buf(1 + 34 + 18, 0);
  unsigned char* q8 = buf.data() + 1;  // odd address: no alignment assumed
  q8[0] = 0x00;
  q8[1] = 0x38;
  const std::int8_t qs[] = {0, 1, -1, 127, -128};
  for (int j = 0; j < 5; ++j) q8[2 + j] = static_cast<unsigned char>(qs[j]);
  const auto v8 = ct::encoded_tensor::view(ct::formats::q8_0(), {1, 32}, q8, 34);
  CHECK_FALSE(v8.owns_bytes());
  CHECK(v8.data() == q8);
  const auto d8 = ct::decode(v8);
  const float want8[] = {0.0f, 0.5f, -0.5f, 63.5f, -64.0f};
  for (int j = 0; j < 5; ++j) CHECK(d8(0, j) == want8[j]);
  unsigned char* q4 = q8 + 34;
  q4[0] = 0x00;
  q4[1] = 0x40;
  q4[2] = 0x3f;
  for (int j = 1; j < 16; ++j) q4[2 + j] = 0x88;
  const auto d4 = ct::decode(ct::encoded_tensor::view(ct::formats::q4_0(), {1, 32}, q4, 18));
  CHECK(d4(0, 0) == 14.0f);
  CHECK(d4(0, 16) == -10.0f);
  CHECK(d4(0, 1) == 0.0f);
  // bf16 / f16 rows: little-endian 16-bit floats (1.0 = 0x3f80 / 0x3c00, -2 = 0xc000 / 0xc000).
  const unsigned char b16[] = {0x80, 0x3f, 0x00, 0xc0};
  const unsigned char h16[] = {0x00, 0x3c, 0x00, 0xc0};
  const auto db = ct::decode(ct::encoded_tensor::view(ct::formats::bf16(), {1, 2}, b16, 4));
  const auto dh = ct::decode(ct::encoded_tensor::view(ct::formats::f16(), {1, 2}, h16, 4));
  CHECK(db(0, 0) == 1.0f);
  CHECK(db(0, 1) == -2.0f);
  CHECK(dh(0, 0) == 1.0f);
  CHECK(dh(0, 1) == -2.0f);
}

TEST_CASE("encode -> decode stays within each format's documented bound", "[encoded]") {
  const index_t n = 37, k = 256;
  // Rows of different scales, a row of zeros, a row with one large outlier.
  auto x = ct::random_uniform<float>({n, k}, 5, -1.0f, 1.0f);
  for (index_t r = 0; r < n; ++r)
    for (index_t j = 0; j < k; ++j) x(r, j) = x(r, j) * std::ldexp(1.0f, static_cast<int>(r % 9) - 4);
  for (index_t j = 0; j < k; ++j) x(3, j) = 0.0f;
  x(4, 17) = 1000.0f;
  for (const char* name : {"q8_0", "q4_0", "bf16", "f16"}) {
    INFO(name);
    const ct::format f = ct::find_format(name);
    const auto e = ct::encode(x, f);
    CHECK(e.size_bytes() == static_cast<std::size_t>(n) * f.row_bytes(k));
    const auto y = ct::decode(e);
    const index_t blk = f.block_elements();
    int outside = 0;
    for (index_t r = 0; r < n; ++r)
      for (index_t b0 = 0; b0 < k; b0 += blk) {
        double amax = 0;
        for (index_t j = b0; j < b0 + blk; ++j) amax = std::max(amax, std::fabs(static_cast<double>(x(r, j))));
        for (index_t j = b0; j < b0 + blk; ++j) {
          const double v = x(r, j), err = std::fabs(static_cast<double>(y(r, j)) - v);
          double bound;  // docs/encoded.md, "Accuracy"
          if (f == ct::formats::q8_0()) bound = amax * (0.5 / 127 + 0x1p-11) * 1.0001;
          else if (f == ct::formats::q4_0()) bound = amax / 8 * (1 + 0x1p-8) * 1.0001;
          else if (f == ct::formats::bf16()) bound = std::fabs(v) * 0x1p-8;  // half an ulp of 8 bits
          else bound = std::fabs(v) * 0x1p-11 + 0x1p-25;                     // of 11 bits; subnormal spacing 2^-24
          outside += err > bound;
        }
      }
    CHECK(outside == 0);
    // Rows of zeros decode to zeros.
    for (index_t j = 0; j < k; ++j) CHECK(y(3, j) == 0.0f);
  }
}

TEST_CASE("encode reads any strided tensor and batched shapes; views check their size", "[encoded]") {
  auto x = ct::random_uniform<float>({64, 3 * 32}, 9, -2.0f, 2.0f);
  const auto xt = x.transpose().contiguous().transpose();  // the same values, column-major
  CHECK(bytes_of(ct::encode(xt, ct::formats::q4_0())) == bytes_of(ct::encode(x, ct::formats::q4_0())));
  const auto x3 = x.reshape({2, 32, 96});
  const auto e3 = ct::encode(x3, ct::formats::q8_0());
  CHECK(e3.rank() == 3);
  CHECK(e3.rows() == 64);
  CHECK(bytes_of(e3) == bytes_of(ct::encode(x, ct::formats::q8_0())));
  const auto bytes = bytes_of(e3);
  // The same bytes as a view decode the same; a wrong byte count names both sizes.
  const auto v = ct::encoded_tensor::view(ct::formats::q8_0(), {2, 32, 96}, bytes.data(), bytes.size());
  CHECK(ct_test::bitwise_equal(ct::decode(v), ct::decode(e3)));
  CHECK_THROWS_AS(ct::encoded_tensor::view(ct::formats::q8_0(), {2, 32, 96}, bytes.data(), bytes.size() - 1), ct::shape_error);
  CHECK_THROWS_WITH(ct::encoded_tensor::view(ct::formats::q8_0(), {64, 96}, bytes.data(), 100),
                    Catch::Contains("100 bytes given") && Catch::Contains("6528 bytes"));
  CHECK_THROWS_AS(ct::encoded_tensor::view(ct::formats::q8_0(), {96}, bytes.data(), 102), ct::shape_error);
  // Regression (fuzz/gguf_fuzz.cpp): rows that an index cannot count, in an empty tensor (K = 0,
  // no bytes) — the row count's product overflowed (undefined behaviour) before the check.
  CHECK_THROWS_WITH(ct::encoded_tensor::view(ct::formats::q8_0(), {ct::index_t{1} << 40, ct::index_t{1} << 40, 0}, bytes.data(), 0),
                    Catch::Contains("more rows than an index can count"));
}

TEST_CASE("encoded formats: clear errors before any work", "[encoded]") {
  auto x = ct::random_uniform<float>({4, 40}, 3, -1.0f, 1.0f);
  CHECK_THROWS_AS(ct::encode(x, ct::formats::q8_0()), ct::format_error);  // 40 is not a multiple of 32
  CHECK_THROWS_WITH(ct::encode(x, ct::formats::q4_0()), Catch::Contains("[4, 40]") && Catch::Contains("32-value blocks"));
  CHECK_THROWS_WITH(ct::find_format("q5_9"), Catch::Contains("q5_9") && Catch::Contains("q8_0, q4_0, bf16, f16"));
  CHECK_THROWS_AS(ct::encode(ct::random_uniform<float>({64}, 1, -1.0f, 1.0f), ct::formats::q8_0()), ct::shape_error);
  // NaN and infinity: scaled blocks refuse them (naming row and column); 16-bit rows keep them.
  auto y = ct::zeros<float>({3, 64});
  y(2, 37) = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_WITH(ct::encode(y, ct::formats::q8_0()), Catch::Contains("row 2") && Catch::Contains("column 37") && Catch::Contains("NaN"));
  y(2, 37) = -std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH(ct::encode(y, ct::formats::q4_0()), Catch::Contains("row 2") && Catch::Contains("infinity"));
  const auto h = ct::decode(ct::encode(y, ct::formats::f16()));
  CHECK(h(2, 37) == -std::numeric_limits<float>::infinity());
  y(1, 0) = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(ct::decode(ct::encode(y, ct::formats::bf16()))(1, 0)));
}

namespace {
// A user format: 4 values per 4-byte block, each value an int8 in steps of 1/16.
void encode_sixteenths(const float* x, unsigned char* b, index_t n) {
  for (index_t j = 0; j < n; ++j) b[j] = static_cast<unsigned char>(static_cast<std::int8_t>(std::lround(std::fmax(-8.0f, std::fmin(7.9375f, x[j])) * 16)));
}
void decode_sixteenths(const unsigned char* b, float* y, index_t n) {
  for (index_t j = 0; j < n; ++j) y[j] = static_cast<float>(static_cast<std::int8_t>(b[j])) / 16;
}
}  // namespace

TEST_CASE("a format registered at run time encodes and decodes like a built-in", "[encoded]") {
  static const ct::format f = ct::register_format({"test_sixteenths", 4, 4, &encode_sixteenths, &decode_sixteenths});
  CHECK(ct::find_format("test_sixteenths") == f);
  CHECK(f.row_bytes(12) == 12);
  const auto names = ct::format_names();
  CHECK(std::find(names.begin(), names.end(), "test_sixteenths") != names.end());
  const auto x = ct::from_vector<float>({0.5f, -0.25f, 1.0f / 16, 3.0f, 100.0f, -100.0f, 0.0f, 0.03f}).reshape({2, 4});
  const auto y = ct::decode(ct::encode(x, f));
  const float want[] = {0.5f, -0.25f, 0.0625f, 3.0f, 7.9375f, -8.0f, 0.0f, 0.0f};  // 0.03 * 16 = 0.48 -> 0
  for (index_t i = 0; i < 8; ++i) CHECK(y.data()[i] == want[i]);
  CHECK_THROWS_WITH(ct::register_format({"test_sixteenths", 4, 4, &encode_sixteenths, &decode_sixteenths}), Catch::Contains("exists already"));
  CHECK_THROWS_AS(ct::register_format({"test_bad", 0, 4, &encode_sixteenths, &decode_sixteenths}), ct::format_error);
  CHECK_THROWS_AS(ct::register_format({"test bad", 4, 4, &encode_sixteenths, &decode_sixteenths}), ct::format_error);
  CHECK_THROWS_AS(ct::register_format({"test_nofn", 4, 4, nullptr, &decode_sixteenths}), ct::format_error);
}

TEST_CASE("16-bit rows decode the same from even and odd addresses", "[encoded]") {
  auto x = ct::random_uniform<float>({3, 77}, 21, -3.0f, 3.0f);
  x(1, 5) = std::numeric_limits<float>::infinity();
  x(2, 9) = 1e-7f;  // a float16 subnormal
  for (const char* name : {"bf16", "f16"}) {
    INFO(name);
    const auto e = ct::encode(x, ct::find_format(name));
    std::vector<unsigned char> odd(e.size_bytes() + 1);
    std::memcpy(odd.data() + 1, e.data(), e.size_bytes());
    const auto v = ct::encoded_tensor::view(e.fmt(), e.shape(), odd.data() + 1, e.size_bytes());
    CHECK(ct_test::bitwise_equal(ct::decode(v), ct::decode(e)));
    for (index_t r = 0; r < 3; ++r)
      for (index_t j = 0; j < 77; ++j) {
        const float want = std::string(name) == "bf16" ? static_cast<float>(ct::bfloat16(x(r, j))) : static_cast<float>(ct::float16(x(r, j)));
        CHECK(ct_test::bitwise_equal(ct::decode(v).slice(0, r, r + 1).slice(1, j, j + 1), ct::full<float>({1, 1}, want)));
      }
  }
}
