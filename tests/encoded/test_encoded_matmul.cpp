// Products with encoded weights: both modes against double-precision references of the
// decoded weights within their documented bounds (docs/encoded.md, "Accuracy"), both operand
// orders, batches, bitwise determinism under every executor, and the errors.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "ct/asio.hpp"
#include "ct/ct.hpp"
#include "support/executor_zoo.hpp"
#include "support/reference.hpp"

using ct::index_t;

namespace {

// f() on the portable scalar backend under FMA policy p: the bits the simd kernels must give.
template <class F>
auto on_scalar(ct::fma_policy p, F&& f) {
  ct::settings_scope s({ct::backend::scalar, p});
  return f();
}

std::uint32_t bits_of(float v) {
  std::uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}

// The activation quantization error bound of one q8_0 block of x (as the format's round trip).
double block_error(const std::vector<double>& x, index_t b) {
  double amax = 0;
  for (index_t j = 32 * b; j < 32 * b + 32; ++j) amax = std::max(amax, std::fabs(x[static_cast<std::size_t>(j)]));
  return amax * (0.5 / 127 + 0x1p-11);
}

// Checks y[n] = w_n . x for the decoded weights wd [N, K] against the documented bounds.
// Returns how many elements fall outside.
int outside_bounds(const std::vector<double>& wd, index_t n, index_t k, const std::vector<double>& x,
                   const std::vector<double>& y, bool quantized) {
  int bad = 0;
  for (index_t i = 0; i < n; ++i) {
    double ref = 0, mag = 0, qerr = 0;
    for (index_t j = 0; j < k; ++j) {
      const double wv = wd[static_cast<std::size_t>(i * k + j)];
      ref += wv * x[static_cast<std::size_t>(j)];
      mag += std::fabs(wv * x[static_cast<std::size_t>(j)]);
      if (j % 32 == 0 && quantized) {
        double wabs = 0;
        for (index_t t = j; t < j + 32; ++t) wabs += std::fabs(wd[static_cast<std::size_t>(i * k + t)]);
        qerr += wabs * block_error(x, j / 32);
      }
    }
    const double bound = quantized ? qerr * (1 + 0x1p-10) + (static_cast<double>(k) / 32 + 2) * 0x1p-24 * (mag + qerr)
                                   : static_cast<double>(k) * 0x1p-24 * mag;
    bad += std::fabs(y[static_cast<std::size_t>(i)] - ref) > bound + 1e-30;
  }
  return bad;
}

}  // namespace

TEST_CASE("encoded matrix-vector products in both modes, within the documented bounds", "[encoded][matmul]") {
  const index_t n = 45, k = 512;
  auto wf = ct::random_uniform<float>({n, k}, 71, -1.0f, 1.0f);
  for (index_t j = 0; j < k; ++j) wf(3, j) = 0.0f;  // a zero row
  const auto x = ct::random_uniform<float>({k}, 72, -2.0f, 2.0f);
  const auto xv = ct_test::values(x);
  for (const char* name : {"q8_0", "q4_0", "bf16", "f16"}) {
    INFO(name);
    const auto w = ct::encode(wf, ct::find_format(name));
    const auto wd = ct_test::values(ct::decode(w));
    const auto yq = ct_test::values(ct::matmul(w, x));
    const auto ye = ct_test::values(ct::matmul(w, x, ct::encoded_mode::exact));
    const bool quantized = std::string(name) == "q8_0" || std::string(name) == "q4_0";
    CHECK(outside_bounds(wd, n, k, xv, yq, quantized) == 0);
    CHECK(outside_bounds(wd, n, k, xv, ye, false) == 0);
    // The bounds are not loose: a quarter of the quantized bound fails somewhere.
    if (quantized) {
      int fails = 0;
      for (index_t i = 0; i < n; ++i) {
        double ref = 0, qerr = 0;
        for (index_t j = 0; j < k; ++j) ref += wd[static_cast<std::size_t>(i * k + j)] * xv[static_cast<std::size_t>(j)];
        for (index_t b = 0; b < k / 32; ++b) {
          double wabs = 0;
          for (index_t t = 32 * b; t < 32 * b + 32; ++t) wabs += std::fabs(wd[static_cast<std::size_t>(i * k + t)]);
          qerr += wabs * block_error(xv, b);
        }
        fails += std::fabs(yq[static_cast<std::size_t>(i)] - ref) > qerr / 64;
      }
      CHECK(fails > 0);
    }
    CHECK(yq[3] == 0.0);
    CHECK(ye[3] == 0.0);
  }
}

