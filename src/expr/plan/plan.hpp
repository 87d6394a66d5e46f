// src/expr/plan/plan.hpp — how one evaluation runs, decided before any group runs (internal).
//
// Per group (retained coordinate), the reduced axes are walked tile by tile once per "pass":
// pass p feeds the reducers whose arguments need p earlier reducer results (max before sum in
// softmax), and the last pass computes and writes the output. Values that are constant within
// a group (reducer results, scalars, operands broadcast along the reduced axes) are "uniform"
// and computed once per group. The walk order depends only on shapes, never on the partition.
//
// The plan is plain data: build_plan fills it in stages (plan/*.cpp, one file per concern)
// and the runners (run/*.cpp) only read it.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ct/core/dims.hpp"
#include "ct/expr/program.hpp"
#include "src/expr/plan_memory.hpp"
#include "src/expr/run/strategy.hpp"

// Hidden: only the evaluator's files use these, so they are not exported from libct and
// the calls between those files stay direct calls (not through the PLT).
namespace ct::detail {
namespace [[gnu::visibility("hidden")]] evaluator {

/// One reduced axis after merging: its extent and the stride of every operand along it.
struct axis_walk {
  index_t extent;
  plan_vector<index_t> strides;  // [leaf 0 .. leaf n-1, destination]
};

/// The iteration space: retained axes (one group per position) and merged reduced axes.
struct geometry {
  plan_vector<int> r_axes, k_axes;              // reduced and retained axes of the full shape
  plan_vector<axis_walk> walk;                  // merged reduced axes, outermost first (never empty)
  plan_vector<plan_vector<index_t>> k_strides;  // per retained axis, per operand
  dims k_extents;
  index_t groups = 1;   // retained positions
  index_t reduced = 1;  // reduced elements per group

  /// Offsets of group g's first element in every operand (row-major over retained axes).
  void group_offsets(index_t g, std::vector<index_t>& offsets) const {
    if (k_extents.size() == 1) {  // one retained axis (rows): no division (its latency showed
      const auto& st = k_strides[0];  // in profiles of short rows: 7% of a sum of 4096x64)
      for (std::size_t k = 0; k < offsets.size(); ++k) offsets[k] = g * st[k];
      return;
    }
    std::fill(offsets.begin(), offsets.end(), 0);
    for (int a = static_cast<int>(k_extents.size()) - 1; a >= 0; --a) {
      const index_t e = k_extents[a], c = g % e;
      g /= e;
      for (std::size_t k = 0; k < offsets.size(); ++k) offsets[k] += c * k_strides[static_cast<std::size_t>(a)][k];
    }
  }

