// src/matmul/dot_rows-inl.h — R dot products at once in the float dot product's order, for any
// source of row values: the float / double GEMV (vector_simd.cpp, rows read as they are) and
// the bf16 / f16 exact-mode rows (src/encoded/half_dot_simd.cpp, widened in registers). One
// body, so the two cannot drift apart: a widened row must give the float row's bits.
// Included inside a file's per-target pass (Highway's -inl idiom), after simd_common-inl.h.
#if defined(CT_MATMUL_DOT_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CT_MATMUL_DOT_ROWS_INL_H_
#undef CT_MATMUL_DOT_ROWS_INL_H_
#else
#define CT_MATMUL_DOT_ROWS_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>

#include "src/matmul/matmul_common.hpp"
#include "src/matmul/simd_common-inl.h"

HWY_BEFORE_NAMESPACE();
namespace ct::detail::mm {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// Rows per DotRowsInLaneOrder call: enough independent accumulators (R x the vectors of a
/// round) to hide the FMA latency, 16 with AVX-512's 32 registers, 8 below.
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
constexpr index_t kDotRowsAccumulators = 16;
#else
constexpr index_t kDotRowsAccumulators = 8;
#endif
template <class T>
constexpr index_t kDotRows = std::max<index_t>(1, kDotRowsAccumulators / (dot_lanes<T> / geom<T>::L));

/// out[r] = dot(row r, x[0..k)) for r < R, sharing each load of x between the rows, in the
/// virtual-lane order (kernels.hpp): element p goes to lane p % dot_lanes<T>, the lanes then
/// fold by lane_tree. The rows come from `src`, which provides
///   Load(d, r, p)            the L values of row r from element p (p + L <= k);
///   Prefetch(r, p)           the prefetches of row r for the round starting at p;
///   BeginTail(p, k)          once, before the last partial round, [p, k);
///   LoadTail(d, n, r, p, v)  row r's values of that round's vector v, lanes from n on
///                            unused (their accumulators are kept).
template <class T, bool kFused, index_t R, class Source>
HWY_INLINE void DotRowsInLaneOrder(Source& src, index_t k, const T* HWY_RESTRICT x, T* out) {
  using G = geom<T>;
  const typename G::D d;
  constexpr index_t L = G::L;
  constexpr index_t W = dot_lanes<T>;
  constexpr index_t NV = W / L;
  using V = decltype(hn::Zero(d));
  V acc[R][NV];
#pragma GCC unroll 16
  for (index_t r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (index_t v = 0; v < NV; ++v) acc[r][v] = hn::Zero(d);
  index_t p = 0;
  for (; p + W <= k; p += W) {
#pragma GCC unroll 16
    for (index_t r = 0; r < R; ++r) src.Prefetch(r, p);
#pragma GCC unroll 16
    for (index_t v = 0; v < NV; ++v) {
      const V xv = hn::LoadU(d, x + p + v * L);
#pragma GCC unroll 16
      for (index_t r = 0; r < R; ++r) acc[r][v] = madd<kFused>(src.Load(d, r, p + v * L), xv, acc[r][v]);
    }
  }
  if (p < k) {  // tail: lanes without an element keep their value
    src.BeginTail(p, k);
#pragma GCC unroll 16
    for (index_t v = 0; v < NV; ++v) {
      const index_t left = std::clamp<index_t>(k - p - v * L, 0, L);
      const auto m = hn::FirstN(d, static_cast<size_t>(left));
      const V xv = LoadFirst(d, x + p + v * L, static_cast<size_t>(left));
#pragma GCC unroll 16
      for (index_t r = 0; r < R; ++r)
        acc[r][v] = hn::IfThenElse(m, madd<kFused>(src.LoadTail(d, left, r, p, v), xv, acc[r][v]), acc[r][v]);
    }
  }
  // Constant indices throughout (unrolled): a variable index would make the compiler keep
  // acc in memory and store it on every iteration of the main loop.
  alignas(64) T lanes[R][W];
#pragma GCC unroll 16
  for (index_t r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (index_t v = 0; v < NV; ++v) hn::Store(acc[r][v], d, lanes[r] + v * L);
  for (index_t r = 0; r < R; ++r) out[r] = lane_tree(lanes[r]);
}

}  // namespace HWY_NAMESPACE
}  // namespace ct::detail::mm
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
