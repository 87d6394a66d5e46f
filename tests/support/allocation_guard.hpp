// tests/support/allocation_guard.hpp — a switch that makes every allocation on this thread
// fail. The test binary's global operator new (support/allocation_guard.cpp) throws
// std::bad_alloc while allocations_forbidden is true on the calling thread.
#pragma once

namespace ct_test {

/// While true on a thread, every operator new on that thread throws std::bad_alloc.
extern thread_local bool allocations_forbidden;

}  // namespace ct_test
