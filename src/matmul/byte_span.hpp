// src/matmul/byte_span.hpp — the address range a strided tensor's elements occupy, for the
// products' overlap checks (a destination shared with an input is snapshotted or refused).
#pragma once
#include <cstdint>

#include "ct/core/tensor.hpp"

namespace ct::detail::mm {

/// [lo, hi): the bytes t's elements occupy (lo == hi for an empty tensor).
template <class T>
void byte_span(const tensor<T>& t, std::uintptr_t& lo, std::uintptr_t& hi) {
  lo = hi = 0;
  if (t.size() == 0) return;
  index_t first = 0, last = 0;
  for (int i = 0; i < t.rank(); ++i) {
    const index_t d = (t.shape()[i] - 1) * t.strides()[i];
    (d < 0 ? first : last) += d;
  }
  const auto base = reinterpret_cast<std::uintptr_t>(t.data());
  lo = base + static_cast<std::uintptr_t>(first * static_cast<index_t>(sizeof(T)));
  hi = base + static_cast<std::uintptr_t>((last + 1) * static_cast<index_t>(sizeof(T)));
}

/// Whether two non-empty byte ranges intersect.
inline bool ranges_meet(std::uintptr_t al, std::uintptr_t ah, std::uintptr_t bl, std::uintptr_t bh) noexcept {
  return al < ah && bl < bh && al < bh && bl < ah;
}

/// Conservative overlap test: the address ranges intersect.
template <class T, class U>
bool may_overlap(const tensor<T>& x, const tensor<U>& y) {
  std::uintptr_t xl, xh, yl, yh;
  byte_span(x, xl, xh);
  byte_span(y, yl, yh);
  return ranges_meet(xl, xh, yl, yh);
}

}  // namespace ct::detail::mm
