// The run strategies: which one a plan takes, and the dispatch over them.
#include "src/expr/run/strategy.hpp"

#include "src/expr/plan/plan.hpp"

namespace ct::detail::evaluator {

// The fast paths first: each was decided only where its results are bitwise the general
// row walk's (patterns.cpp).
run_strategy choose_strategy(const plan& pl) {
  if (pl.plain) return run_strategy::plain_rows;
  if (pl.column) return run_strategy::column_block;
  if (pl.norm.fn != nullptr) return run_strategy::norm_rows;
  if (pl.one_tile) return run_strategy::one_tile;
  return run_strategy::row_walk;
}

void run_groups(const plan& pl, index_t start, index_t end, unsigned char* scratch, runner_workspace& ws) {
  switch (pl.strategy) {
    case run_strategy::plain_rows: run_plain_rows(pl, start, end, ws); return;
    case run_strategy::norm_rows: run_norm_rows(pl, start, end, scratch, ws); return;
    case run_strategy::one_tile: run_one_tile_rows(pl, start, end, scratch, ws); return;
    case run_strategy::row_walk: run_row_walk(pl, start, end, scratch, ws); return;
    case run_strategy::column_block: run_column_blocks(pl, start, end, scratch, ws); return;
  }
}

}  // namespace ct::detail::evaluator
