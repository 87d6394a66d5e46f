// src/expr/run/scratch.hpp — the memory runners work in, all allocated before any group runs
// (internal).
//
// An allocation failing after other callbacks wrote their results would leave the destination
// partly written (CONTRACT §5), so run_program allocates every callback's scratch block and
// bookkeeping vectors up front, and a callback allocates nothing.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#include "ct/core/index.hpp"

namespace ct::detail {
namespace [[gnu::visibility("hidden")]] evaluator {  // see plan.hpp

struct plan;

/// The bookkeeping vectors of one callback's runner, sized before any group runs
/// (prepare_workspace).
struct runner_workspace {
  std::vector<void*> ptr;
  std::vector<char> uni;
  std::vector<index_t> offsets, next_offsets, walk_base, walk_idx, walk_saved;
};

/// Reserves what the runners use of ws, so that running pl's groups allocates nothing.
void prepare_workspace(const plan& pl, runner_workspace& ws);

/// Bytes of one callback's scratch block: tile slots, row cache, one-value area, reducer states.
std::size_t scratch_bytes(const plan& pl);

/// The test hook's state (fail_next_scratch_allocations): whether this allocation must fail.
bool injected_allocation_failure();

struct aligned_delete {
  void operator()(unsigned char* p) const { ::operator delete(p, std::align_val_t{64}); }
};

/// Scratch blocks for concurrently running callbacks, allocated by the caller before any group
/// runs. The calling thread's memory is reused between calls (see scratch.cpp).
class scratch_pool {
 public:
  scratch_pool(std::size_t bytes_each, int blocks);
  ~scratch_pool();
  scratch_pool(const scratch_pool&) = delete;
  scratch_pool& operator=(const scratch_pool&) = delete;

  /// A free block's index (its memory: block(b), its runner's vectors: workspace(b)).
  int acquire() {
    for (;;) {
      std::uint64_t used = used_.load();
      for (int b = 0; b < blocks_; ++b)
        if (!(used & (1ull << b)) && used_.compare_exchange_strong(used, used | (1ull << b))) return b;
      std::this_thread::yield();  // more callbacks than blocks: one finishes soon
    }
  }
  void release(int b) { used_.fetch_and(~(1ull << b)); }
  unsigned char* block(int b) const { return base_ + bytes_ * static_cast<std::size_t>(b); }
  runner_workspace& workspace(int b) { return workspaces_[b]; }

 private:
  std::size_t bytes_;
  int blocks_;
  bool borrowed_ = false;
  unsigned char* base_ = nullptr;
  std::unique_ptr<unsigned char, aligned_delete> own_;
  std::atomic<std::uint64_t> used_{0};
  runner_workspace* workspaces_ = nullptr;  // the arena's, or own_workspaces_
  std::vector<runner_workspace> own_workspaces_;
};

}  // namespace evaluator
}  // namespace ct::detail