TEST_CASE("encoded products: both operand orders, matrices and batches agree element by element", "[encoded][matmul]") {
  const index_t b = 2, n = 19, k = 96, m = 7;
  const auto wf = ct::random_uniform<float>({b, n, k}, 81, -1.0f, 1.0f);
  const auto xm = ct::random_uniform<float>({b, k, m}, 82, -1.0f, 1.0f);
  const auto xt = ct::eval(ct::cast<float>(xm.permute({0, 2, 1}))).contiguous();  // [b, m, k]
  for (const char* name : {"q8_0", "q4_0", "f16"})
    for (ct::encoded_mode mode : {ct::encoded_mode::quantized, ct::encoded_mode::exact}) {
      INFO(name << (mode == ct::encoded_mode::exact ? " exact" : " quantized"));
      const auto w = ct::encode(wf, ct::find_format(name));
      const auto y = ct::matmul(w, xm, mode);                // [b, n, m]
      const auto yt = ct::matmul(xt, w.transpose(), mode);   // [b, m, n]
      REQUIRE(y.shape() == ct::dims{b, n, m});
      REQUIRE(yt.shape() == ct::dims{b, m, n});
      int differ = 0;
      for (index_t bi = 0; bi < b; ++bi)
        for (index_t i = 0; i < n; ++i)
          for (index_t j = 0; j < m; ++j) {
            // the same element as a matrix-vector product of that batch's w and column j
            differ += bits_of(y(bi, i, j)) != bits_of(yt(bi, j, i));
          }
      CHECK(differ == 0);
      const auto w0 = ct::encoded_tensor::view(w.fmt(), {n, k}, w.row(n), static_cast<std::size_t>(n) * w.row_bytes());
      const auto col = ct::matmul(w0, xm.slice(0, 1, 2).reshape({k, m}).slice(1, 3, 4).reshape({k}), mode);  // batch 1, column 3
      for (index_t i = 0; i < n; ++i) CHECK(bits_of(col(i)) == bits_of(y(1, i, 3)));
      // A rank-2 w broadcasts over the activation's batch; a vector activation drops its axis.
      const auto yb = ct::matmul(w0, xm, mode);
      CHECK(yb.shape() == ct::dims{b, n, m});
      CHECK(ct::matmul(w, xm.slice(0, 0, 1).reshape({k, m}).slice(1, 0, 1).reshape({k}), mode).shape() == ct::dims{b, n});
    }
}

TEST_CASE("encoded products are bitwise identical under every executor", "[encoded][matmul][executor]") {
  const index_t n = 130, k = 256, m = 9;
  const auto wf = ct::random_uniform<float>({n, k}, 91, -1.0f, 1.0f);
  const auto x = ct::random_uniform<float>({k}, 92, -1.0f, 1.0f);
  const auto xs = ct::random_uniform<float>({m, k}, 93, -1.0f, 1.0f);
  for (const char* name : {"q8_0", "q4_0", "q4_K", "q6_K", "bf16"})
    for (ct::encoded_mode mode : {ct::encoded_mode::quantized, ct::encoded_mode::exact}) {
      INFO(name);
      const auto w = ct::encode(wf, ct::find_format(name));
      const auto y = ct::matmul(w, x, mode);
      const auto ym = ct::matmul(xs, w.transpose(), mode);
      const auto yn = ct::matmul(w, xs.transpose(), mode);
      ct_test::executor_zoo zoo;
      for (auto& [ename, exec] : zoo.all()) {
        INFO(ename);
        ct::executor_scope scope(exec);
        CHECK(ct_test::bitwise_equal(ct::matmul(w, x, mode), y));
        CHECK(ct_test::bitwise_equal(ct::matmul(xs, w.transpose(), mode), ym));
        CHECK(ct_test::bitwise_equal(ct::matmul(w, xs.transpose(), mode), yn));
      }
    }
}

