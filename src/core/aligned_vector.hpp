// src/core/aligned_vector.hpp — std::vector whose elements start on a cache line (64 bytes),
// for scratch that kernels read with full-width vector loads: from a buffer 16-byte aligned, as
// malloc's are, three of every four 64-byte loads straddle two lines (the AVX-512 q4_0 row
// kernel took 24 cycles per 16 blocks instead of 20 on a Zen 5 guest, q8_0 30 instead of 27).
#pragma once
#include <cstddef>
#include <new>
#include <vector>

namespace ct::detail {

template <class T>
struct cache_aligned_allocator {
  using value_type = T;
  static constexpr std::align_val_t alignment{64};
  cache_aligned_allocator() noexcept = default;
  template <class U>
  cache_aligned_allocator(const cache_aligned_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), alignment)); }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, alignment); }
  template <class U>
  bool operator==(const cache_aligned_allocator<U>&) const noexcept {
    return true;
  }
};

template <class T>
using aligned_vector = std::vector<T, cache_aligned_allocator<T>>;

/// n rounded up to a whole number of 64-byte lines of T.
template <class T>
constexpr std::ptrdiff_t whole_lines(std::ptrdiff_t n) noexcept {
  constexpr std::ptrdiff_t per_line = static_cast<std::ptrdiff_t>(64 / sizeof(T));
  return (n + per_line - 1) / per_line * per_line;
}

}  // namespace ct::detail
