// ct/core/strided.hpp — walking the elements of strided tensors in row-major order.
#pragma once
#include <array>
#include <cstddef>

#include "ct/core/dims.hpp"

namespace ct::detail {

/// Calls row(offsets, n, inner_strides) once per innermost row of `shape`, where offsets[k]
/// is the element offset of the row's first element in operand k. The loops run in
/// row-major order, so visiting order is deterministic.
template <std::size_t N, class Row>
void for_each_row(const dims& shape, const std::array<dims, N>& strides, Row&& row) {
  const int r = shape.size();
  for (index_t e : shape)
    if (e == 0) return;
  std::array<index_t, N> off{};
  std::array<index_t, N> inner{};
  if (r == 0) {
    row(off, index_t{1}, inner);
    return;
  }
  for (std::size_t k = 0; k < N; ++k) inner[k] = strides[k][r - 1];
  const index_t n = shape[r - 1];
  dims idx = dims::filled(r, 0);
  for (;;) {
    row(off, n, inner);
    int a = r - 2;
    for (; a >= 0; --a) {
      for (std::size_t k = 0; k < N; ++k) off[k] += strides[k][a];
      if (++idx[a] < shape[a]) break;
      for (std::size_t k = 0; k < N; ++k) off[k] -= strides[k][a] * shape[a];
      idx[a] = 0;
    }
    if (a < 0) return;
  }
}

}  // namespace ct::detail
