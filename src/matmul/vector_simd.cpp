// src/matmul/vector_simd.cpp — the SIMD matrix-vector (GEMV) and vector-matrix (GEVM)
// kernels (Google Highway, compiled once per x86 target and dispatched at run time). GEMV
// reads each row of the matrix once, several rows at a time against shared loads of x, in the
// virtual-lane order of src/matmul/kernels.hpp; GEVM streams B's rows into an accumulator row.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/matmul/vector_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "src/matmul/matmul_common.hpp"
#include "src/matmul/simd_common-inl.h"
#include "src/matmul/dot_rows-inl.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

HWY_BEFORE_NAMESPACE();
namespace ct::detail::mm {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ---------------------------------------------------------------- GEMV / dot

// R rows of T read as they are, for DotRowsInLaneOrder (dot_rows-inl.h).
template <class T>
struct plain_rows {
  const T* const* rows;
  index_t ahead;  // the tuning's gemv_prefetch_bytes, in elements
  template <class D>
  HWY_INLINE hn::Vec<D> Load(D d, index_t r, index_t p) const {
    return hn::LoadU(d, rows[r] + p);
  }
  // Streams from DRAM: ask for the lines a few rounds ahead of use — every line (a round
  // spans dot_lanes elements, two lines for float): prefetching one line in two left
  // 4096x4096 sgemv at 0.96x Eigen, both lines 1.05x (15 interleaved repetitions).
  HWY_INLINE void Prefetch(index_t r, index_t p) const {
    hwy::Prefetch(rows[r] + p + ahead);
    if constexpr (dot_lanes<T> * sizeof(T) > 64) hwy::Prefetch(rows[r] + p + ahead + 64 / sizeof(T));
  }
  HWY_INLINE void BeginTail(index_t, index_t) const {}
  template <class D>
  HWY_INLINE hn::Vec<D> LoadTail(D d, index_t n, index_t r, index_t p, index_t v) const {
    return LoadFirst(d, rows[r] + p + v * geom<T>::L, static_cast<size_t>(n));
  }
};

// out[r] = dot(rows[r][0..k), x[0..k)) for R rows at once, in the virtual-lane order.
template <class T, bool kFused, index_t R>
HWY_INLINE void dot_rows(index_t k, const T* const* rows, const T* HWY_RESTRICT x, T* out, index_t ahead) {
  plain_rows<T> src{rows, ahead};
  DotRowsInLaneOrder<T, kFused, R>(src, k, x, out);
}

template <class T, bool kFused>
void gemv_rows_t(index_t k, const T* a, index_t ars, index_t acs, const T* x, index_t xs, T* y, index_t ys,
                 index_t i0, index_t i1, const mm_budgets& budgets) {
  const index_t ahead = budgets.gemv_prefetch_bytes / static_cast<index_t>(sizeof(T));
  constexpr index_t R = kDotRows<T>;
  std::unique_ptr<scratch<T>> xbuf, rowbuf;
  if (xs != 1) {  // gather a strided x once
    xbuf = std::make_unique<scratch<T>>(k);
    for (index_t p = 0; p < k; ++p) xbuf->get()[p] = x[p * xs];
    x = xbuf->get();
  }
  if (acs != 1) rowbuf = std::make_unique<scratch<T>>(R * k);
  auto row = [&](index_t i, index_t slot) -> const T* {
    const T* src = a + i * ars;
    if (acs == 1) return src;
    T* dst = rowbuf->get() + slot * k;  // gather a strided row
    for (index_t p = 0; p < k; ++p) dst[p] = src[p * acs];
    return dst;
  };
  index_t i = i0;
  for (; i + R <= i1; i += R) {
    const T* rows[R];
    T out[R];
    for (index_t r = 0; r < R; ++r) rows[r] = row(i + r, r);
    dot_rows<T, kFused, R>(k, rows, x, out, ahead);
    for (index_t r = 0; r < R; ++r) y[(i + r) * ys] = out[r];
  }
  for (; i < i1; ++i) {
    const T* rows[1] = {row(i, 0)};
    T out[1];
    dot_rows<T, kFused, 1>(k, rows, x, out, ahead);
    y[i * ys] = out[0];
  }
}

// ---------------------------------------------------------------- GEVM

// acc[0..w) = muladd(x_q, rows[q][0..w), acc) for q = 0..Q-1 in order: Q rows of B per pass
// over the accumulators, each element still sequential in k.
template <class T, bool kFused, index_t Q>
HWY_INLINE void axpy_rows(index_t w, const T* HWY_RESTRICT xq, const T* const* rows, T* HWY_RESTRICT acc) {
  using G = geom<T>;
  const typename G::D d;
  constexpr index_t L = G::L;
  using V = decltype(hn::Zero(d));
  V xs[Q];
  for (index_t q = 0; q < Q; ++q) xs[q] = hn::Set(d, xq[q]);
  index_t j = 0;
  for (; j + L <= w; j += L) {
    V s = hn::LoadU(d, acc + j);
#pragma GCC unroll 8
    for (index_t q = 0; q < Q; ++q) s = madd<kFused>(xs[q], hn::LoadU(d, rows[q] + j), s);
    hn::StoreU(s, d, acc + j);
  }
  if (j < w) {
    const size_t n = static_cast<size_t>(w - j);
    V s = LoadFirst(d, acc + j, n);
    for (index_t q = 0; q < Q; ++q) s = madd<kFused>(xs[q], LoadFirst(d, rows[q] + j, n), s);
    hn::BlendedStore(s, hn::FirstN(d, n), d, acc + j);  // stores the selected lanes only, on every target
  }
}

template <class T, bool kFused>
void gevm_cols_t(index_t k, const T* x, index_t xs, const T* b, index_t brs, index_t bcs, T* y, index_t ys,
                 index_t j0, index_t j1) {
  constexpr index_t Q = 4;
  const index_t w = j1 - j0;
  scratch<T> acc(w), total(w);
  std::fill(acc.get(), acc.get() + w, T(0));
  std::fill(total.get(), total.get() + w, T(0));
  // Row-contiguous B streams in place; otherwise blocks of PB rows are copied into a
  // row-major tile first (reading B along its contiguous columns).
  constexpr index_t PB = 64;
  static_assert(gemm_k_chunk % PB == 0, "a k chunk is whole blocks of PB rows");
  // The k chunks of kernels.hpp's order: acc holds the current chunk, total the sum of those
  // before it (the first chunk is assigned, not added to zero).
  const auto fold = [&](bool first) {
    for (index_t j = 0; j < w; ++j) {
      total.get()[j] = first ? acc.get()[j] : total.get()[j] + acc.get()[j];
      acc.get()[j] = T(0);
    }
  };
  std::unique_ptr<scratch<T>> tile;
  if (bcs != 1) tile = std::make_unique<scratch<T>>(PB * w);
  for (index_t p0 = 0; p0 < k; p0 += PB) {
    if (p0 > 0 && p0 % gemm_k_chunk == 0) fold(p0 == gemm_k_chunk);
    const index_t pb = std::min(PB, k - p0);
    const T* base = b + p0 * brs + j0 * bcs;
    index_t stride = brs;
    if (tile) {
      for (index_t j = 0; j < w; ++j)
        for (index_t p = 0; p < pb; ++p) tile->get()[p * w + j] = base[p * brs + j * bcs];
      base = tile->get();
      stride = w;
    }
    T xq[Q];
    index_t p = 0;
    for (; p + Q <= pb; p += Q) {
      const T* rows[Q];
      for (index_t q = 0; q < Q; ++q) {
        rows[q] = base + (p + q) * stride;
        xq[q] = x[(p0 + p + q) * xs];
      }
      axpy_rows<T, kFused, Q>(w, xq, rows, acc.get());
    }
    for (; p < pb; ++p) {
      const T* rows[1] = {base + p * stride};
      xq[0] = x[(p0 + p) * xs];
      axpy_rows<T, kFused, 1>(w, xq, rows, acc.get());
    }
  }
  if (k > 0) fold(k <= gemm_k_chunk);
  for (index_t j = 0; j < w; ++j) y[(j0 + j) * ys] = total.get()[j];
}

// ---------------------------------------------------------------- exported entry points

#define CT_MM_VECTOR_FUNCS(T, S)                                                                             \
  bool GemvRows##S(index_t k, const T* a, index_t ars, index_t acs, const T* x, index_t xs, T* y, index_t ys, \
                   index_t i0, index_t i1, bool fused, const mm_budgets& b) {                                \
    if (fused && !kCanFuse) return false;                                                                    \
    if (fused) gemv_rows_t<T, true>(k, a, ars, acs, x, xs, y, ys, i0, i1, b);                                \
    else gemv_rows_t<T, false>(k, a, ars, acs, x, xs, y, ys, i0, i1, b);                                     \
    return true;                                                                                             \
  }                                                                                                          \
  bool GevmCols##S(index_t k, const T* x, index_t xs, const T* b, index_t brs, index_t bcs, T* y, index_t ys, \
                   index_t j0, index_t j1, bool fused) {                                                     \
    if (fused && !kCanFuse) return false;                                                                    \
    if (fused) gevm_cols_t<T, true>(k, x, xs, b, brs, bcs, y, ys, j0, j1);                                   \
    else gevm_cols_t<T, false>(k, x, xs, b, brs, bcs, y, ys, j0, j1);                                        \
    return true;                                                                                             \
  }
