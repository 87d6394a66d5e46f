// src/kernels/simd_activation-inl.h — tanh, sigmoid, silu and gelu for the simd backend,
// built on Exp/Expm1 in forms that neither overflow nor cancel:
//   tanh |x| = t / (t + 2) with t = expm1(2|x|)
//   sigmoid x = 1/(1+e) for x >= 0 and e/(1+e) for x < 0, e = exp(-|x|)  (silu: x times that)
//   gelu x = x * sigmoid(2u), u = sqrt(2/pi)(x + 0.044715 x^3), since 1 + tanh u = 2 sigmoid(2u).
#if defined(CT_KERNELS_SIMD_ACTIVATION_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CT_KERNELS_SIMD_ACTIVATION_INL_H_
#undef CT_KERNELS_SIMD_ACTIVATION_INL_H_
#else
#define CT_KERNELS_SIMD_ACTIVATION_INL_H_
#endif

#include <cmath>
#include <limits>
#include <hwy/highway.h>

#include "src/kernels/simd_exp-inl.h"

HWY_BEFORE_NAMESPACE();
namespace ct::detail::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <bool kFused, class D, class V>
HWY_INLINE V Tanh(D d, V x) {
  using T = hn::TFromD<D>;
  // Beyond this |x|, tanh rounds to 1 (and t/(t+2) would meet inf/inf).
  const V limit = hn::Set(d, sizeof(T) == 4 ? T(10) : T(20));
  const V ax = hn::Min(hn::Abs(x), limit);
  const V t = Expm1<kFused>(d, hn::Add(ax, ax));
  const V y = hn::CopySign(hn::Div(t, hn::Add(t, hn::Set(d, 2))), x);  // keeps tanh(-0) = -0
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

/// exp(-|x|): never overflows; the sign of x then picks the matching sigmoid form.
template <bool kFused, class D, class V>
HWY_INLINE V ExpNegAbs(D d, V x) {
  return ExpPoly<kFused>(d, hn::Neg(hn::Abs(x)));
}

/// x capped at the argument beyond which exp(-x) no longer changes 1 + exp(-x) (80 float,
/// 700 double: exp(-cap) is still a normal number, far below half an ulp of 1). Sigmoid, silu
/// and gelu take exp(-|t|) for positive t only through 1 + exp(-|t|), so capping t first gives
/// the same bits without computing a subnormal exp(-t), which costs a microcode assist on
/// Intel cores (sigmoid of values in [100, 300] ran 16x slower than in [-3, 3]). A NaN stays.
template <class D, class V>
HWY_INLINE V CapForOnePlusExp(D d, V t) {
  using T = hn::TFromD<D>;
  const V cap = hn::Set(d, sizeof(T) == 4 ? T(80) : T(700));
#if HWY_ARCH_X86 && HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR
  return hn::Min(cap, t);  // x86 min returns its second operand when either is NaN: t
#else
  return hn::IfThenElse(hn::Gt(t, cap), cap, t);
#endif
}

template <bool kFused, class D, class V>
HWY_INLINE V Sigmoid(D d, V x) {
  const V one = hn::Set(d, 1);
  const V e = ExpNegAbs<kFused>(d, CapForOnePlusExp(d, x));
  const V num = hn::IfThenElse(hn::Ge(x, hn::Zero(d)), one, e);
  return hn::Div(num, hn::Add(one, e));  // NaN: e is NaN, so is the quotient
}

/// x * sigmoid(t) for t = x (silu) or t = 2u (gelu), given e_s = exp(-|t|) * 2^scale:
/// x/(1+e) for t >= 0 and x*e/(1+e) for t < 0. The latter is formed on e_s and scaled back
/// last, so that a subnormal result is rounded once instead of amplifying exp's rounding.
template <class D, class V>
HWY_INLINE V TimesSigmoid(D d, V x, V t, V e_s, hn::TFromD<D> scale) {
  using T = hn::TFromD<D>;
  const V unscale = hn::Set(d, static_cast<T>(std::ldexp(1.0, -static_cast<int>(scale))));
  const auto neg = hn::Lt(t, hn::Zero(d));
  const V den = hn::Add(hn::Set(d, 1), hn::Mul(e_s, unscale));
  const V q = hn::Div(hn::IfThenElse(neg, hn::Mul(x, e_s), x), den);
  return hn::IfThenElse(neg, hn::Mul(q, unscale), q);
}

/// Power of two applied to exp(-|t|) before it meets x (see TimesSigmoid).
template <class T>
inline constexpr T sigmoid_scale = sizeof(T) == 4 ? T(64) : T(128);

template <bool kFused, class D, class V>
HWY_INLINE V Silu(D d, V x) {
  using T = hn::TFromD<D>;
  const V m = hn::Neg(hn::Abs(CapForOnePlusExp(d, x)));
  // From x = -120 (float) / -760 (double) down silu rounds to -0 (|x| e^x is below half the
  // smallest subnormal): exp is not scaled there, so neither it nor the result underflows.
  const V e_s = ExpScaled<kFused>(d, m, hn::Zero(d), sigmoid_scale<T>, sizeof(T) == 4 ? T(-120) : T(-760));
  const V y = TimesSigmoid(d, x, x, e_s, sigmoid_scale<T>);
  // silu(-inf) is the limit -0 (the formula gives -inf * 0).
  return hn::IfThenElse(hn::Eq(x, hn::Set(d, -std::numeric_limits<T>::infinity())), hn::Set(d, T(-0.0)), y);
}

/// gelu in double lanes. exp() turns the absolute error of its argument into the relative
/// error of the result, and |2u| reaches ~700 before the result underflows: for a double
/// result 2u needs ~10 bits more than double holds, so it is formed in double-double
/// (kExtended). For a float result plain double has room to spare.
template <bool kFused, bool kExtended, class DD, class VD>
HWY_INLINE VD GeluDouble(DD dd, VD x) {
  // 2u = x (a + b x^2), a = 2 sqrt(2/pi), b = 0.044715 a, each as hi + lo.
  const VD a_hi = hn::Set(dd, 1.5957691216057308), a_lo = hn::Set(dd, -9.96930880911092e-17);
  const VD b_hi = hn::Set(dd, 0.07135481627260025), b_lo = hn::Set(dd, -6.175149918155315e-19);
  // Beyond |x| = 40, exp(-|2u|) is 0 in double: clamping keeps the products finite.
  const VD xc = hn::Min(hn::Max(x, hn::Set(dd, -40.0)), hn::Set(dd, 40.0));
  VD t, t_lo;
  if constexpr (kExtended) {
    VD sq_lo, w_lo, v_lo;
    const VD sq = TwoProd<kFused>(dd, xc, xc, sq_lo);
    const VD w = TwoProd<kFused>(dd, b_hi, sq, w_lo);
    w_lo = hn::Add(w_lo, hn::Add(hn::Mul(b_hi, sq_lo), hn::Mul(b_lo, sq)));
    const VD v = TwoSum(a_hi, w, v_lo);
    v_lo = hn::Add(v_lo, hn::Add(a_lo, w_lo));
    t = TwoProd<kFused>(dd, xc, v, t_lo);
    t_lo = hn::Add(t_lo, hn::Mul(xc, v_lo));
  } else {
    t = hn::Mul(xc, Fma<kFused>(b_hi, hn::Mul(xc, xc), a_hi));
    t_lo = hn::Zero(dd);
  }
  // exp(-|t + t_lo|), with t_lo's sign flipped along with t's.
  const auto t_neg = hn::Lt(t, hn::Zero(dd));
  constexpr double scale = sigmoid_scale<double>;
  // A float result (!kExtended) is -0 from t = -700 down (|x| <= 40 times e^t is far below
  // float's smallest subnormal) and exp is not scaled there; a double result has real
  // subnormals down to exp's clamp.
  constexpr double zero_below = kExtended ? exp_constants<double>::exp_min - scale : -700.0;
  const VD e_s = ExpScaled<kFused>(dd, hn::Neg(hn::Abs(CapForOnePlusExp(dd, t))),
                                   hn::IfThenElse(t_neg, t_lo, hn::Neg(t_lo)), scale, zero_below);
  const VD y = TimesSigmoid(dd, x, t, e_s, scale);
  const VD inf = hn::Set(dd, std::numeric_limits<double>::infinity());
  const VD at_inf = hn::IfThenElse(hn::Gt(x, hn::Zero(dd)), inf, hn::Set(dd, -0.0));
  const VD special = hn::IfThenElse(hn::Eq(hn::Abs(x), inf), at_inf, y);
  return hn::IfThenElse(hn::IsNaN(x), x, special);
}

/// gelu: float lanes are evaluated in double, because exp() turns the relative error of the
/// computed 2u into a relative error |2u| times larger; double gives the headroom for free.
template <bool kFused, class D, class V>
HWY_INLINE V Gelu(D d, V x) {
  if constexpr (sizeof(hn::TFromD<D>) == 8) {
    return GeluDouble<kFused, true>(d, x);
  } else {
    return InDouble(d, x, [](auto dd, auto xd) { return GeluDouble<kFused, false>(dd, xd); });
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace ct::detail::kernels
HWY_AFTER_NAMESPACE();

#endif  // include guard
