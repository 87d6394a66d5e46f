/// \file
/// Printing tensors: operator<< in a NumPy-like nested-bracket form, and ct::to_string.
#pragma once
#include <ostream>
#include <sstream>

#include "ct/core/tensor.hpp"

namespace ct {

namespace detail {
// Axes longer than this print their first and last print_edge items around "...".
inline constexpr index_t print_summarize_above = 1000;
inline constexpr index_t print_edge = 3;

template <element T>
void print_value(std::ostream& os, T v) {
  if constexpr (std::is_same_v<T, bool>) os << (v ? "true" : "false");
  else if constexpr (kind_of_v<T> == dtype_kind::storage_float) os << static_cast<float>(v);
  else if constexpr (sizeof(T) == 1) os << static_cast<int>(v);  // int8/uint8 as numbers, not characters
  else os << v;
}

template <element T>
void print_axis(std::ostream& os, const tensor<T>& t, int axis, index_t offset, bool summarize) {
  const index_t n = t.shape()[axis];
  os << '[';
  for (index_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * print_edge && i == print_edge) {
      os << "...";
      i = n - print_edge - 1;
      if (axis + 1 < t.rank()) os << ",\n" << std::string(static_cast<std::size_t>(axis + 1), ' ');
      else os << ", ";
      continue;
    }
    index_t off = offset + i * t.strides()[axis];
    if (axis + 1 == t.rank()) print_value(os, t.data()[off]);
    else print_axis(os, t, axis + 1, off, summarize);
    if (i + 1 < n) {
      if (axis + 1 == t.rank()) os << ", ";
      else os << ',' << std::string(static_cast<std::size_t>(t.rank() - axis - 1), '\n')
              << std::string(static_cast<std::size_t>(axis + 1), ' ');
    }
  }
  os << ']';
}
}  // namespace detail

/// Prints t in nested brackets, such as `[[1, 2, 3], [4, 5, 6]]` (one line per row); tensors of
/// more than 1000 elements show only the first and last 3 items of each longer axis, around
/// "...".
template <element T>
std::ostream& operator<<(std::ostream& os, const tensor<T>& t) {
  if (t.rank() == 0) {
    detail::print_value(os, *t.data());
    return os;
  }
  detail::print_axis(os, t, 0, 0, t.size() > detail::print_summarize_above);
  return os;
}

/// The printed form as a string.
template <element T>
std::string to_string(const tensor<T>& t) {
  std::ostringstream s;
  s << t;
  return s.str();
}

}  // namespace ct