TEST_CASE("encoded products: clear errors before any work, destination untouched", "[encoded][matmul]") {
  const auto w = ct::encode(ct::random_uniform<float>({8, 64}, 1, -1.0f, 1.0f), ct::formats::q8_0());
  auto out = ct::full<float>({8}, 5.0f);
  CHECK_THROWS_WITH(ct::matmul(w, ct::zeros<float>({63})), Catch::Contains("inner dimensions differ") && Catch::Contains("[8, 64]"));
  CHECK_THROWS_AS(ct::matmul(w, ct::zeros<float>({64}), ct::zeros<float>({9})), ct::shape_error);
  CHECK_THROWS_AS(ct::matmul(w, ct::zeros<float>({64}), ct::zeros<float>({1}).broadcast_to({8})), ct::shape_error);
  CHECK_THROWS_AS(ct::matmul(ct::zeros<float>({3, 2, 64}), ct::encode(ct::zeros<float>({2, 8, 64}), ct::formats::q4_0()).transpose()),
                  ct::shape_error);  // batch 3 against 2
  auto x = ct::zeros<float>({64});
  x(10) = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_WITH(ct::matmul(w, x, out), Catch::Contains("quantized mode") && Catch::Contains("NaN"));
  for (index_t i = 0; i < 8; ++i) CHECK(out(i) == 5.0f);
  // Exact mode propagates the NaN instead.
  CHECK(std::isnan(ct::matmul(w, x, ct::encoded_mode::exact)(0)));
  // A destination over the encoded bytes is refused; an activation overlapping it is copied first.
  std::vector<unsigned char> bytes(w.data(), w.data() + w.size_bytes());
  auto fake = ct::wrap(reinterpret_cast<float*>(bytes.data()), {8});
  const auto v = ct::encoded_tensor::view(w.fmt(), w.shape(), bytes.data(), bytes.size());
  CHECK_THROWS_WITH(ct::matmul(v, ct::zeros<float>({64}), fake), Catch::Contains("overlaps the encoded"));
  auto sq = ct::random_uniform<float>({64, 64}, 2, -1.0f, 1.0f);
  const auto w64 = ct::encode(ct::random_uniform<float>({64, 64}, 3, -1.0f, 1.0f), ct::formats::q4_0());
  const auto want = ct::matmul(w64, sq);
  ct::matmul(w64, sq, sq);
  CHECK(ct_test::bitwise_equal(sq, want));
}

