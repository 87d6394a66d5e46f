// The thread-local bindings behind ct::executor_scope and ct::settings_scope.
#include "ct/exec/executor.hpp"
#include "ct/exec/parallel_for.hpp"
#include "ct/exec/settings.hpp"

namespace ct {

namespace {
thread_local const executor* bound_executor = nullptr;
thread_local settings bound_settings{};
const executor empty_executor{};
}  // namespace

const executor& current_executor() noexcept { return bound_executor ? *bound_executor : empty_executor; }

executor_scope::executor_scope(executor exec) : exec_(std::move(exec)), previous_(bound_executor) {
  bound_executor = &exec_;
}
executor_scope::~executor_scope() { bound_executor = previous_; }

settings current_settings() noexcept { return bound_settings; }
settings_scope::settings_scope(const settings& s) noexcept : previous_(bound_settings) { bound_settings = s; }
settings_scope::~settings_scope() { bound_settings = previous_; }

namespace detail {
// ct::tuning_scope (src/core/tuning.cpp) replaces one field of the bound settings.
void bind_settings(const settings& s) noexcept { bound_settings = s; }

const executor* exchange_executor_binding(const executor* e) noexcept {
  const executor* old = bound_executor;
  bound_executor = e;
  return old;
}

void throw_bad_range(const char* op, index_t start, index_t end, index_t count) {
  throw executor_error(std::string("ct::") + op + ": executor passed range [" + std::to_string(start) + ", " +
                       std::to_string(end) + ") outside [0, " + std::to_string(count) +
                       ") or with start > end");
}
void throw_bad_count(const char* op, index_t count) {
  throw executor_error(std::string("ct::") + op + ": negative group count " + std::to_string(count));
}
}  // namespace detail

}  // namespace ct
