// src/kernels/simd_exp-inl.h — exp and expm1 for the simd backend.
//
// x = k*ln2 + r with k = round(x/ln2) and |r| <= ln2/2 (Cody-Waite: ln2 split so that k*ln2_hi
// is exact). e^r - 1 is a Taylor polynomial of r, long enough that its truncation error is far
// below half an ulp; then e^x = 2^k (1 + p) and e^x - 1 = 2^k (p + (1 - 2^-k)).
#if defined(CT_KERNELS_SIMD_EXP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CT_KERNELS_SIMD_EXP_INL_H_
#undef CT_KERNELS_SIMD_EXP_INL_H_
#else
#define CT_KERNELS_SIMD_EXP_INL_H_
#endif

#include <hwy/highway.h>

#include <type_traits>

#include "src/kernels/exp_table.hpp"
#include "src/kernels/simd_poly-inl.h"

HWY_BEFORE_NAMESPACE();
namespace ct::detail::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class T>
struct exp_constants;
template <>
struct exp_constants<float> {
  // ln2_hi has 9 significant bits: k*ln2_hi is exact for every k this code produces.
  static constexpr float ln2_hi = 0.693359375f, ln2_lo = -2.12194440054690583e-4f;
  static constexpr float exp_min = -104.0f, exp_max = 89.0f;  // beyond: 0 / inf after scaling
  static constexpr float expm1_min = -18.0f;                  // below: -1 to float precision
  static constexpr float expm1_k_max = 30.0f;                 // 1 - 2^-k == 1 above this
};
template <>
struct exp_constants<double> {
  // ln2_hi has 32 significant bits (the classic fdlibm split).
  static constexpr double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
  static constexpr double exp_min = -746.0, exp_max = 710.0;
  static constexpr double expm1_min = -40.0;
  static constexpr double expm1_k_max = 60.0;
};

/// e^r - 1 for |r| <= ~0.35: r + r^2 (1/2! + r/3! + …). Degree 7 (float) / 13 (double) leaves a
/// truncation error below 2^-27 / 2^-57 relative.
/// The float polynomial is evaluated as three linear pieces combined in r^2 (Estrin's scheme):
/// the same operation count as Horner's rule but half its dependency chain, which is what
/// limited exp's throughput (8.5 -> 7.7 cycles per 16 floats on AVX-512 in a microbenchmark).
template <bool kFused, class D, class V>
HWY_INLINE V ExpM1Reduced(D d, V r) {
  using T = hn::TFromD<D>;
  V q;
  if constexpr (sizeof(T) == 4) {
    const V r2 = hn::Mul(r, r);
    const V lo = Fma<kFused>(hn::Set(d, T(1.0 / 6)), r, hn::Set(d, T(1.0 / 2)));
    const V mid = Fma<kFused>(hn::Set(d, T(1.0 / 120)), r, hn::Set(d, T(1.0 / 24)));
    const V hi = Fma<kFused>(hn::Set(d, T(1.0 / 5040)), r, hn::Set(d, T(1.0 / 720)));
    q = Fma<kFused>(Fma<kFused>(hi, r2, mid), r2, lo);
    return Fma<kFused>(r2, q, r);
  } else {
    q = Horner<kFused>(d, r, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320,
                       1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800);
  }
  return Fma<kFused>(hn::Mul(r, r), q, r);
}

/// Splits x (already clamped to a finite range) into k and r = x - k*ln2.
template <bool kFused, class D, class V>
HWY_INLINE V ExpReduce(D d, V x, V& k) {
  using T = hn::TFromD<D>;
  using C = exp_constants<T>;
  k = hn::Round(hn::Mul(x, hn::Set(d, static_cast<T>(1.44269504088896340736))));
  const V r = Fnma<kFused>(k, hn::Set(d, C::ln2_hi), x);  // exact
  return Fnma<kFused>(k, hn::Set(d, C::ln2_lo), r);
}

