// src/expr/stream_copy.hpp — copies to memory that will not be read again soon (internal).
#pragma once
#include <cstddef>

namespace ct::detail {

/// Copies `bytes` from src to dst (not overlapping) with non-temporal stores for the aligned
/// middle: the destination lines are written without first being read into the cache, which
/// saves a third of the memory traffic of writing a large result. Call stream_fence() before
/// another thread may read dst.
void stream_copy(void* dst, const void* src, std::size_t bytes) noexcept;

/// Orders the non-temporal stores of this thread before its later stores (x86 sfence).
void stream_fence() noexcept;

}  // namespace ct::detail
