// src/kernels/simd_target.cpp — which Highway target the simd kernels dispatch to, and the test
// hooks that pin it (target_control.hpp).
#include "src/kernels/fp_contract_off.hpp"  // must stay first
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/kernels/simd_target.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/targets.h>

#include "src/kernels/detail.hpp"
#include "src/kernels/target_control.hpp"

HWY_BEFORE_NAMESPACE();
namespace ct::detail::kernels {
namespace HWY_NAMESPACE {
const char* TargetName() { return hwy::TargetName(HWY_TARGET); }
}  // namespace HWY_NAMESPACE
}  // namespace ct::detail::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ct::detail::kernels {

HWY_EXPORT(TargetName);

const char* simd_target() noexcept { return HWY_DYNAMIC_DISPATCH(TargetName)(); }

// Every kernel file is compiled for the same HWY_TARGETS, so this file's list holds for all.
std::vector<std::int64_t> simd_available_targets() { return hwy::SupportedAndGeneratedTargets(); }

void simd_pin_target(std::int64_t target) { hwy::SetSupportedTargetsForTest(target); }

const char* simd_target_label(std::int64_t target) { return hwy::TargetName(target); }

}  // namespace ct::detail::kernels
#endif  // HWY_ONCE
