// src/expr/run/interpreter.hpp — the general path: one instruction over a tile (internal).
//
// Used where no step was resolved at plan time: constants, one values that are not one IEEE
// operation, gathered loads, and operations without a tile function (integer, bool,
// comparisons, casts, ct::map, pow), and by the column walk for everything but plain sums.
#pragma once
#include <vector>

#include "ct/exec/settings.hpp"
#include "src/expr/plan/plan.hpp"

namespace ct::detail {
namespace [[gnu::visibility("hidden")]] evaluator {  // see plan.hpp

/// Runs non-load instruction i over n elements: ptr holds every instruction's current value,
/// uni whether it is one value (repeated along the tile). s: the caller's settings, read once
/// per callback (a thread_local read per tile showed up in profiles of short rows).
void exec_op(const plan& pl, int i, index_t n, void* const* ptr, const char* uni, void* out, const settings& s);

/// Copies n elements of load i at walk position pos of the innermost reduced axis (operands'
/// group offsets in `offsets`) into out.
void load_tile(const plan& pl, int i, const std::vector<index_t>& offsets, index_t pos, index_t n, void* out);

}  // namespace evaluator
}  // namespace ct::detail
