// src/kernels/simd_logsumexp.cpp — the simd backend of logsumexp's online normalizer.
//
// Each of the 32 virtual lanes keeps a reference value, a partial sum of exp(x - reference) in
// T and its sum in double (the rules are lse_state's, kernels.hpp). A round of 32 elements
// that moves no lane's reference (all but the first, for rows spanning less than
// lse_headroom) costs one exp and one add per element and a compare; a round that moves one,
// or meets ±inf or NaN, runs the general step, which rescales the moved lanes' sums. Both give
// the same bits for the lanes they share, so where the stream is cut, and how wide the
// vectors are, does not change the result.
#include "src/kernels/fp_contract_off.hpp"  // must stay first
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/kernels/simd_logsumexp.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <algorithm>
#include <cmath>
#include <limits>
#include <hwy/highway.h>
#include <type_traits>

#include "src/kernels/detail.hpp"
#include "src/kernels/simd_exp-inl.h"
#include "src/kernels/simd_lanes-inl.h"

HWY_BEFORE_NAMESPACE();
namespace ct::detail::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// The lanes of one vector of T as double vectors: itself for double, its two halves for
/// float (one promoted vector where the vectors have one lane).
template <class T>
struct SumParts {
  static constexpr size_t N = HWY_LANES(T), ND = HWY_LANES(double);  // lanes of V and of VD
  static constexpr size_t kParts = N / ND;
  using DT = hn::ScalableTag<T>;
  using DD = hn::ScalableTag<double>;
  using V = hn::Vec<DT>;
  using VD = hn::Vec<DD>;
  template <size_t kPart>
  static HWY_INLINE VD Part(V v) {
    if constexpr (std::is_same_v<T, double>) {
      return v;
    } else if constexpr (kParts == 1) {
      return hn::PromoteTo(DD(), v);
    } else {
#if HWY_TARGET != HWY_SCALAR  // (one-lane vectors have no halves)
      const hn::Half<DT> dh;
      if constexpr (kPart == 0) return hn::PromoteTo(DD(), hn::LowerHalf(dh, v));
      else return hn::PromoteTo(DD(), hn::UpperHalf(dh, v));
#endif
    }
  }
};

/// Lanes [begin, end) of a vector whose first lane is `first`, as a mask of tag d.
template <class D>
HWY_INLINE hn::Mask<D> LaneRange(D d, int first, int begin, int end) {
  const hn::RebindToSigned<D> di;
  using TI = hn::TFromD<decltype(di)>;
  const auto lane = hn::Add(hn::Iota(di, 0), hn::Set(di, static_cast<TI>(first)));
  return hn::RebindMask(d, hn::And(hn::Gt(lane, hn::Set(di, static_cast<TI>(begin - 1))),
                                   hn::Lt(lane, hn::Set(di, static_cast<TI>(end)))));
}

#if CT_KERNELS_HAVE_SCALEF
/// The fast steps of rounds [first, lse_block_rounds) of a block at x: partial sums pb += e^(x
/// - m) lane by lane (ExpNormal when kNormal, else Exp<kFused, true>), and each reference
/// vector's largest element top and least x - m bottom.
template <bool kFused, bool kNormal, class T, class V = hn::Vec<hn::ScalableTag<T>>>
HWY_INLINE void FastRounds(const T* HWY_RESTRICT x, size_t first, const V* m, V* pb, V* top, V* bottom) {
  constexpr size_t kVecs = reduce_lanes / HWY_LANES(T);
  const hn::ScalableTag<T> d;
  // A loop over the rounds, not unrolled: fully unrolled, g++ 12 computed the block's exps
  // first and added them up after, spilling them (the partial sums' order held it).
  HWY_UNROLL(1)
  for (size_t r = first; r < lse_block_rounds; ++r) {
    HWY_UNROLL(16)
    for (size_t j = 0; j < kVecs; ++j) {
      const V v = hn::LoadU(d, x + (r * kVecs + j) * HWY_LANES(T));
      const V xm = hn::Sub(v, m[j]);
      top[j] = hn::Max(top[j], v);
      bottom[j] = hn::Min(bottom[j], xm);
      if constexpr (kNormal) pb[j] = hn::Add(pb[j], ExpNormal(d, xm));
      else pb[j] = hn::Add(pb[j], Exp<kFused, true>(d, xm));
    }
  }
}
#endif

