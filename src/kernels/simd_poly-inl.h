// src/kernels/simd_poly-inl.h — building blocks of the simd transcendentals: the FMA policy as
// a compile-time switch, Horner evaluation, and exact powers of two.
//
// Per-target header (included once per Highway target through foreach_target.h).
#if defined(CT_KERNELS_SIMD_POLY_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CT_KERNELS_SIMD_POLY_INL_H_
#undef CT_KERNELS_SIMD_POLY_INL_H_
#else
#define CT_KERNELS_SIMD_POLY_INL_H_
#endif

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace ct::detail::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// a*b + c under the FMA policy: one rounding (kFused) or two. Every polynomial and reduction
/// step of the simd math goes through here, so the policy changes all of them together.
/// Targets without an FMA unit (SSSE3, SSE4, scalar) emulate hn::MulAdd with two roundings,
/// so there the two policies coincide in these functions (muladd itself stays exact).
template <bool kFused, class V>
HWY_INLINE V Fma(V a, V b, V c) {
  if constexpr (kFused)
    return hn::MulAdd(a, b, c);
  else
    return hn::Add(hn::Mul(a, b), c);
}

/// c - a*b under the FMA policy.
template <bool kFused, class V>
HWY_INLINE V Fnma(V a, V b, V c) {
  if constexpr (kFused)
    return hn::NegMulAdd(a, b, c);
  else
    return hn::Sub(c, hn::Mul(a, b));
}

/// c0 + x*(c1 + x*(c2 + …)) by Horner's rule; coefficients are given as doubles and rounded
/// once to the lane type.
template <bool kFused, class D, class V, class... C>
HWY_INLINE V Horner(D d, V x, double c0, C... rest) {
  if constexpr (sizeof...(rest) == 0) {
    return hn::Set(d, static_cast<hn::TFromD<D>>(c0));
  } else {
    return Fma<kFused>(Horner<kFused>(d, x, rest...), x, hn::Set(d, static_cast<hn::TFromD<D>>(c0)));
  }
}

/// Error-free product: hi + lo == a*b exactly (barring over/underflow). Fused: one FMA
/// recovers the error; separate (or no FMA unit, where hn::MulSub would round twice):
/// Dekker's product on Veltkamp halves, multiplies and adds only.
template <bool kFused, class D, class V>
HWY_INLINE V TwoProd(D d, V a, V b, V& lo) {
  const V hi = hn::Mul(a, b);
  if constexpr (kFused && HWY_NATIVE_FMA) {
    lo = hn::MulSub(a, b, hi);
  } else {
    using T = hn::TFromD<D>;
    const V split = hn::Set(d, sizeof(T) == 4 ? T(4097) : T(134217729));  // 2^12+1 / 2^27+1
    const auto halves = [&](V v, V& v_lo) {
      const V t = hn::Mul(split, v);
      const V v_hi = hn::Sub(t, hn::Sub(t, v));
      v_lo = hn::Sub(v, v_hi);
      return v_hi;
    };
    V a_lo, b_lo;
    const V a_hi = halves(a, a_lo), b_hi = halves(b, b_lo);
    const V e1 = hn::Sub(hn::Mul(a_hi, b_hi), hi);
    const V e2 = hn::Add(e1, hn::Mul(a_hi, b_lo));
    const V e3 = hn::Add(e2, hn::Mul(a_lo, b_hi));
    lo = hn::Add(e3, hn::Mul(a_lo, b_lo));
  }
  return hi;
}

/// Error-free sum: hi + lo == a + b exactly (Knuth's branch-free form).
template <class V>
HWY_INLINE V TwoSum(V a, V b, V& lo) {
  const V s = hn::Add(a, b);
  const V bb = hn::Sub(s, a);
  lo = hn::Add(hn::Sub(a, hn::Sub(s, bb)), hn::Sub(b, bb));
  return s;
}

/// IEEE layout of the lane type.
template <class T>
struct float_bits;
template <>
struct float_bits<float> {
  static constexpr int mantissa = 23;
  static constexpr int bias = 127;
};
template <>
struct float_bits<double> {
  static constexpr int mantissa = 52;
  static constexpr int bias = 1023;
};

/// Float whose integral value k (|k| < 2^(mantissa-1)) sits in the low mantissa bits, and its
/// inverse: integer <-> float conversion by one add, for either lane width.
template <class D>
HWY_INLINE hn::Vec<D> Shifter(D d) {
  using T = hn::TFromD<D>;
  return hn::Set(d, T(1.5) * static_cast<T>(1ull << float_bits<T>::mantissa));
}

