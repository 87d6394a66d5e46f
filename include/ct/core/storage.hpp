// ct/core/storage.hpp — reference-counted, 64-byte aligned element storage.
#pragma once
#include <cstddef>
#include <memory>
#include <cstring>
#include <new>

#include "ct/core/dims.hpp"

namespace ct::detail {

/// Cache-line (and AVX-512 vector) alignment for every buffer ct allocates.
inline constexpr std::size_t storage_alignment = 64;

/// Allocates count elements of T, zero-initialised, owned by the returned shared_ptr.
/// Foreign memory never goes through here: a wrapped tensor has an empty owner.
template <class T>
std::shared_ptr<void> allocate_storage(index_t count, T** data) {
  index_t bytes = 0;
  if (__builtin_mul_overflow(count, static_cast<index_t>(sizeof(T)), &bytes))
    throw shape_error("ct: allocation of " + std::to_string(count) + " elements overflows");
  std::size_t n = static_cast<std::size_t>(bytes > 0 ? bytes : 1);
  void* p = ::operator new(n, std::align_val_t{storage_alignment});
  std::memset(p, 0, n);
  *data = static_cast<T*>(p);
  return std::shared_ptr<void>(p, [](void* q) { ::operator delete(q, std::align_val_t{storage_alignment}); });
}

}  // namespace ct::detail
