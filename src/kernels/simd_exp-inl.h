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
  static constexpr float normal_min = -87.0f;                 // e^x is normal (> 2^-126) from here up
};
template <>
struct exp_constants<double> {
  // ln2_hi has 32 significant bits (the classic fdlibm split).
  static constexpr double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
  static constexpr double exp_min = -746.0, exp_max = 710.0;
  static constexpr double expm1_min = -40.0;
  static constexpr double expm1_k_max = 60.0;
  static constexpr double normal_min = -708.0;  // e^x > 2^-1022 from here up
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
/// The callers pass x <= 0 or NaN (exp(-|t|) for silu and gelu). Below zero_below (at least
/// exp_min - scale, where the clamp makes the result +0 anyway; a caller whose own result is
/// ±0 from a higher x down may pass that x) the result is +0 without being scaled, so it
/// cannot underflow (a microcode assist on Intel cores).
template <bool kFused, class D, class V>
HWY_INLINE V ExpScaled(D d, V x, V x_lo, hn::TFromD<D> scale, hn::TFromD<D> zero_below) {
  using C = exp_constants<hn::TFromD<D>>;
#if CT_KERNELS_HAVE_SCALEF
  // No clamp: the lanes it would cut are masked off the final scaling (ScaleByPow2Above), and
  // their garbage on the way (-inf - -inf) is dropped there; x <= 0 needs no upper clamp.
  const V xc = x;
#else
  // The clamp only cuts where the result is 0 / inf anyway (a scale of 2^s needs s*ln2 < s more).
  const V xc = hn::Min(hn::Max(x, hn::Set(d, C::exp_min - scale)), hn::Set(d, C::exp_max));
#endif
  V k;
  const V r = hn::Add(ExpReduce<kFused>(d, xc, k), x_lo);
  // below the clamp the scaled result is +0: not scaled (ScaleByPow2Above, no underflow assist)
  const V e = ScaleByPow2Above(d, hn::Add(hn::Set(d, 1), ExpM1Reduced<kFused>(d, r)), hn::Add(k, hn::Set(d, scale)), x,
                               zero_below);
  return hn::IfThenElse(hn::IsNaN(x), x, e);
}

/// x clamped to exp's finite range (beyond it the result is 0 / inf after scaling anyway).
/// On AVX-512, where x86 max/min return their second operand when either is NaN, x goes
/// second: a NaN passes the clamp and every later step (round, FMA, permute, vscalef) returns
/// it, so exp needs no final NaN select there. A quiet NaN comes out as itself.
template <class D, class V>
HWY_INLINE V ExpClamp(D d, V x) {
  using C = exp_constants<hn::TFromD<D>>;
#if CT_KERNELS_HAVE_SCALEF
  return hn::Min(hn::Set(d, C::exp_max), hn::Max(hn::Set(d, C::exp_min), x));
#else
  return hn::Min(hn::Max(x, hn::Set(d, C::exp_min)), hn::Set(d, C::exp_max));
#endif
}

/// The table exp's parameters: 2^bits entries 2^(j/2^bits), and 2^bits/ln2.
template <class T>
struct exp_table;
template <>
struct exp_table<float> {
  static constexpr int bits = 5;
  static constexpr const float* values = exp2_table32;
  static constexpr const float* offset_values = exp2_table32_offset.data();
  static constexpr float inv_step = 46.16624130844682903551f;  // 32/ln2
};
template <>
struct exp_table<double> {
  static constexpr int bits = 4;
  static constexpr const double* values = exp2_table16;
  static constexpr const double* offset_values = exp2_table16_offset.data();
  static constexpr double inv_step = 23.083120654223414517758;  // 16/ln2
};

/// table[bits & (size - 1)] per lane. A full AVX-512 vector looks the table up in one
/// two-register permute (32 floats or 16 doubles; it reads only the low index bits); other
/// widths and targets gather. Both are exact loads, so every target gets the same bits.
/// kOffset: exp_table's offset_values instead (ExpNormal).
template <bool kOffset = false, class D, class VI>
HWY_INLINE hn::Vec<D> ExpTableLookup(D d, VI bits) {
  using T = hn::TFromD<D>;
  using E = exp_table<T>;
  const T* values = kOffset ? E::offset_values : E::values;
#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
  if constexpr (std::is_same_v<decltype(hn::Vec<D>().raw), __m512>) {
    hn::Vec<D> v;
    v.raw = _mm512_permutex2var_ps(_mm512_load_ps(values), bits.raw, _mm512_load_ps(values + 16));
    return v;
  } else if constexpr (std::is_same_v<decltype(hn::Vec<D>().raw), __m512d>) {
    hn::Vec<D> v;
    v.raw = _mm512_permutex2var_pd(_mm512_load_pd(values), bits.raw, _mm512_load_pd(values + 8));
    return v;
  }
#endif
  const hn::RebindToSigned<D> di;
  using TI = hn::TFromD<decltype(di)>;
  return hn::GatherIndex(d, values, hn::And(bits, hn::Set(di, static_cast<TI>((1 << E::bits) - 1))));
}

/// The table exp's steps up to the lookup, for x already clamped: t = x·N/ln2 + 1.5·2^(mantissa
/// bits), whose low mantissa bits hold the integer Nm + j (two's complement within them), k =
/// Nm + j, and the result e^r - 1 (Exp below).
template <bool kFused, class D, class V>
HWY_INLINE V ExpTableSteps(D d, V x, V& t, V& k) {
  using T = hn::TFromD<D>;
  using C = exp_constants<T>;
  using E = exp_table<T>;
  constexpr T n = T(1 << E::bits);
  const V shifter = Shifter(d);
  t = Fma<kFused>(x, hn::Set(d, E::inv_step), shifter);
  k = hn::Sub(t, shifter);  // Nm + j, exact
  // ln2_hi has 9 (float) / 32 (double) significant bits and |k| < 2^13 / 2^15: k * ln2_hi/N
  // is exact.
  V r = Fnma<kFused>(k, hn::Set(d, C::ln2_hi / n), x);
  r = Fnma<kFused>(k, hn::Set(d, C::ln2_lo / n), r);
  V q;
  if constexpr (sizeof(T) == 4)
    q = Fma<kFused>(hn::Set(d, T(1.0 / 6)), r, hn::Set(d, T(0.5)));
  else
    q = Horner<kFused>(d, r, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040);
  return Fma<kFused>(hn::Mul(r, r), q, r);  // e^r - 1
}

/// e^x with a table: x = (Nm + j)·ln2/N + r, |r| <= ln2/2N, e^x = 2^m · 2^(j/N) · e^r, with
/// N = 32 entries for float and 16 for double. The short r needs only a cubic (float,
/// truncation below 2^-30 relative) or a degree-7 polynomial (double, below 2^-59) for
/// e^r − 1, against degree 7 / 13 over |r| <= ln2/2 without the table: float 13 vector
/// operations instead of 15 (4.1 -> 2.8 TSC ticks per 16 floats in L1 on AVX-512), double 16
/// instead of 20. Maximum error (docs/kernels.md): float 1.00 / 1.01 ulp (fused / separate FMA
/// policy; 1.02 / 0.99 with the polynomial).
/// The integer Nm + j comes from adding 1.5·2^(mantissa bits) (it then sits in the low
/// mantissa bits of t, whose low bits index the table), and 2^m is applied last by
/// ScaleByPow2, so overflow gives inf and underflow rounds once, as before.
/// kBelowMax: the caller knows x is not NaN and at most exp_max (logsumexp's fast rounds,
/// where x <= 8), so the upper clamp and the NaN select are skipped: the same bits for such x.
template <bool kFused, bool kBelowMax = false, class D, class V>
HWY_INLINE V Exp(D d, V x) {
  using T = hn::TFromD<D>;
  using C = exp_constants<T>;
  using E = exp_table<T>;
  constexpr T n = T(1 << E::bits);
  const hn::RebindToSigned<D> di;
  V xc;
#if CT_KERNELS_HAVE_SCALEF
  // Below exp_min (-inf included) e^x rounds to +0. Rather than clamping such an x to exp_min
  // (whose e^x underflows in vscalef: a microcode assist on Intel cores, which made a softmax
  // row half masked with -inf 5.8x slower on a Xeon 6), its lane is masked off the final
  // scaling (ScaleByPow2Above): the same bits, and the compare costs what the clamp did. The
  // lane's values on the way are garbage (-inf - -inf: NaN) and dropped.
  if constexpr (kBelowMax) xc = x;
  else xc = hn::Min(hn::Set(d, C::exp_max), x);  // x second: a NaN passes (ExpClamp)
#else
  if constexpr (kBelowMax) xc = hn::Max(hn::Set(d, C::exp_min), x);
  else xc = ExpClamp(d, x);
#endif
  V t, k;
  const V p = ExpTableSteps<kFused>(d, xc, t, k);
  const V tab = ExpTableLookup(d, hn::BitCast(di, t));
  const V e = Fma<kFused>(tab, p, tab);
  const V m = hn::Mul(k, hn::Set(d, T(1) / n));  // exact; its floor is m
#if CT_KERNELS_HAVE_SCALEF
  return ScaleByPow2Above(d, e, m, x, C::exp_min);  // vscalef applies 2^floor(m); +0 below exp_min
#else
  // the other targets zero those lanes on their rarely taken two-factor scaling
  const V scaled = ScaleByPow2Above(d, e, hn::Floor(m), x, C::exp_min);
  if constexpr (kBelowMax) return scaled;
  else return hn::IfThenElse(hn::IsNaN(x), x, scaled);
#endif
}

/// Exp<true, true>(x) for x in [exp_constants::normal_min, exp_max] (normal results), with the
/// power of two added to the table entry's exponent field (two integer operations) instead
/// of a multiply and the scaling of the result (on AVX-512 two operations on the FMA ports and
/// a compare): tab·2^m is exact, and fma(tab·2^m, p, tab·2^m) rounds once to a normal number,
/// so it is 2^m·fma(tab, p, tab): the same bits as Exp. Fused FMAs only: a separate multiply
/// tab·2^m·p could round into the subnormal range where tab·p did not. No NaN select (a NaN x
/// gives a NaN: p is NaN).
template <class D, class V>
HWY_INLINE V ExpNormal(D d, V x) {
  using T = hn::TFromD<D>;
  using E = exp_table<T>;
  const hn::RebindToSigned<D> di;
  V t, k;
  const V p = ExpTableSteps<true>(d, x, t, k);
  // t's low bits hold 2^bits * m + j: shifted up to the exponent field they are 2^m's bits plus
  // j's below, which the offset table's entry j has taken off (exp2_table_offset)
  const auto tb = hn::BitCast(di, t);
  const auto pow = hn::ShiftLeft<float_bits<T>::mantissa - E::bits>(tb);
  const V tab = hn::BitCast(d, hn::Add(hn::BitCast(di, ExpTableLookup<true>(d, tb)), pow));
  return Fma<true>(tab, p, tab);
}

/// e^x, where an x below exp_min (-inf included) gives 0 without being computed: the same bits
/// as Exp, whose e^x is +0 there. Exp itself skips such lanes' scaling only on AVX-512; on the
/// other targets one such lane sends the whole vector down the two-factor scaling path, so the
/// rescale factors, where -inf is the common argument (every logsumexp row's first step), zero
/// those lanes before exp instead (an underflowing scaling costs a microcode assist on Intel
/// cores: about 300 ns per row of 4096 on a Xeon 6).
template <bool kFused, class D, class V>
HWY_INLINE V ExpOrZero(D d, V x) {
  using C = exp_constants<hn::TFromD<D>>;
  const auto zero = hn::Lt(x, hn::Set(d, C::exp_min));
  return hn::IfThenZeroElse(zero, Exp<kFused>(d, hn::IfThenZeroElse(zero, x)));
}

/// e^x by the polynomial over |r| <= ln2/2 (degree 7 float, 13 double). exp itself uses the
/// table (Exp); sigmoid keeps this one, whose errors are smaller on average: the table's
/// rounded entries moved float sigmoid's maximum error from 2.17 to 2.63 ulp.
/// The callers pass x <= 0 or NaN (exp(-|x|) for sigmoid).
template <bool kFused, class D, class V>
HWY_INLINE V ExpPoly(D d, V x) {
  V k;
#if CT_KERNELS_HAVE_SCALEF
  const V r = ExpReduce<kFused>(d, x, k);  // no clamp, as in ExpScaled
#else
  const V r = ExpReduce<kFused>(d, ExpClamp(d, x), k);
#endif
  const V e = ScaleByPow2Above(d, hn::Add(hn::Set(d, 1), ExpM1Reduced<kFused>(d, r)), k, x,
                               exp_constants<hn::TFromD<D>>::exp_min);  // +0 below the clamp, unscaled
#if CT_KERNELS_HAVE_SCALEF
  return e;  // a NaN came through
#else
  return hn::IfThenElse(hn::IsNaN(x), x, e);
#endif
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
