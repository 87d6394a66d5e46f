/// \file
/// Seeded random fills that give the same numbers on every platform.
///
/// std:: distributions are implementation-defined, so ct draws from its own generator
/// (SplitMix64 seeding a xoshiro256** stream) and maps bits to values itself.
#pragma once
#include <cmath>
#include <cstdint>

#include "ct/core/tensor.hpp"

namespace ct {

/// xoshiro256** seeded through SplitMix64: small, fast, and reproducible everywhere.
class random_generator {
 public:
  /// The stream of seed: equal seeds give equal streams.
  explicit random_generator(std::uint64_t seed) {
    for (auto& s : s_) {
      seed += 0x9e3779b97f4a7c15ULL;
      std::uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      s = z ^ (z >> 31);
    }
  }
  /// The next 64 random bits.
  std::uint64_t next() noexcept {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  /// Uniform in [0, 1) with 53 random bits.
  double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Standard normal (Box–Muller; one value per call, the sibling is discarded for simplicity).
  double normal() noexcept {
    double u1 = 1.0 - uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

/// Uniform values in [lo, hi) (integers: lo <= v < hi; bool: fair coin), row-major order.
template <element T>
tensor<T> random_uniform(const dims& shape, std::uint64_t seed, T lo = to_element<T>(0), T hi = to_element<T>(1)) {
  tensor<T> t(shape);
  random_generator g(seed);
  const index_t n = t.size();
  for (index_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, bool>) {
      t.data()[i] = (g.next() >> 63) != 0;
    } else if constexpr (std::is_integral_v<T>) {
      if (hi <= lo) throw error("ct::random_uniform: empty integer range");
      auto span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
      t.data()[i] = static_cast<T>(lo + static_cast<T>(g.next() % span));
    } else if constexpr (kind_of_v<T> == dtype_kind::storage_float) {
      const double l = static_cast<double>(lo), h = static_cast<double>(hi);
      t.data()[i] = T(l + (h - l) * g.uniform());  // rounded once
    } else {
      t.data()[i] = static_cast<T>(lo + (hi - lo) * g.uniform());
    }
  }
  return t;
}

/// Normally distributed floating-point values of the given mean and standard deviation,
/// drawn in row-major order.
template <element T>
  requires is_floating_element_v<T>
tensor<T> random_normal(const dims& shape, std::uint64_t seed, T mean = to_element<T>(0), T stddev = to_element<T>(1)) {
  tensor<T> t(shape);
  random_generator g(seed);
  const double m = static_cast<double>(mean), sd = static_cast<double>(stddev);
  for (index_t i = 0; i < t.size(); ++i) t.data()[i] = to_element<T>(m + sd * g.normal());
  return t;
}

}  // namespace ct
