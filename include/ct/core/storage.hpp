// ct/core/storage.hpp — reference-counted, aligned element storage.
#pragma once
#include <cstddef>
#include <memory>
#include <cstring>
#include <new>

#include "ct/core/dims.hpp"

namespace ct::detail {

/// Cache-line (and AVX-512 vector) alignment for every buffer ct allocates.
inline constexpr std::size_t storage_alignment = 64;

/// Buffers of at least this many bytes are placed on 2 MiB boundaries (large_storage_alignment)
/// and, on Linux, advised to the kernel as candidates for transparent huge pages: the large
/// operands of memory-bound kernels then take one TLB entry per 2 MiB instead of per 4 KiB
/// (docs/tensors.md has the measurement). The same threshold as big_buffer's scratch.
inline constexpr std::size_t large_storage_bytes = std::size_t{4} << 20;
inline constexpr std::size_t large_storage_alignment = std::size_t{2} << 20;

/// n bytes (n > 0), uninitialised, aligned to storage_alignment — or, from large_storage_bytes
/// on, to large_storage_alignment with the huge-page advice. std::bad_alloc when out of memory.
void* acquire_storage(std::size_t n);
/// Frees what acquire_storage(n) returned (the same n).
void release_storage(void* p, std::size_t n) noexcept;

/// Allocates count elements of T, zero-initialised, owned by the returned shared_ptr.
/// Foreign memory never goes through here: a wrapped tensor has an empty owner.
template <class T>
std::shared_ptr<void> allocate_storage(index_t count, T** data) {
  index_t bytes = 0;
  if (__builtin_mul_overflow(count, static_cast<index_t>(sizeof(T)), &bytes))
    throw shape_error("ct: allocation of " + std::to_string(count) + " elements overflows");
  const std::size_t n = static_cast<std::size_t>(bytes > 0 ? bytes : 1);
  void* p = acquire_storage(n);
  std::memset(p, 0, n);  // after the advice: the first touch is what maps the pages
  *data = static_cast<T*>(p);
  return std::shared_ptr<void>(p, [n](void* q) { release_storage(q, n); });
}

}  // namespace ct::detail
