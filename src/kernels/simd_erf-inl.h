// src/kernels/simd_erf-inl.h — erf and erfc for the simd backend.
//
// Near zero: erf x = x + x q(x^2), q a polynomial of x^2 (erf_table.hpp); erf uses it for
// |x| < 1, erfc for |x| < 1/2 as 1 - x - x q with 1 - x held exactly in two parts.
// Elsewhere: erfc a = exp(-a^2) g(a) for a = |x| >= 1/2, g = erfc·exp(a^2) a polynomial in
// a - mid on intervals read from a's exponent and top mantissa bits (coefficients fetched per
// lane, one permute each on AVX-512); erf = ±(1 - erfc |x|), erfc x = 2 - erfc |x| for x < 0.
// exp(-a^2) takes a^2 as an exact hi + lo pair: rounding a^2 alone would turn its relative
// error 2^-24 (2^-53) into a relative error a^2 times larger in the result, up to 100 (750)
// half-ulps in the tail. Its table reduction is exp's (simd_exp-inl.h), and the pieces
// 2^m · T[j] · g · (1 + p) are combined so that the large product is formed error-free and
// 2^m comes last: a subnormal result is rounded once.
#if defined(CT_KERNELS_SIMD_ERF_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CT_KERNELS_SIMD_ERF_INL_H_
#undef CT_KERNELS_SIMD_ERF_INL_H_
#else
#define CT_KERNELS_SIMD_ERF_INL_H_
#endif

#include <hwy/highway.h>

#include <type_traits>
#include <utility>

#include "src/kernels/erf_table.hpp"
#include "src/kernels/simd_exp-inl.h"
#include "src/kernels/simd_poly-inl.h"

HWY_BEFORE_NAMESPACE();
namespace ct::detail::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class T>
struct erf_constants;
template <>
struct erf_constants<float> {
  static constexpr int g_bits = erfc_g_bits_float, g_degree = erfc_g_degree_float, q_degree = erf_q_degree_float;
  static constexpr int g_lanes = 32;
  static constexpr const float (*g)[g_lanes] = erfc_g_float;
  static constexpr const float* q = erf_q_float;
  // erfc(4) = 1.5e-8 < 2^-25: erf rounds to ±1 from there on. erfc(10.5) = 0 in float, and
  // 10.5^2 keeps the reduction multiple within its exact range (|k| < 2^13).
  static constexpr float erf_clamp = 4.0f, erfc_clamp = 10.5f;
};
template <>
struct erf_constants<double> {
  static constexpr int g_bits = erfc_g_bits_double, g_degree = erfc_g_degree_double, q_degree = erf_q_degree_double;
  static constexpr int g_lanes = 16;
  static constexpr const double (*g)[g_lanes] = erfc_g_double;
  static constexpr const double* q = erf_q_double;
  // erfc(6) = 2.2e-17 < 2^-54; erfc(27.5) = 0 in double, |k| < 2^15.
  static constexpr double erf_clamp = 6.0, erfc_clamp = 27.5;
};

/// row[idx] per lane, idx in [0, g_lanes). A full AVX-512 vector holds the row in two registers
/// and permutes (32 floats / 16 doubles: exactly the row); other targets gather. Both are
/// exact loads, so every target gets the same values.
template <class D, class VI>
HWY_INLINE hn::Vec<D> ErfRowLookup(D d, const hn::TFromD<D>* HWY_RESTRICT row, VI idx) {
#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
  if constexpr (std::is_same_v<decltype(hn::Vec<D>().raw), __m512>) {
    hn::Vec<D> v;
    v.raw = _mm512_permutex2var_ps(_mm512_load_ps(row), idx.raw, _mm512_load_ps(row + 16));
    return v;
  } else if constexpr (std::is_same_v<decltype(hn::Vec<D>().raw), __m512d>) {
    hn::Vec<D> v;
    v.raw = _mm512_permutex2var_pd(_mm512_load_pd(row), idx.raw, _mm512_load_pd(row + 8));
    return v;
  }
#endif
  return hn::GatherIndex(d, row, idx);
}

