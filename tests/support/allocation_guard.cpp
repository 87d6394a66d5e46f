// tests/support/allocation_guard.cpp — the test binary's global operator new and delete: plain
// malloc/free, except that every allocation throws std::bad_alloc while
// ct_test::allocations_forbidden is set on the allocating thread (allocation_guard.hpp).
// "contract §5: reduction callbacks allocate nothing" (tests/contract/s5_memory_failure.cpp)
// uses it; the replacement holds for the whole binary, as it did from that test's own file.
// Not under clang's ThreadSanitizer (CT_TEST_NO_NEW_REPLACEMENT, tests/meson.build): its runtime
// is linked statically and defines operator new itself, so a second definition cannot link
// (and the shared runtime, -shared-libsan, crashes at start-up with clang 14). That one test is
// tagged [allocation] and left out of the TSan run; every other build runs it.
#include "support/allocation_guard.hpp"

#include <cstddef>
#include <cstdlib>
#include <new>

namespace ct_test {
thread_local bool allocations_forbidden = false;
thread_local long allocations_until_failure = -1;
thread_local std::size_t largest_allocation = 0;
bool allocation_hooks_active() noexcept {
#ifdef CT_TEST_NO_NEW_REPLACEMENT
  return false;
#else
  return true;
#endif
}
}  // namespace ct_test

#ifndef CT_TEST_NO_NEW_REPLACEMENT
namespace {
using ct_test::allocations_forbidden;
using ct_test::allocations_until_failure;

void* checked_alloc(std::size_t n, std::size_t align) {
  if (allocations_forbidden) throw std::bad_alloc();
  if (allocations_until_failure >= 0 && allocations_until_failure-- == 0) {
    allocations_until_failure = -1;
    throw std::bad_alloc();
  }
  if (n == 0) n = 1;
  if (n > ct_test::largest_allocation) ct_test::largest_allocation = n;
  void* p = align <= alignof(std::max_align_t) ? std::malloc(n) : std::aligned_alloc(align, (n + align - 1) / align * align);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(std::size_t n) { return checked_alloc(n, alignof(std::max_align_t)); }
void* operator new[](std::size_t n) { return checked_alloc(n, alignof(std::max_align_t)); }
void* operator new(std::size_t n, std::align_val_t a) { return checked_alloc(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return checked_alloc(n, static_cast<std::size_t>(a)); }
// Every form is replaced, nothrow ones too, so that no allocation pairs a sanitizer's
// operator new with this file's operator delete.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return checked_alloc(n, alignof(std::max_align_t));
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  try {
    return checked_alloc(n, static_cast<std::size_t>(a));
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t& t) noexcept { return operator new(n, a, t); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
#endif  // CT_TEST_NO_NEW_REPLACEMENT
