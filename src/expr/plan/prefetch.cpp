// Planning software prefetch: which operands stream from memory, who prefetches them, and
// when the next group's rows are fetched.
#include "ct/exec/settings.hpp"
#include "src/expr/dtype_dispatch.hpp"
#include "src/expr/plan/stages.hpp"
#include "src/expr/tuning.hpp"

namespace ct::detail::evaluator {

// Prefetch a contiguous load only in the first pass of a group that reads it, and only when
// its data changes from group to group (weights shared by every row stay in cache anyway).
// A one-pass (purely elementwise) plan prefetches nothing: the hardware prefetcher follows its
// streams, and a burst before each tile stalled on the miss buffers (a*b+c over 16M floats ran
// at 0.8 of the read3_write1 bound with it, 1.0 without).
void plan_prefetch(plan& pl) {
  const program& p = pl.prog;
  const geometry& g = pl.geo;
  const auto& code = p.code();
  const bool bursts = pl.passes.size() > 1;
  plan_vector<char> seen(p.leaves().size(), 0);
  for (pass_plan& pp : pl.passes) {
    pp.prefetch.assign(code.size(), 0);
    for (int i : pp.varying) {
      const instruction& in = code[static_cast<std::size_t>(i)];
      if (in.op != opcode::load) continue;
      const auto l = static_cast<std::size_t>(in.leaf);
      bool streams = g.walk.back().strides[l] == 1;
      bool per_group = false;
      for (const auto& ks : g.k_strides) per_group = per_group || ks[l] != 0;
      if (!g.k_strides.empty() && !per_group) streams = false;
      if (streams && !seen[l]) {
        pp.prefetch[static_cast<std::size_t>(i)] = bursts;
        pl.next_group_leaves.push_back(static_cast<int>(l));
      }
      seen[l] = 1;
    }
    // Streamed reads straight into sum/max/min/argmax/argmin of float or double (SIMD kernels):
    // the reduction kernel prefetches the tuning's stream_ahead ahead, one line per line it
    // reads, instead of a burst before the tile (which stalled on the few outstanding-miss slots).
    pp.streamed.assign(code.size(), 0);
    if (pl.column || current_settings().backend != backend::simd) continue;
    for (int i : pp.varying) {
      const instruction& in = code[static_cast<std::size_t>(i)];
      if (!pp.prefetch[static_cast<std::size_t>(i)] || (in.type != dtype::f32 && in.type != dtype::f64) ||
          pl.widen_at[static_cast<std::size_t>(in.leaf)] != plan::npos)  // read from its widened row, in L1
        continue;
      bool only_reducers = true, read = false;
      for (int j : pp.varying)
        for (int a : all_args(p, code[static_cast<std::size_t>(j)])) only_reducers = only_reducers && a != i;
      for (int r : pp.reducers) {
        const instruction& red = code[static_cast<std::size_t>(r)];
        if (red.args[0] != i) continue;
        read = true;
        only_reducers = only_reducers && red.sub != static_cast<std::uint8_t>(reduce_op::prod);
      }
      pp.streamed[static_cast<std::size_t>(i)] = only_reducers && read;
    }
  }
  // A group whose second pass works from the caches (exp in softmax and logsumexp) leaves the
  // memory bus idle meanwhile: that pass fetches the next group's rows, so the next first pass
  // does not wait for DRAM. Only rows longer than the prefetch distance: shorter ones are
  // already fetched by the first pass's own prefetch (layer norm 8192x1024 was 5% slower with
  // both). Softmax 4096x4096 6.6 -> 6.4 ms, logsumexp 5.5 -> 5.3 ms (medians of 41 calls).
  if (pl.next_group_leaves.empty() || pl.passes.size() < 2 || g.walk.size() != 1) return;
  const auto first = static_cast<std::size_t>(pl.next_group_leaves.front());
  // A widened row longer than a tile: its first pass reads the widened row, not memory.
  const bool widened = pl.widen_at[first] != plan::npos && g.reduced > pl.tile;
  if (widened || g.reduced * static_cast<index_t>(dtype_bytes(p.leaves()[first].type)) > pl.prefetch_distance)
    pl.passes[1].prefetch_next = pl.prefetches_next = true;
}

// The next group's rows are fetched during the second pass. Issued as a burst before each tile
// most of those prefetches were dropped (the CPU has few miss buffers): the first pass of the
// next group still waited on DRAM, and disabling the burst changed nothing. Issued one line per
// vector from inside the exp(x - u) kernel they arrive, and the next first pass (max or sum)
// reads from the caches without prefetching further ahead. Softmax 4096x4096 6.26-6.56 ->
// 4.92-5.30 ms, logsumexp 4.98-5.01 -> 3.97-4.05 ms (best of 21 calls, four alternations);
// a plain exp does the same (log-softmax, where x - max is kept for the output): 7.1-7.4 ->
// 5.65-5.9 ms.
// When another leaf's rows are still burst-prefetched, the next first pass keeps its own
// prefetching (rows_prefetched false): skipping it for rows that did not arrive made softmax
// 35% slower.
void plan_kernel_prefetch(plan& pl) {
  if (!pl.prefetches_next) return;
  const program& p = pl.prog;
  pass_plan& pp = pl.passes[1];
  for (int l : pl.next_group_leaves) {
    const index_t esize = static_cast<index_t>(dtype_bytes(p.leaves()[static_cast<std::size_t>(l)].type));
    for (const pass_plan::step& st : pp.steps) {
      const direct_op& f = pl.direct[static_cast<std::size_t>(st.i)];
      const bool can = (st.kind == pass_plan::step::after_sub && f.after_sub_prefetch != nullptr) ||
                       (st.kind == pass_plan::step::sub_keep && f.keep_after_sub_prefetch != nullptr) ||
                       (st.kind == pass_plan::step::direct && f.kind == direct_op::unary && f.fn_prefetch != nullptr);
      if (can && static_cast<index_t>(dtype_bytes(p.code()[static_cast<std::size_t>(st.i)].type)) == esize) {
        pp.prefetch_by = st.i;
        pp.prefetch_leaf = l;
        break;
      }
    }
    if (pp.prefetch_by >= 0) break;
  }
  pl.rows_prefetched = pp.prefetch_by >= 0 && pl.next_group_leaves.size() == 1;
}

}  // namespace ct::detail::evaluator