TEST_CASE("quantized mode: the simd kernels give the portable kernels' bits, for any block bytes", "[encoded][matmul]") {
  // Foreign blocks: every int8 quant (-128 included), every nibble, random float16 scales
  // (subnormal ones too); 21 and 29 blocks per row (a group of 16 and a tail of 5; groups of 16
  // and 8 and a tail of 5: the AVX2 kernel's every path); the K formats' every 6-bit scale and
  // min, every int8 scale, 3, 4, 5, 11 and 16 super-blocks per row (the AVX-512 K kernels take
  // eight super-blocks at a time, q4_K in halves of four, and run a row's last float steps after
  // the next row's first batch: a part of a half, one half, a half and a part, a batch and a
  // part, and whole batches only).
  std::uint64_t state = 12345;
  const auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::uint32_t>(state >> 33);
  };
  const index_t n = 67;
  // 69 blocks: four whole groups of 16 and a tail (the AVX-512 kernel's pipelined loop; 67 rows
  // go there as two runs, a row of each taken together group by group, the second run a row
  // shorter, so the first run's last row goes alone); 32 and 45 blocks: the same loop without a
  // tail, and with a tail of 13 (more than one register of two rows' tails). 17 and 24 blocks:
  // tails of 1 and 8, which the AVX-512 kernel sums two rows at a time (67 rows: 33 pairs and a
  // last row alone).
  for (const auto& [name, row_blocks] : {std::pair<const char*, index_t>{"q8_0", 21}, {"q8_0", 29}, {"q8_0", 69}, {"q8_0", 17},
                                         {"q8_0", 24}, {"q8_0", 45}, {"q4_0", 32}, {"q4_0", 21}, {"q4_0", 29},
                                         {"q4_0", 69}, {"q4_0", 17}, {"q4_0", 24}, {"q4_K", 3}, {"q4_K", 4}, {"q4_K", 5},
                                         {"q4_K", 11}, {"q4_K", 16}, {"q6_K", 3}, {"q6_K", 11}, {"q6_K", 16}}) {
    INFO(name << ", " << row_blocks << " blocks per row");
    const ct::format f = ct::find_format(name);
    const index_t k = row_blocks * f.block_elements();
    // where the block's float16 scales are: d (and q4_K's dmin)
    const std::vector<std::size_t> scales = std::string(name) == "q6_K" ? std::vector<std::size_t>{208}
                                            : std::string(name) == "q4_K" ? std::vector<std::size_t>{0, 2}
                                                                          : std::vector<std::size_t>{0};
    std::vector<unsigned char> bytes(static_cast<std::size_t>(n) * f.row_bytes(k));
    for (auto& c : bytes) c = static_cast<unsigned char>(next());
    for (std::size_t b = 0; b < bytes.size(); b += static_cast<std::size_t>(f.block_bytes()))
      for (std::size_t at : scales) {
        const std::uint16_t scale = static_cast<std::uint16_t>(next() % 0x7800);  // finite, either sign below
        bytes[b + at] = static_cast<unsigned char>(scale & 0xff);
        bytes[b + at + 1] = static_cast<unsigned char>((scale >> 8) | (next() % 2 ? 0x80 : 0));
      }
    const auto w = ct::encoded_tensor::view(f, {n, k}, bytes.data(), bytes.size());
    auto x = ct::random_uniform<float>({k}, 7, -3.0f, 3.0f);
    // 11 activation columns: a multi-vector kernel's call of eight and three more.
    const auto xm = ct::random_uniform<float>({k, 11}, 8, -3.0f, 3.0f);
    // Activation blocks of 32 that the quantizers treat apart: all zeros (scale 0), and values
    // so small that the reciprocal of the scale overflows (quants 0).
    for (index_t j = 0; j < 32; ++j) {
      x(32 + j) = 0.0f;
      x(64 + j) = (j % 2 ? -1.0f : 1.0f) * 1e-40f * static_cast<float>(j + 1);
    }
    // A block (and, for the K formats, a super-block) whose largest magnitude is 127: the scale
    // is then exactly 1 and every other value lands exactly halfway between two quants, which
    // the quantizers must round away from zero alike.
    x(96) = 127.0f;
    for (index_t j = 1; j < 32; ++j) x(96 + j) = (j % 2 ? -1.0f : 1.0f) * (static_cast<float>(4 * j) + 0.5f);
    // Blocks of 32 whose float16 scale is subnormal (max |x| 1e-5 and 3e-8: d = max / 127 is
    // below 2^-14) and one whose scale is the largest float16 (max |x| 65504 * 127): the simd
    // quantizers round the scales by the CPU's conversion, the portable one by float16's.
    for (index_t j = 0; j < 32; ++j) {
      const float t = (j % 3 ? 1.0f : -1.0f) * (1.0f + static_cast<float>(j) / 7.0f) / 6.0f;
      x(128 + j) = 1e-5f * t;
      x(160 + j) = 3e-8f * t;
      x(192 + j) = 65504.0f * 127.0f * t;
    }
    x(192) = 65504.0f * 127.0f;
    // x·wᵀ with 19 activation vectors: the tile kernels where the CPU has them (from 16 vectors
    // run serially), 4 x 3 tiles and every remainder of rows (67 = 16 x 4 + 3) and vectors.
    auto xt = ct::random_uniform<float>({19, k}, 9, -3.0f, 3.0f);
    for (index_t j = 0; j < 32; ++j) xt(4, 32 + j) = 0.0f;
    for (ct::fma_policy p : {ct::fma_policy::fused, ct::fma_policy::separate}) {
      const auto ys = on_scalar(p, [&] { return ct::matmul(w, x); });
      const auto yms = on_scalar(p, [&] { return ct::matmul(w, xm); });
      const auto yts = on_scalar(p, [&] { return ct::matmul(xt, w.transpose()); });
      ct::settings_scope s({ct::backend::simd, p});
      CHECK(ct_test::bitwise_equal(ct::matmul(w, x), ys));
      CHECK(ct_test::bitwise_equal(ct::matmul(w, xm), yms));
      CHECK(ct_test::bitwise_equal(ct::matmul(xt, w.transpose()), yts));
    }
  }
}

