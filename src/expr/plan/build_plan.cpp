// build_plan: the stages of planning one evaluation, in order (each in its own file).
#include <algorithm>

#include "ct/core/tuning.hpp"
#include "src/expr/plan/stages.hpp"

namespace ct::detail::evaluator {

plan build_plan(const program& p, int root, const destination& dest, const char* op, bool may_stream,
                index_t whole_result_elements) {
  plan pl(p, root, dest, op);
  const tuning& t = current_tuning();
  pl.prefetch_distance = static_cast<index_t>(t.stream_prefetch_bytes);
  pl.stream_threshold = static_cast<index_t>(t.stream_store_bytes);
  pl.row_cache_budget = t.row_cache_bytes;
  pl.whole_result_elements = whole_result_elements;
  plan_iteration_space(pl);
  plan_passes(pl);
  plan_prefetch(pl);
  plan_fusion(pl, may_stream);
  // The scratch block: tile slots (sized for a tile of the row walk or a block of the column
  // walk), then the row cache.
  int max_slots = 0;
  for (const pass_plan& ps : pl.passes) max_slots = std::max(max_slots, ps.slots);
  pl.slot_bytes = static_cast<std::size_t>(std::max(pl.tile, pl.block)) * 8;
  pl.cache_at = static_cast<std::size_t>(max_slots) * pl.slot_bytes;
  plan_steps(pl);
  plan_kernel_prefetch(pl);
  decide_patterns(pl);
  pl.strategy = choose_strategy(pl);
  return pl;
}

}  // namespace ct::detail::evaluator
