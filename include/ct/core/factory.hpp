/// \file
/// Making tensors: zeros, ones, full, arange, from lists and vectors.
#pragma once
#include <cmath>
#include <initializer_list>
#include <vector>

#include "ct/core/tensor.hpp"

namespace ct {

/// A new zero-filled tensor of the given shape (ct::shape_error for a negative extent or an
/// element count that overflows, as for every factory).
template <element T>
tensor<T> zeros(const dims& shape) {
  return tensor<T>(shape);
}
/// A new tensor of the given shape with every element set to value.
template <element T>
tensor<T> full(const dims& shape, T value) {
  tensor<T> t(shape);
  t.fill(value);
  return t;
}
/// A new tensor of the given shape filled with 1 (true for bool).
template <element T>
tensor<T> ones(const dims& shape) {
  return full<T>(shape, to_element<T>(1));
}
/// A rank-0 tensor holding value.
template <element T>
tensor<T> scalar(T value) {
  return full<T>(dims{}, value);
}

/// [start, start+step, …) up to but excluding stop, as in numpy.arange.
/// 16-bit floats step in double and round each value once. ct::error when step is 0.
template <element T>
tensor<T> arange(T start, T stop, T step = to_element<T>(1)) {
  if (static_cast<double>(step) == 0) throw error("ct::arange: step must not be 0");
  double n = std::ceil((static_cast<double>(stop) - static_cast<double>(start)) / static_cast<double>(step));
  index_t count = n > 0 ? static_cast<index_t>(n) : 0;
  tensor<T> t(dims{count});
  for (index_t i = 0; i < count; ++i) {
    if constexpr (kind_of_v<T> == dtype_kind::storage_float)
      t.data()[i] = T(static_cast<double>(start) + static_cast<double>(i) * static_cast<double>(step));
    else
      t.data()[i] = static_cast<T>(start + static_cast<T>(i) * step);
  }
  return t;
}
/// [0, 1, …) up to but excluding stop.
template <element T>
tensor<T> arange(T stop) {
  return arange<T>(to_element<T>(0), stop, to_element<T>(1));
}

/// A row-major copy of values viewed with the given shape (ct::shape_error unless the sizes
/// match).
template <element T>
tensor<T> from_vector(const std::vector<T>& values, const dims& shape) {
  if (static_cast<index_t>(values.size()) != element_count(shape))
    throw shape_error("ct::from_vector: " + std::to_string(values.size()) + " values do not fill shape " +
                      shape.str());
  tensor<T> t(shape);
  std::copy(values.begin(), values.end(), t.data());
  return t;
}
/// A rank-1 copy of values.
template <element T>
tensor<T> from_vector(const std::vector<T>& values) {
  return from_vector(values, dims{static_cast<index_t>(values.size())});
}

namespace detail {
template <class T, int D>
struct nested_list {
  using type = std::initializer_list<typename nested_list<T, D - 1>::type>;
};
template <class T>
struct nested_list<T, 0> {
  using type = T;
};

template <class T>
void collect_list(const T& v, int, dims&, std::vector<T>& out) {
  out.push_back(v);
}
template <class T, class L>
void collect_list(std::initializer_list<L> list, int depth, dims& shape, std::vector<T>& out) {
  index_t n = static_cast<index_t>(list.size());
  if (shape[depth] < 0) shape[depth] = n;
  else if (shape[depth] != n)
    throw shape_error("ct::from_list: ragged nested list (axis " + std::to_string(depth) + " has lengths " +
                      std::to_string(shape[depth]) + " and " + std::to_string(n) + ")");
  for (const L& item : list) collect_list<T>(item, depth + 1, shape, out);
}
template <class T, int D>
tensor<T> from_nested(typename nested_list<T, D>::type list) {
  dims shape = dims::filled(D, -1);
  std::vector<T> values;
  collect_list<T>(list, 0, shape, values);
  for (auto& e : shape)
    if (e < 0) e = 0;  // an empty list leaves inner extents unknown: they are 0
  return from_vector(values, shape);
}
}  // namespace detail

/// Tensors from nested braces (rank 1 to 4), such as ct::from_list<float>({{1, 2}, {3, 4}}).
/// This overload: a rank-1 tensor. Ragged lists throw ct::shape_error.
template <element T>
tensor<T> from_list(typename detail::nested_list<T, 1>::type l) { return detail::from_nested<T, 1>(l); }
/// A rank-2 tensor from nested braces; ct::shape_error for ragged lists.
template <element T>
tensor<T> from_list(typename detail::nested_list<T, 2>::type l) { return detail::from_nested<T, 2>(l); }
/// A rank-3 tensor from nested braces; ct::shape_error for ragged lists.
template <element T>
tensor<T> from_list(typename detail::nested_list<T, 3>::type l) { return detail::from_nested<T, 3>(l); }
/// A rank-4 tensor from nested braces; ct::shape_error for ragged lists.
template <element T>
tensor<T> from_list(typename detail::nested_list<T, 4>::type l) { return detail::from_nested<T, 4>(l); }

}  // namespace ct
