// tests/kernels/test_division.cpp — division by one value (softmax's output pass, x / sum):
// the simd kernel multiplies by the reciprocal and corrects the quotient with two FMAs
// (DivByUniformTile, simd_elementwise.cpp) instead of dividing; the result must be the
// correctly rounded quotient, the same bits as the division, on every target and for every
// value, falling back to the division outside the ranges where the steps are exact.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernel_test_util.hpp"
#include "pinned_target.hpp"
#include "../../src/kernels/target_control.hpp"

namespace {

using ct::index_t;
using ct::detail::binary_op;
namespace k = ct::detail::kernels;
using namespace ct_test_kernels;

/// y = a / b through the kernel (b uniform), compared bit by bit with the C++ division.
template <class T>
void check_quotients(const std::vector<T>& a, T b, const ct::settings& s, const std::string& what) {
  std::vector<T> y(a.size());
  k::binary(binary_op::div, a.data(), false, &b, true, y.data(), static_cast<index_t>(a.size()), s);
  std::size_t wrong = 0, first = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const T want = a[i] / b;
    const bool ok = same_bits(y[i], want) || (std::isnan(want) && std::isnan(y[i]));
    if (!ok && wrong++ == 0) first = i;
  }
  INFO(what << " " << describe(s) << " b=" << std::hexfloat << b << " a=" << a[first] << " got " << y[first]
            << " want " << a[first] / b << std::defaultfloat);
  CHECK(wrong == 0);
}

/// Divisors: the hardest mantissas (all ones, one ulp above 1), ordinary ones, both signs,
/// powers of two, and the edges of the kernel's range (2^24 for floats) and just beyond.
template <class T>
std::vector<T> divisors() {
  const T one_up = std::nextafter(T(1), T(2)), two_down = std::nextafter(T(2), T(1));
  std::vector<T> bs{one_up, two_down, T(3), T(1) / T(3), T(10), T(3.14159265358979), T(-7.5), T(-1), T(0.5),
                    std::nextafter(T(1.5), T(2)), T(4095.875)};
  if constexpr (sizeof(T) == 4) {
    bs.insert(bs.end(), {0x1p24f, std::nextafter(0x1p24f, 1e30f), 0x1p-24f, std::nextafter(0x1p-24f, 0.0f),
                         0x1.fffffep-30f, 0x1p60f});
  } else {
    bs.insert(bs.end(), {0x1p200, std::nextafter(0x1p200, 1e300), 0x1p-200, std::nextafter(0x1p-200, 0.0), 0x1p500});
  }
  return bs;
}

/// Every float in [1, 2) when stride is 1, scaled by 2^scale.
std::vector<float> mantissas(std::uint32_t stride, int scale) {
  std::vector<float> a;
  for (std::uint32_t m = 0; m < (1u << 23); m += stride) a.push_back(std::ldexp(std::bit_cast<float>(0x3F800000u | m), scale));
  return a;
}

template <class T>
std::vector<T> special_tile() {
  using L = std::numeric_limits<T>;
  const T low = sizeof(T) == 4 ? T(0x1p-100f) : T(0x1p-700), high = sizeof(T) == 4 ? T(0x1p100f) : T(0x1p700);
  return {T(0),
          -T(0),
          L::infinity(),
          -L::infinity(),
          L::quiet_NaN(),
          L::denorm_min(),
          -L::denorm_min() * 5,
          L::min(),
          std::nextafter(low, T(0)),
          low,
          -std::nextafter(low, T(1)),
          high,
          std::nextafter(high, L::infinity()),
          L::max(),
          -L::max(),
          T(1.25)};
}

/// A tile of ordinary values with `odd` at position `at` (or none), so that one value decides
/// whether the whole tile goes the reciprocal way or the division's.
template <class T>
std::vector<T> tile_with(T odd, std::size_t at, std::size_t n) {
  std::vector<T> a(n);
  for (std::size_t i = 0; i < n; ++i) a[i] = T(0.37) + T(i) * T(0.61);
  if (at < n) a[at] = odd;
  return a;
}

}  // namespace

TEST_CASE("division by one value: every float mantissa, correctly rounded on every target", "[kernels][division]") {
  for (std::int64_t t : k::simd_available_targets()) {
    pinned_target pin(t);
    const std::string target = k::simd_target_label(t);
    for (const auto& s : simd_settings()) {  // (the scalar backend divides)
      // the best target checks every mantissa of a against every divisor (once: the FMA policy
      // does not change this kernel); the other targets and the other policy a subset
      const bool full = t == k::simd_available_targets().front() && s.fma == ct::fma_policy::fused;
      const auto a = mantissas(full ? 1 : 61, 0);
      for (float b : divisors<float>()) check_quotients(a, b, s, target + " a in [1, 2)");
      for (int scale : {-99, -60, -1, 20, 99}) {
        const auto scaled = mantissas(full ? 97 : 997, scale);
        for (float b : divisors<float>()) check_quotients(scaled, b, s, target + " a scaled by 2^" + std::to_string(scale));
      }
    }
  }
}

TEMPLATE_TEST_CASE("division by one value: zeros, infinities, NaN, subnormals and the range edges", "[kernels][division]",
                   float, double) {
  using T = TestType;
  for (std::int64_t t : k::simd_available_targets()) {
    pinned_target pin(t);
    const std::string target = k::simd_target_label(t);
    for (const auto& s : all_settings()) {
      for (T b : divisors<T>()) {
        check_quotients(special_tile<T>(), b, s, target + " special values");
        for (T odd : special_tile<T>())
          for (std::size_t n : {std::size_t(1), std::size_t(7), std::size_t(16), std::size_t(33), std::size_t(100)})
            for (std::size_t at : {std::size_t(0), n / 2, n - 1, n})  // n: no odd value in the tile
              check_quotients(tile_with(odd, at, n), b, s, target + " a tile of " + std::to_string(n));
      }
      for (T b : {T(0), -T(0), std::numeric_limits<T>::infinity(), std::numeric_limits<T>::quiet_NaN(),
                  std::numeric_limits<T>::denorm_min(), std::numeric_limits<T>::max()})
        check_quotients(tile_with(T(2.5), 3, 40), b, s, target + " special divisor");
    }
  }
}

TEST_CASE("division by one value: doubles over random mantissas and exponents", "[kernels][division]") {
  rng r(77);
  std::vector<double> a(1 << 18);
  for (auto& v : a) v = std::ldexp(r.uniform(1, 2), static_cast<int>(r.below(1200)) - 600) * (r.below(2) ? 1 : -1);
  for (std::int64_t t : k::simd_available_targets()) {
    pinned_target pin(t);
    for (const auto& s : all_settings())
      for (double b : divisors<double>()) check_quotients(a, b, s, std::string(k::simd_target_label(t)) + " doubles");
  }
}
