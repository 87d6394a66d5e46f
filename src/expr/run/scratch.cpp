// Scratch memory: the calling thread's arena, the blocks of one call, the test hook.
#include "src/expr/run/scratch.hpp"

#include "ct/expr/program.hpp"
#include "src/expr/plan/plan.hpp"
#include "src/expr/run/reducers.hpp"

namespace ct::detail {

namespace evaluator {

namespace {

std::atomic<int> failing_allocations{0};
std::atomic<int> skipped_allocations{0};

// The calling thread keeps its scratch memory between calls (it is only ever grown), so a
// steady stream of small evaluations does not allocate. A nested evaluation on the same
// thread (from a ct::map functor) finds it busy and allocates its own.
struct caller_arena {
  std::unique_ptr<unsigned char, aligned_delete> memory;
  std::size_t bytes = 0;
  // The runners' bookkeeping vectors, kept with their capacity like the memory (reserving
  // them afresh cost 0.3 µs per call of a tiny softmax through two workers).
  std::vector<runner_workspace> workspaces;
  bool busy = false;
};
thread_local caller_arena arena;

}  // namespace

// Let `skip` allocations through, then fail `n` (fail_next_scratch_allocations).
bool injected_allocation_failure() {
  if (failing_allocations.load() <= 0) return false;
  if (skipped_allocations.load() > 0 && skipped_allocations.fetch_sub(1) > 0) return false;
  return failing_allocations.fetch_sub(1) > 0;
}

void prepare_workspace(const plan& pl, runner_workspace& ws) {
  const std::size_t n = pl.prog.code().size(), k = pl.prog.leaves().size() + 1;
  ws.ptr.reserve(n);
  ws.uni.reserve(n);
  for (auto* v : {&ws.offsets, &ws.next_offsets, &ws.walk_base, &ws.walk_saved}) v->reserve(k);
  ws.walk_idx.reserve(pl.geo.walk.size());  // one index per outer merged axis
}

// The block's layout: tile slots and the row cache (plan::cache_at, cache_bytes), then
// 8 bytes per instruction (times the block width in column mode) for one-value results, then
// the reducer states (the runners align them; the last 64 bytes leave room for that).
std::size_t scratch_bytes(const plan& pl) {
  const std::size_t n = pl.prog.code().size();
  const std::size_t state_bytes =
      pl.column ? static_cast<std::size_t>(pl.block) * sizeof(column_state) : sizeof(reducer_state);
  return pl.cache_at + pl.cache_bytes + n * static_cast<std::size_t>(pl.block) * 8 +
         static_cast<std::size_t>(pl.reducer_count) * state_bytes + 64;
}

scratch_pool::scratch_pool(std::size_t bytes_each, int blocks) : bytes_((bytes_each + 63) / 64 * 64), blocks_(blocks) {
  if (injected_allocation_failure()) throw std::bad_alloc();
  const std::size_t need = bytes_ * static_cast<std::size_t>(blocks_);
  if (!arena.busy) {
    if (arena.bytes < need) {
      arena.memory.reset();
      arena.bytes = 0;
      arena.memory.reset(static_cast<unsigned char*>(::operator new(need, std::align_val_t{64})));
      arena.bytes = need;
    }
    if (arena.workspaces.size() < static_cast<std::size_t>(blocks_)) arena.workspaces.resize(static_cast<std::size_t>(blocks_));
    arena.busy = true;
    borrowed_ = true;
    base_ = arena.memory.get();
    workspaces_ = arena.workspaces.data();
  } else {
    own_.reset(static_cast<unsigned char*>(::operator new(need, std::align_val_t{64})));
    base_ = own_.get();
    own_workspaces_.resize(static_cast<std::size_t>(blocks_));
    workspaces_ = own_workspaces_.data();
  }
}

scratch_pool::~scratch_pool() {
  if (borrowed_) arena.busy = false;
}

}  // namespace evaluator

void fail_next_scratch_allocations(int n, int skip) noexcept {
  evaluator::skipped_allocations.store(skip);
  evaluator::failing_allocations.store(n);
}

}  // namespace ct::detail
