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

HWY_BEFORE_NAMESPACE();
namespace ct::detail::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ---- lane-wise sum / product -----------------------------------------------------------------

/// Adds (or multiplies) x[0..n) into lane[0..32); n is a multiple of 32 and x[0] belongs to
/// lane 0. The 32 lanes live in 32/N independent vectors, so the dependency chains overlap.
template <bool kProduct, class T>
HWY_INLINE void AccumulateLanes(double* HWY_RESTRICT lane, const T* HWY_RESTRICT x, index_t n) {
  const hn::ScalableTag<double> d;
  const hn::Rebind<T, decltype(d)> dt;  // N elements of the input type
  constexpr size_t N = HWY_LANES(double);
  constexpr size_t kVecs = reduce_lanes / N;
  static_assert(kVecs * N == reduce_lanes, "32 lanes must split evenly into vectors");
  using V = hn::Vec<decltype(d)>;
  V acc[kVecs];
  for (size_t j = 0; j < kVecs; ++j) acc[j] = hn::LoadU(d, lane + j * N);
  for (index_t i = 0; i < n; i += reduce_lanes) {
    HWY_UNROLL(1)
    for (size_t j = 0; j < kVecs; ++j) {
      V v;
      if constexpr (sizeof(T) == sizeof(double))
        v = hn::LoadU(d, x + i + j * N);
      else
        v = hn::PromoteTo(d, hn::LoadU(dt, x + i + j * N));
      acc[j] = kProduct ? hn::Mul(acc[j], v) : hn::Add(acc[j], v);
    }
  }
  for (size_t j = 0; j < kVecs; ++j) hn::StoreU(acc[j], d, lane + j * N);
}

void SumF32(double* lane, const float* x, index_t n) { AccumulateLanes<false>(lane, x, n); }
void SumF64(double* lane, const double* x, index_t n) { AccumulateLanes<false>(lane, x, n); }
void ProdF32(double* lane, const float* x, index_t n) { AccumulateLanes<true>(lane, x, n); }
void ProdF64(double* lane, const double* x, index_t n) { AccumulateLanes<true>(lane, x, n); }

// ---- max / min with position ----------------------------------------------------------------

/// Position in x[0..n) of the element that wins under the max (kMax) or min rule on its own:
/// the first NaN if there is one, else the first occurrence of the extreme value. n > 0.
template <bool kMax, class T>
HWY_INLINE index_t ExtremePosition(const T* HWY_RESTRICT x, index_t n) {
  const hn::ScalableTag<T> d;
  const index_t N = static_cast<index_t>(hn::Lanes(d));
  const auto better = [](auto a, auto b) { return kMax ? hn::Max(a, b) : hn::Min(a, b); };
  // Pass 1: the extreme value, stopping at the first vector that holds a NaN (NaN wins).
  index_t i = 0;
  auto m0 = hn::Set(d, x[0]), m1 = m0;
  for (; i + 2 * N <= n; i += 2 * N) {
    const auto v0 = hn::LoadU(d, x + i), v1 = hn::LoadU(d, x + i + N);
    const auto nan0 = hn::IsNaN(v0), nan1 = hn::IsNaN(v1);
    if (HWY_UNLIKELY(!hn::AllFalse(d, hn::Or(nan0, nan1)))) {
      if (!hn::AllFalse(d, nan0)) return i + hn::FindFirstTrue(d, nan0);
      return i + N + hn::FindFirstTrue(d, nan1);
    }
    m0 = better(m0, v0);
    m1 = better(m1, v1);
  }
  for (; i + N <= n; i += N) {
    const auto v = hn::LoadU(d, x + i);
    const auto nan = hn::IsNaN(v);
    if (HWY_UNLIKELY(!hn::AllFalse(d, nan))) return i + hn::FindFirstTrue(d, nan);
    m0 = better(m0, v);
  }
  T m = hn::GetLane(kMax ? hn::MaxOfLanes(d, better(m0, m1)) : hn::MinOfLanes(d, better(m0, m1)));
  for (index_t t = i; t < n; ++t) {
    if (x[t] != x[t]) return t;
    if (kMax ? x[t] > m : x[t] < m) m = x[t];
  }
  // Pass 2: the first position holding a value equal to it (== also pairs -0 with +0).
  const auto target = hn::Set(d, m);
  for (i = 0; i + N <= n; i += N) {
    const auto eq = hn::Eq(hn::LoadU(d, x + i), target);
    if (!hn::AllFalse(d, eq)) return i + hn::FindFirstTrue(d, eq);
  }
  for (; i < n; ++i)
    if (x[i] == m) return i;
  return n - 1;  // not reached: m is one of the elements
}