/// e^(x + x_lo) * 2^scale, for a small integral scale and |x_lo| far below ulp(x) (the tail of
/// an argument held as hi + lo; it joins r after the exact reduction step). Callers that
/// multiply a subnormal e^x by something use the scaled value, so the only rounding into the
/// subnormal range comes last.
template <bool kFused, class D, class V>
HWY_INLINE V ExpScaled(D d, V x, V x_lo, hn::TFromD<D> scale) {
  using C = exp_constants<hn::TFromD<D>>;
  // The clamp only cuts where the result is 0 / inf anyway (a scale of 2^s needs s*ln2 < s more).
  const V xc = hn::Min(hn::Max(x, hn::Set(d, C::exp_min - scale)), hn::Set(d, C::exp_max));
  V k;
  const V r = hn::Add(ExpReduce<kFused>(d, xc, k), x_lo);
  const V e = ScaleByPow2(d, hn::Add(hn::Set(d, 1), ExpM1Reduced<kFused>(d, r)), hn::Add(k, hn::Set(d, scale)));
  return hn::IfThenElse(hn::IsNaN(x), x, e);
}

/// exp2_table32[bits & 31] per lane. A 16-float AVX-512 vector looks the table up in one
/// two-register permute (which reads only the low five index bits); other widths and targets
/// gather. Both are exact loads, so every target gets the same bits.
template <class D, class VI>
HWY_INLINE hn::Vec<D> Exp2Table32(D d, VI bits) {
#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
  if constexpr (std::is_same_v<decltype(hn::Vec<D>().raw), __m512>) {
    hn::Vec<D> v;
    v.raw = _mm512_permutex2var_ps(_mm512_load_ps(exp2_table32), bits.raw, _mm512_load_ps(exp2_table32 + 16));
    return v;
  }
#endif
  const hn::RebindToSigned<D> di;
  return hn::GatherIndex(d, exp2_table32, hn::And(bits, hn::Set(di, 31)));
}

/// Float e^x with a 32-entry table: x = (32m + j)·ln2/32 + r, |r| <= ln2/64, and
/// e^x = 2^m · 2^(j/32) · e^r. The short r needs only a cubic for e^r − 1 (truncation below
/// 2^-30 relative); with the table lookup this is 13 vector operations against 15 for the
/// degree-7 polynomial over |r| <= ln2/2, and measured 30% faster on AVX-512 (4.1 -> 2.8 TSC
/// ticks per 16 floats in L1); maximum error 1.00 / 1.01 ulp (fused / separate FMA policy,
/// docs/kernels.md) against 1.02 / 0.99 for the polynomial.
/// The integer 32m + j comes from adding 1.5·2^23 (it then sits in the low mantissa bits of
/// t, whose low five bits index the table), and 2^m is applied last by ScaleByPow2, so
/// overflow gives inf and underflow rounds once, as before.
template <bool kFused, class D, class V>
HWY_INLINE V ExpF32(D d, V x) {
  using C = exp_constants<float>;
  const hn::RebindToSigned<D> di;
#if CT_KERNELS_HAVE_SCALEF
  // x86 max/min return their second operand when either is NaN, so with x second a NaN passes
  // the clamp and every later step returns it: no NaN select needed.
  const V xc = hn::Min(hn::Set(d, C::exp_max), hn::Max(hn::Set(d, C::exp_min), x));
#else
  const V xc = hn::Min(hn::Max(x, hn::Set(d, C::exp_min)), hn::Set(d, C::exp_max));
#endif
  const V shifter = Shifter(d);
  const V t = Fma<kFused>(xc, hn::Set(d, 46.16624130844682903551f), shifter);  // 32/ln2
  const V k = hn::Sub(t, shifter);                                             // 32m + j, exact
  // ln2_hi/32 has 9 significant bits and |k| < 2^13: k * ln2_hi/32 is exact.
  V r = Fnma<kFused>(k, hn::Set(d, C::ln2_hi / 32), xc);
  r = Fnma<kFused>(k, hn::Set(d, C::ln2_lo / 32), r);
  const V q = Fma<kFused>(hn::Set(d, 1.0f / 6), r, hn::Set(d, 0.5f));
  const V p = Fma<kFused>(hn::Mul(r, r), q, r);  // e^r - 1
  const V tab = Exp2Table32(d, hn::BitCast(di, t));
  const V e = Fma<kFused>(tab, p, tab);
  const V m = hn::Mul(k, hn::Set(d, 1.0f / 32));  // exact; its floor is m
#if CT_KERNELS_HAVE_SCALEF
  return ScaleByPow2(d, e, m);  // vscalef applies 2^floor(m)
#else
  return hn::IfThenElse(hn::IsNaN(x), x, ScaleByPow2(d, e, hn::Floor(m)));
#endif
}

