// src/core/big_buffer.hpp — an uninitialised, aligned array for the large temporaries a call
// makes before scheduling (packed matrix operands, weights laid out for a kernel), allocated
// like a tensor's elements (ct/core/storage.hpp: 64-byte aligned, and from 4 MiB on 2 MiB
// aligned with a request for transparent huge pages, honoured in Linux's usual "madvise"
// setting). In 4 KiB pages the first-touch faults of a 64 MiB packed
// B were a third of a prompt-shaped x·Wᵀ on a VM (perf, Zen 5 guest); in huge pages they vanish.
//
// Each thread keeps one released block, up to kept_bytes_max (the larger of the one it holds
// and the one just released), for its next big_buffer of a fitting size: a loop of
// same-shaped products (every layer of a model, every benchmark iteration) then packs into
// memory that is already mapped, instead of paying the kernel's mapping, zeroing and unmapping
// every call (4% of sgemm 1024³ in perf, Zen 5 guest). A kept block is freed when its thread
// exits, or when a larger released block replaces it.
// Allocation failures are std::bad_alloc, as everywhere else.
#pragma once
#include <cstddef>
#include <memory>
#include <new>

#include "ct/core/index.hpp"
#include "ct/core/storage.hpp"

namespace ct::detail {

/// The largest released block a thread keeps for reuse (docs/matmul.md, "Memory").
inline constexpr std::size_t kept_bytes_max = std::size_t{32} << 20;

/// Raw blocks behind big_buffer: acquire returns at least bytes, aligned as acquire_storage
/// aligns them, possibly this thread's kept block; release gives a block back (kept or freed).
/// src/core/big_buffer.cpp.
void* big_block_acquire(std::size_t bytes, std::size_t& capacity);
void big_block_release(void* p, std::size_t capacity) noexcept;

template <class T>
class big_buffer {
 public:
  big_buffer() = default;
  explicit big_buffer(index_t count) {
    const std::size_t bytes = static_cast<std::size_t>(count > 0 ? count : 1) * sizeof(T);
    std::size_t capacity = 0;
    void* p = big_block_acquire(bytes, capacity);
    owner_ = std::unique_ptr<T, release>(static_cast<T*>(p), release{capacity});
  }
  T* data() const noexcept { return owner_.get(); }

 private:
  struct release {
    std::size_t capacity = 0;
    void operator()(T* p) const noexcept { big_block_release(p, capacity); }
  };
  std::unique_ptr<T, release> owner_;
};

}  // namespace ct::detail
