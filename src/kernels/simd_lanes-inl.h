// src/kernels/simd_lanes-inl.h — the lane-wise sum and product of whole 32-element rounds,
// shared by the reduction kernels (simd_reduce.cpp) and the kernels that feed a sum while
// computing something else (simd_fused.cpp), so both run literally the same loop.
#if defined(CT_KERNELS_SIMD_LANES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CT_KERNELS_SIMD_LANES_INL_H_
#undef CT_KERNELS_SIMD_LANES_INL_H_
#else
#define CT_KERNELS_SIMD_LANES_INL_H_
#endif

#include <hwy/highway.h>

#include "src/kernels/kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace ct::detail::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// Prefetches the kBytes (a multiple of 64) that follow p + ahead (stream_ahead: the tuning's
/// distance).
template <size_t kBytes>
HWY_INLINE void PrefetchAhead(const void* p, index_t ahead) {
  const char* at = static_cast<const char*>(p) + ahead;
  for (size_t b = 0; b < kBytes; b += 64) __builtin_prefetch(at + b);
}

/// A run of lines further ahead fetched kStep bytes per call (one call per round of a loop),
/// so that a row's prefetches spread over several passes instead of bursting in one: x's and,
/// with kWrite, the destination's y, so that the output pass's stores find their lines in
/// cache. A step below a line prefetches the line it reaches each call (the same line again
/// until the step passes its end): no branch, where counting calls to skip them cost a
/// compare and branch per round (a runtime step: layer norm 512 x 512 7% slower).
/// (y's prefetch is a read prefetch: `__builtin_prefetch(p, 1)` becomes prefetchw only where
/// the target has PRFCHW, which Highway's x86 targets do not name; an unshared line arrives
/// exclusive anyway, and the store then needs no further request.)
template <size_t kStep, bool kWrite>
struct SpreadLines {
  static_assert(kStep < 64 || kStep % 64 == 0, "whole lines, or less than one");
  const char* x;
  char* y;
  HWY_INLINE void operator()() {
    for (size_t b = 0; b < kStep || b == 0; b += 64) {
      __builtin_prefetch(x + b);
      if constexpr (kWrite) __builtin_prefetch(y + b, 1);
    }
    x += kStep;
    if constexpr (kWrite) y += kStep;
  }
};

/// The same for a loop over vectors of kVectorBytes that passes the element index i
/// (ForEachVectorImpl's each): line k of the run on the vector that starts in the 256-byte
/// stretch k of the row, one line for every 256 bytes (every fourth 64-byte vector: a
/// predictable branch). Keyed on where a vector starts within its stretch, not on the stretch's
/// first byte, so that vectors off by a partial head (streamed stores start at y's first
/// aligned vector) still meet one per stretch.
template <class T, size_t kVectorBytes, bool kWrite>
struct QuarterLines {
  static_assert(kVectorBytes <= 256 && 256 % kVectorBytes == 0, "whole vectors per 256 bytes");
  const char* x;
  char* y;
  HWY_INLINE void operator()(index_t i) const {
    const auto b = static_cast<size_t>(i) * sizeof(T);
    if (b % 256 >= kVectorBytes) return;
    __builtin_prefetch(x + b / 256 * 64);
    if constexpr (kWrite) __builtin_prefetch(y + b / 256 * 64, 1);
  }
};

/// The per-round callable of a loop that issues nothing of its own (AccumulateLanes' default).
struct NoRound {
  HWY_INLINE void operator()() const {}
};

/// Adds (or multiplies) x[0..n) into lane[0..32); n is a multiple of 32 and x[0] belongs to
/// lane 0. The 32 lanes live in 32/N independent vectors, so the dependency chains overlap.
/// fresh: the lanes still hold their initial 0 (1 for products) and are not read — reading
/// them right after the init's narrower stores stalls on store forwarding.
/// kStreamed: x comes from memory; each round prefetches its lines `ahead` bytes ahead.
/// round: called once per 32-element round before its loads (NoRound: nothing), for kernels
/// that spread their own prefetches over the loop (SpreadLines).
template <bool kProduct, bool kStreamed, class T, class Round = NoRound>
HWY_INLINE void AccumulateLanes(double* HWY_RESTRICT lane, const T* HWY_RESTRICT x, index_t n, bool fresh,
                                index_t ahead = 0, Round round = {}) {
  const hn::ScalableTag<double> d;
  const hn::Rebind<T, decltype(d)> dt;  // N elements of the input type
  constexpr size_t N = HWY_LANES(double);
  constexpr size_t kVecs = reduce_lanes / N;
  static_assert(kVecs * N == reduce_lanes, "32 lanes must split evenly into vectors");
  using V = hn::Vec<decltype(d)>;
  V acc[kVecs];
  for (size_t j = 0; j < kVecs; ++j) acc[j] = fresh ? hn::Set(d, kProduct ? 1.0 : 0.0) : hn::LoadU(d, lane + j * N);
  for (index_t i = 0; i < n; i += reduce_lanes) {
    if constexpr (kStreamed) PrefetchAhead<reduce_lanes * sizeof(T)>(x + i, ahead);
    round();
    // Fully unrolled so every accumulator stays in a register (a rolled loop indexes acc[]
    // through the stack: 55 GB/s from L2 instead of near the DRAM rate).
    HWY_UNROLL(16)
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

}  // namespace HWY_NAMESPACE
}  // namespace ct::detail::kernels
HWY_AFTER_NAMESPACE();

#endif  // CT_KERNELS_SIMD_LANES_INL_H_
