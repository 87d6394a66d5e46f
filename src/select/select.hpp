// The lookup and the staged run of operation selectors (src/select/registry.cpp), for the
// hooks inside libct (src/select/hooks.cpp, the encoded matmul and decode).
#pragma once
#include "ct/select/selector.hpp"

namespace ct::detail {

/// The selected kernel for a call (the order of ct/select/selector.hpp), or an empty one: ct's
/// own implementation runs.
kernel select(const call_info& call);
/// Runs a selected kernel for a call whose destination starts at `data`: staged unless the
/// kernel writes the destination itself (ct/select/selector.hpp).
void run_selected(const kernel& k, const call_info& call, void* data);
/// The ct::unsupported_operation for a call no selector accepted.
[[noreturn]] void throw_unsupported(const call_info& call);

}  // namespace ct::detail