/// c[0] + z (c[1] + z (c[2] + …)) for a compile-time count of coefficients.
template <bool kFused, class D, class V, class T, size_t... I>
HWY_INLINE V HornerArray(D d, V z, const T* c, std::index_sequence<I...>) {
  constexpr size_t n = sizeof...(I);
  V p = hn::Set(d, c[n]);
  ((p = Fma<kFused>(p, z, hn::Set(d, c[n - 1 - I]))), ...);
  return p;
}

/// q(x^2) = erf(x)/x - 1, the polynomial of the region near zero.
template <bool kFused, class D, class V>
HWY_INLINE V ErfQ(D d, V x) {
  using C = erf_constants<hn::TFromD<D>>;
  return HornerArray<kFused>(d, hn::Mul(x, x), C::q, std::make_index_sequence<C::q_degree>());
}

/// Horner's rule over the table rows first..last (the coefficients of u^0.. in row order).
template <bool kFused, class D, class V, class VI, class T, size_t L, size_t... I>
HWY_INLINE V HornerRows(D d, V u, VI idx, const T (*rows)[L], size_t last, std::index_sequence<I...>) {
  V p = ErfRowLookup(d, rows[last], idx);
  ((p = Fma<kFused>(p, u, ErfRowLookup(d, rows[last - 1 - I], idx))), ...);
  return p;
}

/// erfc(a) for a in [1/2, erfc_clamp] (other lanes give garbage, never out-of-bounds reads).
template <bool kFused, class D, class V>
HWY_INLINE V ErfcTail(D d, V a) {
  using T = hn::TFromD<D>;
  using C = erf_constants<T>;
  using B = float_bits<T>;
  using XC = exp_constants<T>;
  using E = exp_table<T>;
  const hn::RebindToSigned<D> di;
  using I = hn::TFromD<decltype(di)>;

  // Interval: exponent and top g_bits mantissa bits of a, counted from 1/2. Its midpoint
  // (those bits, then a one) lies in a's binade, so u = a - mid is exact.
  constexpr int shift = B::mantissa - C::g_bits;
  const I half_bits = static_cast<I>(B::bias - 1) << B::mantissa;
  const auto ia = hn::BitCast(di, a);
  const auto idx = hn::And(hn::Sub(hn::ShiftRight<shift>(ia), hn::Set(di, static_cast<I>(half_bits >> shift))),
                           hn::Set(di, static_cast<I>(C::g_lanes - 1)));
  const I low_mask = static_cast<I>((I(1) << shift) - 1);
  const V mid = hn::BitCast(d, hn::Or(hn::AndNot(hn::Set(di, low_mask), ia), hn::Set(di, static_cast<I>(I(1) << (shift - 1)))));
  const V u = hn::Sub(a, mid);

  // g = c0_hi + r, r = c0_lo + u (c1 + u (c2 + …)); rows: c0_hi, c0_lo, c1, …, c_degree.
  const V upper = HornerRows<kFused>(d, u, idx, C::g + 1, C::g_degree,
                                     std::make_index_sequence<C::g_degree - 1>());  // c1 + u (…)
  const V r = Fma<kFused>(upper, u, ErfRowLookup(d, C::g[1], idx));
  const V c0 = ErfRowLookup(d, C::g[0], idx);

  // a^2 = h + l exactly; exp(-h - l) = 2^m · T[j] · (1 + p) with exp's table reduction, the
  // tail l joining the reduced argument after the exact step.
  V l;
  const V h = TwoProd<kFused>(d, a, a, l);
  const V x = hn::Neg(h);
  constexpr T n = T(1 << E::bits);
  const V shifter = Shifter(d);
  const V t = Fma<kFused>(x, hn::Set(d, E::inv_step), shifter);
  const V k = hn::Sub(t, shifter);  // Nm + j, exact
  V rr = Fnma<kFused>(k, hn::Set(d, XC::ln2_hi / n), x);  // exact
  rr = Fnma<kFused>(k, hn::Set(d, XC::ln2_lo / n), rr);
  rr = hn::Sub(rr, l);
  V pq;
  if constexpr (sizeof(T) == 4)
    pq = Fma<kFused>(hn::Set(d, T(1.0 / 6)), rr, hn::Set(d, T(0.5)));
  else
    pq = Horner<kFused>(d, rr, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040);
  const V p = Fma<kFused>(hn::Mul(rr, rr), pq, rr);  // e^rr - 1
  const V tab = ExpTableLookup(d, hn::BitCast(di, t));
  const V m = hn::Floor(hn::Mul(k, hn::Set(d, T(1) / n)));

  // erfc = 2^m · T · (c0 + r)(1 + p) = 2^m · T · (c0 + s), s = r + p (c0 + r): T·c0 is the
  // large product and is kept exact (hi + lo), the small s joins its error term.
  const V s = Fma<kFused>(p, hn::Add(c0, r), r);
  V lo;
  const V hi = TwoProd<kFused>(d, tab, c0, lo);
  const V y = hn::Add(hi, Fma<kFused>(tab, s, lo));
  return ScaleByPow2(d, y, m);
}

