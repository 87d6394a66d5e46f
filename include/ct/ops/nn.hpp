/// \file
/// Normalisations written as single fused expressions.
///
/// Each returns a lazy expression; ct::eval runs it as one kernel per row (retained
/// coordinate), reading the row from L1 for every pass after the first. Each checks its axis
/// when called: ct::axis_error naming the function.
#pragma once
#include "ct/expr/reductions.hpp"

namespace ct {
namespace detail {
// Checks the axis under the caller's name first (the max or mean inside would name itself);
// returns it normalised.
template <class X>
int check_norm_axis(const X& x, int axis, const char* op) {
  return normalize_axis(axis, to_node(x).shape(), op);
}

/// A normalisation's expression under its name: evaluates exactly as E, and marks its value
/// in the program so operation selectors see the root as "softmax" (ct/select/selector.hpp).
template <class E>
struct named_expression {
  using value_type = typename E::value_type;
  static constexpr bool is_ct_expression = true;
  E expr;
  const char* name;
  int axis;
  double eps;
  const dims& shape() const noexcept { return expr.shape(); }
  const dims& full_shape() const noexcept { return expr.full_shape(); }
  int lower(program& p) const {
    const int r = expr.lower(p);
    p.name_value(r, name, axis, eps);
    return r;
  }
};
template <class E>
named_expression<E> named(E e, const char* name, int axis, double eps = 0) {
  return {std::move(e), name, axis, eps};
}
}  // namespace detail

/// exp(x - max) / sum(exp(x - max)) along axis.
template <detail::operand X>
auto softmax(const X& x, int axis = -1) {
  const int a = detail::check_norm_axis(x, axis, "softmax");
  auto e = exp(x - max(x, axis, true));
  return detail::named(e / sum(e, axis, true), "softmax", a);
}

/// (x - max) - log(sum(exp(x - max))) along axis.
template <detail::operand X>
auto log_softmax(const X& x, int axis = -1) {
  const int a = detail::check_norm_axis(x, axis, "log_softmax");
  auto d = x - max(x, axis, true);
  return detail::named(d - log(sum(exp(d), axis, true)), "log_softmax", a);
}

/// (x - mean) * rsqrt(mean((x - mean)^2) + eps) along axis (biased variance, like PyTorch).
template <detail::operand X>
auto layer_norm(const X& x, int axis, detail::value_t<X> eps) {
  const int a = detail::check_norm_axis(x, axis, "layer_norm");
  auto d = x - mean(x, axis, true);
  return detail::named(d * rsqrt(mean(square(d), axis, true) + eps), "layer_norm", a, static_cast<double>(eps));
}
/// layer_norm(x, axis, eps) * weight + bias, weight and bias broadcasting against x (typically
/// the shape of the axis).
template <detail::operand X, detail::operand W, detail::operand B>
auto layer_norm(const X& x, int axis, detail::value_t<X> eps, const W& weight, const B& bias) {
  const int a = detail::check_norm_axis(x, axis, "layer_norm");
  return detail::named(layer_norm(x, axis, eps) * weight + bias, "layer_norm", a, static_cast<double>(eps));
}

/// x * rsqrt(mean(x^2) + eps) along axis.
template <detail::operand X>
auto rms_norm(const X& x, int axis, detail::value_t<X> eps) {
  const int a = detail::check_norm_axis(x, axis, "rms_norm");
  return detail::named(x * rsqrt(mean(square(x), axis, true) + eps), "rms_norm", a, static_cast<double>(eps));
}
/// rms_norm(x, axis, eps) * weight, weight broadcasting against x (typically the shape of the
/// axis).
template <detail::operand X, detail::operand W>
auto rms_norm(const X& x, int axis, detail::value_t<X> eps, const W& weight) {
  const int a = detail::check_norm_axis(x, axis, "rms_norm");
  return detail::named(rms_norm(x, axis, eps) * weight, "rms_norm", a, static_cast<double>(eps));
}

}  // namespace ct
