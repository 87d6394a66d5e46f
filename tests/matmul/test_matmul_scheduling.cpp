// ct::matmul's kernels under an executor: the documented accumulation orders (docs/matmul.md),
// the FMA policy really being honoured, and the two backends agreeing. Matmul's scheduling
// promises (CONTRACT.md §3–§5: groups, one-group products, bitwise identical results under
// every executor, overlapping destinations) are in tests/contract/.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "matmul/helpers.hpp"
#include "matmul/reference.hpp"
#include "support/executors.hpp"

#if defined(__clang__)
// The oracles below spell out the separate policy; clang must not fuse them.
#pragma clang fp contract(off)
#endif

using ct::index_t;
using mm_test::operand;
using mm_test::same_bits;
using mm_test::all_settings;
using mm_test::describe;
using mm_test::product;
using mm_test::products;

namespace {

// ---- oracles for the documented accumulation orders (docs/matmul.md) ----

// Matrix and vector-matrix products: k in chunks of 128, each summed from 0 in k order
// (s = muladd(a_k, b_k, s)), the chunks' sums added in order (the first one assigned).
template <class T>
T chunked_dot(const ct::tensor<T>& x, const ct::tensor<T>& y, bool fused) {
  constexpr index_t chunk = 128;
  T c = 0;
  for (index_t q = 0; q < x.shape(0); q += chunk) {
    T s = 0;
    for (index_t p = q; p < std::min(x.shape(0), q + chunk); ++p) {
      if (fused) {
        s = std::fma(x(p), y(p), s);
      } else {
        volatile T prod = x(p) * y(p);  // rounded on its own: no contraction possible
        s = s + prod;
      }
    }
    c = q == 0 ? s : c + s;
  }
  return c;
}

// Matrix-vector products and dot: element k into lane k % L (L = 128 / sizeof(T)), lanes
// folded pairwise: lane l += lane l + w for w = L/2, …, 1.
template <class T>
T lane_dot(const ct::tensor<T>& x, const ct::tensor<T>& y, bool fused) {
  constexpr index_t L = 128 / sizeof(T);
  T lanes[L] = {};
  for (index_t p = 0; p < x.shape(0); ++p) {
    T& c = lanes[p % L];
    if (fused) {
      c = std::fma(x(p), y(p), c);
    } else {
      volatile T prod = x(p) * y(p);
      c = c + prod;
    }
  }
  for (index_t w = L / 2; w >= 1; w /= 2)
    for (index_t l = 0; l < w; ++l) lanes[l] = lanes[l] + lanes[l + w];
  return lanes[0];
}

}  // namespace

TEST_CASE("matmul scheduling: each backend follows the documented accumulation order exactly",
          "[matmul][scheduling]") {
  // Exact oracles, not tolerances: matrix and vector-matrix products sum k in chunks of 128
  // (k = 300: two whole chunks and a partial one), matrix-vector products and dot use the
  // fixed lanes. Both backends must match them
  // bitwise, which also shows the FMA policy reaches the kernels inside callbacks.
  auto a = operand<float>({33, 300}, 60), b = operand<float>({300, 40}, 61), x = operand<float>({300}, 62);
  auto ad = operand<double>({9, 300}, 63), bd = operand<double>({300, 7}, 64), xd = operand<double>({300}, 65);
  ct::executor_scope bind(ct_test::three_worker_executor());
  for (const ct::settings& s : all_settings) {
    ct::settings_scope scope(s);
    const bool fused = s.fma == ct::fma_policy::fused;
    INFO(describe(s));
    const auto c = ct::matmul(a, b), cv = ct::matmul(a, x), vc = ct::matmul(x, b);
    const auto cd = ct::matmul(ad, bd), cvd = ct::matmul(ad, xd);
    index_t wrong = 0;
    for (index_t i = 0; i < 33; ++i)
      for (index_t j = 0; j < 40; ++j) wrong += c(i, j) != chunked_dot(a.select(0, i), b.select(1, j), fused);
    for (index_t i = 0; i < 33; ++i) wrong += cv(i) != lane_dot(a.select(0, i), x, fused);
    for (index_t j = 0; j < 40; ++j) wrong += vc(j) != chunked_dot(x, b.select(1, j), fused);
    for (index_t i = 0; i < 9; ++i) {
      for (index_t j = 0; j < 7; ++j) wrong += cd(i, j) != chunked_dot(ad.select(0, i), bd.select(1, j), fused);
      wrong += cvd(i) != lane_dot(ad.select(0, i), xd, fused);
    }
    wrong += ct::dot(x, x) != lane_dot(x, x, fused);
    CHECK(wrong == 0);
  }
}