index_t MaxPosF32(const float* x, index_t n) { return ExtremePosition<true>(x, n); }
index_t MaxPosF64(const double* x, index_t n) { return ExtremePosition<true>(x, n); }
index_t MinPosF32(const float* x, index_t n) { return ExtremePosition<false>(x, n); }
index_t MinPosF64(const double* x, index_t n) { return ExtremePosition<false>(x, n); }

}  // namespace HWY_NAMESPACE
}  // namespace ct::detail::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ct::detail::kernels {

HWY_EXPORT(SumF32);
HWY_EXPORT(SumF64);
HWY_EXPORT(ProdF32);
HWY_EXPORT(ProdF64);
HWY_EXPORT(MaxPosF32);
HWY_EXPORT(MaxPosF64);
HWY_EXPORT(MinPosF32);
HWY_EXPORT(MinPosF64);

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
  const index_t phase = acc.count % reduce_lanes;
  const index_t head = phase == 0 ? 0 : std::min<index_t>(n, reduce_lanes - phase);
  scalar(x, head);
  const index_t rounds = (n - head) / reduce_lanes * reduce_lanes;
  if (rounds > 0) {
    bulk(acc.lane, x + head, rounds);
    acc.count += rounds;
  }
  scalar(x + head + rounds, n - head - rounds);
}

template <class T>
void merge_extreme(extreme_state<T>& st, const T* x, index_t pos, index_t first_index, bool is_max) {
  const T v = x[pos];
  const bool wins = st.index < 0 || v != v || (is_max ? v > st.value : v < st.value);
  if (wins) {
    st.value = v;
    st.index = first_index + pos;
  }
}

}  // namespace

void simd_sum(lane_accumulator& acc, const float* x, index_t n) {
  accumulate<false>(acc, x, n, HWY_DYNAMIC_DISPATCH(SumF32));
}
void simd_sum(lane_accumulator& acc, const double* x, index_t n) {
  accumulate<false>(acc, x, n, HWY_DYNAMIC_DISPATCH(SumF64));
}
void simd_prod(lane_accumulator& acc, const float* x, index_t n) {
  accumulate<true>(acc, x, n, HWY_DYNAMIC_DISPATCH(ProdF32));
}
void simd_prod(lane_accumulator& acc, const double* x, index_t n) {
  accumulate<true>(acc, x, n, HWY_DYNAMIC_DISPATCH(ProdF64));
}

// A state already holding a NaN is final; otherwise the tile's own winner competes with it
// (the tile comes later in the stream, so it must be strictly better, or a NaN).
void simd_max(extreme_state<float>& st, const float* x, index_t n, index_t first_index) {
  if (st.index >= 0 && st.value != st.value) return;
  merge_extreme(st, x, HWY_DYNAMIC_DISPATCH(MaxPosF32)(x, n), first_index, true);
}
void simd_max(extreme_state<double>& st, const double* x, index_t n, index_t first_index) {
  if (st.index >= 0 && st.value != st.value) return;
  merge_extreme(st, x, HWY_DYNAMIC_DISPATCH(MaxPosF64)(x, n), first_index, true);
}
void simd_min(extreme_state<float>& st, const float* x, index_t n, index_t first_index) {
  if (st.index >= 0 && st.value != st.value) return;
  merge_extreme(st, x, HWY_DYNAMIC_DISPATCH(MinPosF32)(x, n), first_index, false);
}
void simd_min(extreme_state<double>& st, const double* x, index_t n, index_t first_index) {
  if (st.index >= 0 && st.value != st.value) return;
  merge_extreme(st, x, HWY_DYNAMIC_DISPATCH(MinPosF64)(x, n), first_index, false);
}

}  // namespace ct::detail::kernels
#endif  // HWY_ONCE