/// The general step for one vector v of lanes [first, first + N): every rule of lse_state,
/// applied to the lanes in [begin, end) only when kMasked (the others keep m, s and p).
/// m: references, s: the lanes' sums (kParts double vectors), p: the partial sums (T).
template <bool kFused, bool kMasked, class T>
HWY_INLINE void GeneralStep(hn::Vec<hn::ScalableTag<T>>& m, hn::Vec<hn::ScalableTag<double>>* s,
                            hn::Vec<hn::ScalableTag<T>>& p, hn::Vec<hn::ScalableTag<T>> v, int first, int begin,
                            int end) {
  using P = SumParts<T>;
  const typename P::DT d;
  const typename P::DD dd;
  const auto nan = hn::Or(hn::IsNaN(m), hn::IsNaN(v));
  const auto grow = hn::Gt(v, hn::Add(m, hn::Set(d, T(lse_headroom))));
  auto mn = hn::IfThenElse(nan, hn::Add(m, v), hn::IfThenElse(grow, v, m));
  const auto active = kMasked ? LaneRange(d, first, begin, end) : hn::FirstN(d, HWY_LANES(T));
  if constexpr (kMasked) mn = hn::IfThenElse(active, mn, m);
  // exp(x - m'), exactly 1 where x is the reference (an inactive lane's partial gets no term)
  auto e = Exp<kFused>(d, hn::IfThenElseZero(hn::Ne(v, mn), hn::Sub(v, mn)));
  if constexpr (kMasked) e = hn::IfThenElseZero(active, e);
  const auto rescale = [&](auto part, size_t k) {  // moved lanes: s = (s + p) * exp(m - m')
    constexpr size_t kPart = decltype(part)::value;
    const auto md = P::template Part<kPart>(m), mnd = P::template Part<kPart>(mn);
    const auto moved = hn::Ne(mnd, md);
    const auto f = ExpOrZero<kFused>(dd, hn::IfThenElseZero(moved, hn::Sub(md, mnd)));
    s[k] = hn::IfThenElse(moved, hn::Mul(hn::Add(s[k], P::template Part<kPart>(p)), f), s[k]);
  };
  rescale(std::integral_constant<size_t, 0>{}, 0);
  if constexpr (P::kParts == 2) rescale(std::integral_constant<size_t, 1>{}, 1);
  p = hn::Add(hn::IfThenZeroElse(hn::Ne(mn, m), p), e);
  m = mn;
}

/// s += p, p = 0 for one vector's lanes (the end of a block, lse_state).
template <class T>
HWY_INLINE void Flush(hn::Vec<hn::ScalableTag<double>>* s, hn::Vec<hn::ScalableTag<T>>& p) {
  using P = SumParts<T>;
  s[0] = hn::Add(s[0], P::template Part<0>(p));
  if constexpr (P::kParts == 2) s[1] = hn::Add(s[1], P::template Part<1>(p));
  p = hn::Zero(typename P::DT());
}

/// The state's 32 lanes held in vectors while LseRoundsOf / LseRoundByRound run: references m,
/// limits m + lse_headroom (the most x may be for m to stay), partials p and sums s.
template <class T>
struct LseRegs {
  using P = SumParts<T>;
  static constexpr size_t kVecs = reduce_lanes / P::N;
  static_assert(kVecs * P::N == reduce_lanes, "32 lanes must split evenly into vectors");
  typename P::V m[kVecs], limit[kVecs], p[kVecs];
  typename P::VD s[kVecs * P::kParts];
  bool finite = true;  // every reference is finite

