// src/matmul/matmul.cpp — the portable (scalar backend) matmul kernels, the integer
// kernels, and the dispatch between them and the SIMD kernels (matmul_simd.cpp,
// vector_simd.cpp).
//
// The scalar loops follow exactly the accumulation orders documented in
// src/matmul/kernels.hpp, so the two backends give bitwise equal results; the SIMD
// kernels are only faster.
#include <algorithm>
#include <type_traits>

#include "ct/core/tuning.hpp"
#include "src/kernels/convert.hpp"
#include "src/matmul/matmul_common.hpp"

#if defined(__clang__)
// Clang contracts a * b + c inside one expression by default; the separate policy must not.
#pragma clang fp contract(off)
#endif

namespace ct::detail::mm {

namespace {

template <class T>
constexpr bool is_float = std::is_floating_point_v<T>;

// Integers wrap like NumPy's fixed-width integers, without signed-overflow UB.
template <class T>
T int_muladd(T a, T b, T c) noexcept {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(c) + static_cast<U>(a) * static_cast<U>(b));
}

template <bool kFused, class T>
T step(T a, T b, T c) noexcept {
  if constexpr (is_float<T>) return muladd<kFused>(a, b, c);
  else return int_muladd(a, b, c);
}

// out[j] = sum_k x[k * xs] * b[k * brs + j * bcs] for j in [0, w) in kernels.hpp's order:
// floating point in chunks of gemm_k_chunk, each summed from 0 in acc and added to out (the
// first one assigned); integers in one chunk (wrapping sums do not depend on the order).
// acc: w elements of scratch; out receives each chunk's total in the element type, as the SIMD
// kernels' destination does. k outermost, so B is read along its rows. One row of a matrix
// product and a vector-matrix product alike.
template <bool kFused, class T>
void chunked_row(index_t k, const T* x, index_t xs, const T* b, index_t brs, index_t bcs, index_t w, T* acc, T* out,
                 index_t out_stride) {
  const index_t chunk = is_float<T> ? gemm_k_chunk : std::max<index_t>(k, 1);
  if (k == 0)
    for (index_t j = 0; j < w; ++j) out[j * out_stride] = T(0);
  for (index_t q = 0; q < k; q += chunk) {
    std::fill(acc, acc + w, T(0));
    for (index_t p = q; p < std::min(k, q + chunk); ++p) {
      const T xp = x[p * xs];
      const T* brow = b + p * brs;
      for (index_t j = 0; j < w; ++j) acc[j] = step<kFused>(xp, brow[j * bcs], acc[j]);
    }
    for (index_t j = 0; j < w; ++j) out[j * out_stride] = q == 0 ? acc[j] : out[j * out_stride] + acc[j];
  }
}

// C rows [r0, r1), each a chunked_row over B.
template <bool kFused, class T>
void gemm_rows_scalar(const gemm_args<T>& g, index_t r0, index_t r1) {
  scratch<T> acc(g.n);
  for (index_t i = r0; i < r1; ++i)
    chunked_row<kFused>(g.k, g.a + i * g.ars, g.acs, g.b, g.brs, g.bcs, g.n, acc.get(), g.c + i * g.crs, g.ccs);
}

// One dot product in the virtual-lane order (floating point) or plainly (integers, where
// the order cannot change the wrapped sum).
template <bool kFused, class T>
T dot_scalar(index_t k, const T* a, index_t as, const T* x, index_t xs) {
  if constexpr (is_float<T>) {
    T lanes[dot_lanes<T>] = {};
    for (index_t p = 0; p < k; ++p) {
      T& l = lanes[p % dot_lanes<T>];
      l = muladd<kFused>(a[p * as], x[p * xs], l);
    }
    return lane_tree(lanes);
  } else {
    T s = 0;
    for (index_t p = 0; p < k; ++p) s = int_muladd(a[p * as], x[p * xs], s);
    return s;
  }
}

template <bool kFused, class T>
void gevm_cols_scalar(index_t k, const T* x, index_t xs, const T* b, index_t brs, index_t bcs, T* y, index_t ys,
                      index_t j0, index_t j1) {
  const index_t w = j1 - j0;
  scratch<T> acc(w);
  chunked_row<kFused>(k, x, xs, b + j0 * bcs, brs, bcs, w, acc.get(), y + j0 * ys, ys);
}

bool use_simd(const settings& s) { return s.backend == backend::simd; }

}  // namespace

mm_budgets budgets_of(const settings& s) {
  const tuning& t = tuning_of(s);
  const auto bytes = [](std::size_t v) { return static_cast<index_t>(v); };
  return {bytes(t.gemm_a_panel_bytes), bytes(t.gemm_a_block_bytes), bytes(t.gemm_b_block_bytes),
          bytes(t.gemm_direct_b_bytes), bytes(t.gemv_prefetch_bytes)};
}

template <class T>
index_t gemm_packed_b_size(index_t k, index_t n, index_t brs, index_t bcs, const settings& s) {
  if (!use_simd(s)) return 0;
  if constexpr (std::is_same_v<T, float>) return simd_packed_b_size_f32(k, n, brs, bcs, budgets_of(s));
  else if constexpr (std::is_same_v<T, double>) return simd_packed_b_size_f64(k, n, brs, bcs, budgets_of(s));
  else return 0;
}