TEST_CASE("quantized mode: prompt-sized x·wᵀ (the tile kernels) gives the portable kernels' bits", "[encoded][matmul][executor]") {
  // K = 4096 (eight groups of 16 blocks, no tail) and 4000 (a tail of 13 blocks): more vectors
  // than one chunk of the tile kernel (32 at K = 4096), rows in 4s and a remainder, a strided
  // destination, a batch of activations against one w; serially the callback lays out its row
  // blocks, under the executors the rows are laid out once and shared by callbacks of any size
  // (53 vectors: above the shared layout's threshold of 48).
  // Also the smallest cases: one weight row, K of one block (a single, partial group). And q4_K
  // and q6_K, whose multi-vector kernels take eight vectors at a time (53: six calls and a
  // remainder of five) in rows of 16 super-blocks, 11 (a batch of eight and a tail) and one.
  struct shape {
    const char* name;
    index_t n, k;
  };
  for (const auto& [name, n, k] : {shape{"q8_0", 7, 4096}, {"q8_0", 7, 4000}, {"q8_0", 1, 4000}, {"q8_0", 2, 32},
                                   {"q4_0", 7, 4096}, {"q4_0", 7, 4000}, {"q4_0", 1, 4000}, {"q4_0", 2, 32},
                                   {"q4_K", 7, 4096}, {"q4_K", 7, 2816}, {"q4_K", 2, 256}, {"q6_K", 7, 4096},
                                   {"q6_K", 7, 2816}, {"q6_K", 2, 256}}) {
      INFO(name << " N " << n << " K " << k);
      const auto w = ct::encode(ct::random_uniform<float>({n, k}, 21, -1.0f, 1.0f), ct::find_format(name));
      const auto x = ct::random_uniform<float>({53, k}, 22, -2.0f, 2.0f);
      for (ct::fma_policy p : {ct::fma_policy::fused, ct::fma_policy::separate}) {
        const auto want = on_scalar(p, [&] { return ct::matmul(x, w.transpose()); });
        ct::settings_scope s({ct::backend::simd, p});
        CHECK(ct_test::bitwise_equal(ct::matmul(x, w.transpose()), want));
        auto wide = ct::zeros<float>({n, 53});
        ct::matmul(x, w.transpose(), wide.transpose());
        CHECK(ct_test::bitwise_equal(wide.transpose(), want));
        auto x2 = ct::zeros<float>({2, 53, k});
        ct::eval(x + 0.0f, x2.slice(0, 0, 1).reshape({53, k}));
        ct::eval(x * -1.0f, x2.slice(0, 1, 2).reshape({53, k}));
        const auto want_neg = on_scalar(p, [&] { return ct::matmul(ct::eval(x * -1.0f), w.transpose()); });
        const auto batched = ct::matmul(x2, w.transpose());
        CHECK(ct_test::bitwise_equal(batched.slice(0, 0, 1).reshape({53, n}), want));
        CHECK(ct_test::bitwise_equal(batched.slice(0, 1, 2).reshape({53, n}), want_neg));
        ct_test::executor_zoo zoo;
        for (auto& [ename, exec] : zoo.all()) {
          INFO(ename);
          ct::executor_scope scope(exec);
          CHECK(ct_test::bitwise_equal(ct::matmul(x, w.transpose()), want));
          CHECK(ct_test::bitwise_equal(ct::matmul(x2, w.transpose()), batched));
        }
      }
    }
}