  HWY_INLINE void SetReference(size_t j, typename P::V value) {
    const typename P::DT d;
    m[j] = value;
    limit[j] = hn::Add(value, hn::Set(d, T(lse_headroom)));
    finite = finite && hn::AllTrue(d, hn::IsFinite(value));
  }
  HWY_INLINE void Load(const T* HWY_RESTRICT mx, const double* HWY_RESTRICT sm, const T* HWY_RESTRICT px) {
    const typename P::DT d;
    const typename P::DD dd;
    for (size_t j = 0; j < kVecs * P::kParts; ++j) s[j] = hn::LoadU(dd, sm + j * P::ND);
    for (size_t j = 0; j < kVecs; ++j) p[j] = hn::LoadU(d, px + j * P::N);
    finite = true;
    for (size_t j = 0; j < kVecs; ++j) SetReference(j, hn::LoadU(d, mx + j * P::N));
  }
  HWY_INLINE void Store(T* HWY_RESTRICT mx, double* HWY_RESTRICT sm, T* HWY_RESTRICT px) const {
    const typename P::DT d;
    const typename P::DD dd;
    for (size_t j = 0; j < kVecs; ++j) hn::StoreU(m[j], d, mx + j * P::N);
    for (size_t j = 0; j < kVecs; ++j) hn::StoreU(p[j], d, px + j * P::N);
    for (size_t j = 0; j < kVecs * P::kParts; ++j) hn::StoreU(s[j], dd, sm + j * P::ND);
  }
};

/// Feeds whole rounds x[0..n) one by one (each the fast step when no reference moves, else the
/// general step); `done` rounds of the current block were fed before; returns that count after.
/// The slow path of LseRoundsOf (blocks that fail their test, a stream's head and tail), out of
/// line, one call per stretch so the state stays in registers within it. Inlined at those four
/// places, and with the prefetch a template parameter, this file took three times as long to
/// build (g++ 12, five targets: 64 s against 22; under ASan at -O1 137 s against 44) for a path
/// that is hot only on rows whose references keep moving (ascending rows: ~3% slower now).
template <bool kFused, class T>
HWY_NOINLINE int LseRoundByRound(T* HWY_RESTRICT mx, double* HWY_RESTRICT sm, T* HWY_RESTRICT px,
                                 const T* HWY_RESTRICT x, index_t n, int done, index_t ahead) {
  using P = SumParts<T>;
  using V = typename P::V;
  constexpr size_t kVecs = LseRegs<T>::kVecs;
  const typename P::DT d;
  LseRegs<T> st;
  st.Load(mx, sm, px);
  for (index_t i = 0; i < n; i += reduce_lanes) {
    if (ahead > 0) PrefetchAhead<reduce_lanes * sizeof(T)>(x + i, ahead);
    V v[kVecs];
    bool stays = st.finite;  // no lane's reference moves in this round, and none is ±inf or NaN
    HWY_UNROLL(16)
    for (size_t j = 0; j < kVecs; ++j) {
      v[j] = hn::LoadU(d, x + i + j * P::N);
      stays = stays && hn::AllTrue(d, hn::Le(v[j], st.limit[j]));  // (one test of all vectors: slower)
    }
    if (HWY_LIKELY(stays)) {
      // the general step with m' = m: no rescale, and x - m' is x - m (0 where x == m, so the
      // same bits)
      HWY_UNROLL(16)
      for (size_t j = 0; j < kVecs; ++j) st.p[j] = hn::Add(st.p[j], Exp<kFused>(d, hn::Sub(v[j], st.m[j])));
    } else {
      st.finite = true;
      for (size_t j = 0; j < kVecs; ++j) {
        V mj = st.m[j];
        GeneralStep<kFused, false, T>(mj, st.s + j * P::kParts, st.p[j], v[j], 0, 0, 0);
        st.SetReference(j, mj);
      }
    }
    if (++done == lse_block_rounds) {
      done = 0;
      HWY_UNROLL(16)
      for (size_t j = 0; j < kVecs; ++j) Flush<T>(st.s + j * P::kParts, st.p[j]);
    }
  }
  st.Store(mx, sm, px);
  return done;
}