template <class T>
void gemm_pack_b(index_t k, index_t n, const T* b, index_t brs, index_t bcs, T* out, const settings& s, bool stream) {
  if (!use_simd(s)) return;
  const index_t rows_budget = budgets_of(s).b_block_bytes;
  if constexpr (std::is_same_v<T, float>) simd_pack_b_f32(k, n, b, brs, bcs, out, rows_budget, stream);
  else if constexpr (std::is_same_v<T, double>) simd_pack_b_f64(k, n, b, brs, bcs, out, rows_budget, stream);
}

void gemm_pack_b_widened(index_t k, index_t n, const std::uint16_t* b, bool bf16, index_t brs, index_t bcs, float* out,
                         const settings& s) {
  if (!use_simd(s)) return;
  simd_pack_b_widened_f32(k, n, b, bf16, brs, bcs, bf16 ? kernels::resolve_widen_bf16(s) : kernels::resolve_widen_f16(s), out);
}

template <class T>
void gemm_rows(const gemm_args<T>& g, const T* packed_b, index_t r0, index_t r1, const settings& s) {
  if (r0 >= r1 || g.n == 0) return;
  const bool fused = s.fma == fma_policy::fused;
  if constexpr (is_float<T>) {
    if (use_simd(s)) {
      bool done;
      if constexpr (std::is_same_v<T, float>) done = simd_gemm_rows_f32(g, packed_b, r0, r1, fused, budgets_of(s));
      else done = simd_gemm_rows_f64(g, packed_b, r0, r1, fused, budgets_of(s));
      if (done) return;
    }
  }
  if (fused) gemm_rows_scalar<true>(g, r0, r1);
  else gemm_rows_scalar<false>(g, r0, r1);
}

template <class T>
void gemv_rows(index_t k, const T* a, index_t ars, index_t acs, const T* x, index_t xs, T* y, index_t ys,
               index_t i0, index_t i1, const settings& s) {
  const bool fused = s.fma == fma_policy::fused;
  if constexpr (is_float<T>) {
    if (use_simd(s)) {
      bool done;
      if constexpr (std::is_same_v<T, float>) done = simd_gemv_rows_f32(k, a, ars, acs, x, xs, y, ys, i0, i1, fused, budgets_of(s));
      else done = simd_gemv_rows_f64(k, a, ars, acs, x, xs, y, ys, i0, i1, fused, budgets_of(s));
      if (done) return;
    }
  }
  for (index_t i = i0; i < i1; ++i)
    y[i * ys] = fused ? dot_scalar<true>(k, a + i * ars, acs, x, xs) : dot_scalar<false>(k, a + i * ars, acs, x, xs);
}

template <class T>
void gevm_cols(index_t k, const T* x, index_t xs, const T* b, index_t brs, index_t bcs, T* y, index_t ys,
               index_t j0, index_t j1, const settings& s) {
  if (j0 >= j1) return;
  const bool fused = s.fma == fma_policy::fused;
  if constexpr (is_float<T>) {
    if (use_simd(s)) {
      bool done;
      if constexpr (std::is_same_v<T, float>) done = simd_gevm_cols_f32(k, x, xs, b, brs, bcs, y, ys, j0, j1, fused);
      else done = simd_gevm_cols_f64(k, x, xs, b, brs, bcs, y, ys, j0, j1, fused);
      if (done) return;
    }
  }
  if (fused) gevm_cols_scalar<true>(k, x, xs, b, brs, bcs, y, ys, j0, j1);
  else gevm_cols_scalar<false>(k, x, xs, b, brs, bcs, y, ys, j0, j1);
}

template <class T>
T dot(index_t n, const T* x, index_t xs, const T* y, index_t ys, const settings& s) {
  T out{};
  // A dot product is the one-row matrix-vector product.
  gemv_rows<T>(n, x, 0, xs, y, ys, &out, 0, 0, 1, s);
  return out;
}

#define CT_MM_INSTANTIATE(T)                                                                         \
  template index_t gemm_packed_b_size<T>(index_t, index_t, index_t, index_t, const settings&);     \
  template void gemm_pack_b<T>(index_t, index_t, const T*, index_t, index_t, T*, const settings&, bool); \
  template void gemm_rows<T>(const gemm_args<T>&, const T*, index_t, index_t, const settings&);    \
  template void gemv_rows<T>(index_t, const T*, index_t, index_t, const T*, index_t, T*, index_t,  \
                             index_t, index_t, const settings&);                                   \
  template void gevm_cols<T>(index_t, const T*, index_t, const T*, index_t, index_t, T*, index_t,  \
                             index_t, index_t, const settings&);                                   \
  template T dot<T>(index_t, const T*, index_t, const T*, index_t, const settings&);
CT_MM_INSTANTIATE(float)
CT_MM_INSTANTIATE(double)
CT_MM_INSTANTIATE(std::int32_t)
CT_MM_INSTANTIATE(std::int64_t)
#undef CT_MM_INSTANTIATE

}  // namespace ct::detail::mm

namespace ct {
gemm_blocking gemm_blocking_for(const tuning& t, bool f64) {
  settings s;
  s.tuning = &t;
  index_t mr = 0, nr = 0, kc = 0, mc = 0, nc = 0;
  if (f64) detail::mm::simd_gemm_blocking_f64(detail::mm::budgets_of(s), mr, nr, kc, mc, nc);
  else detail::mm::simd_gemm_blocking_f32(detail::mm::budgets_of(s), mr, nr, kc, mc, nc);
  const auto z = [](index_t v) { return static_cast<std::size_t>(v); };
  return {z(mr), z(nr), z(kc), z(mc), z(nc)};
}
}  // namespace ct