  /// Steps the odometer over the outer merged reduced axes (all but the innermost), moving
  /// every operand's offset along; false once every position was visited.
  bool next_outer(std::vector<index_t>& offsets, std::vector<index_t>& idx) const {
    for (int a = static_cast<int>(walk.size()) - 2; a >= 0; --a) {
      const axis_walk& w = walk[static_cast<std::size_t>(a)];
      for (std::size_t k = 0; k < offsets.size(); ++k) offsets[k] += w.strides[k];
      if (++idx[static_cast<std::size_t>(a)] < w.extent) return true;
      for (std::size_t k = 0; k < offsets.size(); ++k) offsets[k] -= w.strides[k] * w.extent;
      idx[static_cast<std::size_t>(a)] = 0;
    }
    return false;
  }
};

/// A varying float instruction resolved at plan time to the tile function its kernel would
/// end in, so each tile skips the operation, type, backend and CPU-target switches.
/// A uniform one, computed once per group, is done inline when it is one IEEE operation
/// (one_value): the same bits as the scalar kernel, without a call chain per group.
struct direct_op {
  enum kind_t : std::uint8_t { none, unary, binary, muladd, one_value } kind = none;
  bool f64 = false;
  void (*fn)() = nullptr;  // the typed kernels::*_tile_fn, cast back before the call
  // unary only, when its results may feed a sum in the same pass (kernels::resolve_unary_sum):
  void (*sum_store)() = nullptr;  // also writes the tile
  void (*sum_only)() = nullptr;   // the tile itself is not needed
  void (*after_sub)() = nullptr;  // op(x - u) with u one value (kernels::resolve_sub_unary)
  void (*after_sub_prefetch)() = nullptr;  // the same, prefetching another row as it goes
  void (*fn_prefetch)() = nullptr;         // unary: fn, prefetching another row as it goes
  void (*sum_after_sub)() = nullptr;  // x - u written, op of it summed (resolve_sub_unary_sum)
  void (*keep_after_sub)() = nullptr;           // x - u and op of it written (resolve_sub_keep_unary)
  void (*keep_after_sub_prefetch)() = nullptr;  // the same, prefetching another row as it goes
  // binary mul / muladd of varying factors: (x * u) * w [+ c] with the scaling x * u folded in
  // (kernels::resolve_scale_then).
  void (*scale_then)() = nullptr;
};

/// One pass over a group's reduced elements.
struct pass_plan {
  plan_vector<int> uniforms;   // evaluated once at the start of the pass
  // The same as the runner executes them: a one_value instruction with its operands (b = a
  // for a unary one), or anything else through the general path (one = false).
  struct uniform_step {
    int i = 0, a = 0, b = 0;
    bool one = false, f64 = false;
  };
  plan_vector<uniform_step> uniform_steps;
  plan_vector<int> varying;    // evaluated per tile, in order
  plan_vector<int> reducers;   // fed per tile (reduction passes only)
  plan_vector<int> reused;     // computed by an earlier pass and kept in the row cache
  struct reuse {               // the same with where they are: scratch + at + position * esize
    int i = 0;
    std::size_t at = 0, esize = 0;
  };
  plan_vector<reuse> reuses;
  plan_vector<int> slot;       // instruction -> tile slot in this pass (-1: none)
  plan_vector<char> prefetch;  // instruction -> a load streaming from memory for the first time in the group
  // instruction -> a prefetched load that only reducers read, whose kernels prefetch as they go
  // (kernels' `streamed`): no burst of prefetches before the tile then.
  plan_vector<char> streamed;
  bool column_sums = false;    // column mode: the pass only sums contiguous float operands (run rows in batches)
  bool prefetch_next = false;  // prefetch the next group's streamed operands during this pass
  // With prefetch_next: an exp or exp(x - u) instruction (sub_first) whose kernel prefetches
  // leaf prefetch_leaf's next row as it computes, instead of a burst before the tile (-1: none).
  int prefetch_by = -1, prefetch_leaf = -1;
  // Fused feeding: unary instruction -> the sum reducer it feeds while computing its tile
  // (-1: none); whether the tile must still be written; reducers fed that way.
  plan_vector<int> feeds;
  plan_vector<char> feed_store, fed;
  // Subtraction folded into the unary function that consumes it: `skip` marks the x - u whose
  // only use is that function, `sub_first` the function, which then reads x and u itself.
  plan_vector<char> skip, sub_first;
  // op(x - u) whose argument x - u is needed besides (log-softmax keeps x - max for the
  // output): the function -> its kernel also writes x - u (skipped as a step of its own).
  plan_vector<char> sub_keep;
  // x - u whose square only feeds a sum (layer norm's variance): instruction x - u -> the
  // square, computed and summed by x - u's kernel (the square itself is skipped); -1: none.
  plan_vector<int> sub_feeds;
  // (x * u) * w [+ c], u one value, with x * u skipped: the multiply / multiply-add -> which of
  // its factors is x * u (0/1) + 2 * which factor of x * u is u (0/1); -1: none.
  plan_vector<signed char> scale_first;
  int slots = 0;