/// Feeds whole rounds x[0..n) (n a multiple of 32, x[0] meeting lane 0) to the state's arrays;
/// `done` rounds of the current block were fed before. ahead > 0: x comes from memory, prefetched
/// this far ahead (a branch per block, not a template parameter: one copy of this code per FMA
/// policy, type and target). fresh: nothing was fed since lse_init (the state is the initial one).
template <bool kFused, class T>
HWY_NOINLINE void LseRoundsOf(T* HWY_RESTRICT mx, double* HWY_RESTRICT sm, T* HWY_RESTRICT px, const T* HWY_RESTRICT x,
                              index_t n, int done, index_t ahead, bool fresh) {
  using P = SumParts<T>;
  using V = typename P::V;
  const typename P::DT d;
  constexpr size_t N = P::N;
  constexpr size_t kVecs = LseRegs<T>::kVecs;
  LseRegs<T> st;
  st.Load(mx, sm, px);
  auto& m = st.m;
  auto& limit = st.limit;
  auto& p = st.p;
  auto& s = st.s;
  // The rounds [from, to) one by one, through the state's arrays.
  const auto rounds = [&](index_t from, index_t to) HWY_ATTR __attribute__((always_inline)) {
    if (from >= to) return;
    st.Store(mx, sm, px);
    done = LseRoundByRound<kFused, T>(mx, sm, px, x + from, to - from, done, ahead);
    st.Load(mx, sm, px);
  };
  // Whole blocks of lse_block_rounds rounds take the fast steps for every element only if no
  // element is above its lane's limit (and none is NaN); a block that fails goes round by
  // round, as above. Each lane sees the same operations either way; the branch per vector and
  // exp's overflow clamp (x - m <= 8 here) had cost 21% of the loop.
  constexpr index_t kBlock = reduce_lanes * lse_block_rounds;
  static_assert(lse_block_rounds >= 2, "block_from(i, 1) takes the rounds after a block's first");
  // block_from(at, first): rounds first.. of the block at x + at.
#if CT_KERNELS_HAVE_SCALEF
  bool normal_range = true;  // the last block's x - m were all in ExpNormal's range (normal_min up)
#endif
  const auto block_from = [&](index_t at, auto first) HWY_ATTR __attribute__((always_inline)) {
    if (ahead > 0) PrefetchAhead<kBlock * sizeof(T)>(x + at, ahead);
#if CT_KERNELS_HAVE_SCALEF
    // AVX-512: the fast steps run first, into copies of the partials, and the block is tested
    // after them: the largest element of each reference vector against its limit (a tree of
    // maxima on the adding ports, where a compare per vector competed with exp's FMAs: 7.5 ->
    // 6.8 cycles per 16 floats in L1 on the Zen 5 guest), and the partials for NaN. The maxima
    // may drop a NaN (x86 max returns its second operand), but exp passes one on (x is never
    // clamped here: ExpClamp), so a NaN element leaves a NaN partial; with every element at
    // most its limit and the references finite nothing else makes one. The test accepts
    // exactly the blocks the element-by-element test did, and a block that fails leaves the
    // state as it was.
    // With fused FMAs the exps take ExpNormal while the last block's x - m stayed in its
    // range; a block that leaves it (a -inf, a masked row) is done again with Exp, and the
    // next one starts with Exp.
    V top[kVecs], pb[kVecs], bottom[kVecs];
    const auto start = [&] HWY_ATTR __attribute__((always_inline)) {
      HWY_UNROLL(16)
      for (size_t j = 0; j < kVecs; ++j) {
        pb[j] = p[j];
        top[j] = hn::Set(d, -std::numeric_limits<T>::infinity());
        bottom[j] = hn::Set(d, std::numeric_limits<T>::infinity());
      }
    };
    start();
    const bool normal = kFused && normal_range;  // (FastRounds<false, false> where not fused)
    if (normal) FastRounds<kFused, kFused>(x + at, decltype(first)::value, m, pb, top, bottom);
    else FastRounds<kFused, false>(x + at, decltype(first)::value, m, pb, top, bottom);
    auto ok = hn::And(hn::Le(top[0], limit[0]), hn::Eq(pb[0], pb[0]));
    auto in_range = hn::Ge(bottom[0], hn::Set(d, exp_constants<T>::normal_min));
    HWY_UNROLL(16)
    for (size_t j = 1; j < kVecs; ++j) {
      ok = hn::And(ok, hn::And(hn::Le(top[j], limit[j]), hn::Eq(pb[j], pb[j])));
      in_range = hn::And(in_range, hn::Ge(bottom[j], hn::Set(d, exp_constants<T>::normal_min)));
    }
    if (HWY_UNLIKELY(!st.finite || !hn::AllTrue(d, ok))) {
      rounds(at + decltype(first)::value * reduce_lanes, at + kBlock);
      return;
    }
    normal_range = hn::AllTrue(d, in_range);
    if (HWY_UNLIKELY(normal && !normal_range)) {  // a result below ExpNormal's range
      start();
      FastRounds<kFused, false>(x + at, decltype(first)::value, m, pb, top, bottom);
    }
    HWY_UNROLL(16)
    for (size_t j = 0; j < kVecs; ++j) p[j] = pb[j];
#else
    // Elsewhere every element is tested first, with one branch, and then the fast steps run
    // back to back (without vscalef, exp on a NaN needs its NaN select: the test goes first).
    constexpr size_t kFirst = decltype(first)::value * kVecs;  // the first vector
    // one chain of tests per reference vector, joined at the end (short dependency chains)
    hn::Mask<typename P::DT> ok[kVecs];
    HWY_UNROLL(16)
    for (size_t j = 0; j < kVecs; ++j) ok[j] = hn::Le(hn::LoadU(d, x + at + (kFirst + j) * N), limit[j]);
    HWY_UNROLL(16)
    for (size_t k = kFirst + kVecs; k < kVecs * lse_block_rounds; ++k)
      ok[k % kVecs] = hn::And(ok[k % kVecs], hn::Le(hn::LoadU(d, x + at + k * N), limit[k % kVecs]));
    HWY_UNROLL(16)
    for (size_t j = 1; j < kVecs; ++j) ok[0] = hn::And(ok[0], ok[j]);
    if (HWY_UNLIKELY(!st.finite || !hn::AllTrue(d, ok[0]))) {
      rounds(at + decltype(first)::value * reduce_lanes, at + kBlock);
      return;
    }
    HWY_UNROLL(16)
    for (size_t k = kFirst; k < kVecs * lse_block_rounds; ++k)
      p[k % kVecs] = hn::Add(p[k % kVecs], Exp<kFused, true>(d, hn::Sub(hn::LoadU(d, x + at + k * N), m[k % kVecs])));
#endif
    HWY_UNROLL(16)
    for (size_t j = 0; j < kVecs; ++j) Flush<T>(s + j * P::kParts, p[j]);
    done = 0;
  };
  index_t i = 0;
  if (done != 0) {  // the rest of a block begun by an earlier call
    i = std::min(n, static_cast<index_t>(lse_block_rounds - done) * reduce_lanes);
    rounds(0, i);
  }
  // A row's first round moves every lane's reference from -inf (the general step); the rest of
  // its block then goes as any block does, not round by round (rows of 4096 in L2: 4-8%
  // faster on a Xeon 6 guest).
  if (!st.finite && i + kBlock <= n) {
    // A fresh state (every reference -inf, every partial and sum 0) meeting finite elements:
    // the general step makes each element its lane's reference, with the term exp(0) = 1 and
    // the sums 0 still. Done directly here, without the general step's rescaling exps (their
    // call was ~8% of a row of 4096 in L2 on the Zen 5 guest).
    bool finite = fresh;
    V v[kVecs];
    HWY_UNROLL(16)
    for (size_t j = 0; j < kVecs; ++j) {
      v[j] = hn::LoadU(d, x + i + j * N);
      finite = finite && hn::AllTrue(d, hn::IsFinite(v[j]));
    }
    if (finite) {
      st.finite = true;
      HWY_UNROLL(16)
      for (size_t j = 0; j < kVecs; ++j) {
        st.SetReference(j, v[j]);
        p[j] = hn::Set(d, T(1));
      }
      done = 1;
    } else {
      rounds(i, i + reduce_lanes);
    }
    block_from(i, std::integral_constant<int, 1>());
    i += kBlock;
  }
  for (; i + kBlock <= n; i += kBlock) block_from(i, std::integral_constant<int, 0>());
  st.Store(mx, sm, px);
  if (i < n) LseRoundByRound<kFused, T>(mx, sm, px, x + i, n - i, done, ahead);  // the last rounds
}

