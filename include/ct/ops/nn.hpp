// ct/ops/nn.hpp — normalisations written as single fused expressions.
//
// Each returns a lazy expression; ct::eval runs it as one kernel per row (retained
// coordinate), reading the row from L1 for every pass after the first.
#pragma once
#include "ct/expr/reductions.hpp"

namespace ct {

/// exp(x - max) / sum(exp(x - max)) along axis.
template <detail::operand X>
auto softmax(const X& x, int axis = -1) {
  auto e = exp(x - max(x, axis, true));
  return e / sum(e, axis, true);
}

/// (x - max) - log(sum(exp(x - max))) along axis.
template <detail::operand X>
auto log_softmax(const X& x, int axis = -1) {
  auto d = x - max(x, axis, true);
  return d - log(sum(exp(d), axis, true));
}

/// (x - mean) * rsqrt(mean((x - mean)^2) + eps) along axis (biased variance, like PyTorch).
template <detail::operand X>
auto layer_norm(const X& x, int axis, detail::value_t<X> eps) {
  auto d = x - mean(x, axis, true);
  return d * rsqrt(mean(square(d), axis, true) + eps);
}
/// … * weight + bias, weight and bias broadcasting against x (typically the shape of the axis).
template <detail::operand X, detail::operand W, detail::operand B>
auto layer_norm(const X& x, int axis, detail::value_t<X> eps, const W& weight, const B& bias) {
  return layer_norm(x, axis, eps) * weight + bias;
}

/// x * rsqrt(mean(x^2) + eps) along axis.
template <detail::operand X>
auto rms_norm(const X& x, int axis, detail::value_t<X> eps) {
  return x * rsqrt(mean(square(x), axis, true) + eps);
}
template <detail::operand X, detail::operand W>
auto rms_norm(const X& x, int axis, detail::value_t<X> eps, const W& weight) {
  return rms_norm(x, axis, eps) * weight;
}

}  // namespace ct
