// src/expr/plan_memory.cpp — per-thread free lists for plan_vector (see plan_memory.hpp).
#include "src/expr/plan_memory.hpp"

#include <new>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define CT_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define CT_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/asan_interface.h>
#define CT_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define CT_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#endif
#endif
#ifndef CT_POISON
#define CT_POISON(p, n) ((void)(p), (void)(n))
#define CT_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace ct::detail::plan_memory {
namespace {

// Size classes 16, 32, …, 8192 bytes; larger requests go to operator new directly.
constexpr int classes = 10;
constexpr std::size_t smallest = 16, largest = smallest << (classes - 1);
// A class keeps at most this many free blocks (64 x (16 + 32 + ... + 8192) B, ~1 MiB per thread).
constexpr int max_free = 64;

struct free_block {
  free_block* next;
};

// Trivially destructible, so it stays usable while other thread_local objects are destroyed;
// `closed` then sends blocks straight back to operator delete. The initial-exec model makes
// an access one %fs-relative load: through __tls_get_addr (the default in a shared library)
// the free lists cost more than the malloc calls they replace.
struct lists {
  free_block* head[classes];
  int count[classes];
  bool registered;  // close_at_exit constructed on this thread
  bool closed;
};
[[gnu::tls_model("initial-exec")]] thread_local lists local{};

struct closer {
  ~closer() {
    for (int c = 0; c < classes; ++c) {
      while (free_block* b = local.head[c]) {
        CT_UNPOISON(b, smallest << c);
        local.head[c] = b->next;
        ::operator delete(b);
      }
      local.count[c] = 0;
    }
    local.closed = true;
  }
};
thread_local closer close_at_exit;

int size_class(std::size_t bytes) noexcept {
  int c = 0;
  while ((smallest << c) < bytes) ++c;
  return c;
}

}  // namespace

void* allocate(std::size_t bytes) {
  if (bytes > largest) return ::operator new(bytes);
  const int c = size_class(bytes);
  if (free_block* b = local.head[c]) {
    CT_UNPOISON(b, smallest << c);
    local.head[c] = b->next;
    --local.count[c];
    return b;
  }
  return ::operator new(smallest << c);
}

void deallocate(void* p, std::size_t bytes) noexcept {
  if (!p) return;
  if (bytes > largest) {
    ::operator delete(p);
    return;
  }
  const int c = size_class(bytes);
  if (local.closed || local.count[c] >= max_free) {
    ::operator delete(p);
    return;
  }
  if (!local.registered) {  // the thread keeps its first block: return them all at exit
    local.registered = true;
    (void)&close_at_exit;
  }
  auto* b = static_cast<free_block*>(p);
  b->next = local.head[c];
  local.head[c] = b;
  ++local.count[c];
  CT_POISON(b, smallest << c);
}

}  // namespace ct::detail::plan_memory