/// Feeds lanes [begin, end) of one round from r[begin..end) (a 32-element staging copy; the
/// other entries are ignored): the head and tail of a stream that does not start or end on a
/// round. The caller flushes when this completes a block.
template <bool kFused, class T>
HWY_INLINE void LsePart(T* HWY_RESTRICT mx, double* HWY_RESTRICT sm, T* HWY_RESTRICT px, const T* HWY_RESTRICT r,
                        int begin, int end) {
  using P = SumParts<T>;
  const typename P::DT d;
  const typename P::DD dd;
  constexpr size_t N = P::N, ND = P::ND;
  for (size_t j = 0; j < reduce_lanes / N; ++j) {
    const int first = static_cast<int>(j * N);
    if (first + static_cast<int>(N) <= begin || first >= end) continue;
    auto m = hn::LoadU(d, mx + j * N);
    auto p = hn::LoadU(d, px + j * N);
    typename P::VD s[P::kParts];
    for (size_t k = 0; k < P::kParts; ++k) s[k] = hn::LoadU(dd, sm + (j * P::kParts + k) * ND);
    GeneralStep<kFused, true, T>(m, s, p, hn::LoadU(d, r + j * N), first, begin, end);
    hn::StoreU(m, d, mx + j * N);
    hn::StoreU(p, d, px + j * N);
    for (size_t k = 0; k < P::kParts; ++k) hn::StoreU(s[k], dd, sm + (j * P::kParts + k) * ND);
  }
}

