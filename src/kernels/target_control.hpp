// src/kernels/target_control.hpp — test hooks over the simd backend's runtime dispatch: list
// the Highway targets this CPU can run, and pin dispatch to one of them so that tests cover
// every compiled target (AVX-512, AVX2, SSE4, …), not only the best one.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ct::detail::kernels {

/// Targets (Highway HWY_* bits) compiled into the simd kernels and supported by this CPU.
std::vector<std::int64_t> simd_available_targets();

/// Pins dispatch to `target` (one of the above) until restored; process-wide, so for
/// single-threaded tests only. 0 restores the normal choice (CT_SIMD_TARGET's, if set).
void simd_pin_target(std::int64_t target);

/// The available target named `name` (Highway's names, any case: "AVX2", "avx3", "SCALAR").
/// False, with `why` naming the available ones, when there is none.
bool parse_simd_target(const std::string& name, std::int64_t& target, std::string& why);

/// Reads CT_SIMD_TARGET once and pins dispatch to it; throws ct::tuning_error (every time)
/// when it names no available target. Called with the first operation's tuning.
void simd_apply_target_override();

/// Highway's name of a target bit.
const char* simd_target_label(std::int64_t target);

}  // namespace ct::detail::kernels
