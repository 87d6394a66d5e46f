/// \file
/// The range executor hook and its per-thread binding.
///
/// An executor is any callable void(index_t count, range_callback cb). ct calls it with the
/// number of groups of an operation (output rows, retained coordinates…); the executor must
/// call cb(start, end) on disjoint half-open ranges covering [0, count), each exactly once,
/// and return only after every callback it started has finished (rethrowing one error, if
/// any, after that). An empty executor means "run sequentially on the calling thread".
/// See docs/executor.md for the whole contract.
#pragma once
#include <functional>

#include "ct/core/index.hpp"
#include "ct/exec/range_callback.hpp"

namespace ct {

/// The range executor hook: a callable void(index_t count, range_callback callback) that keeps
/// the contract described in ct/exec/executor.hpp (in full: docs/executor.md). An empty one
/// runs everything on the calling thread.
using executor = std::function<void(index_t count, range_callback callback)>;

/// The executor bound on the calling thread (an empty one when none is bound).
const executor& current_executor() noexcept;

/// Binds an executor for the current thread until destroyed; scopes nest, and the binding
/// that was in force before comes back. Bindings are per thread: other threads never see it.
class executor_scope {
 public:
  /// Binds exec (kept in the scope) on this thread; an empty exec means sequential execution.
  explicit executor_scope(executor exec);
  /// Brings back the binding that was in force before; destroy scopes on their thread, in reverse
  /// order of creation.
  ~executor_scope();
  /// Not copyable: each binding belongs to one scope.
  executor_scope(const executor_scope&) = delete;
  /// Not assignable.
  executor_scope& operator=(const executor_scope&) = delete;

 private:
  executor exec_;
  const executor* previous_;
};

namespace detail {
/// Swaps the raw binding pointer (nullptr = none); used by the scheduler to clear it cheaply.
const executor* exchange_executor_binding(const executor* e) noexcept;
}  // namespace detail

}  // namespace ct
