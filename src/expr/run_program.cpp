// run_program: validation, overlap checks and staging, planning, scheduling the groups over
// the bound executor, and copying staged results out.
#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <thread>
#include <vector>

#include "ct/core/strided.hpp"
#include "ct/exec/parallel_for.hpp"
#include "ct/expr/program.hpp"
#include "src/expr/dtype_dispatch.hpp"
#include "src/expr/plan/plan.hpp"
#include "src/expr/run/scratch.hpp"
#include "src/expr/run/strategy.hpp"
#include "src/expr/tuning.hpp"

namespace ct::detail {

namespace {

bool ranges_overlap(const void* a, index_t amin, index_t amax, std::size_t asize, const void* b, index_t bmin,
                    index_t bmax, std::size_t bsize) {
  auto lo_a = reinterpret_cast<std::uintptr_t>(a) + static_cast<std::uintptr_t>(amin * static_cast<index_t>(asize));
  auto hi_a = reinterpret_cast<std::uintptr_t>(a) + static_cast<std::uintptr_t>((amax + 1) * static_cast<index_t>(asize));
  auto lo_b = reinterpret_cast<std::uintptr_t>(b) + static_cast<std::uintptr_t>(bmin * static_cast<index_t>(bsize));
  auto hi_b = reinterpret_cast<std::uintptr_t>(b) + static_cast<std::uintptr_t>((bmax + 1) * static_cast<index_t>(bsize));
  return lo_a < hi_b && lo_b < hi_a;
}

// Copies the staged results to the caller's destination, position by position.
void copy_out(const unsigned char* src, const destination& target, const destination& dest, const dims& out_shape) {
  dims src_strides = target.strides, dst_strides = dest.strides;
  const std::size_t esize = dtype_bytes(dest.type);
  auto* dst = static_cast<unsigned char*>(dest.data);
  for_each_row<2>(out_shape, {dst_strides, src_strides}, [&](auto off, index_t n, auto inner) {
    for (index_t j = 0; j < n; ++j)
      std::memcpy(dst + (off[0] + j * inner[0]) * static_cast<index_t>(esize), src + (off[1] + j * inner[1]) * static_cast<index_t>(esize), esize);
  });
}

// Runs `count` groups through the bound executor, run(start, end, block, workspace) doing groups
// [start, end) in a scratch block of `bytes` with its runner workspace. Every block a callback
// may take is allocated, and its workspace prepared for each of `plans`, before scheduling
// (scratch.hpp: a callback allocates nothing).
template <class Run>
void schedule_with_scratch(const char* op, index_t count, std::size_t bytes,
                           std::span<const evaluator::plan* const> plans, Run run) {
  using namespace evaluator;
  const bool parallel = count > 1 && static_cast<bool>(current_executor());
  // hardware_concurrency() reads /sys on every call (about 5 us here): ask once.
  static const unsigned max_blocks = std::min(64u, std::max(2u, std::thread::hardware_concurrency() + 1));
  const int blocks = parallel ? static_cast<int>(std::min<index_t>(count, max_blocks)) : 1;
  scratch_pool pool(bytes, blocks);
  for (int b = 0; b < blocks; ++b)
    for (const plan* pl : plans) prepare_workspace(*pl, pool.workspace(b));
  schedule(op, count, [&](index_t start, index_t end) {
    const int b = pool.acquire();
    struct releaser {
      scratch_pool& pool;
      int b;
      ~releaser() { pool.release(b); }
    } release{pool, b};
    run(start, end, pool.block(b), pool.workspace(b));
  });
}

// The split evaluation of an elementwise program: boxes of about split_box_elements along
// `axis` (at most max_split_boxes), a plan each, then one group per box through the bound
// executor. Each element is computed as in the one-box evaluation (the same kernels, and a
// tile's values never depend on where they sit).
void run_split(const program& p, int root, const destination& target, const char* op, bool may_stream, int axis) {
  using namespace evaluator;
  const dims& F = p.full_shape();
  const index_t extent = F[axis];
  const index_t boxes = std::min<index_t>({extent, max_split_boxes, std::max<index_t>(2, element_count(F) / split_box_elements)});
  std::vector<program> progs;
  progs.reserve(static_cast<std::size_t>(boxes));  // plans refer to these: no reallocation
  std::vector<std::unique_ptr<const plan>> plans;
  std::vector<const plan*> plan_list;
  const auto esize = static_cast<index_t>(dtype_bytes(target.type));
  std::size_t bytes = 0;
  for (index_t b = 0; b < boxes; ++b) {
    const index_t start = extent * b / boxes, end = extent * (b + 1) / boxes;
    progs.push_back(p.box(axis, start, end));
    destination d = target;
    d.data = static_cast<unsigned char*>(target.data) + start * target.strides[axis] * esize;
    plans.push_back(
        std::make_unique<const plan>(build_plan(progs.back(), root, d, op, may_stream, element_count(F))));
    plan_list.push_back(plans.back().get());
    bytes = std::max(bytes, scratch_bytes(*plans.back()));
  }
  schedule_with_scratch(op, boxes, bytes, plan_list,
                        [&](index_t start, index_t end, unsigned char* block, runner_workspace& ws) {
                          for (index_t b = start; b < end; ++b) {
                            const plan& pl = *plan_list[static_cast<std::size_t>(b)];
                            run_groups(pl, 0, pl.geo.groups, block, ws);
                          }
                        });
}

}  // namespace

void run_program(const program& p, int root, const destination& dest, const char* op) {
  // A float32 value rounded to the 16-bit type of its destination (ct::cast<bfloat16>(x) into a
  // bfloat16 tensor): the store rounds it the same way, once.
  {
    const instruction& r = p.code()[static_cast<std::size_t>(root)];
    if (r.op == opcode::round_to && static_cast<dtype>(r.sub) == dest.type &&
        p.code()[static_cast<std::size_t>(r.args[0])].type == dtype::f32)
      root = r.args[0];
  }
  using namespace evaluator;
  const dims& F = p.full_shape();
  if (element_count(F) == 0 && !p.has_reducers()) return;  // nothing to compute or write
  // Reductions over nothing: an empty reduced axis the result does not run along (its
  // destination stride is 0; eval gives an axis the result runs along with extent 0 a non-zero
  // one). Every reducer then has its value over no elements, and the result is that
  // expression evaluated elementwise over the other axes (the reduced ones the result does not
  // run along dropped): without this the groups' walk over the reduced positions would be
  // empty and a result running along the other reduced axes would never be written. A max or
  // min has no such value: the planner raises its error when the result has elements.
  if (p.has_reducers()) {
    std::uint32_t drop = 0;
    bool over_nothing = false, extreme = false;
    for (int a = 0; a < F.size(); ++a)
      if ((p.reduce_mask() & (1u << a)) && dest.strides[a] == 0) {
        drop |= 1u << a;
        over_nothing = over_nothing || F[a] == 0;
      }
    for (const instruction& in : p.code())
      if (in.op == opcode::reduce) {
        const auto r = static_cast<reduce_op>(in.sub);
        extreme = extreme || r == reduce_op::max || r == reduce_op::min || r == reduce_op::argmax || r == reduce_op::argmin ||
                  r == reduce_op::logsumexp;
      }
    if (over_nothing && !extreme) {
      destination d = dest;
      for (int a = F.size() - 1; a >= 0; --a)
        if (drop & (1u << a)) d.strides.erase(a);
      return run_program(p.with_reductions_of_nothing(drop, root), root, d, op);
    }
  }
  // Staging: when a functor may throw, or the destination overlaps an operand other than as
  // the very same elements, results go to a private buffer copied out after every group.
  bool staged = p.can_throw();
  for (const leaf_info& leaf : p.leaves()) {
    if (!ranges_overlap(dest.data, dest.min_offset, dest.max_offset, dtype_bytes(dest.type), leaf.data, leaf.min_offset,
                        leaf.max_offset, dtype_bytes(leaf.type)))
      continue;
    if (!(leaf.data == dest.data && leaf.type == dest.type && leaf.strides == dest.strides)) staged = true;
  }
  destination target = dest;
  std::unique_ptr<unsigned char[]> staging;
  dims out_shape = F;
  if (staged) {
    // Row-major over the output positions (reduced axes collapse to one when the dest stride is 0).
    for (int a = 0; a < F.size(); ++a)
      if (dest.strides[a] == 0) out_shape[a] = 1;
    dims rm = row_major_strides(out_shape);
    for (int a = 0; a < F.size(); ++a)
      if (out_shape[a] == 1) rm[a] = 0;
    index_t count = element_count(out_shape);
    if (injected_allocation_failure()) throw std::bad_alloc();
    staging.reset(new unsigned char[static_cast<std::size_t>(std::max<index_t>(count, 1)) * dtype_bytes(dest.type)]);
    target = destination{staging.get(), dest.type, rm, 0, count - 1};
  }
  // Opt-in (settings::split_elementwise): a large expression without reducers runs as boxes of
  // its outermost axis of extent >= 2, one group each, through the bound executor. Every plan
  // and scratch block exists before any box runs, so a failure still changes nothing.
  if (!p.has_reducers() && current_settings().split_elementwise && static_cast<bool>(current_executor()) &&
      element_count(F) >= split_min_elements) {
    int axis = 0;
    while (axis < F.size() && F[axis] < 2) ++axis;
    if (axis < F.size()) {
      run_split(p, root, target, op, !staged, axis);
      if (staged) copy_out(staging.get(), target, dest, out_shape);
      return;
    }
  }
  // Staged results are read back right away: no streaming stores into the staging buffer.
  const plan pl = build_plan(p, root, target, op, !staged);
  const plan* const only = &pl;
  schedule_with_scratch(op, pl.geo.groups, scratch_bytes(pl), std::span(&only, 1),
                        [&](index_t start, index_t end, unsigned char* block, runner_workspace& ws) {
                          run_groups(pl, start, end, block, ws);
                        });
  if (staged) copy_out(staging.get(), target, dest, out_shape);
}

}  // namespace ct::detail
