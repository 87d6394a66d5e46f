// Planning the iteration space: the axes, what is constant within a group, row or column walk.
#include <algorithm>
#include <string>

#include "ct/core/error.hpp"
#include "src/expr/plan/stages.hpp"
#include "src/expr/tuning.hpp"

namespace ct::detail::evaluator {

namespace {

bool leaf_uniform(const plan& pl, int leaf) {
  const auto& st = pl.prog.leaves()[static_cast<std::size_t>(leaf)].strides;
  for (int a : pl.geo.r_axes)
    if (st[a] != 0) return false;
  return true;
}

void build_geometry(plan& pl) {
  const program& p = pl.prog;
  geometry& g = pl.geo;
  const dims& F = p.full_shape();
  const std::uint32_t mask = p.reduce_mask();
  const bool reduce_all = !p.has_reducers();  // elementwise: the whole shape is one walk
  const std::size_t ops = p.leaves().size() + 1;
  auto operand_stride = [&](std::size_t k, int axis) {
    return k + 1 == ops ? pl.dest.strides[axis] : p.leaves()[k].strides[axis];
  };
  for (int a = 0; a < F.size(); ++a) {
    if (reduce_all || (mask & (1u << a))) {
      g.r_axes.push_back(a);
      g.reduced *= F[a];
    } else {
      g.k_axes.push_back(a);
      g.k_extents.push_back(F[a]);
      g.groups *= F[a];
      plan_vector<index_t> s(ops);
      for (std::size_t k = 0; k < ops; ++k) s[k] = operand_stride(k, a);
      g.k_strides.push_back(std::move(s));
    }
  }
  for (int a : g.r_axes) {
    if (F[a] == 1) continue;
    axis_walk w{F[a], plan_vector<index_t>(ops)};
    for (std::size_t k = 0; k < ops; ++k) w.strides[k] = operand_stride(k, a);
    if (!g.walk.empty()) {
      axis_walk& prev = g.walk.back();
      bool mergeable = true;
      for (std::size_t k = 0; k < ops; ++k) mergeable = mergeable && prev.strides[k] == w.strides[k] * w.extent;
      if (mergeable) {
        prev.extent *= w.extent;
        prev.strides = w.strides;
        continue;
      }
    }
    g.walk.push_back(std::move(w));
  }
  if (g.walk.empty() || g.reduced == 0)
    g.walk.assign(1, axis_walk{g.reduced == 0 ? 0 : 1, plan_vector<index_t>(ops, 0)});
}

void classify_values(plan& pl) {
  const program& p = pl.prog;
  const auto& code = p.code();
  const int n = static_cast<int>(code.size());
  pl.uniform.assign(static_cast<std::size_t>(n), 0);
  pl.level.assign(static_cast<std::size_t>(n), 0);
  const char* empty_extreme = nullptr;  // the first max/min/argmax/argmin, when nothing is reduced
  for (int i = 0; i < n; ++i) {
    const instruction& in = code[static_cast<std::size_t>(i)];
    bool uni = true;
    int lvl = 0;
    if (in.op == opcode::load) {
      uni = leaf_uniform(pl, in.leaf);
    } else if (in.op == opcode::constant) {
      uni = true;
    } else if (in.op == opcode::reduce) {
      lvl = pl.level[static_cast<std::size_t>(in.args[0])] + 1;
    } else {
      for (int a : all_args(p, in)) {
        uni = uni && pl.uniform[static_cast<std::size_t>(a)];
        lvl = std::max(lvl, pl.level[static_cast<std::size_t>(a)]);
      }
    }
    pl.uniform[static_cast<std::size_t>(i)] = uni;
    pl.level[static_cast<std::size_t>(i)] = lvl;
    if (in.op == opcode::reduce) {
      pl.reduce_passes = std::max(pl.reduce_passes, lvl);
      const auto op = static_cast<reduce_op>(in.sub);
      if (pl.geo.reduced == 0 && empty_extreme == nullptr &&
          (op == reduce_op::max || op == reduce_op::min || op == reduce_op::argmax || op == reduce_op::argmin ||
           op == reduce_op::logsumexp))
        empty_extreme = reduce_name(op);
    }
  }
  pl.root_uniform = pl.uniform[static_cast<std::size_t>(pl.root)];
  pl.root_broadcast = false;
  if (pl.root_uniform)
    for (const axis_walk& w : pl.geo.walk) pl.root_broadcast = pl.root_broadcast || (w.extent > 1 && w.strides.back() != 0);
  // A max/min over nothing has no value. It matters when the result has elements, which holds
  // it: groups exist and the destination does not run along an empty reduced axis (max(x, 1)
  // and logsumexp of [3, 0] have three values; softmax of [3, 0] has none). eval marks a
  // destination axis of extent 0 with a non-zero stride, so the two cases differ.
  bool result_empty = pl.geo.groups == 0;
  for (int a : pl.geo.r_axes)
    result_empty = result_empty || (p.full_shape()[a] == 0 && pl.dest.strides[a] != 0);
  if (empty_extreme != nullptr && !result_empty) {
    dims axes;  // the reduced axes, as build_geometry found them
    for (int a : pl.geo.r_axes) axes.push_back(a);
    throw empty_reduction_error(std::string("ct::") + pl.op + ": " + empty_extreme + " over axes " + axes.str() +
                                " of shape " + p.full_shape().str() + " has no value: the reduction is empty");
  }
}

void decide_mode(plan& pl) {
  const program& p = pl.prog;
  const geometry& g = pl.geo;
  const auto& code = p.code();
  pl.scalar = pl.uniform;
  if (!p.has_reducers() || g.k_axes.empty() || g.k_extents.back() < 2) return;
  bool reduced_contiguous = false, retained_contiguous = false;
  for (std::size_t l = 0; l < p.leaves().size(); ++l) {
    if (leaf_uniform(pl, static_cast<int>(l))) continue;
    if (g.walk.back().strides[l] == 1) reduced_contiguous = true;
    if (g.k_strides.back()[l] == 1) retained_contiguous = true;
  }
  pl.column = retained_contiguous && !reduced_contiguous;
  if (!pl.column) return;
  pl.block = std::min<index_t>(max_column_block, g.k_extents.back());
  for (std::size_t i = 0; i < code.size(); ++i) {
    const instruction& in = code[i];
    bool sc = true;
    if (in.op == opcode::load) sc = pl.uniform[i] && g.k_strides.back()[static_cast<std::size_t>(in.leaf)] == 0;
    else if (in.op == opcode::reduce) sc = false;
    else if (in.op != opcode::constant)
      for (int a : all_args(p, in)) sc = sc && pl.scalar[static_cast<std::size_t>(a)];
    pl.scalar[i] = sc;
  }
}

}  // namespace

void plan_iteration_space(plan& pl) {
  build_geometry(pl);
  classify_values(pl);
  decide_mode(pl);
  pl.tile = pl.column ? 1 : std::min<index_t>(max_tile, std::max<index_t>(1, pl.geo.walk.back().extent));
}

}  // namespace ct::detail::evaluator
