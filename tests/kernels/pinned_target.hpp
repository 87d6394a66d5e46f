// tests/kernels/pinned_target.hpp — pinning the simd backend to one Highway target in a test.
#pragma once
#include <cstdint>
#include <vector>

#include "../../src/kernels/target_control.hpp"
#include "ct/exec/settings.hpp"

namespace ct_test_kernels {

/// Pins simd dispatch for the scope's lifetime and restores the normal choice afterwards.
struct pinned_target {
  explicit pinned_target(std::int64_t t) { ct::detail::kernels::simd_pin_target(t); }
  ~pinned_target() { ct::detail::kernels::simd_pin_target(0); }
  pinned_target(const pinned_target&) = delete;
  pinned_target& operator=(const pinned_target&) = delete;
};

/// The simd backend under both FMA policies.
inline const std::vector<ct::settings>& simd_settings() {
  static const std::vector<ct::settings> v{{ct::backend::simd, ct::fma_policy::fused},
                                           {ct::backend::simd, ct::fma_policy::separate}};
  return v;
}

}  // namespace ct_test_kernels
