// src/kernels/simd_reduce.cpp — the simd backend of sum, prod, max and min.
//
// Both reproduce the scalar definitions bitwise: the lane-wise sum/product keeps each of the
// 32 virtual lanes in its own vector lane (element k always meets lane k % 32, in stream
// order), and max/min find the winning value and its first position exactly.
#include "src/kernels/fp_contract_off.hpp"  // must stay first
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/kernels/simd_reduce.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <algorithm>
#include <hwy/highway.h>

#include "src/kernels/detail.hpp"
#include "src/kernels/simd_lanes-inl.h"

HWY_BEFORE_NAMESPACE();
namespace ct::detail::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ---- lane-wise sum / product -----------------------------------------------------------------

// ahead > 0 (a stream from memory) picks the loop that prefetches that far ahead; same sums.
template <class T>
void SumLanes(double* lane, const T* x, index_t n, bool fresh, index_t ahead) {
  if (ahead > 0)
    AccumulateLanes<false, true>(lane, x, n, fresh, ahead);
  else
    AccumulateLanes<false, false>(lane, x, n, fresh);
}
void SumF32(double* lane, const float* x, index_t n, bool fresh, index_t ahead) { SumLanes(lane, x, n, fresh, ahead); }
void SumF64(double* lane, const double* x, index_t n, bool fresh, index_t ahead) { SumLanes(lane, x, n, fresh, ahead); }
sum_bulk_fn<float> ResolveSumF32() { return &SumF32; }
sum_bulk_fn<double> ResolveSumF64() { return &SumF64; }
void ProdF32(double* lane, const float* x, index_t n, bool fresh) { AccumulateLanes<true, false>(lane, x, n, fresh); }
void ProdF64(double* lane, const double* x, index_t n, bool fresh) { AccumulateLanes<true, false>(lane, x, n, fresh); }

// ---- max / min with position ----------------------------------------------------------------

/// The extreme (max for kMax, else min) of x[0..n) into *m, or the position of the first NaN
/// (then *m is untouched); -1 when there is no NaN. n > 0. kStreamed, ahead as for
/// AccumulateLanes.
template <bool kMax, bool kStreamed, class T>
HWY_INLINE index_t ExtremeValue(const T* HWY_RESTRICT x, index_t n, T* m_out, index_t ahead) {
  const hn::ScalableTag<T> d;
  const index_t N = static_cast<index_t>(hn::Lanes(d));
  const auto better = [](auto a, auto b) { return kMax ? hn::Max(a, b) : hn::Min(a, b); };
  index_t i = 0;
  auto m0 = hn::Set(d, x[0]), m1 = m0, m2 = m0, m3 = m0;
  // Four independent chains; a NaN anywhere in a block of four vectors sends the block to
  // the exact scalar search below, which finds the first NaN.
  for (; i + 4 * N <= n; i += 4 * N) {
    if constexpr (kStreamed) PrefetchAhead<4 * HWY_MAX_BYTES>(x + i, ahead);  // 4 vectors (AVX-512: 4 lines)
    const auto v0 = hn::LoadU(d, x + i), v1 = hn::LoadU(d, x + i + N);
    const auto v2 = hn::LoadU(d, x + i + 2 * N), v3 = hn::LoadU(d, x + i + 3 * N);
    const auto nan = hn::Or(hn::Or(hn::IsNaN(v0), hn::IsNaN(v1)), hn::Or(hn::IsNaN(v2), hn::IsNaN(v3)));
    if (HWY_UNLIKELY(!hn::AllFalse(d, nan))) break;
    m0 = better(m0, v0);
    m1 = better(m1, v1);
    m2 = better(m2, v2);
    m3 = better(m3, v3);
  }
  const auto mv = better(better(m0, m1), better(m2, m3));
  T m = hn::GetLane(kMax ? hn::MaxOfLanes(d, mv) : hn::MinOfLanes(d, mv));
  for (index_t t = i; t < n; ++t) {
    if (x[t] != x[t]) return t;
    if (kMax ? x[t] > m : x[t] < m) m = x[t];
  }
  *m_out = m;
  return -1;
}

