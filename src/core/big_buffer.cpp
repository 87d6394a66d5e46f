// src/core/big_buffer.cpp — the blocks behind ct::detail::big_buffer and the one block each
// thread keeps for reuse (why: src/core/big_buffer.hpp). Blocks come from acquire_storage, so
// their alignment (and huge-page advice) follows from their size.
#include "src/core/big_buffer.hpp"

namespace ct::detail {
namespace {

// Whether a block of this many bytes is aligned (and advised) as a large one: a kept block
// serves only requests of its own kind.
bool large(std::size_t bytes) { return bytes >= large_storage_bytes; }

struct kept_block {
  void* p = nullptr;
  std::size_t capacity = 0;
  void* take() noexcept {  // the block, now the caller's
    void* taken = p;
    p = nullptr;
    capacity = 0;
    return taken;
  }
  void free() noexcept {
    if (p != nullptr) release_storage(p, capacity);
    take();
  }
  ~kept_block() { free(); }
};
thread_local kept_block kept;

}  // namespace

void* big_block_acquire(std::size_t bytes, std::size_t& capacity) {
  // Reuse the kept block when it fits and is not more than twice the request (a small
  // temporary should not pin a large block; the large one stays kept for its next user).
  if (kept.p != nullptr && large(kept.capacity) == large(bytes) && kept.capacity >= bytes && kept.capacity <= 2 * bytes) {
    capacity = kept.capacity;
    return kept.take();
  }
  capacity = bytes;
  return acquire_storage(bytes);
}

void big_block_release(void* p, std::size_t capacity) noexcept {
  if (p == nullptr) return;
  // Keep the larger of the kept block and this one, within the limit.
  if (capacity <= kept_bytes_max && capacity >= kept.capacity) {
    kept.free();
    kept.p = p;
    kept.capacity = capacity;
    return;
  }
  release_storage(p, capacity);
}

}  // namespace ct::detail
