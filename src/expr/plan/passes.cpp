// Planning the passes: which values each pass computes, where their tiles live (slots, row
// cache), and the step lists the row runner executes.
#include <algorithm>
#include <utility>

#include "ct/exec/settings.hpp"
#include "src/kernels/kernels.hpp"
#include "src/expr/dtype_dispatch.hpp"
#include "src/expr/plan/stages.hpp"
#include "src/expr/tuning.hpp"

namespace ct::detail::evaluator {

namespace {

void assign_passes(plan& pl) {
  const auto& code = pl.prog.code();
  const int n = static_cast<int>(code.size());
  pl.passes.resize(static_cast<std::size_t>(pl.reduce_passes + 1));
  for (int i = 0; i < n; ++i) {
    const instruction& in = code[static_cast<std::size_t>(i)];
    if (in.op == opcode::reduce) {
      pl.passes[static_cast<std::size_t>(pl.level[static_cast<std::size_t>(i)] - 1)].reducers.push_back(i);
    } else if (in.op == opcode::constant) {
      pl.constants.push_back(i);
    } else if (pl.uniform[static_cast<std::size_t>(i)]) {
      pl.passes[static_cast<std::size_t>(pl.level[static_cast<std::size_t>(i)])].uniforms.push_back(i);
    }
  }
  pl.computed_in.assign(static_cast<std::size_t>(n), -1);
  pl.cache_store_pass.assign(static_cast<std::size_t>(n), -1);
  pl.cache_offset.assign(static_cast<std::size_t>(n), 0);
}

void plan_pass(plan& pl, int pass) {
  const program& p = pl.prog;
  const auto& code = p.code();
  const int n = static_cast<int>(code.size());
  pass_plan& pp = pl.passes[static_cast<std::size_t>(pass)];
  const bool output_pass = pass == pl.reduce_passes;
  plan_vector<char> needed(static_cast<std::size_t>(n), 0);
  plan_vector<int> last_use(static_cast<std::size_t>(n), -1);
  plan_vector<int> roots;
  if (output_pass) {
    if (!pl.root_uniform) roots.push_back(pl.root);
  } else {
    for (int i = 0; i < n; ++i)
      if (code[static_cast<std::size_t>(i)].op == opcode::reduce && pl.level[static_cast<std::size_t>(i)] == pass + 1)
        roots.push_back(code[static_cast<std::size_t>(i)].args[0]);
  }
  for (int r : roots)
    if (!pl.uniform[static_cast<std::size_t>(r)]) needed[static_cast<std::size_t>(r)] = 1;
  for (int i = n - 1; i >= 0; --i) {
    if (!needed[static_cast<std::size_t>(i)]) continue;
    const std::size_t ui = static_cast<std::size_t>(i);
    const std::size_t row_bytes = static_cast<std::size_t>(pl.geo.reduced) * dtype_bytes(code[ui].type);
    if (!pl.column && pl.computed_in[ui] >= 0 && code[ui].op != opcode::load &&
        (pl.cache_store_pass[ui] >= 0 || pl.cache_bytes + row_bytes <= pl.row_cache_budget)) {
      if (pl.cache_store_pass[ui] < 0) {
        pl.cache_store_pass[ui] = pl.computed_in[ui];
        pl.cache_offset[ui] = pl.cache_bytes;
        pl.cache_bytes += (row_bytes + 63) / 64 * 64;
      }
      needed[ui] = 0;
      pp.reused.push_back(i);
      continue;
    }
    for (int a : all_args(p, code[static_cast<std::size_t>(i)]))
      if (!pl.uniform[static_cast<std::size_t>(a)]) needed[static_cast<std::size_t>(a)] = 1;
  }
  for (int i = 0; i < n; ++i)
    if (needed[static_cast<std::size_t>(i)]) {
      pp.varying.push_back(i);
      if (pl.computed_in[static_cast<std::size_t>(i)] < 0) pl.computed_in[static_cast<std::size_t>(i)] = pass;
      for (int a : all_args(p, code[static_cast<std::size_t>(i)])) last_use[static_cast<std::size_t>(a)] = i;
    }
  for (int r : roots) last_use[static_cast<std::size_t>(r)] = n;  // consumed after the tile
  // Reducers of a uniform argument need a tile filled with that value.
  if (!output_pass)
    for (int r : roots)
      if (pl.uniform[static_cast<std::size_t>(r)]) last_use[static_cast<std::size_t>(r)] = n;
  // Greedy slot assignment: a slot is free again after its value's last use.
  pp.slot.assign(static_cast<std::size_t>(n), -1);
  plan_vector<int> free_slots;
  plan_vector<std::pair<int, int>> busy;  // (last use, slot)
  for (int i : pp.varying) {
    for (auto it = busy.begin(); it != busy.end();) {
      if (it->first < i) {
        free_slots.push_back(it->second);
        it = busy.erase(it);
      } else {
        ++it;
      }
    }
    int s;
    if (!free_slots.empty()) {
      s = free_slots.back();
      free_slots.pop_back();
    } else {
      s = pp.slots++;
    }
    pp.slot[static_cast<std::size_t>(i)] = s;
    busy.emplace_back(last_use[static_cast<std::size_t>(i)], s);
  }
  if (!output_pass)
    for (int r : roots)
      if (pl.uniform[static_cast<std::size_t>(r)] && pp.slot[static_cast<std::size_t>(r)] < 0)
        pp.slot[static_cast<std::size_t>(r)] = pp.slots++;
}

/// Column mode: whether a reduction pass only sums contiguous float operands directly.
bool column_sums_only(const plan& pl, const pass_plan& pp) {
  const auto& code = pl.prog.code();
  for (int i : pp.varying) {
    const instruction& in = code[static_cast<std::size_t>(i)];
    if (in.op != opcode::load || pl.scalar[static_cast<std::size_t>(i)] ||
        pl.geo.k_strides.back()[static_cast<std::size_t>(in.leaf)] != 1)
      return false;
  }
  for (int r : pp.reducers) {
    const instruction& in = code[static_cast<std::size_t>(r)];
    const instruction& arg = code[static_cast<std::size_t>(in.args[0])];
    if (in.sub != static_cast<std::uint8_t>(reduce_op::sum) || arg.op != opcode::load ||
        (arg.type != dtype::f32 && arg.type != dtype::f64) || pl.scalar[static_cast<std::size_t>(in.args[0])] ||
        pl.prog.leaves()[static_cast<std::size_t>(arg.leaf)].type != arg.type)  // read in place: no 16-bit floats
      return false;
  }
  return !pp.reducers.empty();
}

void plan_column_sums(plan& pl) {
  if (pl.column && pl.geo.walk.size() == 1)
    for (pass_plan& pp : pl.passes) pp.column_sums = column_sums_only(pl, pp);
}

void index_reducers(plan& pl) {
  const auto& code = pl.prog.code();
  const int n = static_cast<int>(code.size());
  pl.reducer_index.assign(static_cast<std::size_t>(n), -1);
  pl.float_sum.assign(static_cast<std::size_t>(n), 0);
  for (int i = 0; i < n; ++i) {
    const instruction& in = code[static_cast<std::size_t>(i)];
    if (in.op != opcode::reduce) continue;
    pl.reducer_index[static_cast<std::size_t>(i)] = pl.reducer_count++;
    const dtype at = code[static_cast<std::size_t>(in.args[0])].type;
    pl.float_sum[static_cast<std::size_t>(i)] = in.sub == static_cast<std::uint8_t>(reduce_op::sum) &&
                                                (at == dtype::f32 || at == dtype::f64) &&
                                                (in.type == dtype::f32 || in.type == dtype::f64);
  }
}

void plan_pass_steps(plan& pl, std::size_t ps) {
  pass_plan& pp = pl.passes[ps];
  const program& p = pl.prog;
  const auto& code = p.code();
  // Where instruction i's tile goes in this pass: scratch + at (+ tile position * step) in its
  // row-cache row or its tile slot; false when it has neither.
  const auto place = [&](int i, std::size_t& at, index_t& step) {
    const auto ui = static_cast<std::size_t>(i);
    if (pl.cache_store_pass[ui] == static_cast<int>(ps)) {
      at = pl.cache_at + pl.cache_offset[ui];
      step = static_cast<index_t>(dtype_bytes(code[ui].type));
      return true;
    }
    if (pp.slot[ui] < 0) return false;
    at = static_cast<std::size_t>(pp.slot[ui]) * pl.slot_bytes;
    return true;
  };
  for (int i : pp.reused)
    pp.reuses.push_back({i, pl.cache_at + pl.cache_offset[static_cast<std::size_t>(i)], dtype_bytes(code[static_cast<std::size_t>(i)].type)});
  for (int u : pp.uniforms) {
    const instruction& in = code[static_cast<std::size_t>(u)];
    pass_plan::uniform_step us;
    us.i = u;
    us.one = in.op != opcode::load && pl.direct[static_cast<std::size_t>(u)].kind == direct_op::one_value;
    if (us.one) {
      us.f64 = pl.direct[static_cast<std::size_t>(u)].f64;
      us.a = in.args[0];
      us.b = in.args[1] >= 0 ? in.args[1] : in.args[0];
    }
    pp.uniform_steps.push_back(us);
  }
  for (int i : pp.varying) {
    const auto ui = static_cast<std::size_t>(i);
    if (pp.skip[ui]) continue;
    pass_plan::step st;
    st.i = i;
    const instruction& in = code[ui];
    st.has_out = place(i, st.out_at, st.out_step);
    const direct_op& f = pl.direct[ui];
    if (in.op == opcode::load) {
      if (!pl.uniform[ui] && pl.geo.walk.back().strides[static_cast<std::size_t>(in.leaf)] == 1 &&
          p.leaves()[static_cast<std::size_t>(in.leaf)].type == in.type) {  // 16-bit floats widen first
        st.kind = pass_plan::step::load_in_place;
        st.leaf = in.leaf;
        st.esize = static_cast<index_t>(dtype_bytes(p.leaves()[static_cast<std::size_t>(in.leaf)].type));
        st.burst = pp.prefetch[ui] && !pp.streamed[ui];
      } else if (!pl.uniform[ui] && pl.widen_at[static_cast<std::size_t>(in.leaf)] != plan::npos) {
        st.kind = pass_plan::step::load_in_place;  // from the row widened as the group started
        st.widened = true;
        st.leaf = in.leaf;
        st.esize = static_cast<index_t>(sizeof(float));
        st.out_at = pl.cache_at + pl.widen_at[static_cast<std::size_t>(in.leaf)];
      }
    } else if (f.kind != direct_op::none && f.kind != direct_op::one_value) {
      using step = pass_plan::step;
      st.f64 = f.f64;
      st.fn = f.fn;
      for (std::size_t k = 0; k < 3; ++k) st.a[k] = in.args[k];
      if (pp.feeds[ui] >= 0) {
        st.kind = step::feeding;
        st.store = pp.feed_store[ui] != 0;
        st.fn2 = st.store ? f.sum_store : f.sum_only;
        st.state = pl.reducer_index[static_cast<std::size_t>(pp.feeds[ui])];
      } else if (pp.sub_feeds[ui] >= 0) {
        st.kind = step::sub_feeding;
        const auto sq = static_cast<std::size_t>(pp.sub_feeds[ui]);
        st.fn2 = pl.direct[sq].sum_after_sub;
        st.fn3 = pl.direct[sq].fn;
        st.state = pl.reducer_index[static_cast<std::size_t>(pp.feeds[sq])];
      } else if (pp.sub_keep[ui]) {
        st.kind = step::sub_keep;
        const auto ub = static_cast<std::size_t>(in.args[0]);
        const instruction& d = code[ub];
        st.a[0] = d.args[0];
        st.a[1] = d.args[1];
        st.fn = f.keep_after_sub;
        st.fn2 = f.keep_after_sub_prefetch;
        st.keep = in.args[0];
        place(st.keep, st.keep_at, st.keep_step);  // has one (plan_fused_feeds)
      } else if (pp.sub_first[ui]) {
        st.kind = step::after_sub;
        const instruction& d = code[static_cast<std::size_t>(in.args[0])];
        st.a[0] = d.args[0];
        st.a[1] = d.args[1];
        st.fn = f.after_sub;
        st.fn2 = f.after_sub_prefetch;
      } else if (pp.scale_first[ui] >= 0) {
        st.kind = step::scale_then;
        const int t_pos = pp.scale_first[ui] % 2, u_pos = pp.scale_first[ui] / 2;
        const instruction& m = code[static_cast<std::size_t>(in.args[t_pos])];
        st.a[0] = m.args[1 - u_pos];
        st.a[1] = m.args[u_pos];
        st.a[2] = in.args[1 - t_pos];
        st.a[3] = in.op == opcode::muladd ? in.args[2] : -1;
        st.fn = f.scale_then;
      } else {
        st.kind = step::direct;
        st.arity = f.kind == direct_op::unary ? 1 : f.kind == direct_op::binary ? 2 : 3;
        st.fn2 = f.fn_prefetch;
      }
      if (i == pl.root && pl.root_stream != nullptr) st.fn = pl.root_stream;
    }
    pp.steps.push_back(st);
  }
  for (int r : pp.reducers) {
    if (pp.fed[static_cast<std::size_t>(r)]) continue;  // by its argument's kernel
    pass_plan::feed fd;
    fd.r = r;
    fd.a = code[static_cast<std::size_t>(r)].args[0];
    fd.uniform_arg = pl.uniform[static_cast<std::size_t>(fd.a)] != 0;
    const dtype at = code[static_cast<std::size_t>(fd.a)].type;
    fd.sum = pl.float_sum[static_cast<std::size_t>(r)] != 0;
    if (fd.sum) {
      const settings s = current_settings();
      if (at == dtype::f32) {
        fd.bulk = reinterpret_cast<void (*)()>(kernels::resolve_sum<float>(s));
      } else {
        fd.bulk = reinterpret_cast<void (*)()>(kernels::resolve_sum<double>(s));
      }
    }
    pp.feeds_list.push_back(fd);
  }
}

}  // namespace

// Which 16-bit leaves get a widened row (plan::widen_at): read along one contiguous merged
// axis by a program with reductions (a leaf read by several passes was widened per pass and
// lost every in-place path; bf16 softmax 4096x4096 10.9 -> see docs/performance.md), while
// the row fits the row cache budget next to what the passes keep.
void plan_widened_rows(plan& pl) {
  const program& p = pl.prog;
  const geometry& g = pl.geo;
  pl.widen_at.assign(p.leaves().size(), plan::npos);
  pl.widen_once.assign(p.leaves().size(), 0);
  if (pl.column || g.walk.size() != 1 || g.reduced == 0 || pl.passes.size() < 2) return;
  for (const instruction& in : p.code()) {
    if (in.op != opcode::load) continue;
    const auto l = static_cast<std::size_t>(in.leaf);
    const leaf_info& leaf = p.leaves()[l];
    const std::size_t row_bytes = static_cast<std::size_t>(g.reduced) * sizeof(float);
    if (kind_of(leaf.type) != dtype_kind::storage_float || in.type != dtype::f32 || g.walk.back().strides[l] != 1 ||
        pl.widen_at[l] != plan::npos || pl.cache_bytes + row_bytes > pl.row_cache_budget)
      continue;
    bool per_group = false;
    for (const auto& ks : g.k_strides) per_group = per_group || ks[l] != 0;
    pl.widen_at[l] = pl.cache_bytes;
    pl.widen_once[l] = !per_group && !g.k_strides.empty();
    pl.widened_leaves.push_back(static_cast<int>(l));
    pl.cache_bytes += (row_bytes + 63) / 64 * 64;
  }
}

void plan_passes(plan& pl) {
  assign_passes(pl);
  for (int ps = 0; ps <= pl.reduce_passes; ++ps) plan_pass(pl, ps);
  plan_column_sums(pl);
  index_reducers(pl);
  plan_widened_rows(pl);
}

void plan_steps(plan& pl) {
  if (pl.column) return;  // the column runner interprets the instructions
  for (std::size_t ps = 0; ps < pl.passes.size(); ++ps) plan_pass_steps(pl, ps);
}

}  // namespace ct::detail::evaluator