/// 2^k for integral-valued k in the normal exponent range.
template <class D>
HWY_INLINE hn::Vec<D> Pow2(D d, hn::Vec<D> k) {
  using T = hn::TFromD<D>;
  const hn::RebindToSigned<D> di;
  const auto shifter = Shifter(d);
  const auto ki = hn::Sub(hn::BitCast(di, hn::Add(k, shifter)), hn::BitCast(di, shifter));
  const auto biased = hn::Add(ki, hn::Set(di, static_cast<hn::TFromD<decltype(di)>>(float_bits<T>::bias)));
  return hn::BitCast(d, hn::ShiftLeft<float_bits<T>::mantissa>(biased));
}

/// v * 2^k for integral k: exact unless the product leaves the normal range, where it
/// over/underflows with one rounding. 2^k alone may not be representable, so the general path
/// splits it into two factors whose first product stays exact. When every lane's k is moderate
/// one factor suffices; the callers' products are then normal, hence exact either way, so both
/// paths give the same bits.
#undef CT_KERNELS_HAVE_SCALEF  // this header is read once per Highway target
#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
#define CT_KERNELS_HAVE_SCALEF 1
#else
#define CT_KERNELS_HAVE_SCALEF 0
#endif
#if CT_KERNELS_HAVE_SCALEF
// AVX-512 computes v * 2^floor(k) with one rounding in one instruction (vscalef): the same
// bits as the portable path below (exact in the normal range, one rounding on over- or
// underflow), in one instruction instead of about nine. Float exp went from 9.6 to 7.9
// cycles per 16 elements, logsumexp of 4096x4096 from 6.1 to 5.6 ms.
HWY_INLINE __m512 ScaleFRaw(__m512 v, __m512 k) { return _mm512_scalef_ps(v, k); }
HWY_INLINE __m512d ScaleFRaw(__m512d v, __m512d k) { return _mm512_scalef_pd(v, k); }
HWY_INLINE __m256 ScaleFRaw(__m256 v, __m256 k) { return _mm256_scalef_ps(v, k); }
HWY_INLINE __m256d ScaleFRaw(__m256d v, __m256d k) { return _mm256_scalef_pd(v, k); }
HWY_INLINE __m128 ScaleFRaw(__m128 v, __m128 k) { return _mm_scalef_ps(v, k); }
HWY_INLINE __m128d ScaleFRaw(__m128d v, __m128d k) { return _mm_scalef_pd(v, k); }
// The lanes of x not below lo (a NaN counts as not below), and vscalef under such a mask with
// +0 in the other lanes: a masked-off lane is not computed, so it cannot underflow (which
// costs a microcode assist on Intel cores).
HWY_INLINE __mmask16 NotBelowRaw(__m512 x, __m512 lo) { return _mm512_cmp_ps_mask(x, lo, _CMP_NLT_UQ); }
HWY_INLINE __mmask8 NotBelowRaw(__m512d x, __m512d lo) { return _mm512_cmp_pd_mask(x, lo, _CMP_NLT_UQ); }
HWY_INLINE __mmask8 NotBelowRaw(__m256 x, __m256 lo) { return _mm256_cmp_ps_mask(x, lo, _CMP_NLT_UQ); }
HWY_INLINE __mmask8 NotBelowRaw(__m256d x, __m256d lo) { return _mm256_cmp_pd_mask(x, lo, _CMP_NLT_UQ); }
HWY_INLINE __mmask8 NotBelowRaw(__m128 x, __m128 lo) { return _mm_cmp_ps_mask(x, lo, _CMP_NLT_UQ); }
HWY_INLINE __mmask8 NotBelowRaw(__m128d x, __m128d lo) { return _mm_cmp_pd_mask(x, lo, _CMP_NLT_UQ); }
HWY_INLINE __m512 ScaleFZeroRaw(__mmask16 m, __m512 v, __m512 k) { return _mm512_maskz_scalef_ps(m, v, k); }
HWY_INLINE __m512d ScaleFZeroRaw(__mmask8 m, __m512d v, __m512d k) { return _mm512_maskz_scalef_pd(m, v, k); }
HWY_INLINE __m256 ScaleFZeroRaw(__mmask8 m, __m256 v, __m256 k) { return _mm256_maskz_scalef_ps(m, v, k); }
HWY_INLINE __m256d ScaleFZeroRaw(__mmask8 m, __m256d v, __m256d k) { return _mm256_maskz_scalef_pd(m, v, k); }
HWY_INLINE __m128 ScaleFZeroRaw(__mmask8 m, __m128 v, __m128 k) { return _mm_maskz_scalef_ps(m, v, k); }
HWY_INLINE __m128d ScaleFZeroRaw(__mmask8 m, __m128d v, __m128d k) { return _mm_maskz_scalef_pd(m, v, k); }
#endif

