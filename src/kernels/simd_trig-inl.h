// src/kernels/simd_trig-inl.h — sin and cos for the simd backend.
//
// x = k*pi/2 + r with |r| <= pi/4, pi/2 split into parts whose products with k are exact
// (Cody-Waite). float arguments are reduced in double, which keeps r accurate to far below a
// float ulp up to |x| = 2^19; double arguments use a four-part split. Lanes beyond 2^19 (and
// inf/NaN) are rare and are handed to the C library, which does the exact (Payne-Hanek) job.
// sin and cos of r are Taylor polynomials; the quadrant (k mod 4) picks one and its sign.
#if defined(CT_KERNELS_SIMD_TRIG_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CT_KERNELS_SIMD_TRIG_INL_H_
#undef CT_KERNELS_SIMD_TRIG_INL_H_
#else
#define CT_KERNELS_SIMD_TRIG_INL_H_
#endif

#include <cmath>
#include <hwy/highway.h>

#include "src/kernels/simd_poly-inl.h"

HWY_BEFORE_NAMESPACE();
namespace ct::detail::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// Largest |x| reduced in vector code.
inline constexpr double trig_vector_limit = 524288.0;  // 2^19

/// r = x - k*pi/2 in double. pi/2 = p1 + p2 + p3 + p4 (fdlibm's split): p1..p3 have 33
/// significant bits, so k*p1..k*p3 are exact for |k| < 2^20.
template <bool kFused, class DD, class VD>
HWY_INLINE VD ReduceHalfPi(DD dd, VD x, VD& k) {
  k = hn::Round(hn::Mul(x, hn::Set(dd, 6.36619772367581382433e-01)));
  VD r = Fnma<kFused>(k, hn::Set(dd, 1.57079632673412561417e+00), x);
  r = Fnma<kFused>(k, hn::Set(dd, 6.07710050630396597660e-11), r);
  r = Fnma<kFused>(k, hn::Set(dd, 2.02226624871116645580e-21), r);
  return Fnma<kFused>(k, hn::Set(dd, 8.47842766036889956997e-32), r);
}

/// k and r for either lane type; float lanes are reduced in double (k < 2^19 and r convert
/// back exactly and with one rounding respectively).
template <bool kFused, class D, class V>
HWY_INLINE V ReduceTrig(D d, V x, V& k) {
  if constexpr (sizeof(hn::TFromD<D>) == 8) {
    return ReduceHalfPi<kFused>(d, x, k);
  } else {
    k = InDouble(d, x, [](auto dd, auto xd) {
      decltype(xd) kd;
      ReduceHalfPi<kFused>(dd, xd, kd);
      return kd;
    });
    return InDouble(d, x, [](auto dd, auto xd) {
      decltype(xd) kd;
      return ReduceHalfPi<kFused>(dd, xd, kd);
    });
  }
}

/// sin(r) = r + r z S(z), z = r^2; Taylor through r^9 (float) / r^17 (double).
template <bool kFused, class D, class V>
HWY_INLINE V SinReduced(D d, V r, V z) {
  V s;
  if constexpr (sizeof(hn::TFromD<D>) == 4) {
    s = Horner<kFused>(d, z, -1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880);
  } else {
    s = Horner<kFused>(d, z, -1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880, -1.0 / 39916800,
                       1.0 / 6227020800, -1.0 / 1307674368000, 1.0 / 355687428096000);
  }
  return Fma<kFused>(hn::Mul(r, z), s, r);
}

/// cos(r) = 1 - z/2 + z^2 C(z); the rounding error of 1 - z/2 is recovered and added back.
template <bool kFused, class D, class V>
HWY_INLINE V CosReduced(D d, V z) {
  V c;
  if constexpr (sizeof(hn::TFromD<D>) == 4) {
    c = Horner<kFused>(d, z, 1.0 / 24, -1.0 / 720, 1.0 / 40320, -1.0 / 3628800);
  } else {
    c = Horner<kFused>(d, z, 1.0 / 24, -1.0 / 720, 1.0 / 40320, -1.0 / 3628800, 1.0 / 479001600,
                       -1.0 / 87178291200, 1.0 / 20922789888000);
  }
  const V one = hn::Set(d, 1);
  const V hz = hn::Mul(z, hn::Set(d, 0.5));
  const V w = hn::Sub(one, hz);
  const V w_err = hn::Sub(hn::Sub(one, w), hz);
  return hn::Add(w, Fma<kFused>(hn::Mul(z, z), c, w_err));
}

/// sin(x) (kQuarterTurns = 0) or cos(x) = sin(x + pi/2) (kQuarterTurns = 1).
template <int kQuarterTurns, bool kFused, class D, class V>
HWY_INLINE V SinCos(D d, V x) {
  using T = hn::TFromD<D>;
  const hn::RebindToSigned<D> di;
  using I = hn::TFromD<decltype(di)>;
  V k;
  const V r = ReduceTrig<kFused>(d, x, k);
  const V z = hn::Mul(r, r);
  // k sits in the low bits of k + shifter (the shifter's low bits are zero).
  const auto q = hn::Add(hn::BitCast(di, hn::Add(k, Shifter(d))), hn::Set(di, I(kQuarterTurns)));
  const auto odd = hn::RebindMask(d, hn::TestBit(q, hn::Set(di, I(1))));
  V y = hn::IfThenElse(odd, CosReduced<kFused>(d, z), SinReduced<kFused>(d, r, z));
  const auto sign = hn::ShiftLeft<sizeof(T) * 8 - 2>(hn::And(q, hn::Set(di, I(2))));
  y = hn::Xor(y, hn::BitCast(d, sign));
  if constexpr (kQuarterTurns == 0) y = hn::IfThenElse(hn::Eq(x, hn::Zero(d)), x, y);  // sin(-0) = -0

  const auto far = hn::Not(hn::Le(hn::Abs(x), hn::Set(d, static_cast<T>(trig_vector_limit))));
  if (HWY_UNLIKELY(!hn::AllFalse(d, far))) {
    constexpr size_t kMax = HWY_MAX_BYTES / sizeof(T);
    HWY_ALIGN T xs[kMax], ys[kMax];
    hn::Store(x, d, xs);
    hn::Store(y, d, ys);
    for (size_t i = 0; i < hn::Lanes(d); ++i) {
      if (!(std::fabs(xs[i]) <= static_cast<T>(trig_vector_limit))) {
        // float: the double result rounds to float with at most one extra half ulp.
        const double xi = xs[i];
        ys[i] = static_cast<T>(kQuarterTurns == 0 ? std::sin(xi) : std::cos(xi));
      }
    }
    y = hn::Load(d, ys);
  }
  return y;
}

}  // namespace HWY_NAMESPACE
}  // namespace ct::detail::kernels
HWY_AFTER_NAMESPACE();

#endif  // include guard