/// lse_result's work on the 32 lanes (max: references, sum and part: a lane's sum in double
/// and its partial in T): NaN if any of them is NaN, else the largest reference top, and when
/// top is finite out[k] = (sum[k] + part[k]) * exp(max[k] - top). The same operations as the
/// scalar loops lane by lane; done in vectors because the scalar NaN tests and the chain of
/// 32 dependent maxima were a third of the time of a row of 1024 (Xeon 6 guest).
template <bool kFused, class T>
HWY_INLINE double LseCombine(const T* HWY_RESTRICT mx, const double* HWY_RESTRICT sm, const T* HWY_RESTRICT px,
                             double* HWY_RESTRICT out) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<T, decltype(dd)> dt;  // as many T lanes as dd has doubles
  using VD = hn::Vec<decltype(dd)>;
  constexpr size_t ND = HWY_LANES(double);
  const auto as_double = [&](const T* p) HWY_ATTR {
    if constexpr (std::is_same_v<T, double>) return hn::LoadU(dd, p);
    else return hn::PromoteTo(dd, hn::LoadU(dt, p));
  };
  VD top = hn::Set(dd, -std::numeric_limits<double>::infinity());
  VD nan = hn::Zero(dd);  // all-ones in a lane that met a NaN
  VD sums[reduce_lanes / ND];
  for (size_t k = 0; k < reduce_lanes; k += ND) {
    const VD m = as_double(mx + k), s = hn::LoadU(dd, sm + k), p = as_double(px + k);
    nan = hn::Or(nan, hn::VecFromMask(dd, hn::Or(hn::IsNaN(m), hn::Or(hn::IsNaN(s), hn::IsNaN(p)))));
    top = hn::Max(top, m);
    sums[k / ND] = hn::Add(s, p);
  }
  if (!hn::AllFalse(dd, hn::MaskFromVec(nan))) return std::numeric_limits<double>::quiet_NaN();
  const double t = hn::GetLane(hn::MaxOfLanes(dd, top));
  if (!std::isfinite(t)) return t;  // -inf: only -inf or nothing was fed; +inf: an element was +inf
  const VD tv = hn::Set(dd, t);
  for (size_t k = 0; k < reduce_lanes; k += ND)
    hn::StoreU(hn::Mul(sums[k / ND], ExpOrZero<kFused>(dd, hn::Sub(as_double(mx + k), tv))), dd, out + k);  // a lane at -inf: 0
  return t;
}
double LseCombineF32(const float* mx, const double* sm, const float* px, double* out, bool fused) {
  return fused ? LseCombine<true>(mx, sm, px, out) : LseCombine<false>(mx, sm, px, out);
}
double LseCombineF64(const double* mx, const double* sm, const double* px, double* out, bool fused) {
  return fused ? LseCombine<true>(mx, sm, px, out) : LseCombine<false>(mx, sm, px, out);
}