TEST_CASE("exact mode with bf16 / f16 rows widened inside the dot product: the decoded path's bits", "[encoded][matmul]") {
  // Foreign rows of random finite 16-bit floats (subnormals too), read from an odd address;
  // K of every tail length class (below, at and past the 32 virtual lanes), 23 rows (several
  // rows per kernel call and single ones). The scalar backend decodes each row and runs the
  // float dot product: the simd kernel must give its bits under both FMA policies, for a
  // vector, a matrix of activations, and a strided vector (which takes the decoding path).
  std::uint64_t state = 777;
  const auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::uint32_t>(state >> 33);
  };
  const index_t n = 23;
  for (const char* name : {"bf16", "f16"}) {
    const bool bf16 = std::string(name) == "bf16";
    for (index_t k : {1, 7, 31, 32, 33, 100, 1000}) {
      INFO(name << " K " << k);
      const ct::format f = ct::find_format(name);
      std::vector<unsigned char> bytes(static_cast<std::size_t>(n) * f.row_bytes(k) + 1);
      for (std::size_t i = 1; i + 1 < bytes.size(); i += 2) {
        std::uint16_t v = static_cast<std::uint16_t>(next());
        // keep it finite: an exponent below all ones, and |value| at most about 2^8
        const unsigned exp_bits = bf16 ? (v >> 7) & 0xff : (v >> 10) & 0x1f;
        if (bf16 && exp_bits > 134) v = static_cast<std::uint16_t>((v & 0x807f) | (134u << 7));
        if (!bf16 && exp_bits > 23) v = static_cast<std::uint16_t>((v & 0x83ff) | (23u << 10));
        bytes[i] = static_cast<unsigned char>(v & 0xff);
        bytes[i + 1] = static_cast<unsigned char>(v >> 8);
      }
      const auto w = ct::encoded_tensor::view(f, {n, k}, bytes.data() + 1, bytes.size() - 1);
      const auto x = ct::random_uniform<float>({k}, 7, -3.0f, 3.0f);
      const auto xm = ct::random_uniform<float>({k, 5}, 8, -3.0f, 3.0f);
      const auto x2 = ct::random_uniform<float>({2 * k}, 9, -3.0f, 3.0f).slice(0, 0, std::nullopt, 2);
      for (ct::fma_policy p : {ct::fma_policy::fused, ct::fma_policy::separate}) {
        INFO((p == ct::fma_policy::fused ? "fused" : "separate"));
        const auto ys = on_scalar(p, [&] { return ct::matmul(w, x, ct::encoded_mode::exact); });
        const auto yms = on_scalar(p, [&] { return ct::matmul(w, xm, ct::encoded_mode::exact); });
        const auto y2s = on_scalar(p, [&] { return ct::matmul(w, x2, ct::encoded_mode::exact); });
        ct::settings_scope s({ct::backend::simd, p});
        CHECK(ct_test::bitwise_equal(ct::matmul(w, x, ct::encoded_mode::exact), ys));
        CHECK(ct_test::bitwise_equal(ct::matmul(w, xm, ct::encoded_mode::exact), yms));
        CHECK(ct_test::bitwise_equal(ct::matmul(w, x2, ct::encoded_mode::exact), y2s));
        CHECK(ct_test::bitwise_equal(ct::matmul(w, x), ys));  // exact is these formats' only mode
      }
      // And the values, against the decoded weights in double precision.
      const auto wd = ct_test::values(ct::decode(w));
      CHECK(outside_bounds(wd, n, k, ct_test::values(x), ct_test::values(ct::matmul(w, x)), false) == 0);
    }
    // Products that underflow: every weight -1e-4, every activation 1e-44, so each product is
    // about -1e-48 and a fused multiply-add rounds every lane's sum to -0. The lanes past the end
    // of K must not add anything (0 * 0 would make them +0): the result is -0 under the fused
    // policy, +0 under the separate one (the rounded product -0 added to +0), as decoding gives.
    for (index_t k : {33, 45, 63}) {
      INFO(name << " underflow K " << k);
      const auto w = ct::encode(ct::full<float>({9, k}, -1e-4f), ct::find_format(name));
      const auto x = ct::full<float>({k}, 1e-44f);
      for (ct::fma_policy p : {ct::fma_policy::fused, ct::fma_policy::separate}) {
        const auto ys = on_scalar(p, [&] { return ct::matmul(w, x); });
        ct::settings_scope s({ct::backend::simd, p});
        const auto y = ct::matmul(w, x);
        CHECK(ct_test::bitwise_equal(y, ys));
        for (index_t i = 0; i < 9; ++i) CHECK(std::signbit(y(i)) == (p == ct::fma_policy::fused));
      }
    }
  }
}
