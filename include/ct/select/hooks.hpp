/// \file
/// The entry points ct's operations use to ask operation selectors (internal; the public
/// interface is ct/select/selector.hpp). Kept small: every operation header includes it.
#pragma once
#include <cstdint>

#include "ct/core/dims.hpp"
#include "ct/core/dtype.hpp"
#include "ct/exec/parallel_for.hpp"
#include "ct/select/call.hpp"

namespace ct::detail {

class program;

/// The number of registered and attached selectors. A plain variable: only registration
/// writes it, and registration is not concurrent with operations.
extern std::uint32_t registered_selector_count;
/// True when the calling thread has a ct::selector_scope.
bool thread_has_selector_scope() noexcept;
/// The cheap test every selectable call makes first.
inline bool selectors_possible() noexcept { return registered_selector_count != 0 || thread_has_selector_scope(); }

/// Asks the eval selectors for an evaluation of program p (value `root`) into a validated
/// destination; true when a selected kernel did it.
bool run_selected_eval(const program& p, int root, void* data, dtype type, const dims& shape, const dims& strides);
/// Asks the selectors of op for a validated product a·b into dest (dest.data unused; the
/// result goes to `data`); a product of two vectors asks operation::dot first. True when a
/// selected kernel did it; with `must` (ct has no implementation), ct::unsupported_operation
/// instead of false.
bool run_selected_product(operation op, const char* name, const operand_view& a, const operand_view& b,
                          const operand_view& dest, void* data, bool must);

/// A tensor as a selector sees it.
template <class Tensor>
operand_view view_of(const Tensor& t) {
  operand_view v;
  v.type = dtype_of<typename Tensor::value_type>();
  v.shape = t.shape();
  v.strides = t.strides();
  v.data = t.data();
  return v;
}

/// While ct's own implementation of a call runs on this thread, the ct calls it makes itself
/// (a widening ct::eval inside a bfloat16 product, say) are not routed to selectors.
class selection_off {
 public:
  selection_off() noexcept : previous_(exchange_selector_state({nullptr, true})) {}
  ~selection_off() { exchange_selector_state(previous_); }
  selection_off(const selection_off&) = delete;
  selection_off& operator=(const selection_off&) = delete;

 private:
  selector_thread_state previous_;
};

}  // namespace ct::detail
