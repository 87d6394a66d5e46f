// src/kernels/target_control.hpp — test hooks over the simd backend's runtime dispatch: list
// the Highway targets this CPU can run, and pin dispatch to one of them so that tests cover
// every compiled target (AVX-512, AVX2, SSE4, …), not only the best one.
#pragma once
#include <cstdint>
#include <vector>

namespace ct::detail::kernels {

/// Targets (Highway HWY_* bits) compiled into the simd kernels and supported by this CPU.
std::vector<std::int64_t> simd_available_targets();

/// Pins dispatch to `target` (one of the above) until restored; process-wide, so for
/// single-threaded tests only. 0 restores the normal choice.
void simd_pin_target(std::int64_t target);

/// Highway's name of a target bit.
const char* simd_target_label(std::int64_t target);

}  // namespace ct::detail::kernels
