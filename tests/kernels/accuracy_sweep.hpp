// tests/kernels/accuracy_sweep.hpp — accuracy sweeps of the transcendental kernels in ulp of
// the result type against long double references from the C library.
//
// float: a sweep through the bit patterns of each function's domain (every n-th pattern, so
// every binade is visited evenly), plus the domain's ends. double: random samples, both
// log-uniform in magnitude and uniform over the core range. Only results in the normal range
// count: that is what the kernels promise (docs/kernels.md).
#pragma once
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "kernel_test_util.hpp"

namespace ct_test_kernels {

using ld = long double;
using unary_op = k::unary_op;

struct accuracy_case {
  unary_op op;
  const char* name;
  std::function<ld(ld)> ref;
  double lo, hi;            // domain swept (both signs inside it)
  double core_lo, core_hi;  // double: also sampled uniformly here
};

inline ld ref_gelu(ld x) {
  const ld u = std::sqrt(2.0L / 3.14159265358979323846264338327950288L) * (x + 0.044715L * x * x * x);
  return x / (1.0L + std::exp(-2.0L * u));  // = 0.5x(1+tanh u), without cancellation
}
inline ld ref_sigmoid(ld x) { return 1.0L / (1.0L + std::exp(-x)); }

inline const std::vector<accuracy_case>& accuracy_cases() {
  const double big = 3e38;  // float range; double sweeps stay inside it too (plenty of binades)
  static const std::vector<accuracy_case> v{
      {unary_op::exp, "exp", [](ld x) { return std::exp(x); }, -800, 800, -20, 20},
      {unary_op::expm1, "expm1", [](ld x) { return std::expm1(x); }, -800, 800, -2, 2},
      {unary_op::log, "log", [](ld x) { return std::log(x); }, 0, big, 0.5, 2},
      {unary_op::log1p, "log1p", [](ld x) { return std::log1p(x); }, -1, big, -0.5, 0.5},
      {unary_op::sin, "sin", [](ld x) { return std::sin(x); }, -1e6, 1e6, -7, 7},
      {unary_op::cos, "cos", [](ld x) { return std::cos(x); }, -1e6, 1e6, -7, 7},
      {unary_op::tanh, "tanh", [](ld x) { return std::tanh(x); }, -big, big, -1, 1},
      {unary_op::sigmoid, "sigmoid", ref_sigmoid, -big, big, -10, 10},
      {unary_op::silu, "silu", [](ld x) { return x * ref_sigmoid(x); }, -big, big, -10, 10},
      {unary_op::gelu, "gelu", ref_gelu, -big, big, -6, 6},
  };
  return v;
}

/// Inputs of one case for float: every `stride`-th bit pattern of [lo, hi], both signs.
inline std::vector<float> float_inputs(const accuracy_case& c, std::uint32_t stride) {
  std::vector<float> xs;
  const auto sweep = [&](float from, float to, float sign) {  // 0 <= from < to
    std::uint32_t a, b;
    std::memcpy(&a, &from, 4);
    std::memcpy(&b, &to, 4);
    for (std::uint64_t i = a; i <= b; i += stride) {
      const auto bits = static_cast<std::uint32_t>(i);
      float v;
      std::memcpy(&v, &bits, 4);
      xs.push_back(sign * v);
    }
    xs.push_back(sign * to);
  };
  const float lo = static_cast<float>(c.lo), hi = static_cast<float>(c.hi);
  if (hi > 0) sweep(lo > 0 ? lo : 0.0f, hi, 1.0f);
  if (lo < 0) sweep(hi < 0 ? -hi : 0.0f, -lo, -1.0f);
  return xs;
}

inline std::vector<double> double_inputs(const accuracy_case& c, int count) {
  rng r(0xacc + static_cast<unsigned>(c.op));
  std::vector<double> xs;
  const double max_mag = std::max(std::fabs(c.lo), std::fabs(c.hi));
  for (int i = 0; i < count; ++i) {
    double v;
    if (i % 2) {
      v = r.uniform(c.core_lo, c.core_hi);
    } else {  // log-uniform magnitude from 2^-60 up to the domain's edge, random sign
      v = std::exp2(r.uniform(-60, std::log2(max_mag)));
      if (r.below(2)) v = -v;
    }
    if (v >= c.lo && v <= c.hi) xs.push_back(v);
  }
  return xs;
}

inline bool report() {
  static const bool on = std::getenv("CT_KERNELS_REPORT") != nullptr;
  return on;
}

template <class T>
double max_ulp(const accuracy_case& c, const std::vector<T>& xs, const ct::settings& s, T& worst_x) {
  std::vector<T> ys(xs.size());
  k::unary(c.op, xs.data(), ys.data(), static_cast<index_t>(xs.size()), s);
  double worst = 0;
  worst_x = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const ld want = c.ref(static_cast<ld>(xs[i]));
    // Only results in the normal range are promised to be within 4 ulp (docs/kernels.md).
    if (std::fabs(want) < std::numeric_limits<T>::min() && want != 0) continue;
    const double e = ulp_error(ys[i], want);
    if (e > worst) worst = e, worst_x = xs[i];
  }
  return worst;
}

/// Sweeps every case: float over every `density`-th bit pattern, double over `density` samples.
template <class T>
void check_accuracy(double limit, int density, const std::vector<ct::settings>& settings) {
  for (const auto& c : accuracy_cases()) {
    std::vector<T> xs;
    if constexpr (sizeof(T) == 4) {
      xs = float_inputs(c, static_cast<std::uint32_t>(density));
    } else {
      xs = double_inputs(c, density);
    }
    for (const auto& s : settings) {
      T worst_x;
      const double worst = max_ulp(c, xs, s, worst_x);
      if (report())
        std::printf("%-8s %-6s %-15s %-7s max %.3f ulp at x = %.9g (%zu inputs)\n", c.name,
                    sizeof(T) == 4 ? "float" : "double", describe(s).c_str(),
                    s.backend == ct::backend::simd ? k::simd_target_name() : "", worst, double(worst_x), xs.size());
      INFO(c.name << " " << describe(s) << " target " << k::simd_target_name() << " worst at x = " << worst_x);
      CHECK(worst <= limit);
    }
  }
}


}  // namespace ct_test_kernels