template <bool kFused, class D, class V>
HWY_INLINE V Erf(D d, V x) {
  using T = hn::TFromD<D>;
  using C = erf_constants<T>;
  const V one = hn::Set(d, T(1));
  const V a = hn::Abs(x);
  const auto near = hn::Lt(a, one);
  V y_near = hn::Zero(d), y_far = hn::Zero(d);
  if (!hn::AllFalse(d, near)) y_near = Fma<kFused>(x, ErfQ<kFused>(d, x), x);  // keeps erf(-0) = -0
  if (!hn::AllTrue(d, near)) {
    const V e = ErfcTail<kFused>(d, hn::Min(a, hn::Set(d, C::erf_clamp)));  // inf -> 1
    y_far = hn::CopySign(hn::Sub(one, e), x);
  }
  const V y = hn::IfThenElse(near, y_near, y_far);
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

template <bool kFused, class D, class V>
HWY_INLINE V Erfc(D d, V x) {
  using T = hn::TFromD<D>;
  using C = erf_constants<T>;
  const V one = hn::Set(d, T(1));
  const V a = hn::Abs(x);
  const auto near = hn::Lt(a, hn::Set(d, T(0.5)));
  V y_near = hn::Zero(d), y_far = hn::Zero(d);
  if (!hn::AllFalse(d, near)) {
    // 1 - x - x q: 1 - x = s + s_lo exactly (|x| < 1/2, so 1 - s is exact too).
    const V s = hn::Sub(one, x);
    const V s_lo = hn::Sub(hn::Sub(one, s), x);
    y_near = hn::Add(s, Fnma<kFused>(x, ErfQ<kFused>(d, x), s_lo));
  }
  if (!hn::AllTrue(d, near)) {
    // For x < 0 the result 2 - e is 2 from a = erf_clamp on (e below a quarter ulp of 2), so a
    // is capped there rather than at erfc_clamp: the same bits without e^(-a²) underflowing,
    // which costs a microcode assist on Intel cores (erfc of [-15, -5] ran 7x slower).
    const auto neg = hn::Lt(x, hn::Zero(d));
    const V e = ErfcTail<kFused>(d, hn::Min(a, hn::IfThenElse(neg, hn::Set(d, C::erf_clamp), hn::Set(d, C::erfc_clamp))));  // inf -> +0
    y_far = hn::IfThenElse(neg, hn::Sub(hn::Set(d, T(2)), e), e);
  }
  const V y = hn::IfThenElse(near, y_near, y_far);
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

}  // namespace HWY_NAMESPACE
}  // namespace ct::detail::kernels
HWY_AFTER_NAMESPACE();

#endif  // include guard