#if !CT_KERNELS_HAVE_SCALEF
/// Whether one factor 2^k scales every lane (|k| moderate: 2^k representable, and the callers'
/// products then normal).
template <class D>
HWY_INLINE bool OneFactorScales(D d, hn::Vec<D> k) {
  using T = hn::TFromD<D>;
  return hn::AllTrue(d, hn::Le(hn::Abs(k), hn::Set(d, sizeof(T) == 4 ? T(120) : T(1000))));
}

/// v * 2^k in two factors, each representable, whose first product stays exact.
template <class D>
HWY_INLINE hn::Vec<D> ScaleByTwoFactors(D d, hn::Vec<D> v, hn::Vec<D> k) {
  using T = hn::TFromD<D>;
  const auto k1 = hn::Floor(hn::Mul(k, hn::Set(d, T(0.5))));
  const auto k2 = hn::Sub(k, k1);
  return hn::Mul(hn::Mul(v, Pow2(d, k1)), Pow2(d, k2));
}
#endif

template <class D>
HWY_INLINE hn::Vec<D> ScaleByPow2(D d, hn::Vec<D> v, hn::Vec<D> k) {
#if CT_KERNELS_HAVE_SCALEF
  (void)d;
  hn::Vec<D> r;
  r.raw = ScaleFRaw(v.raw, k.raw);
  return r;
#else
  if (HWY_LIKELY(OneFactorScales(d, k))) return hn::Mul(v, Pow2(d, k));
  return ScaleByTwoFactors(d, v, k);
#endif
}

/// ScaleByPow2(v, k) in the lanes whose x is not below lo (a NaN counts as not below), +0 in
/// the others, where the caller's clamp leaves a scaled result that rounds to +0 anyway. Such
/// lanes are not scaled, so they cannot underflow: an underflowing vscalef or multiply costs a
/// microcode assist of hundreds of cycles on Intel cores. AVX-512 masks them off vscalef; the
/// other targets zero them on the two-factor path their scale then takes (a scale that one
/// factor covers in every lane cannot underflow).
template <class D>
HWY_INLINE hn::Vec<D> ScaleByPow2Above(D d, hn::Vec<D> v, hn::Vec<D> k, hn::Vec<D> x, hn::TFromD<D> lo) {
#if CT_KERNELS_HAVE_SCALEF
  hn::Vec<D> r;
  r.raw = ScaleFZeroRaw(NotBelowRaw(x.raw, hn::Set(d, lo).raw), v.raw, k.raw);
  return r;
#else
  if (HWY_LIKELY(OneFactorScales(d, k))) return hn::Mul(v, Pow2(d, k));
  return ScaleByTwoFactors(d, hn::IfThenZeroElse(hn::Lt(x, hn::Set(d, lo)), v), k);
#endif
}

/// Evaluates f (a function of double lanes) on float lanes: each half is promoted to double,
/// mapped and demoted back. Used where float needs more than float precision internally.
template <class D, class F>
HWY_INLINE hn::Vec<D> InDouble(D d, hn::Vec<D> x, F f) {
  static_assert(sizeof(hn::TFromD<D>) == 4, "for float lanes");
#if HWY_TARGET == HWY_SCALAR
  // One lane: no halves. Converted by the compiler, not hn::DemoteTo, which on this target
  // saturates ±inf and out-of-range values to ±FLT_MAX (Highway 1.0.3): gelu(inf) came out
  // 3.4e38. The vector targets' conversion rounds once like a cast (inf stays inf).
  const hn::Rebind<double, D> dd;
  const double y = hn::GetLane(f(dd, hn::PromoteTo(dd, x)));
  return hn::Set(d, static_cast<float>(y));
#else
  const hn::Half<D> dh;
  const hn::Repartition<double, D> dd;
  const auto lo = f(dd, hn::PromoteTo(dd, hn::LowerHalf(dh, x)));
  const auto hi = f(dd, hn::PromoteTo(dd, hn::UpperHalf(dh, x)));
  return hn::Combine(d, hn::DemoteTo(dh, hi), hn::DemoteTo(dh, lo));
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace ct::detail::kernels
HWY_AFTER_NAMESPACE();

#endif  // include guard
