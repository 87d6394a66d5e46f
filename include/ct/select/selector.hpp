/// \file
/// Operation selectors: route a call of ct::matmul, ct::dot, an encoded matmul, ct::eval or
/// ct::decode to a kernel of your own (an external BLAS, a hand-tuned softmax, the dot product
/// of a custom weight format). docs/selectors.md has the full description and worked examples.
///
/// A selector looks at the ct::call_info of a validated call and either declines (returns an
/// empty ct::kernel) or returns the kernel that performs the whole call. For each call ct asks,
/// in this order, and the first selector that accepts wins:
///  1. selectors bound on the calling thread with ct::selector_scope, innermost first;
///  2. selectors registered for the operation with ct::add_selector, most recent first;
///  3. selectors attached to the operands' element types and formats (ct::attach_selector),
///     visiting the distinct types in operand order, each type's most recent first;
///  4. ct's own implementation. A combination ct does not implement (say a product of bfloat16
///     by float32) that no selector accepted is a ct::unsupported_operation.
/// A product of two vectors asks for operation::dot first, then for operation::matmul.
///
/// Execution: the selected kernel runs once, on the calling thread, with the caller's executor
/// and settings still bound; ct does not partition it or call the executor for it. A kernel that
/// wants threads calls ct::parallel_for itself and then obeys the range contract like any
/// caller. By default the kernel writes into a staging buffer that ct copies to the destination
/// after the kernel returned: a kernel that throws leaves the destination unchanged, and
/// operands that alias the destination are safe. A kernel with writes_destination = true gets
/// the destination itself and promises both of those on its own.
///
/// Registration (add_selector, attach_selector, remove_selector) is not concurrent with any
/// ct operation or other registration: register at start-up. Lookups are concurrent and take
/// no lock; with no selector registered or bound a call pays one global and one thread-local
/// read (bench/expr measures it: select/*).
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "ct/core/error.hpp"
#include "ct/exec/parallel_for.hpp"
#include "ct/select/call.hpp"
#include "ct/select/hooks.hpp"

namespace ct {

/// A call that ct does not implement (for its operand types) and no selector accepted. The
/// message names the operation and the operand types.
class unsupported_operation : public error {
 public:
  using error::error;
};

/// What a selector returns: the kernel for the whole call, or nothing (declined).
struct kernel {
  /// Performs the call, writing its result through `out` (a staging buffer, or the
  /// destination itself when writes_destination). Runs once, on the calling thread. Empty:
  /// the selector declined.
  std::function<void(const call_info& call, const target& out)> run;
  /// The kernel writes the caller's destination directly: it then promises that operands
  /// aliasing the destination give the right result and that an exception leaves the
  /// destination unchanged. False (the default): ct stages the result.
  bool writes_destination = false;
  /// True when the selector accepted (run is set).
  explicit operator bool() const noexcept { return static_cast<bool>(run); }
};

/// A selector: declines a call by returning an empty kernel, or returns the kernel for it. It
/// may be called from any thread that runs ct operations, concurrently: it must not modify
/// shared state without synchronization. It must not call ct operations of the same family
/// for the call it is asked about (a kernel may, of course, call ct for parts of the work).
using selector = std::function<kernel(const call_info& call)>;

/// Identifies a registered or attached selector, for ct::remove_selector.
enum class selector_id : std::uint64_t {};

/// Registers a selector for an operation family; later registrations are asked first.
/// Not concurrent with any other ct call.
selector_id add_selector(operation op, selector s);
/// Attaches a selector for an operation family to an element type: asked for calls with an
/// operand of that type (after the scoped and family selectors). Not concurrent with any
/// other ct call.
selector_id attach_selector(dtype type, operation op, selector s);
/// Attaches a selector for an operation family to a block format (encoded operands of that
/// format). Not concurrent with any other ct call.
selector_id attach_selector(format fmt, operation op, selector s);
/// Unregisters a selector added or attached before; ct::error for an unknown id. Not
/// concurrent with any other ct call.
void remove_selector(selector_id id);

namespace detail {
/// One ct::selector_scope in its thread's chain (innermost first).
struct selector_scope_link {
  operation op = operation::eval;
  selector fn;
  selector_scope_link* outer = nullptr;
};
}  // namespace detail

/// Binds a selector for an operation family on the calling thread for the scope's lifetime,
/// asked before every registered selector; scopes nest (the innermost is asked first). Other
/// threads do not see it, and neither do ct::parallel_for callbacks (on any thread, the
/// calling one included, like the executor binding: so which kernel runs inside a callback does
/// not depend on the thread the executor picked). Destroy scopes in reverse
/// order of creation (they are stack objects).
class selector_scope {
 public:
  /// Binds s for op on this thread (ct::error for an empty selector).
  selector_scope(operation op, selector s);
  /// Unbinds it: the next outer scope, if any, is innermost again.
  ~selector_scope();
  selector_scope(const selector_scope&) = delete;
  selector_scope& operator=(const selector_scope&) = delete;

 private:
  detail::selector_scope_link link_;
};


}  // namespace ct
