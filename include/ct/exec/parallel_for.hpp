/// \file
/// How ct hands groups of work to the bound executor: ct::parallel_for.
#pragma once
#include <string>

#include "ct/core/error.hpp"
#include "ct/exec/executor.hpp"
#include "ct/exec/settings.hpp"

namespace ct {

namespace detail {

struct selector_scope_link;
/// A thread's operation-selector bindings (ct/select/selector.hpp): its innermost
/// ct::selector_scope, and whether a selected kernel is running on it.
struct selector_thread_state {
  selector_scope_link* innermost = nullptr;
  bool in_kernel = false;
};
/// Replaces the calling thread's selector bindings, returning the old ones.
selector_thread_state exchange_selector_state(selector_thread_state s) noexcept;

/// Inside a callback: no executor (no recursive scheduling), no thread-bound selectors, and
/// the caller's settings — the same on every thread. Restores the thread's own bindings on
/// exit, also when that thread is the caller.
class callback_bindings {
 public:
  explicit callback_bindings(const settings& caller) noexcept
      : previous_executor_(exchange_executor_binding(nullptr)),
        previous_selectors_(exchange_selector_state({})),
        settings_(caller) {}
  ~callback_bindings() {
    exchange_selector_state(previous_selectors_);
    exchange_executor_binding(previous_executor_);
  }
  callback_bindings(const callback_bindings&) = delete;
  callback_bindings& operator=(const callback_bindings&) = delete;

 private:
  const executor* previous_executor_;
  selector_thread_state previous_selectors_;
  settings_scope settings_;
};

[[noreturn]] void throw_bad_range(const char* op, index_t start, index_t end, index_t count);
[[noreturn]] void throw_bad_count(const char* op, index_t count);

/// The scheduling primitive of every scheduled operation: count groups, body(start, end)
/// evaluates groups [start, end). Zero groups: nothing is called. One group, or no bound
/// executor: body(0, count) runs on the calling thread. Otherwise the bound executor
/// receives count and a callback that checks each range and runs body under the bindings
/// described above. `op` names the operation in error messages; `grain` is the callback's
/// hint (range_callback::grain).
template <class Body>
void schedule(const char* op, index_t count, Body&& body, index_t grain = 1) {
  if (count < 0) throw_bad_count(op, count);
  if (count == 0) return;
  const settings caller = current_settings();
  const executor& exec = current_executor();
  if (count == 1 || !exec) {
    callback_bindings bindings(caller);
    body(index_t{0}, count);
    return;
  }
  auto checked = [&](index_t start, index_t end) {
    if (start < 0 || start > end || end > count) throw_bad_range(op, start, end, count);
    if (start == end) return;
    callback_bindings bindings(caller);
    body(start, end);
  };
  exec(count, range_callback(checked, grain));
}

}  // namespace detail

/// Runs body(start, end) over [0, count) through the bound executor, with the same checks
/// and bindings as ct's own scheduled operations: the opt-in for custom kernels. body must
/// be safe to call concurrently on disjoint ranges. count 0 calls nothing; count 1 (or no
/// executor) calls body(0, count) on this thread.
template <class Body>
void parallel_for(index_t count, Body&& body) {
  detail::schedule("parallel_for", count, body);
}

}  // namespace ct
