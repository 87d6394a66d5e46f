// ct::checked_executor: verifies range bounds, disjointness and coverage of an executor.
#include "ct/exec/checked_executor.hpp"

#include <atomic>
#include <memory>
#include <string>

#include "ct/core/error.hpp"

namespace ct {

namespace {
std::string range_text(index_t start, index_t end, index_t count) {
  return "[" + std::to_string(start) + ", " + std::to_string(end) + ") of count " + std::to_string(count);
}
}  // namespace

executor checked_executor(executor inner) {
  if (!inner) throw error("ct::checked_executor: the wrapped executor is empty");
  return [inner = std::move(inner)](index_t count, range_callback callback) {
    // One flag per group, set by whichever thread runs it; atomics because ranges run concurrently.
    auto seen = std::make_unique<std::atomic<unsigned char>[]>(static_cast<std::size_t>(count));
    auto checking = [&](index_t start, index_t end) {
      if (start < 0 || start > end || end > count)
        throw executor_error("ct::checked_executor: range " + range_text(start, end, count) + " is out of bounds");
      for (index_t i = start; i < end; ++i)
        if (seen[static_cast<std::size_t>(i)].exchange(1))
          throw executor_error("ct::checked_executor: range " + range_text(start, end, count) +
                               " overlaps an earlier range at group " + std::to_string(i));
      callback(start, end);
    };
    inner(count, range_callback(checking, callback.grain()));
    for (index_t i = 0; i < count; ++i)
      if (!seen[static_cast<std::size_t>(i)].load()) {
        index_t j = i;
        while (j < count && !seen[static_cast<std::size_t>(j)].load()) ++j;
        throw executor_error("ct::checked_executor: groups " + range_text(i, j, count) +
                             " were never given to a callback");
      }
  };
}

}  // namespace ct
