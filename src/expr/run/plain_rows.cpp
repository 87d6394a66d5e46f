// Plain row reductions (strategy plain_rows): sum, max, min, argmax, argmin or logsumexp of one float
// or double operand read in place, as kernel calls and one store per group (patterns.cpp:
// decide_plain). Rows are still fed in max_tile pieces (tuning.hpp); the lanes and extreme
// states do not depend on the cut, so the results are the row walk's.
#include <algorithm>
#include <cstring>
#include <vector>

#include "ct/exec/settings.hpp"
#include "src/kernels/kernels.hpp"
#include "src/expr/dtype_dispatch.hpp"
#include "src/expr/plan/plan.hpp"
#include "src/expr/run/scratch.hpp"
#include "src/expr/run/strategy.hpp"
#include "src/expr/tuning.hpp"

namespace ct::detail::evaluator {

namespace {

template <class T>
void run_plain(const plan& pl, index_t start, index_t end, runner_workspace& ws) {
  const auto& code = pl.prog.code();
  const instruction& red = code[1];
  const auto op = static_cast<reduce_op>(red.sub);
  const auto leaf = static_cast<std::size_t>(code[0].leaf);
  const T* base = static_cast<const T*>(pl.prog.leaves()[leaf].data);
  const index_t n = pl.geo.walk.back().extent;
  const settings s = current_settings();
  const bool streamed = pl.passes[0].streamed[0] != 0;
  const auto bulk = kernels::resolve_sum<T>(s);
  const index_t ahead = streamed ? kernels::stream_ahead(s) : 0;
  auto* dest = static_cast<unsigned char*>(pl.dest.data);
  const std::size_t esize = dtype_bytes(pl.dest.type);
  std::vector<index_t>& offsets = ws.offsets;
  offsets.assign(pl.prog.leaves().size() + 1, 0);
  const std::size_t dest_k = offsets.size() - 1;
  for (index_t g = start; g < end; ++g) {
    pl.geo.group_offsets(g, offsets);
    const T* x = base + offsets[leaf];
    unsigned char* d = dest + offsets[dest_k] * static_cast<index_t>(esize);
    if (op == reduce_op::sum) {
      kernels::lane_accumulator acc;
      kernels::sum_init(acc);
      for (index_t at = 0; at < n; at += max_tile) kernels::sum_with(bulk, acc, x + at, std::min(max_tile, n - at), ahead);
      const double v = kernels::sum_result(acc);
      if (red.type == dtype::f32) {
        const float f = static_cast<float>(v);
        std::memcpy(d, &f, sizeof f);
      } else {
        std::memcpy(d, &v, sizeof v);
      }
      continue;
    }
    if (op == reduce_op::logsumexp) {
      kernels::lse_state<T> st;
      kernels::lse_init(st);
      for (index_t at = 0; at < n; at += max_tile) kernels::lse_accumulate(st, x + at, std::min(max_tile, n - at), s, ahead);
      const T v = static_cast<T>(kernels::lse_result(st, s));
      std::memcpy(d, &v, sizeof v);
      continue;
    }
    kernels::extreme_state<T> ex;
    kernels::extreme_init(ex);
    const bool with_index = op == reduce_op::argmax || op == reduce_op::argmin;
    for (index_t at = 0; at < n; at += max_tile) {
      const index_t len = std::min(max_tile, n - at);
      if (op == reduce_op::max || op == reduce_op::argmax) kernels::max_accumulate<T>(ex, x + at, len, at, s, with_index, ahead);
      else kernels::min_accumulate<T>(ex, x + at, len, at, s, with_index, ahead);
    }
    if (with_index) {
      const std::int64_t i = ex.index;
      std::memcpy(d, &i, sizeof i);
    } else {
      std::memcpy(d, &ex.value, sizeof ex.value);
    }
  }
}

}  // namespace

void run_plain_rows(const plan& pl, index_t start, index_t end, runner_workspace& ws) {
  if (pl.prog.code()[0].type == dtype::f32) run_plain<float>(pl, start, end, ws);
  else run_plain<double>(pl, start, end, ws);
}

}  // namespace ct::detail::evaluator
