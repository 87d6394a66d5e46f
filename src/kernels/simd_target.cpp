// src/kernels/simd_target.cpp — which Highway target the simd kernels dispatch to, the
// CT_SIMD_TARGET override (an experiment: run an AVX-512 machine's kernels as AVX2), and the
// test hooks that pin it (target_control.hpp).
#include "src/kernels/fp_contract_off.hpp"  // must stay first
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/kernels/simd_target.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/targets.h>

#include <cctype>
#include <cstdlib>
#include <string>

#include "ct/core/error.hpp"
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

// Every kernel file is compiled for the same HWY_TARGETS, so this file's list holds for all.
std::vector<std::int64_t> simd_available_targets() { return hwy::SupportedAndGeneratedTargets(); }

namespace {

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// CT_SIMD_TARGET, read once: the target it pins (0: none asked for) or why it cannot.
struct target_override {
  std::int64_t target = 0;
  std::string error;
};

target_override read_override() {
  target_override o;
  const char* env = std::getenv("CT_SIMD_TARGET");
  if (env == nullptr || *env == '\0') return o;
  std::int64_t found = 0;
  if (parse_simd_target(env, found, o.error)) {
    o.target = found;
    hwy::SetSupportedTargetsForTest(found);
  } else {
    o.error = "the CT_SIMD_TARGET environment variable: " + o.error;
  }
  return o;
}

const target_override& the_override() {
  static const target_override o = read_override();
  return o;
}

}  // namespace

bool parse_simd_target(const std::string& name, std::int64_t& target, std::string& why) {
  std::string names;
  for (const std::int64_t t : simd_available_targets()) {
    if (upper(name) == upper(hwy::TargetName(t))) {
      target = t;
      return true;
    }
    names += std::string(names.empty() ? "" : ", ") + hwy::TargetName(t);
  }
  why = "'" + name + "' is not a target this build can run on this CPU (available: " + names + ")";
  return false;
}

void simd_apply_target_override() {
  const target_override& o = the_override();
  if (!o.error.empty()) throw tuning_error(o.error);
}

const char* simd_target() noexcept {
  try {
    (void)the_override();  // so that the name reflects CT_SIMD_TARGET before the first operation
  } catch (...) {          // out of memory reading the variable: the operations will report it
  }
  return HWY_DYNAMIC_DISPATCH(TargetName)();
}

// 0 goes back to the process's choice: CT_SIMD_TARGET's target if it set one.
void simd_pin_target(std::int64_t target) {
  // CT_SIMD_TARGET is read first: read under a pin, its name would be checked against the
  // pinned target only (a filtered test run that pinned before any operation failed so).
  const std::int64_t process_target = the_override().target;
  hwy::SetSupportedTargetsForTest(target != 0 ? target : process_target);
}

const char* simd_target_label(std::int64_t target) { return hwy::TargetName(target); }

}  // namespace ct::detail::kernels
#endif  // HWY_ONCE