/// e^x by the polynomial over |r| <= ln2/2 (degree 7 float, 13 double). Float exp itself uses
/// the table (ExpF32); sigmoid keeps this one, whose errors are smaller on average: the
/// table's rounded entries moved sigmoid's maximum error from 2.17 to 2.63 ulp.
template <bool kFused, class D, class V>
HWY_INLINE V ExpPoly(D d, V x) {
  using C = exp_constants<hn::TFromD<D>>;
#if CT_KERNELS_HAVE_SCALEF
  // x86 max/min return their second operand when either is NaN, so with x second a NaN passes
  // the clamp, and every later step (round, FMA, vscalef) returns it: no NaN select needed,
  // two instructions fewer. A quiet NaN comes out as itself.
  const V xc = hn::Min(hn::Set(d, C::exp_max), hn::Max(hn::Set(d, C::exp_min), x));
  V k;
  const V r = ExpReduce<kFused>(d, xc, k);
  return ScaleByPow2(d, hn::Add(hn::Set(d, 1), ExpM1Reduced<kFused>(d, r)), k);
#else
  const V xc = hn::Min(hn::Max(x, hn::Set(d, C::exp_min)), hn::Set(d, C::exp_max));
  V k;
  const V r = ExpReduce<kFused>(d, xc, k);
  const V e = ScaleByPow2(d, hn::Add(hn::Set(d, 1), ExpM1Reduced<kFused>(d, r)), k);
  return hn::IfThenElse(hn::IsNaN(x), x, e);
#endif
}

template <bool kFused, class D, class V>
HWY_INLINE V Exp(D d, V x) {
  if constexpr (sizeof(hn::TFromD<D>) == 4)
    return ExpF32<kFused>(d, x);
  else
    return ExpPoly<kFused>(d, x);
}

template <bool kFused, class D, class V>
HWY_INLINE V Expm1(D d, V x) {
  using C = exp_constants<hn::TFromD<D>>;
  const V xc = hn::Min(hn::Max(x, hn::Set(d, C::expm1_min)), hn::Set(d, C::exp_max));
  V k;
  const V r = ExpReduce<kFused>(d, xc, k);
  const V p = ExpM1Reduced<kFused>(d, r);
  // 1 - 2^-k is exact for the k that matter (|k| small); k = 0 leaves p untouched.
  const V one = hn::Set(d, 1);
  const V u = hn::Sub(one, Pow2(d, hn::Neg(hn::Min(k, hn::Set(d, C::expm1_k_max)))));
  const V e = ScaleByPow2(d, hn::Add(p, u), k);
  // x == 0 returns x itself so that expm1(-0) = -0.
  return hn::IfThenElse(hn::Or(hn::IsNaN(x), hn::Eq(x, hn::Zero(d))), x, e);
}

}  // namespace HWY_NAMESPACE
}  // namespace ct::detail::kernels
HWY_AFTER_NAMESPACE();

#endif  // include guard