  // The pass's varying instructions (skipped ones left out) as the row runner executes them,
  // with what it would otherwise look up on every tile decided once (plan_steps): the
  // interpretation cost per group showed in profiles (~110 ns per row of layer norm).
  struct step {
    enum kind_t : std::uint8_t { load_in_place, direct, feeding, sub_feeding, after_sub, sub_keep, scale_then, general } kind = general;
    int i = 0;
    // direct / scale_then: the tile function (for the root of a streamed result, its variant
    // with non-temporal stores, plan::root_stream)
    void (*fn)() = nullptr;
    // load_in_place: the operand (leaf), its element size, and whether to prefetch ahead;
    // widened: a 16-bit leaf read from its widened row at scratch + out_at (plan::widen_at)
    int leaf = 0;
    index_t esize = 0;
    bool burst = false;
    bool widened = false;
    // The output tile: scratch + out_at (+ tile position * out_step in the row cache).
    bool has_out = false;
    std::size_t out_at = 0;
    index_t out_step = 0;
    // Kernel steps (direct .. scale_then), all decided here so a tile costs a switch and a call:
    // the operands (instruction indices, -1: none) in the order the kernel takes them — direct:
    // the arguments; after_sub / sub_feeding: x and u of the skipped x - u; scale_then: x, u, w
    // and c; feeding: the argument —, the arity of a direct step, the element type, the fed
    // reducer's state, and second / third functions: the prefetching variant (direct,
    // after_sub), the sum kernel (feeding: with or without storing the tile; sub_feeding: the
    // square's), and the square's plain tile function for sub_feeding's head and tail.
    int a[4] = {-1, -1, -1, -1};
    std::uint8_t arity = 0;
    bool f64 = false;
    bool store = true;  // feeding: the tile is needed besides the sum
    int state = -1;
    void (*fn2)() = nullptr;
    void (*fn3)() = nullptr;
    // sub_keep: the kept x - u (instruction) and where it goes, as has_out / out_at / out_step.
    int keep = -1;
    std::size_t keep_at = 0;
    index_t keep_step = 0;
  };
  plan_vector<step> steps;
  // Reducers fed per tile by the runner (not by their argument's kernel).
  struct feed {
    int r = 0, a = 0;            // the reducer and its argument
    bool uniform_arg = false;    // the argument is one value: repeated along the tile first
    bool sum = false;            // a float or double sum: straight to the lane kernel
    void (*bulk)() = nullptr;  // sum: kernels::resolve_sum (nullptr: the scalar backend)
  };
  plan_vector<feed> feeds_list;
};

/// Layer norm's shape (decide_norm_rows): with one_tile, pass 0 only sums x, pass 1 only
/// forms x - m into the row cache and sums its squares, and the output pass only multiplies
/// that by the one value r (and a weight, and adds a bias — under the separate FMA policy in
/// a step of its own) into a contiguous destination. Each group is then one
/// kernels::resolve_norm_row call (fn; nullptr: not this shape), which forms x - m again in
/// its output pass instead of keeping it: the row cache's copy is not used then.
struct norm_rows {
  void (*fn)() = nullptr;
  bool f64 = false, streamed = false;
  int x_leaf = -1, w_leaf = -1, c_leaf = -1;  // leaves read in place (w, c: -1 when absent or c is one value)
  int c_one = -1;                             // c as one value (instruction), or -1
  int s1 = -1, s2 = -1;                       // the two sums
  int m = -1, r = -1;                         // the one values the passes subtract and multiply by
  std::size_t y_at = 0;                       // a 16-bit destination: the float32 row, rounded once it is done
  // Rows go to the kernel two at a time (norm_row_fn), each with its own lanes. Only when no
  // row is widened or narrowed and the second stage's one values do not read the first
  // stage's (a pair runs both rows' first stages before either second one).
  bool pairs = false;
};

/// Early extreme (decide_early_extreme): the first pass only feeds one value max (or min) with
/// an operand read in place, and the rows are prefetched, so the output pass of group g,
/// which waits on its streaming stores, also runs the extreme kernel over group g + 1's row,
/// tile by tile as the first pass would.
struct early_extreme {
  int reducer = -1;  // -1: off
  int leaf = -1;
  bool min = false, f64 = false;
};

struct plan {
  plan(const program& p, int root_, const destination& dest_, const char* op_)
      : prog(p), root(root_), dest(dest_), op(op_), narrow_dest(kind_of(dest_.type) == dtype_kind::storage_float) {}

  // ---- what is evaluated ----
  const program& prog;
  int root;          // the instruction written to dest
  destination dest;  // the caller's, or the staging buffer
  const char* op;    // the operation's name, for messages
  // The destination holds 16-bit floats while the root computes in float32: results are
  // rounded as they are written (run/narrow_io.hpp), never by a kernel writing dest directly.
  bool narrow_dest = false;

  // ---- iteration space (geometry.cpp) ----
  geometry geo;
  // Column mode: the reduced axes are strided while the innermost retained axis is
  // contiguous (e.g. sum over axis 0 of a row-major matrix). Then a block of up to `block`
  // neighbouring groups is evaluated together: kernels run along the retained axis and the
  // reduced positions are walked one at a time, each group accumulating sequentially.
  bool column = false;
  index_t block = 1;
  index_t tile = 1;  // elements per tile of the row walk (1 in column mode)

  // ---- per instruction (geometry.cpp) ----
  plan_vector<char> uniform;  // constant along the reduced axes (computed once per group or block)
  plan_vector<char> scalar;   // one value for the whole kernel call (kernels' "uniform" flag)
  // How deeply nested the reducers it depends on are (a reducer counts itself): a reducer of
  // level l is fed in pass l - 1, a uniform value of level l computed at the start of pass l.
  plan_vector<int> level;
  bool root_uniform = false;
  // The root is uniform but the destination runs along the reduced axes (every operand is
  // broadcast along them: softmax of a broadcast view, a broadcast scalar plus one): its one
  // value is written at each of the group's positions, not once.
  bool root_broadcast = false;
  int reduce_passes = 0;

