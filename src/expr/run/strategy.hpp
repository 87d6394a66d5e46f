// src/expr/run/strategy.hpp — the ways a plan's groups run, chosen once at plan time (internal).
#pragma once
#include <cstdint>

#include "ct/core/index.hpp"

namespace ct::detail {
namespace [[gnu::visibility("hidden")]] evaluator {  // see plan.hpp

struct plan;
struct runner_workspace;

enum class run_strategy : std::uint8_t {
  plain_rows,    // one reduction of one operand read in place: kernel calls, one store per group (plain_rows.cpp)
  norm_rows,     // layer norm's shape: one fused kernel call per group (row_runner.cpp)
  one_tile,      // each group's reduced elements are one tile: each pass's steps once (row_runner.cpp)
  row_walk,      // the general row walk: passes of tiles along the reduced axes (row_runner.cpp)
  column_block,  // strided reduced axes: blocks of neighbouring groups walked together (column_runner.cpp)
};

/// The strategy for a plan whose other decisions are made (the last step of build_plan).
run_strategy choose_strategy(const plan& pl);

/// Evaluates groups [start, end) of pl with the given scratch block and bookkeeping vectors.
void run_groups(const plan& pl, index_t start, index_t end, unsigned char* scratch, runner_workspace& ws);

// The runners, one per strategy (run_groups dispatches).
void run_plain_rows(const plan& pl, index_t start, index_t end, runner_workspace& ws);
void run_norm_rows(const plan& pl, index_t start, index_t end, unsigned char* scratch, runner_workspace& ws);
void run_one_tile_rows(const plan& pl, index_t start, index_t end, unsigned char* scratch, runner_workspace& ws);
void run_row_walk(const plan& pl, index_t start, index_t end, unsigned char* scratch, runner_workspace& ws);
void run_column_blocks(const plan& pl, index_t start, index_t end, unsigned char* scratch, runner_workspace& ws);

}  // namespace evaluator
}  // namespace ct::detail
