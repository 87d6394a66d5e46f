// Recognising the shapes that run on a fast path: plain row reductions, one-tile groups,
// layer norm's rows, and the early extreme of softmax-like programs. Each fast path computes
// exactly what the general row walk would (the tests compare them bitwise).
#include <algorithm>

#include "ct/exec/settings.hpp"
#include "src/kernels/kernels.hpp"
#include "src/expr/dtype_dispatch.hpp"
#include "src/expr/plan/stages.hpp"

namespace ct::detail::evaluator {

namespace {

// The feed of pass 0 when that pass only reads one operand in place and feeds it to one
// reducer (softmax's max, layer norm's sum), else nullptr.
const pass_plan::feed* first_pass_feed(const plan& pl) {
  const pass_plan& first = pl.passes[0];
  if (first.reducers.size() != 1 || first.feeds_list.size() != 1 || first.steps.size() != 1) return nullptr;
  const pass_plan::feed& fd = first.feeds_list[0];
  const pass_plan::step& st = first.steps[0];
  if (fd.r != first.reducers[0] || fd.uniform_arg || st.kind != pass_plan::step::load_in_place || st.i != fd.a) return nullptr;
  return &fd;
}

// The interpretation cost per group (steps, reducer states, the output pass) is ~600
// instructions for a plain row reduction. Such a program runs as kernel calls and one store
// per group (run/plain_rows.cpp): sum 256x1024 19 -> 14 us, argmax 22 -> 18.5 us, argmax
// 4096x4096 1.37-1.40 -> 1.26-1.31 ms (medians, alternating A/B); sum 4096x4096 unchanged
// (memory-bound). The lanes and extreme states do not depend on how the rows are cut, so the
// results are the general path's (tests/expr/test_reductions.cpp compares them bitwise).
void decide_plain(plan& pl) {
  const program& p = pl.prog;
  const geometry& g = pl.geo;
  const auto& code = p.code();
  if (pl.column || g.walk.size() != 1 || g.walk.back().extent == 0 || pl.passes.size() != 2 || !pl.root_uniform || pl.root_broadcast ||
      code.size() != 2 || code[1].op != opcode::reduce || pl.root != 1 || code[0].op != opcode::load)
    return;
  const auto op = static_cast<reduce_op>(code[1].sub);
  const dtype t = code[0].type;
  const auto leaf = static_cast<std::size_t>(code[0].leaf);
  if ((t != dtype::f32 && t != dtype::f64) || p.leaves()[leaf].type != t || g.walk.back().strides[leaf] != 1 || pl.uniform[0] ||
      pl.dest.type != code[1].type)
    return;
  pl.plain = op == reduce_op::sum || op == reduce_op::max || op == reduce_op::min || op == reduce_op::argmax ||
             op == reduce_op::argmin || op == reduce_op::logsumexp;
}

// Softmax of 4096x4096 spends ~13% of its time in the max pass, which reads the row the
// previous group prefetched, while the output pass before it mostly waits for its
// non-temporal stores to drain. Running the next group's max kernel in that output pass, on
// the same tiles in the same order, gives the same state the first pass would have (the same
// function over the same tiles), so the results do not depend on which group of a callback
// computed it: the first group of each callback runs its own first pass.
void decide_early_extreme(plan& pl) {
  if (pl.column || pl.plain || pl.geo.walk.size() != 1 || pl.passes.size() < 3 || pl.root_uniform || !pl.rows_prefetched)
    return;
  const pass_plan::feed* first = first_pass_feed(pl);
  if (first == nullptr) return;
  const pass_plan::feed& fd = *first;
  const pass_plan::step& st = pl.passes[0].steps[0];
  if (st.widened) return;  // the next group's row is not widened yet
  const instruction& r = pl.prog.code()[static_cast<std::size_t>(fd.r)];
  const dtype at = pl.prog.code()[static_cast<std::size_t>(fd.a)].type;
  const auto op = static_cast<reduce_op>(r.sub);
  if ((op != reduce_op::max && op != reduce_op::min) || (at != dtype::f32 && at != dtype::f64) || r.type != at) return;
  pl.early.reducer = fd.r;
  pl.early.leaf = st.leaf;
  pl.early.min = op == reduce_op::min;
  pl.early.f64 = at == dtype::f64;
}

// The walk, the tile bookkeeping and the next-group prefetch cost ~20 ns per group even when
// a group is one tile: layer norm of 8192x1024 with weight and bias 1.95-2.06 -> 1.80-1.90 ms,
// 512x1024 121 -> 110 us (alternating runs). The same steps run in the same order on the same
// tile, so the results are the walking runner's (compared bitwise in test_fused_scheduling).
void decide_one_tile(plan& pl) {
  const geometry& g = pl.geo;
  pl.one_tile = !pl.column && !pl.plain && g.walk.size() == 1 && g.walk.back().extent > 0 && pl.tile == g.walk.back().extent &&
                !pl.prefetches_next && pl.early.reducer < 0;
}

// Layer norm as the runner executes it, step by step, spends ~45 ns per row between its three
// kernels (reducer bookkeeping, operand tables, the one values passing through memory); the
// same kernels' loops inlined into one function per row remove most of it (8192x1024 with
// weight and bias 1.79 -> 1.67 ms). Only this shape is recognised — layer norm's, the
// benchmarks' — and the kernel computes exactly what the steps below would, NaN payloads
// aside (tests compare it with the step-by-step runner bitwise).
void decide_norm_rows(plan& pl) {
  using step = pass_plan::step;
  const program& p = pl.prog;
  const int root = pl.root;
  const auto& uniform = pl.uniform;
  if (!pl.one_tile || pl.passes.size() != 3 || pl.root_uniform || pl.geo.walk.back().strides.back() != 1) return;
  if (pl.stream && pl.root_stream == nullptr && !pl.narrow_dest) return;
  const auto& code = p.code();
  const auto at = [](int i) { return static_cast<std::size_t>(i); };
  const pass_plan &p0 = pl.passes[0], &p1 = pl.passes[1], &p2 = pl.passes[2];
  // pass 0: x read in place and summed (its one values, e.g. a per-row epsilon read from a
  // tensor, are computed before the kernel starts)
  const pass_plan::feed* first = first_pass_feed(pl);
  if (first == nullptr) return;
  const pass_plan::feed& f0 = *first;
  const step& ld = p0.steps[0];
  const dtype t = code[at(ld.i)].type;
  if (!f0.sum || (t != dtype::f32 && t != dtype::f64) || code[at(f0.r)].type != t || !pl.float_sum[at(f0.r)]) return;
  // pass 1: x (read in place) - m into the row cache, its squares summed
  if (p1.steps.empty() || !p1.feeds_list.empty() || p1.reducers.size() != 1 || !p1.reuses.empty()) return;
  const step& sf = p1.steps.back();
  for (std::size_t k = 0; k + 1 < p1.steps.size(); ++k)
    if (p1.steps[k].kind != step::load_in_place || p1.steps[k].i != ld.i) return;
  const int s2 = p1.reducers[0];
  const auto esize = static_cast<index_t>(dtype_bytes(t));
  if (sf.kind != step::sub_feeding || sf.a[0] != ld.i || !uniform[at(sf.a[1])] || !sf.has_out || sf.out_step != esize ||
      sf.state != pl.reducer_index[at(s2)] || code[at(s2)].type != t || !pl.float_sum[at(s2)] || code[at(sf.a[1])].type != t)
    return;
  // pass 2: weight and bias read in place, then the root from x - m and r: (d * r) [* w]
  // [+ c] as one multiply-add step, or — under the separate FMA policy, where a*b + c is not
  // contracted — (d * r) * w as a step of its own and the root adding c to it.
  if (p2.steps.empty() || !p2.feeds_list.empty() || !p2.reducers.empty() || p2.reuses.size() != 1 ||
      p2.reuses[0].i != sf.i || p2.reuses[0].at != sf.out_at)
    return;
  const step& out = p2.steps.back();
  const auto out_is = [&](kernels::binary_op op) {  // the last step: the root as a two-operand op
    return out.kind == step::direct && out.arity == 2 && code[at(root)].op == opcode::binary &&
           code[at(root)].sub == static_cast<std::uint8_t>(op);
  };
  const bool two_step = p2.steps.size() >= 2 && out_is(kernels::binary_op::add);
  const step* scale = two_step ? nullptr : &out;  // the step computing (d * r) [* w [+ c]]
  for (std::size_t k = 0; k + 1 < p2.steps.size(); ++k) {  // the others only read operands in place
    const step& st = p2.steps[k];
    if (st.kind == step::load_in_place && st.esize == esize) continue;
    if (scale != nullptr) return;
    scale = &st;
  }
  if (scale == nullptr) return;
  const auto leaf_of = [&](int i) {  // the leaf instruction i loads in place in pass 2, or -1
    for (const step& st : p2.steps)
      if (st.i == i && st.kind == step::load_in_place) return st.leaf;
    return -1;
  };
  if (out.i != root || code[at(root)].type != t || pl.dest.type != t) return;
  norm_rows nr;
  kernels::norm_output o{};
  settings s = current_settings();
  if (scale->kind == step::scale_then) {
    if (scale->a[0] != sf.i || !uniform[at(scale->a[1])] || (nr.w_leaf = leaf_of(scale->a[2])) < 0) return;
    nr.r = scale->a[1];
    int c = scale->a[3];
    if (two_step) {  // root = scale + c, in that order: the kernel's Fma<false> is Add(product, c)
      if (c >= 0 || out.a[0] != scale->i || out.a[1] == scale->i) return;
      c = out.a[1];
      s.fma = fma_policy::separate;
    }
    if (c < 0) {
      o = kernels::norm_output::mul_mul;
    } else if (uniform[at(c)]) {
      o = kernels::norm_output::mul_add_uniform_c;
      nr.c_one = c;
    } else {
      o = kernels::norm_output::mul_add;
      if ((nr.c_leaf = leaf_of(c)) < 0) return;
    }
  } else if (!two_step && out_is(kernels::binary_op::mul)) {
    o = kernels::norm_output::mul;
    if (out.a[0] == sf.i && uniform[at(out.a[1])]) nr.r = out.a[1];
    else if (out.a[1] == sf.i && uniform[at(out.a[0])]) nr.r = out.a[0];
    else return;
  } else {
    return;
  }
  const bool kernel_streams = pl.stream && !pl.narrow_dest;  // a 16-bit row is streamed once rounded
  nr.fn = t == dtype::f32 ? reinterpret_cast<void (*)()>(kernels::resolve_norm_row<float>(o, s, kernel_streams))
                          : reinterpret_cast<void (*)()>(kernels::resolve_norm_row<double>(o, s, kernel_streams));
  if (nr.fn == nullptr) return;
  nr.f64 = t == dtype::f64;
  nr.streamed = p0.streamed[at(ld.i)] != 0;
  nr.x_leaf = ld.leaf;
  nr.s1 = f0.r;
  nr.s2 = s2;
  nr.m = sf.a[1];
  if (pl.narrow_dest) {  // the kernel writes float32: into the row cache, then rounded
    nr.y_at = pl.cache_at + pl.cache_bytes;
    pl.cache_bytes += (static_cast<std::size_t>(pl.geo.reduced) * sizeof(float) + 63) / 64 * 64;
  }
  // Pairs: what stage 0 writes (the first sum and pass 1's one values) must not be read by
  // stage 1's steps nor be the output's c, which the kernel reads after both stages; and no
  // one value may be loaded, as a load reads the group's own element (the first row's offsets
  // are the ones current for the pair).
  std::vector<int> first_stage{nr.s1};
  for (const pass_plan::uniform_step& us : p1.uniform_steps) first_stage.push_back(us.i);
  const auto written_first = [&](int i) { return std::find(first_stage.begin(), first_stage.end(), i) != first_stage.end(); };
  bool pairs = !pl.narrow_dest && pl.widened_leaves.empty() && !written_first(nr.c_one);
  for (const pass_plan* pp : {&p0, &p1, &p2})
    for (const pass_plan::uniform_step& us : pp->uniform_steps) pairs = pairs && code[at(us.i)].op != opcode::load;
  for (const pass_plan::uniform_step& us : p2.uniform_steps) {
    for (int a : code[at(us.i)].args) pairs = pairs && !written_first(a);
    pairs = pairs && us.i != nr.c_one;
  }
  nr.pairs = pairs;
  pl.norm = nr;
}

}  // namespace

void decide_patterns(plan& pl) {
  decide_plain(pl);
  decide_early_extreme(pl);  // after decide_plain
  decide_one_tile(pl);       // after both
  decide_norm_rows(pl);      // one-tile groups only
}

}  // namespace ct::detail::evaluator
