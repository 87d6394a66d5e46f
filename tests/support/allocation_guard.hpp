// tests/support/allocation_guard.hpp — switches that make allocations on this thread fail:
// all of them, or the k-th. The test binary's global operator new (support/allocation_guard.cpp) throws
// std::bad_alloc while allocations_forbidden is true on the calling thread.
#pragma once
#include <cstddef>

namespace ct_test {

/// While true on a thread, every operator new on that thread throws std::bad_alloc.
extern thread_local bool allocations_forbidden;

/// Fault injection: while >= 0 on a thread, the number of allocations on that thread still let
/// through; the one after them throws std::bad_alloc and sets this back to -1 (so error
/// handling after it can allocate). -1: no injection.
extern thread_local long allocations_until_failure;

/// The largest single allocation on this thread since it was last set to 0 (bytes).
extern thread_local std::size_t largest_allocation;

/// Whether this binary's operator new is the replacement above (not under clang's TSan).
bool allocation_hooks_active() noexcept;

}  // namespace ct_test