/// Position of the first element of x[0..n) equal to m (== also pairs -0 with +0); m is in x.
template <class T>
HWY_INLINE index_t FirstEqual(const T* HWY_RESTRICT x, index_t n, T m) {
  const hn::ScalableTag<T> d;
  const index_t N = static_cast<index_t>(hn::Lanes(d));
  const auto target = hn::Set(d, m);
  index_t i = 0;
  for (; i + N <= n; i += N) {
    const auto eq = hn::Eq(hn::LoadU(d, x + i), target);
    if (!hn::AllFalse(d, eq)) return i + hn::FindFirstTrue(d, eq);
  }
  for (; i < n; ++i)
    if (x[i] == m) return i;
  return n - 1;  // not reached
}

// ahead > 0 (a stream from memory) picks the loop that prefetches that far ahead; same result.
template <bool kMax, class T>
index_t ExtremeOf(const T* x, index_t n, T* m, index_t ahead) {
  return ahead > 0 ? ExtremeValue<kMax, true>(x, n, m, ahead) : ExtremeValue<kMax, false>(x, n, m, 0);
}
index_t MaxValF32(const float* x, index_t n, float* m, index_t ahead) { return ExtremeOf<true>(x, n, m, ahead); }
index_t MaxValF64(const double* x, index_t n, double* m, index_t ahead) { return ExtremeOf<true>(x, n, m, ahead); }
index_t MinValF32(const float* x, index_t n, float* m, index_t ahead) { return ExtremeOf<false>(x, n, m, ahead); }
index_t MinValF64(const double* x, index_t n, double* m, index_t ahead) { return ExtremeOf<false>(x, n, m, ahead); }
index_t FirstEqF32(const float* x, index_t n, float m) { return FirstEqual(x, n, m); }
index_t FirstEqF64(const double* x, index_t n, double m) { return FirstEqual(x, n, m); }

}  // namespace HWY_NAMESPACE
}  // namespace ct::detail::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ct::detail::kernels {

HWY_EXPORT(SumF32);
HWY_EXPORT(SumF64);
HWY_EXPORT(ResolveSumF32);
HWY_EXPORT(ResolveSumF64);
HWY_EXPORT(ProdF32);
HWY_EXPORT(ProdF64);
HWY_EXPORT(MaxValF32);
HWY_EXPORT(MaxValF64);
HWY_EXPORT(MinValF32);
HWY_EXPORT(MinValF64);
HWY_EXPORT(FirstEqF32);
HWY_EXPORT(FirstEqF64);

namespace {

/// Feeds scalar until the next element belongs to lane 0, runs whole 32-element rounds with
/// `bulk`, and feeds the rest scalar. Each lane sees its elements in stream order either way.
template <bool kProduct, class T, class Bulk>
void accumulate(lane_accumulator& acc, const T* x, index_t n, Bulk bulk) {
  const auto scalar = [&](const T* p, index_t len) {
    if constexpr (kProduct)
      scalar_prod(acc, p, len);
    else
      scalar_sum(acc, p, len);
  };
  by_lane_rounds(
      acc, n, [&](index_t at, index_t len) { scalar(x + at, len); },
      [&](index_t at, index_t len, bool fresh) { bulk(acc.lane, x + at, len, fresh); });
}

/// Merges tile x[0..n) (positions first_index…) into st under the max (is_max) or min rule.
/// The tile's winner competes with the state: a state holding a NaN is final; a NaN in the
/// tile wins; otherwise the tile must be strictly better (ties keep the earlier position), and
/// only then is its position searched — most tiles of a long row never win. Without
/// with_index the search is needed only for a zero winner: equal zeros differ in sign, and
/// the first one is the value.
template <class T, class Value, class FirstEq>
void merge_tile(extreme_state<T>& st, const T* x, index_t n, index_t first_index, bool is_max, bool with_index,
                Value value, FirstEq first_eq) {
  if (st.index >= 0 && st.value != st.value) return;
  T m;
  const index_t nan = value(x, n, &m);
  if (nan >= 0) {
    st.value = x[nan];
    st.index = first_index + nan;
    return;
  }
  if (st.index >= 0 && !(is_max ? m > st.value : m < st.value)) return;
  if (!with_index && m != T(0)) {
    st.value = m;
    st.index = first_index;
    return;
  }
  const index_t pos = first_eq(x, n, m);
  st.value = x[pos];
  st.index = first_index + pos;
}

}  // namespace

