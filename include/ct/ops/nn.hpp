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
// Checks the axis under the caller's name first (the max or mean inside would name itself).
template <class X>
void check_norm_axis(const X& x, int axis, const char* op) {
  normalize_axis(axis, to_node(x).shape(), op);
}
}  // namespace detail

/// exp(x - max) / sum(exp(x - max)) along axis.
template <detail::operand X>
auto softmax(const X& x, int axis = -1) {
  detail::check_norm_axis(x, axis, "softmax");
  auto e = exp(x - max(x, axis, true));
  return e / sum(e, axis, true);
}

/// (x - max) - log(sum(exp(x - max))) along axis.
template <detail::operand X>
auto log_softmax(const X& x, int axis = -1) {
  detail::check_norm_axis(x, axis, "log_softmax");
  auto d = x - max(x, axis, true);
  return d - log(sum(exp(d), axis, true));
}

/// (x - mean) * rsqrt(mean((x - mean)^2) + eps) along axis (biased variance, like PyTorch).
template <detail::operand X>
auto layer_norm(const X& x, int axis, detail::value_t<X> eps) {
  detail::check_norm_axis(x, axis, "layer_norm");
  auto d = x - mean(x, axis, true);
  return d * rsqrt(mean(square(d), axis, true) + eps);
}
/// layer_norm(x, axis, eps) * weight + bias, weight and bias broadcasting against x (typically
/// the shape of the axis).
template <detail::operand X, detail::operand W, detail::operand B>
auto layer_norm(const X& x, int axis, detail::value_t<X> eps, const W& weight, const B& bias) {
  return layer_norm(x, axis, eps) * weight + bias;
}

/// x * rsqrt(mean(x^2) + eps) along axis.
template <detail::operand X>
auto rms_norm(const X& x, int axis, detail::value_t<X> eps) {
  detail::check_norm_axis(x, axis, "rms_norm");
  return x * rsqrt(mean(square(x), axis, true) + eps);
}
/// rms_norm(x, axis, eps) * weight, weight broadcasting against x (typically the shape of the
/// axis).
template <detail::operand X, detail::operand W>
auto rms_norm(const X& x, int axis, detail::value_t<X> eps, const W& weight) {
  return rms_norm(x, axis, eps) * weight;
}

}  // namespace ct