  // ---- passes (passes.cpp) ----
  plan_vector<pass_plan> passes;
  // Scalar constants: the same value for every group, written once per callback by the
  // runner (evaluating them per group and pass cost ~7% of a layer norm of short rows).
  plan_vector<int> constants;
  plan_vector<int> reducer_index;  // reducer instruction -> its state (-1: not a reducer)
  plan_vector<char> float_sum;     // a sum of float or double into float or double: lanes only
  int reducer_count = 0;
  // Row cache: a value computed over the whole reduced extent in one pass and needed again by
  // a later pass (exp(x - max) in softmax, x - mean in layer norm) is kept instead of recomputed.
  plan_vector<int> computed_in;       // instruction -> the first pass computing it (-1: none)
  plan_vector<int> cache_store_pass;  // instruction -> the pass storing it in the row cache (-1: not kept)
  plan_vector<std::size_t> cache_offset;  // instruction -> its row in the row cache
  std::size_t cache_bytes = 0;
  // 16-bit float leaves read along one contiguous merged axis: each group's row is widened to
  // float32 once, when the group starts, into the row cache (widen_at: its offset there,
  // npos for other leaves), and every pass reads it in place from there, so the float32
  // kernels and fused paths apply unchanged. widen_once: the row is the same for every group
  // (a weight), widened by a callback's first group only.
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  plan_vector<std::size_t> widen_at;
  plan_vector<char> widen_once;
  plan_vector<int> widened_leaves;
  // The scratch block (build_plan): tile slots of slot_bytes each, then the row cache at
  // cache_at; run/scratch.cpp adds the one-value area and the reducer states.
  std::size_t slot_bytes = 0, cache_at = 0;

  // ---- kernels and fusion (fusion.cpp) ----
  plan_vector<direct_op> direct;  // per instruction (row mode, varying float operations)
  bool stream = false;            // write result tiles with non-temporal stores
  // With stream: the root's tile function that writes with non-temporal stores itself
  // (kernels' `stream`), so the output pass writes the destination directly instead of
  // computing into scratch and copying out (nullptr: copy out with stream_copy).
  void (*root_stream)() = nullptr;

  // ---- the caller's tuning (ct/core/tuning.hpp), read once on the calling thread ----
  index_t prefetch_distance = 0;   // stream_prefetch_bytes: tile inputs prefetched this far ahead
  index_t stream_threshold = 0;    // stream_store_bytes: results this large stream
  // The elements of the whole result this plan writes part of (a box of a split evaluation),
  // 0 when it writes all of it: streaming is decided by the whole result's size, since every
  // box's stores go past the caches together.
  index_t whole_result_elements = 0;
  std::size_t row_cache_budget = 0;  // row_cache_bytes: the row cache's size

  // ---- prefetch (prefetch.cpp) ----
  plan_vector<int> next_group_leaves;  // leaves whose rows a later pass prefetches for the next group
  bool prefetches_next = false;        // some pass does (pass_plan::prefetch_next)
  // Every next-group row is prefetched from inside a kernel (pass_plan::prefetch_by), so it is
  // in the caches when the next group starts: that group's first pass then prefetches nothing.
  bool rows_prefetched = false;

  // ---- fast-path patterns (patterns.cpp) ----
  // A plain reduction: sum, max, min, argmax or argmin of one float or double operand read in
  // place along one merged axis, nothing else (decide_plain).
  bool plain = false;
  // Each group's reduced elements are one tile and nothing is prefetched for the next group
  // (rows up to max_tile long, layer and RMS norm of 1024): the runner calls each pass's steps
  // once per group instead of walking (decide_one_tile).
  bool one_tile = false;
  early_extreme early;
  norm_rows norm;

  // ---- how the groups run, from the decisions above (run/strategy.cpp) ----
  run_strategy strategy = run_strategy::row_walk;
};

/// Plans program p's evaluation into dest. may_stream: non-temporal stores are allowed (not
/// into a staging buffer that is read back right away). whole_result_elements: when p is one
/// box of a larger result (split evaluation), that result's element count (plan's field of the
/// same name). Throws empty_reduction_error for a max/min over nothing whose value would be
/// written.
plan build_plan(const program& p, int root, const destination& dest, const char* op, bool may_stream,
                index_t whole_result_elements = 0);

}  // namespace evaluator
}  // namespace ct::detail
