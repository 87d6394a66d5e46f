// tests/kernels/kernel_test_util.hpp — helpers shared by the kernel tests: settings
// combinations, misaligned buffers, and ulp distances to a wider reference.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "../../src/kernels/detail.hpp"
#include "../../src/kernels/kernels.hpp"

namespace ct_test_kernels {

using ct::index_t;
namespace k = ct::detail::kernels;

inline std::vector<ct::settings> all_settings() {
  return {{ct::backend::scalar, ct::fma_policy::fused},
          {ct::backend::scalar, ct::fma_policy::separate},
          {ct::backend::simd, ct::fma_policy::fused},
          {ct::backend::simd, ct::fma_policy::separate}};
}

/// Whether the simd kernels dispatch to a target with FMA hardware (AVX2 and the AVX-512 ones
/// here). On the others (SSSE3, SSE4, the scalar target: a CPU without FMA, or CT_SIMD_TARGET)
/// Highway's MulAdd rounds twice, and the simd transcendentals give the same results under both
/// FMA policies (docs/kernels.md).
inline bool simd_has_fma() { return std::string(k::simd_target()).rfind("AVX", 0) == 0; }

inline std::string describe(const ct::settings& s) {
  return std::string(s.backend == ct::backend::scalar ? "scalar" : "simd") + "/" +
         (s.fma == ct::fma_policy::fused ? "fused" : "separate");
}

inline const std::vector<index_t>& tile_lengths() {
  static const std::vector<index_t> v{0, 1, 7, 15, 16, 17, 31, 33, 100, 1000, 1023, 4097};
  return v;
}

/// A buffer whose data() starts one element past an aligned allocation (misaligned on purpose).
template <class T>
struct offset_buffer {
  std::vector<T> storage;
  explicit offset_buffer(index_t n, T fill = T(0)) : storage(static_cast<size_t>(n) + 1, fill) {}
  T* data() { return storage.data() + 1; }
  T& operator[](index_t i) { return storage[static_cast<size_t>(i) + 1]; }
};

template <class T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

/// Distance of `got` from the exact value `ref` (held in a wider type) in units of the last
/// place of T at ref's magnitude. Infinities/NaN must match exactly (else +inf distance).
template <class T, class W>
double ulp_error(T got, W ref) {
  if (std::isnan(ref) || std::isnan(got)) return std::isnan(ref) && std::isnan(got) ? 0.0 : INFINITY;
  const W max_t = static_cast<W>(std::numeric_limits<T>::max());
  if (std::isinf(got) || std::isinf(ref)) {
    if (std::isinf(got) && std::isinf(ref)) return got == ref ? 0.0 : INFINITY;
    // A finite reference just beyond T's range rounds to inf: measure against the max finite value.
    if (std::isinf(got) && std::fabs(ref) > max_t) return 0.0;
    return INFINITY;
  }
  const W a = std::fabs(ref);
  int e = 0;
  std::frexp(a, &e);  // a in [2^(e-1), 2^e)
  const int min_e = std::numeric_limits<T>::min_exponent;  // subnormal spacing below this
  const int p = std::numeric_limits<T>::digits;
  const W ulp = std::ldexp(W(1), (e > min_e ? e : min_e) - p);
  return static_cast<double>(std::fabs(static_cast<W>(got) - ref) / ulp);
}

/// Deterministic pseudo-random numbers (splitmix64), so failures reproduce.
struct rng {
  std::uint64_t s;
  explicit rng(std::uint64_t seed) : s(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform(double lo, double hi) { return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1p-53; }
  index_t below(index_t n) { return static_cast<index_t>(next() % static_cast<std::uint64_t>(n)); }
};

}  // namespace ct_test_kernels
