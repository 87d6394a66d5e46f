/// \file
/// Whole-tensor comparisons for tests and users.
#pragma once
#include <cmath>

#include "ct/core/tensor.hpp"

namespace ct {

/// True when both tensors have the same shape and every element compares equal
/// (so a NaN anywhere makes it false, as in numpy.array_equal).
template <element T>
bool equal(const tensor<T>& a, const tensor<T>& b) {
  if (a.shape() != b.shape()) return false;
  bool same = true;
  const T *pa = a.data(), *pb = b.data();
  detail::for_each_row<2>(a.shape(), {a.strides(), b.strides()}, [&](auto off, index_t n, auto in) {
    for (index_t i = 0; i < n && same; ++i) same = pa[off[0] + i * in[0]] == pb[off[1] + i * in[1]];
  });
  return same;
}

/// numpy.allclose: |a - b| <= atol + rtol * |b| elementwise, after broadcasting a and b
/// (shape_error if they do not broadcast). NaNs are equal only when equal_nan is set.
template <element T>
bool allclose(const tensor<T>& a, const tensor<T>& b, double rtol = 1e-5, double atol = 1e-8,
              bool equal_nan = false) {
  dims shape = broadcast_shapes(a.shape(), b.shape(), "allclose");
  tensor<T> x = a.broadcast_to(shape), y = b.broadcast_to(shape);
  bool close = true;
  const T *pa = x.data(), *pb = y.data();
  detail::for_each_row<2>(shape, {x.strides(), y.strides()}, [&](auto off, index_t n, auto in) {
    for (index_t i = 0; i < n && close; ++i) {
      double u = static_cast<double>(pa[off[0] + i * in[0]]), v = static_cast<double>(pb[off[1] + i * in[1]]);
      if (std::isnan(u) || std::isnan(v)) close = equal_nan && std::isnan(u) && std::isnan(v);
      else if (std::isinf(u) || std::isinf(v)) close = u == v;
      else close = std::fabs(u - v) <= atol + rtol * std::fabs(v);
    }
  });
  return close;
}

}  // namespace ct