CT_MM_VECTOR_FUNCS(float, F32)
CT_MM_VECTOR_FUNCS(double, F64)
#undef CT_MM_VECTOR_FUNCS

}  // namespace HWY_NAMESPACE
}  // namespace ct::detail::mm
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ct::detail::mm {

HWY_EXPORT(GemvRowsF32);
HWY_EXPORT(GemvRowsF64);
HWY_EXPORT(GevmColsF32);
HWY_EXPORT(GevmColsF64);

bool simd_gemv_rows_f32(index_t k, const float* a, index_t ars, index_t acs, const float* x, index_t xs, float* y,
                        index_t ys, index_t i0, index_t i1, bool fused, const mm_budgets& b) {
  return HWY_DYNAMIC_DISPATCH(GemvRowsF32)(k, a, ars, acs, x, xs, y, ys, i0, i1, fused, b);
}
bool simd_gemv_rows_f64(index_t k, const double* a, index_t ars, index_t acs, const double* x, index_t xs,
                        double* y, index_t ys, index_t i0, index_t i1, bool fused, const mm_budgets& b) {
  return HWY_DYNAMIC_DISPATCH(GemvRowsF64)(k, a, ars, acs, x, xs, y, ys, i0, i1, fused, b);
}
bool simd_gevm_cols_f32(index_t k, const float* x, index_t xs, const float* b, index_t brs, index_t bcs, float* y,
                        index_t ys, index_t j0, index_t j1, bool fused) {
  return HWY_DYNAMIC_DISPATCH(GevmColsF32)(k, x, xs, b, brs, bcs, y, ys, j0, j1, fused);
}
bool simd_gevm_cols_f64(index_t k, const double* x, index_t xs, const double* b, index_t brs, index_t bcs,
                        double* y, index_t ys, index_t j0, index_t j1, bool fused) {
  return HWY_DYNAMIC_DISPATCH(GevmColsF64)(k, x, xs, b, brs, bcs, y, ys, j0, j1, fused);
}

}  // namespace ct::detail::mm
#endif  // HWY_ONCE
