/// \file
/// Evaluating lazy expressions: ct::eval.
///
/// ct::eval(e, dest) writes e into an existing tensor or view (any strides, foreign memory
/// too); ct::eval(e) returns a new tensor. Expressions with reductions run one group per
/// retained coordinate through the bound executor; elementwise-only ones run serially. All
/// validation (shapes, axes, destination shape and type) happens before any work or executor
/// call. Results are bitwise the same for every executor and partition. When a functor
/// throws, or scratch cannot be allocated, the destination is left unchanged.
#pragma once
#include <string>

#include "ct/expr/reductions.hpp"
#include "ct/select/hooks.hpp"

namespace ct {

/// Evaluates e into dest, whose shape must equal e's result shape and whose element type
/// must equal e's (ct::dtype_error otherwise: ct never converts implicitly; use ct::cast).
template <class E, element T>
  requires detail::operand<E>
void eval(const E& e, const tensor<T>& dest) {
  using V = detail::value_t<E>;
  if constexpr (!std::is_same_v<V, T>) {
    throw dtype_error(std::string("ct::eval: expression of type ") + dtype_name<V>() + " into a destination of type " +
                      dtype_name<T>() + "; use ct::cast<" + dtype_name<T>() + ">(…)");
  } else {
    const auto node = detail::to_node(e);
    const dims out = detail::result_shape(node);
    if (dest.shape() != out)
      throw shape_error("ct::eval: destination of shape " + dest.shape().str() + " for an expression of shape " + out.str());
    if (!elements_distinct(dest.shape(), dest.strides()))
      throw shape_error("ct::eval: destination of shape " + dest.shape().str() + " and strides " + dest.strides().str() +
                        " is a broadcast view or has overlapping strides (several elements share memory)");
    detail::program p(node.full_shape(), current_fma() == fma_policy::fused);
    const int root = node.lower(p);
    // Destination strides over the full shape: 0 along reduced axes when they were dropped
    // or kept as 1, and along extent-1 axes; an axis of extent 0 gets 1 (nothing is written
    // there, and the evaluator can tell a result running along an empty axis from one that
    // has none).
    const dims& F = p.full_shape();
    dims ds = dims::filled(F.size(), 0);
    index_t lo = 0, hi = 0;
    for (int a = 0, j = 0; a < F.size(); ++a) {
      if (out.size() < F.size() && (p.reduce_mask() & (1u << a))) continue;  // dropped axis
      if (out[j] > 1) ds[a] = dest.strides()[j];
      else if (out[j] == 0) ds[a] = 1;
      if (out[j] > 0) (dest.strides()[j] < 0 ? lo : hi) += (out[j] - 1) * dest.strides()[j];
      ++j;
    }
    // Operation selectors (ct/select/selector.hpp) see the validated call; one may take it.
    if (detail::selectors_possible() &&
        detail::run_selected_eval(p, root, dest.data(), dtype_of<T>(), dest.shape(), dest.strides()))
      return;
    detail::run_program(p, root, detail::destination{dest.data(), dtype_of<T>(), ds, lo, hi}, "eval");
  }
}

/// A ct::const_tensor is read-only: it cannot be a destination (this overload only turns the
/// mistake into a compile error that says so).
template <class E, element T>
void eval(const E&, const const_tensor<T>&) {
  static_assert(!sizeof(T*), "ct::eval: the destination is a ct::const_tensor (read-only); evaluate into a ct::tensor");
}

/// Evaluates e into a new row-major tensor of its result shape.
template <class E>
  requires detail::operand<E>
auto eval(const E& e) {
  using V = detail::value_t<E>;
  tensor<V> out(detail::result_shape(detail::to_node(e)));
  eval(e, out);
  return out;
}

template <element T>
template <class E>
  requires detail::expression_node<E>
tensor<T>::tensor(const E& e) : tensor(ct::eval(e)) {
  static_assert(std::is_same_v<typename E::value_type, T>, "ct: expression element type differs; use ct::cast");
}

}  // namespace ct