void simd_sum(lane_accumulator& acc, const float* x, index_t n, index_t ahead) {
  const sum_bulk_fn<float> f = HWY_DYNAMIC_DISPATCH(SumF32);
  accumulate<false>(acc, x, n, [&](double* lane, const float* p, index_t len, bool fresh) { f(lane, p, len, fresh, ahead); });
}
void simd_sum(lane_accumulator& acc, const double* x, index_t n, index_t ahead) {
  const sum_bulk_fn<double> f = HWY_DYNAMIC_DISPATCH(SumF64);
  accumulate<false>(acc, x, n, [&](double* lane, const double* p, index_t len, bool fresh) { f(lane, p, len, fresh, ahead); });
}
void simd_resolve_sum(sum_bulk_fn<float>& out) noexcept { out = HWY_DYNAMIC_DISPATCH(ResolveSumF32)(); }
void simd_resolve_sum(sum_bulk_fn<double>& out) noexcept { out = HWY_DYNAMIC_DISPATCH(ResolveSumF64)(); }
void simd_prod(lane_accumulator& acc, const float* x, index_t n) {
  accumulate<true>(acc, x, n, HWY_DYNAMIC_DISPATCH(ProdF32));
}
void simd_prod(lane_accumulator& acc, const double* x, index_t n) {
  accumulate<true>(acc, x, n, HWY_DYNAMIC_DISPATCH(ProdF64));
}

void simd_max(extreme_state<float>& st, const float* x, index_t n, index_t first_index, bool with_index,
              index_t ahead) {
  const auto value = HWY_DYNAMIC_DISPATCH(MaxValF32);
  merge_tile(st, x, n, first_index, true, with_index,
             [&](const float* p, index_t len, float* m) { return value(p, len, m, ahead); },
             HWY_DYNAMIC_DISPATCH(FirstEqF32));
}
void simd_max(extreme_state<double>& st, const double* x, index_t n, index_t first_index, bool with_index,
              index_t ahead) {
  const auto value = HWY_DYNAMIC_DISPATCH(MaxValF64);
  merge_tile(st, x, n, first_index, true, with_index,
             [&](const double* p, index_t len, double* m) { return value(p, len, m, ahead); },
             HWY_DYNAMIC_DISPATCH(FirstEqF64));
}
void simd_min(extreme_state<float>& st, const float* x, index_t n, index_t first_index, bool with_index,
              index_t ahead) {
  const auto value = HWY_DYNAMIC_DISPATCH(MinValF32);
  merge_tile(st, x, n, first_index, false, with_index,
             [&](const float* p, index_t len, float* m) { return value(p, len, m, ahead); },
             HWY_DYNAMIC_DISPATCH(FirstEqF32));
}
void simd_min(extreme_state<double>& st, const double* x, index_t n, index_t first_index, bool with_index,
              index_t ahead) {
  const auto value = HWY_DYNAMIC_DISPATCH(MinValF64);
  merge_tile(st, x, n, first_index, false, with_index,
             [&](const double* p, index_t len, double* m) { return value(p, len, m, ahead); },
             HWY_DYNAMIC_DISPATCH(FirstEqF64));
}

}  // namespace ct::detail::kernels
#endif  // HWY_ONCE
