// src/expr/plan_memory.hpp — where the planner's bookkeeping vectors get their memory.
//
// Planning a call builds some ninety small vectors (per instruction and per pass) and frees
// them when the call returns; through malloc that was about a quarter of a small eval
// (softmax of 4x16: ~3.5 us per call). plan_vector draws its blocks from free lists kept per
// thread and per power-of-two size, so a repeated call reuses the blocks of the last one.
// Blocks are ordinary operator-new memory: one freed on another thread joins that thread's
// lists, and each thread returns its lists when it exits. Allocation failures still throw
// std::bad_alloc, before anything is written (planning precedes scheduling).
#pragma once
#include <cstddef>
#include <vector>

namespace ct::detail {

namespace plan_memory {
void* allocate(std::size_t bytes);
void deallocate(void* p, std::size_t bytes) noexcept;
}  // namespace plan_memory

template <class T>
struct plan_allocator {
  static_assert(alignof(T) <= alignof(std::max_align_t), "plan_memory blocks have operator new's alignment");
  using value_type = T;
  plan_allocator() noexcept = default;
  template <class U>
  plan_allocator(const plan_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(plan_memory::allocate(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { plan_memory::deallocate(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const plan_allocator<U>&) const noexcept { return true; }
};

template <class T>
using plan_vector = std::vector<T, plan_allocator<T>>;

}  // namespace ct::detail