template <class T>
using lse_rounds_fn = void (*)(T*, double*, T*, const T*, index_t, int, index_t, bool);
template <class T>
using lse_part_fn = void (*)(T*, double*, T*, const T*, int, int);

lse_rounds_fn<float> LseRoundsF32(bool fused) { return fused ? &LseRoundsOf<true, float> : &LseRoundsOf<false, float>; }
lse_rounds_fn<double> LseRoundsF64(bool fused) { return fused ? &LseRoundsOf<true, double> : &LseRoundsOf<false, double>; }
lse_part_fn<float> LsePartF32(bool fused) { return fused ? &LsePart<true, float> : &LsePart<false, float>; }
lse_part_fn<double> LsePartF64(bool fused) { return fused ? &LsePart<true, double> : &LsePart<false, double>; }

}  // namespace HWY_NAMESPACE
}  // namespace ct::detail::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ct::detail::kernels {

HWY_EXPORT(LseRoundsF32);
HWY_EXPORT(LseRoundsF64);
HWY_EXPORT(LsePartF32);
HWY_EXPORT(LsePartF64);
HWY_EXPORT(LseCombineF32);
HWY_EXPORT(LseCombineF64);

namespace {

/// Feeds x[0..n) with by_lane_rounds' split: the head and the tail through staged partial
/// rounds, the whole rounds in between through `rounds`.
template <class T, class Rounds, class Part>
void lse_stream(lse_state<T>& st, const T* x, index_t n, Rounds rounds, Part part, index_t ahead) {
  by_lane_rounds(
      st, n,
      [&](index_t at, index_t len) {
        if (len == 0) return;
        const int begin = static_cast<int>(st.count % reduce_lanes);
        T staged[reduce_lanes] = {};
        std::copy(x + at, x + at + len, staged + begin);
        part(st.max, st.sum, st.part, staged, begin, begin + static_cast<int>(len));
        st.count += len;
        if (st.count % (reduce_lanes * lse_block_rounds) == 0) lse_flush(st);  // completed a block
      },
      [&](index_t at, index_t len, bool fresh) {
        rounds(st.max, st.sum, st.part, x + at, len, static_cast<int>(st.count / reduce_lanes % lse_block_rounds), ahead,
               fresh);
      });
}

}  // namespace

void simd_lse(lse_state<float>& st, const float* x, index_t n, bool fused, index_t ahead) {
  lse_stream(st, x, n, HWY_DYNAMIC_DISPATCH(LseRoundsF32)(fused), HWY_DYNAMIC_DISPATCH(LsePartF32)(fused), ahead);
}
void simd_lse(lse_state<double>& st, const double* x, index_t n, bool fused, index_t ahead) {
  lse_stream(st, x, n, HWY_DYNAMIC_DISPATCH(LseRoundsF64)(fused), HWY_DYNAMIC_DISPATCH(LsePartF64)(fused), ahead);
}

double simd_lse_combine(const float* max, const double* sum, const float* part, double* out, bool fused) noexcept {
  return HWY_DYNAMIC_DISPATCH(LseCombineF32)(max, sum, part, out, fused);
}
double simd_lse_combine(const double* max, const double* sum, const double* part, double* out, bool fused) noexcept {
  return HWY_DYNAMIC_DISPATCH(LseCombineF64)(max, sum, part, out, fused);
}

}  // namespace ct::detail::kernels
#endif  // HWY_ONCE
