// src/kernels/simd_log-inl.h — log and log1p for the simd backend.
//
// x = 2^e * m with m in [sqrt(1/2), sqrt(2)), f = m - 1 (exact). With s = f/(2+f),
// log(1+f) = 2 atanh(s) = f - (f^2/2 - s (f^2/2 + R(s^2))), R a Taylor series in s^2 with
// |s| <= 0.172. Writing it as f minus a small correction keeps the rounding of s and R out of
// the leading term. log1p feeds f = x itself when 1+x needs no rescaling, and otherwise adds
// the rounding error of 1+x back as c/(1+x).
#if defined(CT_KERNELS_SIMD_LOG_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CT_KERNELS_SIMD_LOG_INL_H_
#undef CT_KERNELS_SIMD_LOG_INL_H_
#else
#define CT_KERNELS_SIMD_LOG_INL_H_
#endif

#include <hwy/highway.h>

#include "src/kernels/simd_exp-inl.h"
#include "src/kernels/simd_poly-inl.h"

HWY_BEFORE_NAMESPACE();
namespace ct::detail::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// Splits positive normal x into e (as a float) and m in [sqrt(1/2), sqrt(2)).
template <class D, class V>
HWY_INLINE V SplitExponent(D d, V x, V& e) {
  using T = hn::TFromD<D>;
  using B = float_bits<T>;
  const hn::RebindToSigned<D> di;
  using I = hn::TFromD<decltype(di)>;
  // Bits of sqrt(1/2): subtracting them moves the mantissa range [sqrt(1/2), sqrt(2)) onto
  // whole exponents, so an arithmetic shift yields e and the low bits yield m.
  const I sqrt_half = sizeof(T) == 4 ? I(0x3f3504f3) : static_cast<I>(0x3fe6a09e667f3bcdLL);
  const auto ix = hn::Sub(hn::BitCast(di, x), hn::Set(di, sqrt_half));
  const auto ei = hn::ShiftRight<B::mantissa>(ix);
  const I mant_mask = static_cast<I>((I(1) << B::mantissa) - 1);
  const V m = hn::BitCast(d, hn::Add(hn::And(ix, hn::Set(di, mant_mask)), hn::Set(di, sqrt_half)));
  // Integer -> float through the shifter constant (exact for the exponent range).
  const auto shifter = Shifter(d);
  e = hn::Sub(hn::BitCast(d, hn::Add(ei, hn::BitCast(di, shifter))), shifter);
  return m;
}

/// log(1+f) - f + f^2/2 … precisely: returns the correction term hfsq - s*(hfsq + R).
template <bool kFused, class D, class V>
HWY_INLINE V Log1pCorrection(D d, V f, V& hfsq) {
  const V s = hn::Div(f, hn::Add(hn::Set(d, 2), f));
  const V z = hn::Mul(s, s);
  V poly;  // R(z)/z = 2/3 + 2/5 z + 2/7 z^2 + …; truncation below 2^-28 / 2^-60 relative
  if constexpr (sizeof(hn::TFromD<D>) == 4) {
    poly = Horner<kFused>(d, z, 2.0 / 3, 2.0 / 5, 2.0 / 7, 2.0 / 9);
  } else {
    poly = Horner<kFused>(d, z, 2.0 / 3, 2.0 / 5, 2.0 / 7, 2.0 / 9, 2.0 / 11, 2.0 / 13, 2.0 / 15, 2.0 / 17,
                          2.0 / 19, 2.0 / 21, 2.0 / 23);
  }
  const V R = hn::Mul(z, poly);
  hfsq = hn::Mul(hn::Mul(hn::Set(d, 0.5), f), f);
  return hn::Mul(s, hn::Add(hfsq, R));
}

/// e*ln2 + log(1+f) + c, with c a small additive correction (0 for plain log).
template <bool kFused, class D, class V>
HWY_INLINE V LogCombine(D d, V e, V f, V c) {
  using C = exp_constants<hn::TFromD<D>>;
  V hfsq;
  const V t = Log1pCorrection<kFused>(d, f, hfsq);
  const V lo = hn::Add(t, Fma<kFused>(e, hn::Set(d, C::ln2_lo), c));
  const V small = hn::Sub(f, hn::Sub(hfsq, lo));
  return Fma<kFused>(e, hn::Set(d, C::ln2_hi), small);  // e*ln2_hi is exact
}

template <bool kFused, class D, class V>
HWY_INLINE V Log(D d, V x) {
  using T = hn::TFromD<D>;
  using B = float_bits<T>;
  // Subnormals: scale into the normal range first.
  const auto tiny = hn::Lt(x, hn::Set(d, std::numeric_limits<T>::min()));
  const V xs = hn::IfThenElse(tiny, hn::Mul(x, hn::Set(d, static_cast<T>(1ull << B::mantissa))), x);
  V e;
  const V m = SplitExponent(d, xs, e);
  e = hn::IfThenElse(tiny, hn::Sub(e, hn::Set(d, static_cast<T>(B::mantissa))), e);
  V y = LogCombine<kFused>(d, e, hn::Sub(m, hn::Set(d, 1)), hn::Zero(d));
  const V inf = hn::Set(d, std::numeric_limits<T>::infinity());
  y = hn::IfThenElse(hn::Eq(x, inf), inf, y);
  y = hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Set(d, std::numeric_limits<T>::quiet_NaN()), y);
  y = hn::IfThenElse(hn::Eq(x, hn::Zero(d)), hn::Neg(inf), y);
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

template <bool kFused, class D, class V>
HWY_INLINE V Log1p(D d, V x) {
  using T = hn::TFromD<D>;
  const V one = hn::Set(d, 1);
  const V u = hn::Add(one, x);
  V e;
  const V m = SplitExponent(d, u, e);
  const auto unscaled = hn::Eq(e, hn::Zero(d));
  // Rounding error of u = 1+x, divided by u: log(1+x) = log(u) + log(1 + c/u) ~ log(u) + c/u.
  const V c_pos = hn::Sub(one, hn::Sub(u, x));  // e > 0: x >= 0.41, this is exact
  const V c_neg = hn::Sub(x, hn::Sub(u, one));  // e < 0: u - 1 is exact
  V c = hn::Div(hn::IfThenElse(hn::Gt(e, hn::Zero(d)), c_pos, c_neg), u);
  c = hn::IfThenElse(unscaled, hn::Zero(d), c);
  const V f = hn::IfThenElse(unscaled, x, hn::Sub(m, one));
  V y = LogCombine<kFused>(d, e, f, c);
  const V inf = hn::Set(d, std::numeric_limits<T>::infinity());
  y = hn::IfThenElse(hn::Eq(x, inf), inf, y);
  y = hn::IfThenElse(hn::Lt(x, hn::Neg(one)), hn::Set(d, std::numeric_limits<T>::quiet_NaN()), y);
  y = hn::IfThenElse(hn::Eq(x, hn::Neg(one)), hn::Neg(inf), y);
  // x == 0 returns x itself so that log1p(-0) = -0.
  return hn::IfThenElse(hn::Or(hn::IsNaN(x), hn::Eq(x, hn::Zero(d))), x, y);
}

}  // namespace HWY_NAMESPACE
}  // namespace ct::detail::kernels
HWY_AFTER_NAMESPACE();

#endif  // include guard
