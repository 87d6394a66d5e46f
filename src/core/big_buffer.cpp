// src/core/big_buffer.cpp — the blocks behind ct::detail::big_buffer and the one block each
// thread keeps for reuse (why: src/core/big_buffer.hpp).
#include "src/core/big_buffer.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace ct::detail {
namespace {

struct kept_block {
  void* p = nullptr;
  std::size_t capacity = 0, alignment = 0;
  void* take() noexcept {  // the block, now the caller's
    void* taken = p;
    p = nullptr;
    capacity = alignment = 0;
    return taken;
  }
  void free() noexcept {
    if (p != nullptr) ::operator delete(p, std::align_val_t{alignment});
    take();
  }
  ~kept_block() { free(); }
};
thread_local kept_block kept;

}  // namespace

void* big_block_acquire(std::size_t bytes, std::size_t alignment, std::size_t& capacity) {
  // Reuse the kept block when it fits and is not more than twice the request (a small
  // temporary should not pin a large block; the large one stays kept for its next user).
  if (kept.p != nullptr && kept.alignment == alignment && kept.capacity >= bytes && kept.capacity <= 2 * bytes) {
    capacity = kept.capacity;
    return kept.take();
  }
  void* p = ::operator new(bytes, std::align_val_t{alignment});
  capacity = bytes;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (alignment >= big_buffer<char>::huge_page)  // advice: failure is harmless
    ::madvise(p, bytes / big_buffer<char>::huge_page * big_buffer<char>::huge_page, MADV_HUGEPAGE);
#endif
  return p;
}

void big_block_release(void* p, std::size_t capacity, std::size_t alignment) noexcept {
  if (p == nullptr) return;
  // Keep the larger of the kept block and this one, within the limit.
  if (capacity <= kept_bytes_max && capacity >= kept.capacity) {
    kept.free();
    kept.p = p;
    kept.capacity = capacity;
    kept.alignment = alignment;
    return;
  }
  ::operator delete(p, std::align_val_t{alignment});
}

}  // namespace ct::detail
