// src/kernels/scalar_erf.hpp — erf and erfc for the scalar backend, in portable C++.
//
// The scalar backend's other transcendentals are the C library's, but glibc's double erfc
// reaches 3.95 ulp (measured near x = 1.22), at the edge of the 4-ulp promise, which should
// not hang on the C library. So these are the simd functions' method (simd_erf-inl.h,
// coefficients from erf_table.hpp) written with scalar double arithmetic:
//   |x| < 1 (erf) / 1/2 (erfc): erf x = x + x q(x^2); erfc x = 1 - x - x q(x^2) with 1 - x
//   held exactly in two parts.
//   elsewhere: erfc a = exp(-a^2) g(a), a = |x|, with a^2 = h + l exactly and
//   exp(-h - l) = std::exp(-h)(1 - l); erf = ±(1 - erfc |x|), erfc x = 2 - erfc |x| for x < 0.
// float is evaluated through double (and rounded once), so its error is that rounding plus
// ~2^-50. They need not give the simd backend's bits (docs/kernels.md). They use no FMA, so
// they do not depend on the FMA policy — provided the including file keeps the compiler from
// contracting (fp_contract_off.hpp first, as every kernel source does). Double results in
// the subnormal range round twice (std::exp's result is subnormal there); they are outside
// the accuracy promise.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "src/kernels/erf_table.hpp"

namespace ct::detail::kernels {
namespace scalar_erf_detail {

/// q(x^2) = erf(x)/x - 1.
inline double q(double x) {
  const double z = x * x;
  double p = erf_q_double[erf_q_degree_double];
  for (int j = erf_q_degree_double - 1; j >= 0; --j) p = p * z + erf_q_double[j];
  return p;
}

/// erfc(a) for a in [1/2, 27.5].
inline double tail(double a) {
  constexpr int shift = 52 - erfc_g_bits_double;
  std::uint64_t bits;
  std::memcpy(&bits, &a, sizeof bits);
  const auto i = static_cast<int>((bits >> shift) - (0x3fe0000000000000ull >> shift));  // interval
  const std::uint64_t mid_bits = (bits & ~((std::uint64_t{1} << shift) - 1)) | (std::uint64_t{1} << (shift - 1));
  double mid;
  std::memcpy(&mid, &mid_bits, sizeof mid);
  const double u = a - mid;  // exact
  const auto& c = erfc_g_double;
  double p = c[erfc_g_degree_double + 1][i];
  for (int j = erfc_g_degree_double; j >= 2; --j) p = p * u + c[j][i];
  const double r = p * u + c[1][i];  // g = c[0][i] + r
  // a^2 = h + l (Veltkamp's split and Dekker's product: exact without an FMA).
  const double h = a * a;
  const double t = 134217729.0 * a;  // 2^27 + 1
  const double a_hi = t - (t - a), a_lo = a - a_hi;
  const double l = (((a_hi * a_hi - h) + a_hi * a_lo) + a_lo * a_hi) + a_lo * a_lo;
  // e^(-h-l) g = e^-h (1 - l) g = e^-h (c0 + (r - g l)), l < 2^-43 so l^2 is far below a rounding.
  const double g = c[0][i] + r;
  return std::exp(-h) * (c[0][i] + (r - g * l));
}

inline double erf(double x) {
  const double a = std::fabs(x);
  if (a < 1) return x + x * q(x);  // keeps erf(-0) = -0
  if (std::isnan(x)) return x;
  return std::copysign(1 - tail(a < 6 ? a : 6), x);  // erfc(6) < 2^-54: 1 from there on (also inf)
}

inline double erfc(double x) {
  const double a = std::fabs(x);
  if (a < 0.5) {
    const double s = 1 - x, s_lo = (1 - s) - x;  // 1 - x = s + s_lo exactly
    return s + (s_lo - x * q(x));
  }
  if (std::isnan(x)) return x;
  const double e = tail(a < 27.5 ? a : 27.5);  // 0 from 27.3 on (also inf)
  return x < 0 ? 2 - e : e;
}

}  // namespace scalar_erf_detail

inline double scalar_erf(double x) { return scalar_erf_detail::erf(x); }
inline double scalar_erfc(double x) { return scalar_erf_detail::erfc(x); }
inline float scalar_erf(float x) { return static_cast<float>(scalar_erf_detail::erf(x)); }
inline float scalar_erfc(float x) { return static_cast<float>(scalar_erf_detail::erfc(x)); }

}  // namespace ct::detail::kernels