TEST_CASE("matmul scheduling: fused and separate multiply-add really differ", "[matmul][scheduling]") {
  // With 300-term sums of random values, one rounding versus two must show up somewhere;
  // if it did not, the policy would not be reaching the kernels.
  auto a = operand<float>({33, 300}, 70), b = operand<float>({300, 40}, 71), x = operand<float>({300}, 72);
  for (ct::backend be : {ct::backend::simd, ct::backend::scalar}) {
    ct::backend_scope use(be);
    ct::executor_scope bind(ct_test::three_worker_executor());
    ct::tensor<float> fused_c, fused_v, sep_c, sep_v;
    {
      ct::fma_scope f(ct::fma_policy::fused);
      fused_c = ct::matmul(a, b);
      fused_v = ct::matmul(a, x);
    }
    {
      ct::fma_scope f(ct::fma_policy::separate);
      sep_c = ct::matmul(a, b);
      sep_v = ct::matmul(a, x);
    }
    CHECK_FALSE(same_bits(fused_c, sep_c));
    CHECK_FALSE(same_bits(fused_v, sep_v));
  }
}

TEST_CASE("matmul scheduling: scalar and simd backends agree bitwise", "[matmul][scheduling]") {
  // A property of ct's kernels (docs/matmul.md), not of the contract: both backends use the
  // same orders, so only the FMA policy changes bits.
  for (const product<double>& p : products<double>()) {
    for (ct::fma_policy f : {ct::fma_policy::fused, ct::fma_policy::separate}) {
      ct::fma_scope fs(f);
      ct::tensor<double> simd, scalar;
      {
        ct::backend_scope b(ct::backend::simd);
        simd = p.run();
      }
      {
        ct::backend_scope b(ct::backend::scalar);
        scalar = p.run();
      }
      INFO(p.name);
      CHECK(same_bits(simd, scalar));
    }
  }
}

// The executor hint (range_callback::grain, docs/executor.md): a product whose packed B is past
// the tuning's gemm_b_block_bytes (half the L2) asks for ranges of four row blocks (MC rows),
// since a range streams all of B from L3 or memory once per row block it holds; a small one, and
// an encoded x·wᵀ whose weights stay in L2, ask for nothing; an encoded x·wᵀ with streaming
// weights asks for 64 vectors. Under a tuning with a 256 KiB L2, so that the 1 MiB and 256 KiB
// Bs below stream and a packed 64 KiB one (a transposed view: never read in place) does not.
TEST_CASE("matmul hands the executor a grain when every range would stream a large operand", "[matmul][scheduling]") {
  std::vector<index_t> grains;
  const ct::executor recording = [&](index_t count, ct::range_callback cb) {
    grains.push_back(cb.grain());
    cb(0, count);
  };
  ct::executor_scope scope(recording);
  ct::cache_sizes caches;
  caches.l1d = 32 << 10;
  caches.l2 = 256 << 10;
  caches.l3 = 8 << 20;
  ct::tuning_scope tuned(ct::tuning::for_caches(caches));
  // Four row blocks (MC rows each) of the blocking in force.
  const index_t mc = static_cast<index_t>(ct::gemm_blocking_for(ct::current_tuning()).mc);
  const index_t mc64 = static_cast<index_t>(ct::gemm_blocking_for(ct::current_tuning(), true).mc);
  const auto big = ct::random_uniform<float>({512, 512}, 1, -1.0f, 1.0f);  // 1 MiB: packed
  const auto small = ct::random_uniform<float>({64, 64}, 2, -1.0f, 1.0f);  // 16 KiB: read in place
  const auto middle = ct::random_uniform<float>({256, 256}, 13, -1.0f, 1.0f);  // 256 KiB: packed, streams
  const auto packed_small = ct::random_uniform<float>({128, 128}, 15, -1.0f, 1.0f).transpose();  // 64 KiB: packed, stays
  (void)ct::matmul(ct::random_uniform<float>({8, 512}, 3, -1.0f, 1.0f), big);
  (void)ct::matmul(ct::random_uniform<float>({8, 64}, 4, -1.0f, 1.0f), small);
  (void)ct::matmul(ct::random_uniform<float>({8, 256}, 14, -1.0f, 1.0f), middle);
  (void)ct::matmul(ct::random_uniform<float>({8, 128}, 16, -1.0f, 1.0f), packed_small);
  (void)ct::matmul(ct::random_uniform<double>({8, 512}, 5, -1.0, 1.0), ct::random_uniform<double>({512, 512}, 6, -1.0, 1.0));
  (void)ct::matmul(ct::random_uniform<ct::bfloat16>({8, 512}, 11), ct::random_uniform<ct::bfloat16>({512, 512}, 12));
  const auto wide = ct::encode(ct::random_uniform<float>({4096, 1024}, 7, -1.0f, 1.0f), ct::find_format("q8_0"));  // 4.25 MiB
  const auto narrow = ct::encode(ct::random_uniform<float>({64, 1024}, 8, -1.0f, 1.0f), ct::find_format("q8_0"));  // 68 KiB
  (void)ct::matmul(ct::random_uniform<float>({8, 1024}, 9, -1.0f, 1.0f), wide.transpose());
  (void)ct::matmul(ct::random_uniform<float>({8, 1024}, 10, -1.0f, 1.0f), narrow.transpose());
  const bool simd = ct::current_settings().backend == ct::backend::simd;
  REQUIRE(mc >= 12);
  CHECK(grains == std::vector<index_t>{simd ? 4 * mc : 1, 1, simd ? 4 * mc : 1, 1, simd ? 4 * mc64 : 1, simd ? 4 * mc : 1, 64, 1});
}
