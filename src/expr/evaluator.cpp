// The evaluator: plans a tile program over groups (retained coordinates) and runs it.
//
// Per group, the reduced axes are walked tile by tile once per "pass": pass p feeds the
// reducers whose arguments need p earlier reducer results (max before sum in softmax), and
// the last pass computes and writes the output. Values that are constant within a group
// (reducer results, scalars, operands broadcast along the reduced axes) are "uniform" and
// computed once per group. The walk order depends only on shapes, never on the partition.
#include <algorithm>
#include <cmath>
#include <atomic>
#include <cstring>
#include <memory>
#include <new>
#include <thread>

#include "ct/core/error.hpp"
#include "ct/core/strided.hpp"
#include "ct/exec/parallel_for.hpp"
#include "ct/expr/program.hpp"
#include "src/expr/plan_memory.hpp"
#include "src/expr/column_kernels.hpp"
#include "src/expr/stream_copy.hpp"

namespace ct::detail {

namespace {

std::atomic<int> failing_allocations{0};
std::atomic<int> skipped_allocations{0};
// The test hook (fail_next_scratch_allocations): let `skip` allocations through, then fail.
bool injected_allocation_failure() {
  if (failing_allocations.load() <= 0) return false;
  if (skipped_allocations.load() > 0 && skipped_allocations.fetch_sub(1) > 0) return false;
  return failing_allocations.fetch_sub(1) > 0;
}

constexpr index_t max_tile = 1024;  // elements; a float tile is 4 KiB, a double one 8 KiB
// Column mode reads one stretch of this many retained elements per reduced position: long
// stretches keep the hardware prefetchers streaming (sum over axis 0 of 4096x4096 f32 went
// from 24 to 7 ms when this grew from 1024 to 4096 with a scalar accumulate loop; with the
// SIMD accumulate 1024..4096 measured within noise). The double accumulators (32 KiB) fit L1.
constexpr index_t max_column_block = 4096;
// Column mode prefetches the stretch this many reduced positions ahead: sum over axis 0 of
// 4096x4096 f32 went from 4.0 to 3.0-3.6 ms (noisy machine) with 4; 2048-wide blocks were
// twice as slow, so the block stays 4096 wide.
constexpr index_t column_prefetch_rows = 4;
// Results of at least this many bytes are written with non-temporal stores (when contiguous
// along the walk): a result this large cannot stay in the caches for its reader anyway, and
// not reading the destination lines first cut a 64 MiB softmax from 9.9 to 9.1 ms and a
// 32 MiB layer norm from 5.5 to 4.5 ms.
// Only for tiles of at least stream_min_tile bytes: with short rows (256-byte tiles of a
// 65536x64 layer norm) streaming made the whole evaluation 25% slower. And only when the
// output pass is light: unless the root's kernel streams itself (plan::root_stream_), the tile
// is computed into scratch and then copied out in a burst, which cannot overlap heavy
// per-element work (elementwise exp of 4096x4096 went from 3.3
// to 4.0 ms with streaming, while x*2 went from 3.1 to 2.4 ms and softmax from 9.3 to 7.8).
constexpr index_t stream_threshold = 16 * 1024 * 1024;
constexpr index_t stream_min_tile = 4096;

std::size_t dtype_size(dtype t) { return dtype_bytes(t); }

// The types instructions compute in (every element type but the 16-bit floats, which compute
// as float32); a 16-bit float reaching here is an internal error.
template <class F>
decltype(auto) with_type(dtype t, F&& f) {
  return visit_dtype(t, [&](auto v) -> decltype(auto) {
    if constexpr (kind_of_v<decltype(v)> == dtype_kind::storage_float) {
      std::abort();  // instructions carry compute types only (program::emit_load, emit_cast)
      return f(float{});
    } else {
      return f(v);
    }
  });
}

template <class T>
constexpr bool is_float_v = std::is_floating_point_v<T>;

// One value (a group's uniform: mean, 1/sqrt(var + eps), …) is computed by the scalar
// kernels when the operation is exactly rounded, because the two backends then agree bitwise
// and a plain call is far cheaper than a dispatched SIMD call on a one-element tile.
// Transcendentals keep the caller's backend (their SIMD and scalar versions differ).
inline bool exactly_rounded(kernels::unary_op op) {
  using U = kernels::unary_op;
  return op == U::neg || op == U::abs || op == U::sqrt || op == U::rsqrt || op == U::relu || op == U::square ||
         op == U::reciprocal;
}
inline settings scalar_settings(settings s) {
  s.backend = backend::scalar;
  return s;
}

// Software prefetch of the bytes a tile will read prefetch_distance bytes from now. Between
// two kernel calls the hardware prefetchers lose the stream; asking 8 KiB ahead (into L1)
// kept one core's reads near the DRAM rate: row argmax of 4096x4096 f32 through ct::eval
// went from 3.8 to 1.7-1.8 ms, row sum from 2.0 to 1.6 ms. 4 KiB and 16 KiB measured within
// noise of 8 KiB, 64 KiB and prefetches into L2/L3 only were slower. Prefetches never fault,
// so running past the end of an operand is harmless.
constexpr index_t prefetch_distance = 8 * 1024;
inline void prefetch_ahead(const unsigned char* p, index_t bytes) {
  for (index_t b = 0; b < bytes; b += 64) __builtin_prefetch(p + prefetch_distance + b);
}

// Calls f(ia, ib) for i in [0, n) with index 0 for uniform operands; split so loops vectorise.
template <class F>
inline void for_pairs(bool ua, bool ub, index_t n, F&& f) {
  if (!ua && !ub) for (index_t i = 0; i < n; ++i) f(i, i, i);
  else if (ua && !ub) for (index_t i = 0; i < n; ++i) f(i, 0, i);
  else if (!ua && ub) for (index_t i = 0; i < n; ++i) f(i, i, 0);
  else for (index_t i = 0; i < n; ++i) f(i, 0, 0);
}

// One reduced axis after merging: its extent and the stride of every operand along it.
struct axis_walk {
  index_t extent;
  plan_vector<index_t> strides;  // [leaf 0 .. leaf n-1, destination]
};

// Per-group accumulator of column mode: sequential, one group per element of the block.
struct column_state {
  double dvalue;
  std::int64_t ivalue;
  index_t index;
  bool bvalue;
};

struct reducer_state {
  kernels::lane_accumulator lanes;
  kernels::extreme_state<double> extreme_d;
  kernels::extreme_state<float> extreme_f;
  std::int64_t ivalue;
  index_t iindex;
  bool bvalue;
};

// A varying float instruction resolved at plan time to the tile function its kernel would
// end in, so each tile skips the operation, type, backend and CPU-target switches.
// A uniform one, computed once per group, is done inline when it is one IEEE operation
// (one_value): the same bits as the scalar kernel, without a call chain per group.
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

// The value of a one_value instruction: exactly what kernels::unary/binary compute.
template <class T>
inline T one_value(const instruction& in, const T* a, const T* b) {
  if (in.op == opcode::binary) {
    switch (static_cast<kernels::binary_op>(in.sub)) {
      case kernels::binary_op::add: return *a + *b;
      case kernels::binary_op::sub: return *a - *b;
      case kernels::binary_op::mul: return *a * *b;
      default: return *a / *b;  // div; resolve_direct admits nothing else
    }
  }
  switch (static_cast<kernels::unary_op>(in.sub)) {
    case kernels::unary_op::neg: return -*a;
    case kernels::unary_op::abs: return std::fabs(*a);
    case kernels::unary_op::relu: return *a != *a ? *a : *a > T(0) ? *a : T(0);  // NaN kept
    case kernels::unary_op::sqrt: return std::sqrt(*a);
    case kernels::unary_op::rsqrt: return T(1) / std::sqrt(*a);
    case kernels::unary_op::square: return *a * *a;
    default: return T(1) / *a;  // reciprocal; resolve_direct admits only exactly_rounded ops
  }
}

// The bookkeeping vectors of one callback's runner, sized before any group runs (plan::prepare)
// so that a callback allocates nothing: an allocation failing after other callbacks wrote
// their results would leave the destination partly written (CONTRACT §5).
struct runner_workspace {
  std::vector<void*> ptr;
  std::vector<char> uni;
  std::vector<index_t> offsets, next_offsets, walk_base, walk_idx, walk_saved;
};

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
  // with what it would otherwise look up on every tile decided once (plan::plan_steps): the
  // interpretation cost per group showed in profiles (~110 ns per row of layer norm).
  struct step {
    enum kind_t : std::uint8_t { load_in_place, direct, feeding, sub_feeding, after_sub, sub_keep, scale_then, general } kind = general;
    int i = 0;
    // direct / scale_then: the tile function (for the root of a streamed result, its variant
    // with non-temporal stores, plan::root_stream_)
    void (*fn)() = nullptr;
    // load_in_place: the operand (leaf), its element size, and whether to prefetch ahead
    int leaf = 0;
    index_t esize = 0;
    bool burst = false;
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
    void (*bulk)() = nullptr;    // sum: kernels::resolve_sum(false) (nullptr: the scalar backend)
    void (*bulk_streamed)() = nullptr;  // sum: kernels::resolve_sum(true)
  };
  plan_vector<feed> feeds_list;
};

class plan {
 public:
  plan(const program& p, int root, const destination& dest, const char* op, bool may_stream)
      : p_(p), root_(root), dest_(dest), op_(op) {
    const auto& code = p.code();
    const int n = static_cast<int>(code.size());
    uniform_.assign(static_cast<std::size_t>(n), 0);
    level_.assign(static_cast<std::size_t>(n), 0);
    build_geometry();
    const char* empty_extreme = nullptr;  // the first max/min/argmax/argmin, when L_ == 0
    for (int i = 0; i < n; ++i) {
      const instruction& in = code[static_cast<std::size_t>(i)];
      bool uni = true;
      int lvl = 0;
      if (in.op == opcode::load) {
        uni = leaf_uniform(in.leaf);
      } else if (in.op == opcode::constant) {
        uni = true;
      } else if (in.op == opcode::reduce) {
        lvl = level_[static_cast<std::size_t>(in.args[0])] + 1;
      } else {
        for (int a : all_args(p_, in)) {
          uni = uni && uniform_[static_cast<std::size_t>(a)];
          lvl = std::max(lvl, level_[static_cast<std::size_t>(a)]);
        }
      }
      uniform_[static_cast<std::size_t>(i)] = uni;
      level_[static_cast<std::size_t>(i)] = lvl;
      if (in.op == opcode::reduce) {
        reduce_passes_ = std::max(reduce_passes_, lvl);
        const auto op = static_cast<reduce_op>(in.sub);
        if (L_ == 0 && empty_extreme == nullptr &&
            (op == reduce_op::max || op == reduce_op::min || op == reduce_op::argmax || op == reduce_op::argmin))
          empty_extreme = reduce_name(op);
      }
    }
    root_uniform_ = uniform_[static_cast<std::size_t>(root_)];
    // A max/min over nothing has no value. It matters only when the result is one value per
    // group (max(x, 1), logsumexp); a result along the empty axes (softmax) has no elements.
    if (empty_extreme != nullptr && root_uniform_) {
      dims axes;  // the reduced axes, as build_geometry found them
      for (int a : r_axes_) axes.push_back(a);
      throw empty_reduction_error(std::string("ct::") + op_ + ": " + empty_extreme + " over axes " + axes.str() +
                                  " of shape " + p.full_shape().str() + " has no value: the reduction is empty");
    }
    resolve_direct();
    decide_mode();
    passes_.resize(static_cast<std::size_t>(reduce_passes_ + 1));
    for (int i = 0; i < n; ++i) {
      const instruction& in = code[static_cast<std::size_t>(i)];
      if (in.op == opcode::reduce) {
        passes_[static_cast<std::size_t>(level_[static_cast<std::size_t>(i)] - 1)].reducers.push_back(i);
      } else if (in.op == opcode::constant) {
        constants_.push_back(i);
      } else if (uniform_[static_cast<std::size_t>(i)]) {
        passes_[static_cast<std::size_t>(level_[static_cast<std::size_t>(i)])].uniforms.push_back(i);
      }
    }
    computed_in_.assign(static_cast<std::size_t>(n), -1);
    cache_store_pass_.assign(static_cast<std::size_t>(n), -1);
    cache_offset_.assign(static_cast<std::size_t>(n), 0);
    for (int ps = 0; ps <= reduce_passes_; ++ps) plan_pass(ps);
    plan_prefetch();
    plan_fused_feeds();
    if (column_ && walk_.size() == 1)
      for (pass_plan& pp : passes_) pp.column_sums = column_sums_only(pp);
    reducer_index_.assign(static_cast<std::size_t>(n), -1);
    float_sum_.assign(static_cast<std::size_t>(n), 0);
    for (int i = 0; i < n; ++i) {
      const instruction& in = code[static_cast<std::size_t>(i)];
      if (in.op != opcode::reduce) continue;
      reducer_index_[static_cast<std::size_t>(i)] = reducers_++;
      const dtype at = code[static_cast<std::size_t>(in.args[0])].type;
      float_sum_[static_cast<std::size_t>(i)] = in.sub == static_cast<std::uint8_t>(reduce_op::sum) &&
                                                (at == dtype::f32 || at == dtype::f64) &&
                                                (in.type == dtype::f32 || in.type == dtype::f64);
    }
    int max_slots = 0;
    for (auto& ps : passes_) max_slots = std::max(max_slots, ps.slots);
    tile_ = column_ ? 1 : std::min<index_t>(max_tile, std::max<index_t>(1, walk_.back().extent));
    stream_ = may_stream && !column_ && !root_uniform_ && light_output_pass() && walk_.back().strides.back() == 1 &&
              groups_ * L_ * static_cast<index_t>(dtype_size(dest_.type)) >= stream_threshold &&
              tile_ * static_cast<index_t>(dtype_size(dest_.type)) >= stream_min_tile;
    if (stream_) resolve_root_stream();
    slot_bytes_ = static_cast<std::size_t>(std::max(tile_, block_)) * 8;
    cache_at_ = static_cast<std::size_t>(max_slots) * slot_bytes_;
    if (!column_)
      for (std::size_t ps = 0; ps < passes_.size(); ++ps) plan_steps(ps);
    plan_kernel_prefetch();
    decide_plain();
    decide_early_extreme();
    decide_one_tile();
    decide_norm_rows();
    const std::size_t state_bytes = column_ ? static_cast<std::size_t>(block_) * sizeof(column_state) : sizeof(reducer_state);
    scratch_bytes_ = cache_at_ + cache_bytes_ + static_cast<std::size_t>(n) * static_cast<std::size_t>(block_) * 8 +
                     static_cast<std::size_t>(reducers_) * state_bytes + 64;
  }

  index_t groups() const noexcept { return groups_; }
  bool column_mode() const noexcept { return column_; }
  std::size_t scratch_bytes() const noexcept { return scratch_bytes_; }

  // Evaluates groups [start, end) with the given scratch block.
  void run(index_t start, index_t end, unsigned char* scratch, runner_workspace& ws) const;
  /// Reserves what run() uses of ws, so that run() allocates nothing.
  void prepare(runner_workspace& ws) const {
    const std::size_t n = p_.code().size(), k = p_.leaves().size() + 1;
    ws.ptr.reserve(n);
    ws.uni.reserve(n);
    for (auto* v : {&ws.offsets, &ws.next_offsets, &ws.walk_base, &ws.walk_saved}) v->reserve(k);
    ws.walk_idx.reserve(walk_.size());  // one index per outer merged axis
  }

 private:
  /// The operands of an instruction, viewed in place: `in.args` without its unused (-1)
  /// entries, or a ct::map's argument list. Planning walks these in nested loops; returning
  /// them as vectors was a third of the allocations of a small eval.
  class arg_range {
   public:
    arg_range(const int* b, const int* e) : b_(skip(b, e)), e_(e) {}
    struct iterator {
      const int* at;
      const int* end;
      int operator*() const { return *at; }
      iterator& operator++() {
        at = skip(at + 1, end);
        return *this;
      }
      bool operator!=(const iterator& o) const { return at != o.at; }
    };
    iterator begin() const { return {b_, e_}; }
    iterator end() const { return {e_, e_}; }

   private:
    static const int* skip(const int* p, const int* e) {
      while (p != e && *p < 0) ++p;
      return p;
    }
    const int* b_;
    const int* e_;
  };
  static arg_range all_args(const program& p, const instruction& in) {
    if (in.op == opcode::map) {
      const std::vector<int>& a = p.maps()[static_cast<std::size_t>(in.leaf)].args;
      return {a.data(), a.data() + a.size()};
    }
    return {std::begin(in.args), std::end(in.args)};
  }
  bool leaf_uniform(int leaf) const {
    const auto& st = p_.leaves()[static_cast<std::size_t>(leaf)].strides;
    for (int a : r_axes_)
      if (st[a] != 0) return false;
    return true;
  }

  void build_geometry();
  void resolve_root_stream();
  void decide_mode();
  void decide_plain();
  const pass_plan::feed* first_pass_feed() const;
  void decide_early_extreme();
  void decide_one_tile();
  void decide_norm_rows();
  template <class T>
  void run_plain(index_t start, index_t end, runner_workspace& ws) const;
  void plan_pass(int pass);
  void resolve_direct();
  /// No transcendental, pow or user functor is evaluated per element in the output pass.
  bool light_output_pass() const {
    for (int i : passes_.back().varying) {
      const instruction& in = p_.code()[static_cast<std::size_t>(i)];
      if (in.op == opcode::map) return false;
      if (in.op == opcode::binary && in.sub == static_cast<std::uint8_t>(kernels::binary_op::pow)) return false;
      if (in.op == opcode::unary && !exactly_rounded(static_cast<kernels::unary_op>(in.sub))) return false;
    }
    return true;
  }
  /// Column mode: whether a reduction pass only sums contiguous float operands directly.
  bool column_sums_only(const pass_plan& pp) const {
    for (int i : pp.varying) {
      const instruction& in = p_.code()[static_cast<std::size_t>(i)];
      if (in.op != opcode::load || scalar_[static_cast<std::size_t>(i)] ||
          k_strides_.back()[static_cast<std::size_t>(in.leaf)] != 1)
        return false;
    }
    for (int r : pp.reducers) {
      const instruction& in = p_.code()[static_cast<std::size_t>(r)];
      const instruction& arg = p_.code()[static_cast<std::size_t>(in.args[0])];
      if (in.sub != static_cast<std::uint8_t>(reduce_op::sum) || arg.op != opcode::load ||
          (arg.type != dtype::f32 && arg.type != dtype::f64) || scalar_[static_cast<std::size_t>(in.args[0])])
        return false;
    }
    return !pp.reducers.empty();
  }
  void plan_prefetch();
  void plan_fused_feeds();
  void plan_kernel_prefetch();
  void plan_steps(std::size_t ps);
  bool needed_besides(const pass_plan& pp, std::size_t ps, int value, int user) const;
  bool minus_one_value(int b) const;

 public:
  /// Runs a non-load instruction over n elements (shared by both walk orders).
  /// s: the caller's settings, read once per callback (a thread_local read per tile showed up
  /// in profiles of short rows).
  void exec_op(int i, index_t n, void* const* ptr, const char* uni, void* out, const settings& s) const;

  /// Offsets of group g's first element in every operand (row-major over retained axes).
  void group_offsets(index_t g, std::vector<index_t>& offsets) const {
    if (k_extents_.size() == 1) {  // one retained axis (rows): no division (its latency showed
      const auto& st = k_strides_[0];  // in profiles of short rows: 7% of a sum of 4096x64)
      for (std::size_t k = 0; k < offsets.size(); ++k) offsets[k] = g * st[k];
      return;
    }
    std::fill(offsets.begin(), offsets.end(), 0);
    for (int a = static_cast<int>(k_extents_.size()) - 1; a >= 0; --a) {
      const index_t e = k_extents_[a], c = g % e;
      g /= e;
      for (std::size_t k = 0; k < offsets.size(); ++k) offsets[k] += c * k_strides_[static_cast<std::size_t>(a)][k];
    }
  }

  /// Steps the odometer over the outer merged reduced axes (all but the innermost), moving
  /// every operand's offset along; false once every position was visited.
  bool next_outer(std::vector<index_t>& offsets, std::vector<index_t>& idx) const {
    for (int a = static_cast<int>(walk_.size()) - 2; a >= 0; --a) {
      const axis_walk& w = walk_[static_cast<std::size_t>(a)];
      for (std::size_t k = 0; k < offsets.size(); ++k) offsets[k] += w.strides[k];
      if (++idx[static_cast<std::size_t>(a)] < w.extent) return true;
      for (std::size_t k = 0; k < offsets.size(); ++k) offsets[k] -= w.strides[k] * w.extent;
      idx[static_cast<std::size_t>(a)] = 0;
    }
    return false;
  }

 private:

  template <class T>
  void exec(int i, index_t n, void* const* ptr, const char* uni, void* out, const settings& s) const;
  void load_tile(int i, const std::vector<index_t>& offsets, index_t pos, index_t n, void* out) const;

  const program& p_;
  int root_;
  destination dest_;
  const char* op_;
  plan_vector<char> uniform_;  // constant along the reduced axes (computed once per group or block)
  plan_vector<char> scalar_;   // one value for the whole kernel call (kernels' "uniform" flag)
  // Column mode: the reduced axes are strided while the innermost retained axis is
  // contiguous (e.g. sum over axis 0 of a row-major matrix). Then a block of up to block_
  // neighbouring groups is evaluated together: kernels run along the retained axis and the
  // reduced positions are walked one at a time, each group accumulating sequentially.
  bool column_ = false;
  index_t block_ = 1;
  bool stream_ = false;  // write result tiles with non-temporal stores
  // With stream_: the root's tile function that writes with non-temporal stores itself
  // (kernels' `stream`), so the output pass writes the destination directly instead of
  // computing into scratch and copying out (nullptr: copy out with stream_copy).
  void (*root_stream_)() = nullptr;
  plan_vector<direct_op> direct_;  // per instruction (row mode, varying float operations)
  plan_vector<int> next_group_leaves_;  // leaves whose rows a later pass prefetches for the next group
  bool prefetches_next_ = false;        // some pass does (pass_plan::prefetch_next)
  // A plain reduction: sum, max, min, argmax or argmin of one float or double operand read in
  // place along one merged axis, nothing else (decide_plain, run_plain).
  bool plain_ = false;
  // Every next-group row is prefetched from inside a kernel (pass_plan::prefetch_by), so it is
  // in the caches when the next group starts: that group's first pass then prefetches nothing.
  bool rows_prefetched_ = false;
  // Early extreme: the first pass only feeds one value max (or min) with an operand read in
  // place, and the rows are prefetched, so the output pass of group g, which waits on its
  // streaming stores, also runs the extreme kernel over group g + 1's row, tile by tile as
  // the first pass would (decide_early_extreme). early_reducer_ is that reducer (-1: off).
  int early_reducer_ = -1;
  int early_leaf_ = -1;
  bool early_min_ = false, early_f64_ = false;
  // Each group's reduced elements are one tile and nothing is prefetched for the next group
  // (rows up to max_tile long, layer and RMS norm of 1024): the runner calls each pass's steps
  // once per group instead of walking (decide_one_tile, group_runner::run_one_tile).
  bool one_tile_ = false;
  // Layer norm's shape (decide_norm_rows): with one_tile_, pass 0 only sums x, pass 1 only
  // forms x - m into the row cache and sums its squares, and the output pass only multiplies
  // that by the one value r (and a weight, and adds a bias — under the separate FMA policy in
  // a step of its own) into a contiguous destination. Each group is then one
  // kernels::resolve_norm_row call (norm_.fn, nullptr: not this shape).
  struct norm_rows {
    void (*fn)() = nullptr;
    bool f64 = false, streamed = false;
    int x_leaf = -1, w_leaf = -1, c_leaf = -1;  // leaves read in place (w, c: -1 when absent or c is one value)
    int c_one = -1;                             // c as one value (instruction), or -1
    int s1 = -1, s2 = -1;                       // the two sums
    int m = -1, r = -1;                         // the one values the passes subtract and multiply by
    std::size_t d_at = 0;                       // x - m in the row cache
  } norm_;
  plan_vector<int> level_;
  plan_vector<int> reducer_index_;
  plan_vector<char> float_sum_;  // a sum of float or double into float or double: lanes only
  int reducers_ = 0;
  int reduce_passes_ = 0;
  bool root_uniform_ = false;
  plan_vector<pass_plan> passes_;
  // Scalar constants: the same value for every group, written once per callback by the
  // runner (evaluating them per group and pass cost ~7% of a layer norm of short rows).
  plan_vector<int> constants_;
  plan_vector<int> r_axes_, k_axes_;
  plan_vector<axis_walk> walk_;   // merged reduced axes, outermost first (never empty)
  plan_vector<plan_vector<index_t>> k_strides_;  // per retained axis, per operand
  dims k_extents_;
  index_t groups_ = 1, L_ = 1, tile_ = 1;
  std::size_t slot_bytes_ = 0, scratch_bytes_ = 0;
  // Row cache: a value computed over the whole reduced extent in one pass and needed again by
  // a later pass (exp(x - max) in softmax, x - mean in layer norm) is kept instead of recomputed.
  static constexpr std::size_t row_cache_budget = 256 * 1024;
  plan_vector<int> computed_in_, cache_store_pass_;
  plan_vector<std::size_t> cache_offset_;
  std::size_t cache_bytes_ = 0, cache_at_ = 0;

  friend struct group_runner;
  friend struct column_runner;
};

void plan::build_geometry() {
  const dims& F = p_.full_shape();
  const std::uint32_t mask = p_.reduce_mask();
  const bool reduce_all = !p_.has_reducers();  // elementwise: the whole shape is one walk
  const std::size_t ops = p_.leaves().size() + 1;
  auto operand_stride = [&](std::size_t k, int axis) {
    return k + 1 == ops ? dest_.strides[axis] : p_.leaves()[k].strides[axis];
  };
  for (int a = 0; a < F.size(); ++a) {
    if (reduce_all || (mask & (1u << a))) {
      r_axes_.push_back(a);
      L_ *= F[a];
    } else {
      k_axes_.push_back(a);
      k_extents_.push_back(F[a]);
      groups_ *= F[a];
      plan_vector<index_t> s(ops);
      for (std::size_t k = 0; k < ops; ++k) s[k] = operand_stride(k, a);
      k_strides_.push_back(std::move(s));
    }
  }
  for (int a : r_axes_) {
    if (F[a] == 1) continue;
    axis_walk w{F[a], plan_vector<index_t>(ops)};
    for (std::size_t k = 0; k < ops; ++k) w.strides[k] = operand_stride(k, a);
    if (!walk_.empty()) {
      axis_walk& prev = walk_.back();
      bool mergeable = true;
      for (std::size_t k = 0; k < ops; ++k) mergeable = mergeable && prev.strides[k] == w.strides[k] * w.extent;
      if (mergeable) {
        prev.extent *= w.extent;
        prev.strides = w.strides;
        continue;
      }
    }
    walk_.push_back(std::move(w));
  }
  if (walk_.empty() || L_ == 0) walk_.assign(1, axis_walk{L_ == 0 ? 0 : 1, plan_vector<index_t>(ops, 0)});
}

// The interpretation cost per group (steps, reducer states, the output pass) is ~600
// instructions for a plain row reduction. Such a program runs here as kernel calls and one
// store per group: sum 256x1024 19 -> 14 us, argmax 22 -> 18.5 us, argmax 4096x4096 1.37-1.40
// -> 1.26-1.31 ms (medians, alternating A/B); sum 4096x4096 unchanged (memory-bound). Rows are
// still cut into max_tile pieces: whole-row kernel calls made sum 4096x4096 4% and argmax 6%
// slower. The lanes and extreme states do not depend on the cut, so the results are the
// general path's (tests/expr/test_reductions.cpp compares them bitwise).
void plan::decide_plain() {
  const auto& code = p_.code();
  if (column_ || walk_.size() != 1 || walk_.back().extent == 0 || passes_.size() != 2 || !root_uniform_ ||
      code.size() != 2 || code[1].op != opcode::reduce || root_ != 1 || code[0].op != opcode::load)
    return;
  const auto op = static_cast<reduce_op>(code[1].sub);
  const dtype t = code[0].type;
  const auto leaf = static_cast<std::size_t>(code[0].leaf);
  if ((t != dtype::f32 && t != dtype::f64) || p_.leaves()[leaf].type != t || walk_.back().strides[leaf] != 1 || uniform_[0])
    return;
  plain_ = op == reduce_op::sum || op == reduce_op::max || op == reduce_op::min || op == reduce_op::argmax ||
           op == reduce_op::argmin;
}

template <class T>
void plan::run_plain(index_t start, index_t end, runner_workspace& ws) const {
  const auto& code = p_.code();
  const instruction& red = code[1];
  const auto op = static_cast<reduce_op>(red.sub);
  const auto leaf = static_cast<std::size_t>(code[0].leaf);
  const T* base = static_cast<const T*>(p_.leaves()[leaf].data);
  const index_t n = walk_.back().extent;
  const settings s = current_settings();
  const bool streamed = passes_[0].streamed[0] != 0;
  const auto bulk = kernels::resolve_sum<T>(streamed, s);
  auto* dest = static_cast<unsigned char*>(dest_.data);
  const std::size_t esize = dtype_size(dest_.type);
  std::vector<index_t>& offsets = ws.offsets;
  offsets.assign(p_.leaves().size() + 1, 0);
  const std::size_t dest_k = offsets.size() - 1;
  for (index_t g = start; g < end; ++g) {
    group_offsets(g, offsets);
    const T* x = base + offsets[leaf];
    unsigned char* d = dest + offsets[dest_k] * static_cast<index_t>(esize);
    if (op == reduce_op::sum) {
      kernels::lane_accumulator acc;
      kernels::sum_init(acc);
      for (index_t at = 0; at < n; at += max_tile) kernels::sum_with(bulk, acc, x + at, std::min(max_tile, n - at));
      const double v = kernels::sum_result(acc);
      if (red.type == dtype::f32) {
        const float f = static_cast<float>(v);
        std::memcpy(d, &f, sizeof f);
      } else {
        std::memcpy(d, &v, sizeof v);
      }
      continue;
    }
    kernels::extreme_state<T> ex;
    kernels::extreme_init(ex);
    const bool with_index = op == reduce_op::argmax || op == reduce_op::argmin;
    for (index_t at = 0; at < n; at += max_tile) {
      const index_t len = std::min(max_tile, n - at);
      if (op == reduce_op::max || op == reduce_op::argmax) kernels::max_accumulate<T>(ex, x + at, len, at, s, with_index, streamed);
      else kernels::min_accumulate<T>(ex, x + at, len, at, s, with_index, streamed);
    }
    if (with_index) {
      const std::int64_t i = ex.index;
      std::memcpy(d, &i, sizeof i);
    } else {
      std::memcpy(d, &ex.value, sizeof ex.value);
    }
  }
}

void plan::decide_mode() {
  const auto& code = p_.code();
  scalar_ = uniform_;
  if (!p_.has_reducers() || k_axes_.empty() || k_extents_.back() < 2) return;
  bool reduced_contiguous = false, retained_contiguous = false;
  for (std::size_t l = 0; l < p_.leaves().size(); ++l) {
    if (leaf_uniform(static_cast<int>(l))) continue;
    if (walk_.back().strides[l] == 1) reduced_contiguous = true;
    if (k_strides_.back()[l] == 1) retained_contiguous = true;
  }
  column_ = retained_contiguous && !reduced_contiguous;
  if (!column_) return;
  block_ = std::min<index_t>(max_column_block, k_extents_.back());
  for (std::size_t i = 0; i < code.size(); ++i) {
    const instruction& in = code[i];
    bool sc = true;
    if (in.op == opcode::load) sc = uniform_[i] && k_strides_.back()[static_cast<std::size_t>(in.leaf)] == 0;
    else if (in.op == opcode::reduce) sc = false;
    else if (in.op != opcode::constant)
      for (int a : all_args(p_, in)) sc = sc && scalar_[static_cast<std::size_t>(a)];
    scalar_[i] = sc;
  }
}

void plan::plan_pass(int pass) {
  const auto& code = p_.code();
  const int n = static_cast<int>(code.size());
  pass_plan& pp = passes_[static_cast<std::size_t>(pass)];
  const bool output_pass = pass == reduce_passes_;
  plan_vector<char> needed(static_cast<std::size_t>(n), 0);
  plan_vector<int> last_use(static_cast<std::size_t>(n), -1);
  plan_vector<int> roots;
  if (output_pass) {
    if (!root_uniform_) roots.push_back(root_);
  } else {
    for (int i = 0; i < n; ++i)
      if (code[static_cast<std::size_t>(i)].op == opcode::reduce && level_[static_cast<std::size_t>(i)] == pass + 1)
        roots.push_back(code[static_cast<std::size_t>(i)].args[0]);
  }
  for (int r : roots)
    if (!uniform_[static_cast<std::size_t>(r)]) needed[static_cast<std::size_t>(r)] = 1;
  for (int i = n - 1; i >= 0; --i) {
    if (!needed[static_cast<std::size_t>(i)]) continue;
    const std::size_t ui = static_cast<std::size_t>(i);
    const std::size_t row_bytes = static_cast<std::size_t>(L_) * dtype_size(code[ui].type);
    if (!column_ && computed_in_[ui] >= 0 && code[ui].op != opcode::load &&
        (cache_store_pass_[ui] >= 0 || cache_bytes_ + row_bytes <= row_cache_budget)) {
      if (cache_store_pass_[ui] < 0) {
        cache_store_pass_[ui] = computed_in_[ui];
        cache_offset_[ui] = cache_bytes_;
        cache_bytes_ += (row_bytes + 63) / 64 * 64;
      }
      needed[ui] = 0;
      pp.reused.push_back(i);
      continue;
    }
    for (int a : all_args(p_, code[static_cast<std::size_t>(i)]))
      if (!uniform_[static_cast<std::size_t>(a)]) needed[static_cast<std::size_t>(a)] = 1;
  }
  for (int i = 0; i < n; ++i)
    if (needed[static_cast<std::size_t>(i)]) {
      pp.varying.push_back(i);
      if (computed_in_[static_cast<std::size_t>(i)] < 0) computed_in_[static_cast<std::size_t>(i)] = pass;
      for (int a : all_args(p_, code[static_cast<std::size_t>(i)])) last_use[static_cast<std::size_t>(a)] = i;
    }
  for (int r : roots) last_use[static_cast<std::size_t>(r)] = n;  // consumed after the tile
  // Reducers of a uniform argument need a tile filled with that value.
  if (!output_pass)
    for (int r : roots)
      if (uniform_[static_cast<std::size_t>(r)]) last_use[static_cast<std::size_t>(r)] = n;
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
      if (uniform_[static_cast<std::size_t>(r)] && pp.slot[static_cast<std::size_t>(r)] < 0)
        pp.slot[static_cast<std::size_t>(r)] = pp.slots++;
}

// Row mode only: the column walk runs instructions on blocks whose operands may be scalar
// where the row walk's are not, so the uniform flags baked into the functions would differ.
void plan::resolve_direct() {
  const auto& code = p_.code();
  direct_.assign(code.size(), direct_op{});
  const settings s = current_settings();
  for (std::size_t i = 0; i < code.size(); ++i) {
    const instruction& in = code[i];
    if (in.type != dtype::f32 && in.type != dtype::f64) continue;
    direct_op& d = direct_[i];
    d.f64 = in.type == dtype::f64;
    if (uniform_[i]) {
      using B = kernels::binary_op;
      const auto b = static_cast<B>(in.sub);
      if ((in.op == opcode::binary && (b == B::add || b == B::sub || b == B::mul || b == B::div)) ||
          (in.op == opcode::unary && exactly_rounded(static_cast<kernels::unary_op>(in.sub))))
        d.kind = direct_op::one_value;
      continue;
    }
    auto u = [&](int k) { return uniform_[static_cast<std::size_t>(in.args[k])] != 0; };
    auto pick = [&](auto tag) {
      using T = decltype(tag);
      if (in.op == opcode::unary) {
        const auto op = static_cast<kernels::unary_op>(in.sub);
        d.fn = reinterpret_cast<void (*)()>(kernels::resolve_unary<T>(op, s));
        d.kind = direct_op::unary;
        d.sum_store = reinterpret_cast<void (*)()>(kernels::resolve_unary_sum<T>(op, true, s));
        d.sum_only = reinterpret_cast<void (*)()>(kernels::resolve_unary_sum<T>(op, false, s));
        d.after_sub = reinterpret_cast<void (*)()>(kernels::resolve_sub_unary<T>(op, s));
        d.after_sub_prefetch = reinterpret_cast<void (*)()>(kernels::resolve_sub_unary_prefetch<T>(op, s));
        d.fn_prefetch = reinterpret_cast<void (*)()>(kernels::resolve_unary_prefetch<T>(op, s));
        d.sum_after_sub = reinterpret_cast<void (*)()>(kernels::resolve_sub_unary_sum<T>(op, s));
        d.keep_after_sub = reinterpret_cast<void (*)()>(kernels::resolve_sub_keep_unary<T>(op, false, s));
        d.keep_after_sub_prefetch = reinterpret_cast<void (*)()>(kernels::resolve_sub_keep_unary<T>(op, true, s));
      } else if (in.op == opcode::binary) {
        d.fn = reinterpret_cast<void (*)()>(kernels::resolve_binary<T>(static_cast<kernels::binary_op>(in.sub), u(0), u(1), s));
        d.kind = direct_op::binary;
        if (in.sub == static_cast<std::uint8_t>(kernels::binary_op::mul) && !u(0) && !u(1))
          d.scale_then = reinterpret_cast<void (*)()>(kernels::resolve_scale_then<T>(false, false, s));
      } else if (in.op == opcode::muladd) {
        d.fn = reinterpret_cast<void (*)()>(kernels::resolve_muladd<T>(u(0), u(1), u(2), s));
        d.kind = direct_op::muladd;
        if (!u(0) && !u(1)) d.scale_then = reinterpret_cast<void (*)()>(kernels::resolve_scale_then<T>(true, u(2), s));
      }
      if (d.fn == nullptr) d.kind = direct_op::none;
    };
    if (d.f64) pick(double{});
    else pick(float{});
  }
}

// The root's kernel writes the destination with non-temporal stores itself when it can
// (binary or multiply-add): the scratch tile and its copy-out loop cost a pass over L1 and
// sent the stores in bursts. Softmax 4096x4096 7.1-7.3 -> 5.8-6.3 ms, layer norm 8192x1024
// with weight and bias 2.9-3.2 -> 2.75-3.05 ms, x*y+z over 16M floats 7.7-8.9 -> 6.5-7.4 ms
// (best of 15 calls, alternating A/B, busy host).
void plan::resolve_root_stream() {
  const direct_op& f = direct_[static_cast<std::size_t>(root_)];
  const instruction& in = p_.code()[static_cast<std::size_t>(root_)];
  if (f.kind != direct_op::binary && f.kind != direct_op::muladd) return;
  const settings s = current_settings();
  auto u = [&](int k) { return uniform_[static_cast<std::size_t>(in.args[k])] != 0; };
  const bool scaled = passes_.back().scale_first[static_cast<std::size_t>(root_)] >= 0;
  auto pick = [&](auto tag) {
    using T = decltype(tag);
    if (scaled)
      root_stream_ = reinterpret_cast<void (*)()>(kernels::resolve_scale_then<T>(f.kind == direct_op::muladd, f.kind == direct_op::muladd && u(2), s, true));
    else if (f.kind == direct_op::binary)
      root_stream_ = reinterpret_cast<void (*)()>(kernels::resolve_binary<T>(static_cast<kernels::binary_op>(in.sub), u(0), u(1), s, true));
    else
      root_stream_ = reinterpret_cast<void (*)()>(kernels::resolve_muladd<T>(u(0), u(1), u(2), s, true));
  };
  if (f.f64) pick(double{});
  else pick(float{});
}

// Prefetch a contiguous load only in the first pass of a group that reads it, and only when
// its data changes from group to group (weights shared by every row stay in cache anyway).
void plan::plan_prefetch() {
  const auto& code = p_.code();
  plan_vector<char> seen(p_.leaves().size(), 0);
  for (pass_plan& pp : passes_) {
    pp.prefetch.assign(code.size(), 0);
    for (int i : pp.varying) {
      const instruction& in = code[static_cast<std::size_t>(i)];
      if (in.op != opcode::load) continue;
      const auto l = static_cast<std::size_t>(in.leaf);
      bool streams = walk_.back().strides[l] == 1;
      bool per_group = false;
      for (const auto& ks : k_strides_) per_group = per_group || ks[l] != 0;
      if (!k_strides_.empty() && !per_group) streams = false;
      if (streams && !seen[l]) {
        pp.prefetch[static_cast<std::size_t>(i)] = 1;
        next_group_leaves_.push_back(static_cast<int>(l));
      }
      seen[l] = 1;
    }
    // Streamed reads straight into sum/max/min/argmax/argmin of float or double (simd kernels).
    pp.streamed.assign(code.size(), 0);
    if (column_ || current_settings().backend != backend::simd) continue;
    for (int i : pp.varying) {
      const instruction& in = code[static_cast<std::size_t>(i)];
      if (!pp.prefetch[static_cast<std::size_t>(i)] || (in.type != dtype::f32 && in.type != dtype::f64)) continue;
      bool only_reducers = true, read = false;
      for (int j : pp.varying)
        for (int a : all_args(p_, code[static_cast<std::size_t>(j)])) only_reducers = only_reducers && a != i;
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
  if (next_group_leaves_.empty() || passes_.size() < 2 || walk_.size() != 1) return;
  const leaf_info& first = p_.leaves()[static_cast<std::size_t>(next_group_leaves_.front())];
  if (L_ * static_cast<index_t>(dtype_size(first.type)) > prefetch_distance) passes_[1].prefetch_next = prefetches_next_ = true;
}

// A sum whose argument is a unary function computed in the same pass (square in the norms'
// variance) is fed by that function's kernel while the tile is in registers: the same lanes
// bitwise, one pass over the tile fewer. Layer norm 8192x1024 2.75 -> 2.65 ms, rms norm
// 1.97 -> 1.81 ms. (Fusing exp into its sum made softmax and logsumexp ~12% slower; the
// kernels resolve only square.)
void plan::plan_fused_feeds() {
  const auto& code = p_.code();
  const std::size_t n = code.size();
  const auto computed_in = [](const pass_plan& pp, int i) {
    return std::find(pp.varying.begin(), pp.varying.end(), i) != pp.varying.end();
  };
  for (std::size_t ps = 0; ps < passes_.size(); ++ps) {
    pass_plan& pp = passes_[ps];
    pp.feeds.assign(n, -1);
    pp.feed_store.assign(n, 0);
    pp.fed.assign(n, 0);
    pp.sub_feeds.assign(n, -1);
    pp.skip.assign(n, 0);
    pp.sub_first.assign(n, 0);
    pp.sub_keep.assign(n, 0);
    pp.scale_first.assign(n, -1);
    if (column_) continue;
    for (int r : pp.reducers) {
      const instruction& red = code[static_cast<std::size_t>(r)];
      const auto a = static_cast<std::size_t>(red.args[0]);
      if (red.sub != static_cast<std::uint8_t>(reduce_op::sum) || uniform_[a] || direct_[a].kind != direct_op::unary ||
          direct_[a].sum_store == nullptr || direct_[a].sum_only == nullptr || pp.feeds[a] >= 0 ||
          !computed_in(pp, static_cast<int>(a)))
        continue;
      pp.feeds[a] = r;
      pp.feed_store[a] = needed_besides(pp, ps, static_cast<int>(a), r);
      pp.fed[static_cast<std::size_t>(r)] = 1;
    }
    // x - u written and its square summed in one kernel (layer norm's variance pass), when the
    // squares themselves are not needed. Layer norm 8192x1024 2.48-2.59 -> 2.27-2.34 ms, with
    // weight and bias 3.06-3.14 -> 2.84-2.91 ms (best of 61, alternating A/B).
    for (int a : pp.varying) {
      const auto ua = static_cast<std::size_t>(a);
      const int b = code[ua].args[0];
      if (pp.feeds[ua] < 0 || pp.feed_store[ua] || direct_[ua].sum_after_sub == nullptr || !minus_one_value(b) ||
          direct_[static_cast<std::size_t>(b)].kind != direct_op::binary || pp.sub_feeds[static_cast<std::size_t>(b)] >= 0 ||
          !computed_in(pp, b))
        continue;
      pp.sub_feeds[static_cast<std::size_t>(b)] = a;
      pp.skip[ua] = 1;
    }
    // exp(x - u), u one value, as one kernel. When nothing else reads x - u (softmax,
    // logsumexp) the kernel only computes exp(x - u): logsumexp 4096x4096 5.50-5.71 ->
    // 5.12-5.22 ms, softmax 7.2-8.2 -> 6.8-7.2 ms (best of 41 calls, three A/B alternations).
    // When x - u is needed besides (log-softmax keeps x - max for its output) the kernel writes
    // it too, one pass over the tile instead of two, if x - u keeps a place of its own (the row
    // cache or a tile slot) and exp is not the root (whose streaming variant has another
    // signature): log-softmax 4096x4096 4.86-4.94 -> 4.39-4.43 ms (medians of 21 calls, three
    // alternations).
    for (auto at = pp.varying.begin(); at != pp.varying.end(); ++at) {
      const int a = *at;
      const auto ua = static_cast<std::size_t>(a);
      const int b = code[ua].args[0];
      if (direct_[ua].kind != direct_op::unary || pp.feeds[ua] >= 0 || pp.skip[ua] || !minus_one_value(b)) continue;
      // b must come right before a: then nothing can reuse x's tile slot in between (a may
      // write into it, position by position after reading it, which is safe).
      if (at == pp.varying.begin() || *(at - 1) != b) continue;
      const auto ub = static_cast<std::size_t>(b);
      if (!needed_besides(pp, ps, b, a)) {
        if (direct_[ua].after_sub == nullptr) continue;
        pp.skip[ub] = 1;
        pp.sub_first[ua] = 1;
        continue;
      }
      if (a == root_ || direct_[ua].keep_after_sub == nullptr || pp.skip[ub] || pp.sub_feeds[ub] >= 0 ||
          direct_[ub].kind != direct_op::binary || (cache_store_pass_[ub] != static_cast<int>(ps) && pp.slot[ub] < 0))
        continue;
      pp.skip[ub] = 1;
      pp.sub_keep[ua] = 1;
    }
    // (x * u) * w [+ c], u one value, when nothing else reads x * u: one kernel (the output pass
    // of layer norm with weight and bias, RMS norm with weight). Loads of w and c may sit between
    // x * u and its user; none of the instructions in between may own x's tile slot (x's last
    // use was x * u when the slots were assigned). Layer norm 8192x1024 with weight and bias
    // 2.64-2.91 -> 2.43-2.52 ms (best of 31 calls, alternating A/B, busy host).
    for (auto at = pp.varying.begin(); at != pp.varying.end(); ++at) {
      const auto uy = static_cast<std::size_t>(*at);
      if (direct_[uy].scale_then == nullptr || pp.skip[uy] || pp.feeds[uy] >= 0 || pp.sub_feeds[uy] >= 0) continue;
      const instruction& y = code[uy];
      for (int t_pos = 0; t_pos < 2; ++t_pos) {
        const int t = y.args[t_pos];
        const auto ut = static_cast<std::size_t>(t);
        const instruction& m = code[ut];
        if (y.args[1 - t_pos] == t || y.args[2] == t || m.op != opcode::binary ||
            m.sub != static_cast<std::uint8_t>(kernels::binary_op::mul) || m.type != y.type || uniform_[ut] ||
            pp.skip[ut] || pp.feeds[ut] >= 0 || pp.sub_feeds[ut] >= 0 || pp.sub_first[ut])
          continue;
        const auto from = std::find(pp.varying.begin(), at, t);
        if (from == at) continue;  // not computed in this pass
        const bool u0 = uniform_[static_cast<std::size_t>(m.args[0])], u1 = uniform_[static_cast<std::size_t>(m.args[1])];
        if (u0 == u1 || needed_besides(pp, ps, t, static_cast<int>(uy))) continue;
        const int x = m.args[u0 ? 1 : 0];
        bool clobbered = false;
        if (std::find(pp.varying.begin(), at, x) != at)
          for (auto k = from + 1; k != at; ++k)
            clobbered = clobbered || pp.slot[static_cast<std::size_t>(*k)] == pp.slot[static_cast<std::size_t>(x)];
        if (clobbered) continue;
        pp.skip[ut] = 1;
        pp.scale_first[uy] = static_cast<signed char>(t_pos + 2 * (u0 ? 0 : 1));
        break;
      }
    }
  }
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
// prefetching (rows_prefetched_ false): skipping it for rows that did not arrive made softmax
// 35% slower.
void plan::plan_kernel_prefetch() {
  if (!prefetches_next_) return;
  pass_plan& pp = passes_[1];
  for (int l : next_group_leaves_) {
    const index_t esize = static_cast<index_t>(dtype_size(p_.leaves()[static_cast<std::size_t>(l)].type));
    for (const pass_plan::step& st : pp.steps) {
      const direct_op& f = direct_[static_cast<std::size_t>(st.i)];
      const bool can = (st.kind == pass_plan::step::after_sub && f.after_sub_prefetch != nullptr) ||
                       (st.kind == pass_plan::step::sub_keep && f.keep_after_sub_prefetch != nullptr) ||
                       (st.kind == pass_plan::step::direct && f.kind == direct_op::unary && f.fn_prefetch != nullptr);
      if (can && static_cast<index_t>(dtype_size(p_.code()[static_cast<std::size_t>(st.i)].type)) == esize) {
        pp.prefetch_by = st.i;
        pp.prefetch_leaf = l;
        break;
      }
    }
    if (pp.prefetch_by >= 0) break;
  }
  rows_prefetched_ = pp.prefetch_by >= 0 && next_group_leaves_.size() == 1;
}

// The feed of pass 0 when that pass only reads one operand in place and feeds it to one
// reducer (softmax's max, layer norm's sum), else nullptr.
const pass_plan::feed* plan::first_pass_feed() const {
  const pass_plan& first = passes_[0];
  if (first.reducers.size() != 1 || first.feeds_list.size() != 1 || first.steps.size() != 1) return nullptr;
  const pass_plan::feed& fd = first.feeds_list[0];
  const pass_plan::step& st = first.steps[0];
  if (fd.r != first.reducers[0] || fd.uniform_arg || st.kind != pass_plan::step::load_in_place || st.i != fd.a) return nullptr;
  return &fd;
}

// The walk, the tile bookkeeping and the next-group prefetch cost ~20 ns per group even when
// a group is one tile: layer norm of 8192x1024 with weight and bias 1.95-2.06 -> 1.80-1.90 ms,
// 512x1024 121 -> 110 us (alternating runs). The same steps run in the same order on the same
// tile, so the results are the walking runner's (compared bitwise in test_fused_scheduling).
void plan::decide_one_tile() {
  one_tile_ = !column_ && !plain_ && walk_.size() == 1 && walk_.back().extent > 0 && tile_ == walk_.back().extent &&
              !prefetches_next_ && early_reducer_ < 0;
}

// Layer norm as the runner executes it, step by step, spends ~45 ns per row between its three
// kernels (reducer bookkeeping, operand tables, the one values passing through memory); the
// same kernels' loops inlined into one function per row remove most of it (8192x1024 with
// weight and bias 1.79 -> 1.67 ms). Only this shape is recognised — layer norm's, the
// benchmarks' — and the kernel computes exactly what the steps below would, NaN payloads
// aside (tests compare it with the step-by-step runner bitwise).
void plan::decide_norm_rows() {
  using step = pass_plan::step;
  if (!one_tile_ || passes_.size() != 3 || root_uniform_ || walk_.back().strides.back() != 1) return;
  if (stream_ && root_stream_ == nullptr) return;
  const auto& code = p_.code();
  const auto at = [](int i) { return static_cast<std::size_t>(i); };
  const pass_plan &p0 = passes_[0], &p1 = passes_[1], &p2 = passes_[2];
  // pass 0: x read in place and summed (its one values, e.g. a per-row epsilon read from a
  // tensor, are computed before the kernel starts)
  const pass_plan::feed* first = first_pass_feed();
  if (first == nullptr) return;
  const pass_plan::feed& f0 = *first;
  const step& ld = p0.steps[0];
  const dtype t = code[at(ld.i)].type;
  if (!f0.sum || (t != dtype::f32 && t != dtype::f64) || code[at(f0.r)].type != t || !float_sum_[at(f0.r)]) return;
  // pass 1: x (read in place) - m into the row cache, its squares summed
  if (p1.steps.empty() || !p1.feeds_list.empty() || p1.reducers.size() != 1 || !p1.reuses.empty()) return;
  const step& sf = p1.steps.back();
  for (std::size_t k = 0; k + 1 < p1.steps.size(); ++k)
    if (p1.steps[k].kind != step::load_in_place || p1.steps[k].i != ld.i) return;
  const int s2 = p1.reducers[0];
  const auto esize = static_cast<index_t>(dtype_size(t));
  if (sf.kind != step::sub_feeding || sf.a[0] != ld.i || !uniform_[at(sf.a[1])] || !sf.has_out || sf.out_step != esize ||
      sf.state != reducer_index_[at(s2)] || code[at(s2)].type != t || !float_sum_[at(s2)] || code[at(sf.a[1])].type != t)
    return;
  // pass 2: weight and bias read in place, then the root from x - m and r: (d * r) [* w]
  // [+ c] as one multiply-add step, or — under the separate FMA policy, where a*b + c is not
  // contracted — (d * r) * w as a step of its own and the root adding c to it.
  if (p2.steps.empty() || !p2.feeds_list.empty() || !p2.reducers.empty() || p2.reuses.size() != 1 ||
      p2.reuses[0].i != sf.i || p2.reuses[0].at != sf.out_at)
    return;
  const step& out = p2.steps.back();
  const auto out_is = [&](kernels::binary_op op) {  // the last step: the root as a two-operand op
    return out.kind == step::direct && out.arity == 2 && code[at(root_)].op == opcode::binary &&
           code[at(root_)].sub == static_cast<std::uint8_t>(op);
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
  if (out.i != root_ || code[at(root_)].type != t || dest_.type != t) return;
  norm_rows nr;
  kernels::norm_output o{};
  settings s = current_settings();
  if (scale->kind == step::scale_then) {
    if (scale->a[0] != sf.i || !uniform_[at(scale->a[1])] || (nr.w_leaf = leaf_of(scale->a[2])) < 0) return;
    nr.r = scale->a[1];
    int c = scale->a[3];
    if (two_step) {  // root = scale + c, in that order: the kernel's Fma<false> is Add(product, c)
      if (c >= 0 || out.a[0] != scale->i || out.a[1] == scale->i) return;
      c = out.a[1];
      s.fma = fma_policy::separate;
    }
    if (c < 0) {
      o = kernels::norm_output::mul_mul;
    } else if (uniform_[at(c)]) {
      o = kernels::norm_output::mul_add_uniform_c;
      nr.c_one = c;
    } else {
      o = kernels::norm_output::mul_add;
      if ((nr.c_leaf = leaf_of(c)) < 0) return;
    }
  } else if (!two_step && out_is(kernels::binary_op::mul)) {
    o = kernels::norm_output::mul;
    if (out.a[0] == sf.i && uniform_[at(out.a[1])]) nr.r = out.a[1];
    else if (out.a[1] == sf.i && uniform_[at(out.a[0])]) nr.r = out.a[0];
    else return;
  } else {
    return;
  }
  nr.fn = t == dtype::f32 ? reinterpret_cast<void (*)()>(kernels::resolve_norm_row<float>(o, s, stream_))
                          : reinterpret_cast<void (*)()>(kernels::resolve_norm_row<double>(o, s, stream_));
  if (nr.fn == nullptr) return;
  nr.f64 = t == dtype::f64;
  nr.streamed = p0.streamed[at(ld.i)] != 0;
  nr.x_leaf = ld.leaf;
  nr.s1 = f0.r;
  nr.s2 = s2;
  nr.m = sf.a[1];
  nr.d_at = sf.out_at;
  norm_ = nr;
}

// Softmax of 4096x4096 spends ~13% of its time in the max pass, which reads the row the
// previous group prefetched, while the output pass before it mostly waits for its
// non-temporal stores to drain. Running the next group's max kernel in that output pass, on
// the same tiles in the same order, gives the same state the first pass would have (the same
// function over the same tiles), so the results do not depend on which group of a callback
// computed it: the first group of each callback runs its own first pass.
void plan::decide_early_extreme() {
  if (column_ || plain_ || walk_.size() != 1 || passes_.size() < 3 || root_uniform_ || !rows_prefetched_) return;
  const pass_plan::feed* first = first_pass_feed();
  if (first == nullptr) return;
  const pass_plan::feed& fd = *first;
  const pass_plan::step& st = passes_[0].steps[0];
  const instruction& r = p_.code()[static_cast<std::size_t>(fd.r)];
  const dtype at = p_.code()[static_cast<std::size_t>(fd.a)].type;
  const auto op = static_cast<reduce_op>(r.sub);
  if ((op != reduce_op::max && op != reduce_op::min) || (at != dtype::f32 && at != dtype::f64) || r.type != at) return;
  early_reducer_ = fd.r;
  early_leaf_ = st.leaf;
  early_min_ = op == reduce_op::min;
  early_f64_ = at == dtype::f64;
}

void plan::plan_steps(std::size_t ps) {
  pass_plan& pp = passes_[ps];
  const auto& code = p_.code();
  // Where instruction i's tile goes in this pass: scratch + at (+ tile position * step) in its
  // row-cache row or its tile slot; false when it has neither.
  const auto place = [&](int i, std::size_t& at, index_t& step) {
    const auto ui = static_cast<std::size_t>(i);
    if (cache_store_pass_[ui] == static_cast<int>(ps)) {
      at = cache_at_ + cache_offset_[ui];
      step = static_cast<index_t>(dtype_size(code[ui].type));
      return true;
    }
    if (pp.slot[ui] < 0) return false;
    at = static_cast<std::size_t>(pp.slot[ui]) * slot_bytes_;
    return true;
  };
  for (int i : pp.reused)
    pp.reuses.push_back({i, cache_at_ + cache_offset_[static_cast<std::size_t>(i)], dtype_size(code[static_cast<std::size_t>(i)].type)});
  for (int u : pp.uniforms) {
    const instruction& in = code[static_cast<std::size_t>(u)];
    pass_plan::uniform_step us;
    us.i = u;
    us.one = in.op != opcode::load && direct_[static_cast<std::size_t>(u)].kind == direct_op::one_value;
    if (us.one) {
      us.f64 = direct_[static_cast<std::size_t>(u)].f64;
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
    const direct_op& f = direct_[ui];
    if (in.op == opcode::load) {
      if (!uniform_[ui] && walk_.back().strides[static_cast<std::size_t>(in.leaf)] == 1) {
        st.kind = pass_plan::step::load_in_place;
        st.leaf = in.leaf;
        st.esize = static_cast<index_t>(dtype_size(p_.leaves()[static_cast<std::size_t>(in.leaf)].type));
        st.burst = pp.prefetch[ui] && !pp.streamed[ui];
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
        st.state = reducer_index_[static_cast<std::size_t>(pp.feeds[ui])];
      } else if (pp.sub_feeds[ui] >= 0) {
        st.kind = step::sub_feeding;
        const auto sq = static_cast<std::size_t>(pp.sub_feeds[ui]);
        st.fn2 = direct_[sq].sum_after_sub;
        st.fn3 = direct_[sq].fn;
        st.state = reducer_index_[static_cast<std::size_t>(pp.feeds[sq])];
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
      if (i == root_ && root_stream_ != nullptr) st.fn = root_stream_;
    }
    pp.steps.push_back(st);
  }
  for (int r : pp.reducers) {
    if (pp.fed[static_cast<std::size_t>(r)]) continue;  // by its argument's kernel
    pass_plan::feed fd;
    fd.r = r;
    fd.a = code[static_cast<std::size_t>(r)].args[0];
    fd.uniform_arg = uniform_[static_cast<std::size_t>(fd.a)] != 0;
    const dtype at = code[static_cast<std::size_t>(fd.a)].type;
    fd.sum = float_sum_[static_cast<std::size_t>(r)] != 0;
    if (fd.sum) {
      const settings s = current_settings();
      if (at == dtype::f32) {
        fd.bulk = reinterpret_cast<void (*)()>(kernels::resolve_sum<float>(false, s));
        fd.bulk_streamed = reinterpret_cast<void (*)()>(kernels::resolve_sum<float>(true, s));
      } else {
        fd.bulk = reinterpret_cast<void (*)()>(kernels::resolve_sum<double>(false, s));
        fd.bulk_streamed = reinterpret_cast<void (*)()>(kernels::resolve_sum<double>(true, s));
      }
    }
    pp.feeds_list.push_back(fd);
  }
}

// Whether instruction b is x - u with x varying and u one value per group.
bool plan::minus_one_value(int b) const {
  const instruction& d = p_.code()[static_cast<std::size_t>(b)];
  return d.op == opcode::binary && d.sub == static_cast<std::uint8_t>(kernels::binary_op::sub) &&
         !uniform_[static_cast<std::size_t>(b)] && !uniform_[static_cast<std::size_t>(d.args[0])] &&
         uniform_[static_cast<std::size_t>(d.args[1])];
}

// Whether `value`, computed in pass ps, is read by anything but `user` (an instruction or a
// reducer of that pass): another instruction or reducer of the pass, the row cache (a later
// pass), or the destination.
bool plan::needed_besides(const pass_plan& pp, std::size_t ps, int value, int user) const {
  const auto& code = p_.code();
  if (cache_store_pass_[static_cast<std::size_t>(value)] == static_cast<int>(ps) || value == root_) return true;
  for (int i : pp.varying)
    if (i != user)
      for (int arg : all_args(p_, code[static_cast<std::size_t>(i)]))
        if (arg == value) return true;
  for (int r : pp.reducers)
    if (r != user && code[static_cast<std::size_t>(r)].args[0] == value) return true;
  return false;
}

// ---- per-instruction tile execution ----

template <class T>
void plan::exec(int i, index_t n, void* const* ptr, const char* uni, void* out, const settings& s) const {
  const instruction& in = p_.code()[static_cast<std::size_t>(i)];
  auto arg = [&](int k) { return static_cast<const T*>(ptr[in.args[k]]); };
  auto u = [&](int k) { return uni[in.args[k]] != 0; };
  T* y = static_cast<T*>(out);
  switch (in.op) {
    case opcode::constant:
      if constexpr (std::is_same_v<T, bool>) y[0] = in.ivalue != 0;
      else if constexpr (is_float_v<T>) y[0] = static_cast<T>(in.fvalue);
      else y[0] = static_cast<T>(in.ivalue);
      return;
    case opcode::unary: {
      auto op = static_cast<kernels::unary_op>(in.sub);
      if constexpr (is_float_v<T>) {
        kernels::unary<T>(op, arg(0), y, n, n == 1 && exactly_rounded(op) ? scalar_settings(s) : s);
      } else if constexpr (!std::is_same_v<T, bool>) {
        const T* x = arg(0);
        using U = std::make_unsigned_t<T>;  // wrap-around like NumPy instead of UB
        for (index_t j = 0; j < n; ++j) {
          if (op == kernels::unary_op::neg) y[j] = static_cast<T>(U(0) - static_cast<U>(x[j]));
          else if (op == kernels::unary_op::abs) y[j] = x[j] < 0 ? static_cast<T>(U(0) - static_cast<U>(x[j])) : x[j];
          else y[j] = static_cast<T>(static_cast<U>(x[j]) * static_cast<U>(x[j]));  // square
        }
      }
      return;
    }
    case opcode::binary: {
      auto op = static_cast<kernels::binary_op>(in.sub);
      if constexpr (is_float_v<T>) {
        kernels::binary<T>(op, arg(0), u(0), arg(1), u(1), y, n, n == 1 && op != kernels::binary_op::pow ? scalar_settings(s) : s);
      } else if constexpr (!std::is_same_v<T, bool>) {
        const T *a = arg(0), *b = arg(1);
        using U = std::make_unsigned_t<T>;
        switch (op) {
          case kernels::binary_op::add: for_pairs(u(0), u(1), n, [&](index_t j, index_t ia, index_t ib) { y[j] = static_cast<T>(static_cast<U>(a[ia]) + static_cast<U>(b[ib])); }); break;
          case kernels::binary_op::sub: for_pairs(u(0), u(1), n, [&](index_t j, index_t ia, index_t ib) { y[j] = static_cast<T>(static_cast<U>(a[ia]) - static_cast<U>(b[ib])); }); break;
          case kernels::binary_op::mul: for_pairs(u(0), u(1), n, [&](index_t j, index_t ia, index_t ib) { y[j] = static_cast<T>(static_cast<U>(a[ia]) * static_cast<U>(b[ib])); }); break;
          case kernels::binary_op::min: for_pairs(u(0), u(1), n, [&](index_t j, index_t ia, index_t ib) { y[j] = std::min(a[ia], b[ib]); }); break;
          case kernels::binary_op::max: for_pairs(u(0), u(1), n, [&](index_t j, index_t ia, index_t ib) { y[j] = std::max(a[ia], b[ib]); }); break;
          case kernels::binary_op::div:
            for_pairs(u(0), u(1), n, [&](index_t j, index_t ia, index_t ib) {
              if (b[ib] == 0) throw error(std::string("ct::") + op_ + ": integer division by zero in an expression of shape " + p_.full_shape().str());
              if (b[ib] == -1) y[j] = static_cast<T>(U(0) - static_cast<U>(a[ia]));
              else y[j] = a[ia] / b[ib];
            });
            break;
          case kernels::binary_op::pow: break;  // rejected at compile time for integers
        }
      }
      return;
    }
    case opcode::muladd:
      if constexpr (is_float_v<T>) kernels::muladd<T>(arg(0), u(0), arg(1), u(1), arg(2), u(2), y, n, n == 1 ? scalar_settings(s) : s);
      return;
    case opcode::where: {
      const bool* c = static_cast<const bool*>(ptr[in.args[0]]);
      const T *a = arg(1), *b = arg(2);
      bool uc = u(0), ua = u(1), ub = u(2);
      for (index_t j = 0; j < n; ++j) y[j] = c[uc ? 0 : j] ? a[ua ? 0 : j] : b[ub ? 0 : j];
      return;
    }
    default:
      return;
  }
}

template <class T, class Cmp>
void compare_loop(const T* a, bool ua, const T* b, bool ub, bool* y, index_t n, Cmp cmp) {
  for_pairs(ua, ub, n, [&](index_t j, index_t ia, index_t ib) { y[j] = cmp(a[ia], b[ib]); });
}

void exec_compare(const instruction& in, dtype arg_type, index_t n, void* const* ptr, const char* uni, bool* y) {
  with_type(arg_type, [&](auto tag) {
    using T = decltype(tag);
    const T* a = static_cast<const T*>(ptr[in.args[0]]);
    const T* b = static_cast<const T*>(ptr[in.args[1]]);
    bool ua = uni[in.args[0]], ub = uni[in.args[1]];
    switch (static_cast<compare_op>(in.sub)) {
      case compare_op::eq: compare_loop(a, ua, b, ub, y, n, [](T p, T q) { return p == q; }); break;
      case compare_op::ne: compare_loop(a, ua, b, ub, y, n, [](T p, T q) { return p != q; }); break;
      case compare_op::lt: compare_loop(a, ua, b, ub, y, n, [](T p, T q) { return p < q; }); break;
      case compare_op::le: compare_loop(a, ua, b, ub, y, n, [](T p, T q) { return p <= q; }); break;
      case compare_op::gt: compare_loop(a, ua, b, ub, y, n, [](T p, T q) { return p > q; }); break;
      case compare_op::ge: compare_loop(a, ua, b, ub, y, n, [](T p, T q) { return p >= q; }); break;
    }
  });
}

void exec_cast(dtype from, dtype to, const void* x, bool ux, void* y, index_t n) {
  with_type(from, [&](auto ftag) {
    using S = decltype(ftag);
    with_type(to, [&](auto ttag) {
      using D = decltype(ttag);
      const S* src = static_cast<const S*>(x);
      D* dst = static_cast<D*>(y);
      for (index_t j = 0; j < n; ++j) {
        S v = src[ux ? 0 : j];
        if constexpr (std::is_same_v<D, bool>) dst[j] = v != S(0);
        else if constexpr (std::is_integral_v<D> && std::is_floating_point_v<S>) {
          // Out-of-range and NaN conversions are UB in C++; saturate instead (NaN -> 0).
          constexpr double lo = static_cast<double>(std::numeric_limits<D>::min());
          constexpr double hi = static_cast<double>(std::numeric_limits<D>::max());
          double d = static_cast<double>(v);
          dst[j] = d != d ? D(0) : d <= lo ? std::numeric_limits<D>::min() : d >= hi ? std::numeric_limits<D>::max() : static_cast<D>(d);
        } else {
          dst[j] = static_cast<D>(v);
        }
      }
    });
  });
}

void plan::load_tile(int i, const std::vector<index_t>& offsets, index_t pos, index_t n, void* out) const {
  const instruction& in = p_.code()[static_cast<std::size_t>(i)];
  const leaf_info& leaf = p_.leaves()[static_cast<std::size_t>(in.leaf)];
  const index_t stride = walk_.back().strides[static_cast<std::size_t>(in.leaf)];
  with_type(leaf.type, [&](auto tag) {
    using T = decltype(tag);
    const T* src = static_cast<const T*>(leaf.data) + offsets[static_cast<std::size_t>(in.leaf)] + pos * stride;
    T* dst = static_cast<T*>(out);
    if (stride == 1) std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(T));
    else if (stride == 0) std::fill(dst, dst + n, *src);
    else for (index_t j = 0; j < n; ++j) dst[j] = src[j * stride];
  });
}

void plan::exec_op(int i, index_t n, void* const* ptr, const char* uni, void* out, const settings& s) const {
  const instruction& in = p_.code()[static_cast<std::size_t>(i)];
  switch (in.op) {
      case opcode::compare:
        exec_compare(in, p_.code()[static_cast<std::size_t>(in.args[0])].type, n, ptr, uni, static_cast<bool*>(out));
        break;
      case opcode::logical_and: case opcode::logical_or: case opcode::logical_not: {
        const bool* a = static_cast<const bool*>(ptr[in.args[0]]);
        bool* y = static_cast<bool*>(out);
        bool ua = uni[in.args[0]] != 0;
        if (in.op == opcode::logical_not) {
          for (index_t j = 0; j < n; ++j) y[j] = !a[ua ? 0 : j];
        } else {
          const bool* b = static_cast<const bool*>(ptr[in.args[1]]);
          bool ub = uni[in.args[1]] != 0;
          if (in.op == opcode::logical_and) for_pairs(ua, ub, n, [&](index_t j, index_t ia, index_t ib) { y[j] = a[ia] && b[ib]; });
          else for_pairs(ua, ub, n, [&](index_t j, index_t ia, index_t ib) { y[j] = a[ia] || b[ib]; });
        }
        break;
      }
      case opcode::cast:
        exec_cast(p_.code()[static_cast<std::size_t>(in.args[0])].type, in.type, ptr[in.args[0]],
                  uni[in.args[0]] != 0, out, n);
        break;
      case opcode::map: {
        const map_call& m = p_.maps()[static_cast<std::size_t>(in.leaf)];
        void* args[16];
        bool flags[16];
        for (std::size_t k = 0; k < m.args.size(); ++k) {
          args[k] = ptr[m.args[k]];
          flags[k] = uni[m.args[k]] != 0;
        }
        m.fn(m.functor, args, flags, out, n);
        break;
      }
      case opcode::reduce:
      case opcode::load:
        break;  // handled by the runners
      default:
        with_type(in.type, [&](auto tag) { exec<decltype(tag)>(i, n, ptr, uni, out, s); });
  }
}

// ---- running groups ----

struct group_runner {
  const plan& pl;
  unsigned char* scratch;
  const program& p;
  std::vector<void*>& ptr;          // current value pointer per instruction
  std::vector<char>& uni;           // uniform flag per instruction
  std::vector<index_t>& offsets;    // per operand: offset of the group's first element
  unsigned char* uniform_area;
  reducer_state* states;
  const pass_plan* pass = nullptr;  // the current pass
  const settings s = current_settings();        // fixed for the whole callback

  group_runner(const plan& pl_, unsigned char* s, runner_workspace& ws)
      : pl(pl_), scratch(s), p(pl_.p_), ptr(ws.ptr), uni(ws.uni), offsets(ws.offsets), walk_base(ws.walk_base),
        walk_idx(ws.walk_idx), walk_saved(ws.walk_saved), next_offsets(ws.next_offsets) {
    ptr.assign(p.code().size(), nullptr);  // within the capacity plan::prepare reserved
    uni.assign(pl.uniform_.begin(), pl.uniform_.end());
    offsets.assign(p.leaves().size() + 1, 0);
    uniform_area = scratch + pl.cache_at_ + pl.cache_bytes_;
    auto addr = reinterpret_cast<std::uintptr_t>(uniform_area + p.code().size() * 8);
    addr = (addr + alignof(reducer_state) - 1) / alignof(reducer_state) * alignof(reducer_state);
    states = reinterpret_cast<reducer_state*>(addr);
    for (std::size_t i = 0; i < p.code().size(); ++i)
      if (uni[i]) ptr[i] = uniform_area + i * 8;
    for (int c : pl.constants_) exec_instruction(c, 1, ptr[static_cast<std::size_t>(c)], 0);
  }

  // One step of the current pass over a tile of n elements at walk position pos (start: its
  // offset within the innermost merged axis). out: where the result goes instead of the step's
  // own tile (the destination, for the output pass's root), or nullptr.
  void exec_step(const pass_plan::step& st, index_t n, index_t pos, index_t start, void* out = nullptr) {
    const auto ui = static_cast<std::size_t>(st.i);
    if (st.kind == pass_plan::step::load_in_place) {
      const unsigned char* at = static_cast<const unsigned char*>(p.leaves()[static_cast<std::size_t>(st.leaf)].data) +
                                (offsets[static_cast<std::size_t>(st.leaf)] + start) * st.esize;
      if (st.burst && !fetched) prefetch_ahead(at, n * st.esize);
      ptr[ui] = const_cast<unsigned char*>(at);
      return;
    }
    if (out == nullptr && st.has_out) out = scratch + st.out_at + static_cast<std::size_t>(pos * st.out_step);
    if (st.kind == pass_plan::step::general) {
      exec_instruction(st.i, n, out, start);
      return;
    }
    if (st.f64) run_kernel<double>(st, n, pos, out);
    else run_kernel<float>(st, n, pos, out);
    ptr[ui] = out;
  }

  // A kernel step (pass_plan::step: direct .. scale_then) over a tile of n elements into out.
  template <class T>
  void run_kernel(const pass_plan::step& st, index_t n, index_t pos, void* out) {
    using step = pass_plan::step;
    const auto a = [&](int k) { return st.a[k] < 0 ? nullptr : static_cast<const T*>(ptr[static_cast<std::size_t>(st.a[k])]); };
    T* y = static_cast<T*>(out);
    const bool fetch = fetch_tile && st.i == pass->prefetch_by;
    switch (st.kind) {
      case step::direct:
        if (fetch) reinterpret_cast<kernels::unary_prefetch_fn<T>>(st.fn2)(a(0), y, n, next_row_ahead());
        else if (st.arity == 1) reinterpret_cast<kernels::unary_tile_fn<T>>(st.fn)(a(0), y, n);
        else if (st.arity == 2) reinterpret_cast<kernels::binary_tile_fn<T>>(st.fn)(a(0), a(1), y, n);
        else reinterpret_cast<kernels::muladd_tile_fn<T>>(st.fn)(a(0), a(1), a(2), y, n);
        break;
      case step::feeding:
        kernels::unary_sum<T>(reinterpret_cast<kernels::unary_sum_tile_fn<T>>(st.fn2),
                              reinterpret_cast<kernels::unary_tile_fn<T>>(st.fn), a(0), st.store ? y : nullptr, n,
                              states[st.state].lanes);
        break;
      case step::sub_feeding:
        kernels::sub_unary_sum<T>(reinterpret_cast<kernels::sub_unary_sum_tile_fn<T>>(st.fn2),
                                  reinterpret_cast<kernels::binary_tile_fn<T>>(st.fn),
                                  reinterpret_cast<kernels::unary_tile_fn<T>>(st.fn3), a(0), a(1), y, n,
                                  states[st.state].lanes);
        break;
      case step::after_sub:
        if (fetch) reinterpret_cast<kernels::sub_unary_prefetch_fn<T>>(st.fn2)(a(0), a(1), y, n, next_row_ahead());
        else reinterpret_cast<kernels::binary_tile_fn<T>>(st.fn)(a(0), a(1), y, n);
        break;
      case step::scale_then:
        reinterpret_cast<kernels::scale_then_tile_fn<T>>(st.fn)(a(0), a(1), a(2), a(3), y, n);
        break;
      case step::sub_keep: {
        T* d = reinterpret_cast<T*>(scratch + st.keep_at + static_cast<std::size_t>(pos * st.keep_step));
        reinterpret_cast<kernels::sub_keep_unary_fn<T>>(fetch ? st.fn2 : st.fn)(a(0), a(1), d, y, n,
                                                                                 fetch ? next_row_ahead() : nullptr);
        ptr[static_cast<std::size_t>(st.keep)] = d;
        break;
      }
      default: break;
    }
  }

  // The general path: a constant or uniform instruction that is not one IEEE operation
  // (n = 1, pos = 0; one-value ones are pass_plan::uniform_step), a gathered load, or an
  // operation without a direct tile function (integer, bool, comparisons, casts, ct::map, pow).
  void exec_instruction(int i, index_t n, void* out, index_t pos) {
    if (p.code()[static_cast<std::size_t>(i)].op == opcode::load) {
      pl.load_tile(i, offsets, uni[static_cast<std::size_t>(i)] ? 0 : pos, uni[static_cast<std::size_t>(i)] ? 1 : n, out);
    } else {
      pl.exec_op(i, n, ptr.data(), uni.data(), out, s);
    }
    ptr[static_cast<std::size_t>(i)] = out;
  }

  // The next group's row of pass->prefetch_leaf, at the current tile's position.
  const void* next_row_ahead() const {
    const auto l = static_cast<std::size_t>(pass->prefetch_leaf);
    const leaf_info& leaf = p.leaves()[l];
    return static_cast<const unsigned char*>(leaf.data) + (next_offsets[l] + tile_pos) * static_cast<index_t>(dtype_size(leaf.type));
  }

  void init_reducer(int i) {
    const instruction& in = p.code()[static_cast<std::size_t>(i)];
    reducer_state& st = states[pl.reducer_index_[static_cast<std::size_t>(i)]];
    if (pl.float_sum_[static_cast<std::size_t>(i)]) {  // only the lanes are used
      kernels::sum_init(st.lanes);  // (an inline std::fill became `rep stos`: LN 8192x1024 25% slower)
      return;
    }
    auto op = static_cast<reduce_op>(in.sub);
    kernels::sum_init(st.lanes);
    if (op == reduce_op::prod) kernels::prod_init(st.lanes);
    kernels::extreme_init(st.extreme_d);
    kernels::extreme_init(st.extreme_f);
    st.ivalue = op == reduce_op::prod ? 1 : 0;
    st.iindex = -1;
    st.bvalue = op == reduce_op::all;
  }

  void feed_reducer(const pass_plan::feed& fd, const void* x, index_t n, index_t pos) {
    const instruction& in = p.code()[static_cast<std::size_t>(fd.r)];
    const bool streamed = pass->streamed[static_cast<std::size_t>(fd.a)] != 0 && !fetched;
    reducer_state& st = states[pl.reducer_index_[static_cast<std::size_t>(fd.r)]];
    const dtype at = p.code()[static_cast<std::size_t>(fd.a)].type;
    if (fd.sum) {  // the common case, without the type and operation switches below
      void (*bulk)() = streamed ? fd.bulk_streamed : fd.bulk;
      if (at == dtype::f32) kernels::sum_with(reinterpret_cast<kernels::sum_bulk_fn<float>>(bulk), st.lanes, static_cast<const float*>(x), n);
      else kernels::sum_with(reinterpret_cast<kernels::sum_bulk_fn<double>>(bulk), st.lanes, static_cast<const double*>(x), n);
      return;
    }
    auto op = static_cast<reduce_op>(in.sub);
    with_type(at, [&](auto tag) {
      using T = decltype(tag);
      const T* v = static_cast<const T*>(x);
      if constexpr (std::is_same_v<T, bool>) {
        for (index_t j = 0; j < n; ++j) {
          if (op == reduce_op::all) st.bvalue = st.bvalue && v[j];
          else if (op == reduce_op::any) st.bvalue = st.bvalue || v[j];
          else if (op == reduce_op::sum) st.ivalue += v[j] ? 1 : 0;
        }
      } else if constexpr (is_float_v<T>) {
        auto& ex = [&]() -> kernels::extreme_state<T>& {
          if constexpr (std::is_same_v<T, float>) return st.extreme_f;
          else return st.extreme_d;
        }();
        switch (op) {
          case reduce_op::sum: kernels::sum_accumulate<T>(st.lanes, v, n, s, streamed); break;
          case reduce_op::prod: kernels::prod_accumulate<T>(st.lanes, v, n, s); break;
          case reduce_op::max: kernels::max_accumulate<T>(ex, v, n, pos, s, false, streamed); break;
          case reduce_op::argmax: kernels::max_accumulate<T>(ex, v, n, pos, s, true, streamed); break;
          case reduce_op::min: kernels::min_accumulate<T>(ex, v, n, pos, s, false, streamed); break;
          case reduce_op::argmin: kernels::min_accumulate<T>(ex, v, n, pos, s, true, streamed); break;
          default: break;
        }
      } else {
        using U = std::uint64_t;  // integer sums wrap around instead of overflowing (UB)
        for (index_t j = 0; j < n; ++j) {
          switch (op) {
            case reduce_op::sum: st.ivalue = static_cast<std::int64_t>(static_cast<U>(st.ivalue) + static_cast<U>(static_cast<std::int64_t>(v[j]))); break;
            case reduce_op::prod: st.ivalue = static_cast<std::int64_t>(static_cast<U>(st.ivalue) * static_cast<U>(static_cast<std::int64_t>(v[j]))); break;
            case reduce_op::max: case reduce_op::argmax:
              if (st.iindex < 0 || v[j] > st.ivalue) { st.ivalue = v[j]; st.iindex = pos + j; }
              break;
            case reduce_op::min: case reduce_op::argmin:
              if (st.iindex < 0 || v[j] < st.ivalue) { st.ivalue = v[j]; st.iindex = pos + j; }
              break;
            default: break;
          }
        }
      }
    });
  }

  void finish_reducer(int i) {
    const instruction& in = p.code()[static_cast<std::size_t>(i)];
    reducer_state& st = states[pl.reducer_index_[static_cast<std::size_t>(i)]];
    void* out = ptr[static_cast<std::size_t>(i)];
    if (pl.float_sum_[static_cast<std::size_t>(i)]) {
      const double v = kernels::sum_result(st.lanes);
      if (in.type == dtype::f32) *static_cast<float*>(out) = static_cast<float>(v);
      else *static_cast<double*>(out) = v;
      return;
    }
    const dtype at = p.code()[static_cast<std::size_t>(in.args[0])].type;
    auto op = static_cast<reduce_op>(in.sub);
    if (op == reduce_op::argmax || op == reduce_op::argmin) {
      index_t idx = at == dtype::f32 ? st.extreme_f.index : at == dtype::f64 ? st.extreme_d.index : st.iindex;
      *static_cast<std::int64_t*>(out) = idx;
      return;
    }
    if (op == reduce_op::all || op == reduce_op::any) {
      *static_cast<bool*>(out) = st.bvalue;
      return;
    }
    with_type(in.type, [&](auto tag) {
      using T = decltype(tag);
      T* y = static_cast<T*>(out);
      if constexpr (is_float_v<T>) {
        if (op == reduce_op::sum) *y = static_cast<T>(kernels::sum_result(st.lanes));
        else if (op == reduce_op::prod) *y = static_cast<T>(kernels::prod_result(st.lanes));
        else if constexpr (std::is_same_v<T, float>) *y = st.extreme_f.value;
        else *y = st.extreme_d.value;
      } else if constexpr (!std::is_same_v<T, bool>) {
        *y = static_cast<T>(st.ivalue);
      }
    });
  }

  std::vector<index_t>& walk_base, &walk_idx, &walk_saved;

  // Runs `body(n, pos, tile offsets)` over the merged reduced axes, tile by tile.
  template <class Body>
  void walk(Body&& body) {
    const auto& w = pl.walk_;
    const index_t inner = w.back().extent;
    if (inner == 0) return;
    const int outer = static_cast<int>(w.size()) - 1;
    if (outer == 0) {  // the common case: one merged reduced axis, no odometer
      for (index_t start = 0; start < inner; start += pl.tile_) body(std::min(pl.tile_, inner - start), start, start);
      return;
    }
    // Reused buffers: this runs once per group and pass, so it must not allocate.
    std::vector<index_t>& base = walk_base, &idx = walk_idx, &saved = walk_saved;
    base = offsets;
    saved = offsets;
    idx.assign(static_cast<std::size_t>(outer), 0);
    index_t pos = 0;
    do {
      offsets = base;
      for (index_t start = 0; start < inner; start += pl.tile_) body(std::min(pl.tile_, inner - start), pos + start, start);
      pos += inner;
    } while (pl.next_outer(base, idx));
    offsets = saved;
  }

  std::vector<index_t>& next_offsets;  // of group g + 1 while group g runs (prefetch_next)
  bool has_next = false;
  // This group's rows were prefetched by a kernel of the previous group (has_next then, and
  // plan::rows_prefetched_): its first pass reads them from the caches and issues no
  // prefetches of its own, which would only fetch further rows early.
  bool fetched = false;
  // The current tile prefetches the next group's rows, at position tile_pos of the walk.
  bool fetch_tile = false;
  index_t tile_pos = 0;

  // Into L1 (an L2 hint measured no gain: the first pass then still waits on L2 misses).
  void prefetch_next_group(index_t pos, index_t n) {
    tile_pos = pos;
    for (int l : pl.next_group_leaves_) {
      if (l == pass->prefetch_leaf) continue;  // by pass->prefetch_by's kernel
      const leaf_info& leaf = p.leaves()[static_cast<std::size_t>(l)];
      const index_t esize = static_cast<index_t>(dtype_size(leaf.type));
      const auto* at = static_cast<const unsigned char*>(leaf.data) + (next_offsets[static_cast<std::size_t>(l)] + pos) * esize;
      for (index_t b = 0; b < n * esize; b += 64) __builtin_prefetch(at + b);
    }
  }

  // A pass's values of one element (mean, 1/sqrt(var + eps), …), before its tiles.
  void run_uniform_steps(const pass_plan& pp) {
    for (const pass_plan::uniform_step& us : pp.uniform_steps) {
      void* out = ptr[static_cast<std::size_t>(us.i)];
      if (!us.one) {
        exec_instruction(us.i, 1, out, 0);
        continue;
      }
      const instruction& in = p.code()[static_cast<std::size_t>(us.i)];
      const void *a = ptr[static_cast<std::size_t>(us.a)], *b = ptr[static_cast<std::size_t>(us.b)];
      if (us.f64) *static_cast<double*>(out) = one_value(in, static_cast<const double*>(a), static_cast<const double*>(b));
      else *static_cast<float*>(out) = one_value(in, static_cast<const float*>(a), static_cast<const float*>(b));
    }
  }

  // One tile of a reduction pass: its steps, then the reducers the runner feeds.
  void reduction_tile(const pass_plan& pp, index_t n, index_t pos, index_t start) {
    for (const pass_plan::step& st : pp.steps) exec_step(st, n, pos, start);
    for (const pass_plan::feed& fd : pp.feeds_list) {
      const void* x = ptr[static_cast<std::size_t>(fd.a)];
      if (fd.uniform_arg) {  // a uniform argument repeats along the tile
        with_type(p.code()[static_cast<std::size_t>(fd.a)].type, [&](auto tag) {
          using T = decltype(tag);
          T* t = static_cast<T*>(slot(pp, fd.a));
          std::fill(t, t + n, *static_cast<const T*>(x));
          x = t;
        });
      }
      feed_reducer(fd, x, n, pos);
    }
  }

  // One tile of the output pass, its result written to d (dstride elements apart).
  void output_tile(const pass_plan& pp, index_t n, index_t pos, index_t start, unsigned char* d, index_t dstride,
                   std::size_t esize) {
    for (const pass_plan::step& st : pp.steps) {
      if (st.i != pl.root_) {
        exec_step(st, n, pos, start);
        continue;
      }
      // Straight into the destination when it is contiguous along the walk (a load read in
      // place is copied below instead; a streamed result goes out through stream_copy
      // unless the root's own kernel streams, plan::root_stream_).
      const bool direct = dstride == 1 && (!pl.stream_ || pl.root_stream_ != nullptr) &&
                          st.kind != pass_plan::step::load_in_place;
      exec_step(st, n, pos, start, direct ? d : nullptr);
    }
    const unsigned char* r = static_cast<const unsigned char*>(ptr[static_cast<std::size_t>(pl.root_)]);
    if (r == d) return;
    const std::size_t bytes = static_cast<std::size_t>(n) * esize;
    if (dstride == 1 && pl.stream_ && (r + bytes <= d || d + bytes <= r)) stream_copy(d, r, bytes);
    else if (dstride == 1) std::memmove(d, r, bytes);
    else for (index_t j = 0; j < n; ++j) std::memcpy(d + j * dstride * static_cast<index_t>(esize), r + static_cast<std::size_t>(j) * esize, esize);
  }

  // A root of one value per group (a reduction evaluated on its own) goes to the group's
  // destination element once its passes are done.
  void write_uniform_root() {
    const std::size_t esize = dtype_size(pl.dest_.type);
    unsigned char* d = static_cast<unsigned char*>(pl.dest_.data) + offsets.back() * static_cast<index_t>(esize);
    std::memcpy(d, ptr[static_cast<std::size_t>(pl.root_)], esize);
  }

  // run_group for plan::norm_: one kernel call per group; between its passes the kernel calls
  // back here for the sums' values and the next pass's one values.
  template <class T>
  void run_norm_row(index_t g) {
    const plan::norm_rows& nr = pl.norm_;
    pl.group_offsets(g, offsets);
    const auto leaf = [&](int l) -> const T* {
      return l < 0 ? nullptr : static_cast<const T*>(p.leaves()[static_cast<std::size_t>(l)].data) + offsets[static_cast<std::size_t>(l)];
    };
    T* y = static_cast<T*>(pl.dest_.data) + offsets.back();
    run_uniform_steps(pl.passes_[0]);
    const T* c = nr.c_one >= 0 ? static_cast<const T*>(ptr[static_cast<std::size_t>(nr.c_one)]) : leaf(nr.c_leaf);
    reinterpret_cast<kernels::norm_row_fn<T>>(nr.fn)(leaf(nr.x_leaf), reinterpret_cast<T*>(scratch + nr.d_at), y,
                                                     leaf(nr.w_leaf), c, pl.tile_, nr.streamed, &norm_stage<T>, this,
                                                     states[0].lanes);
  }
  // The sum's value as finish_reducer stores it, then the next pass's one values.
  template <class T>
  static const T* norm_stage(void* self, int stage, double sum) {
    auto& r = *static_cast<group_runner*>(self);
    const plan::norm_rows& nr = r.pl.norm_;
    *static_cast<T*>(r.ptr[static_cast<std::size_t>(stage == 0 ? nr.s1 : nr.s2)]) = static_cast<T>(sum);
    r.run_uniform_steps(r.pl.passes_[static_cast<std::size_t>(stage + 1)]);
    return static_cast<const T*>(r.ptr[static_cast<std::size_t>(stage == 0 ? nr.m : nr.r)]);
  }

  // run_group for plan::one_tile_: every pass is one tile at position 0, nothing is
  // prefetched for the next group and no reducer is fed early.
  void run_one_tile(index_t g) {
    pl.group_offsets(g, offsets);
    const index_t n = pl.tile_;
    const std::size_t dest_k = offsets.size() - 1;
    const std::size_t last = pl.passes_.size() - 1;
    for (std::size_t ps = 0; ps <= last; ++ps) {
      const pass_plan& pp = pl.passes_[ps];
      pass = &pp;
      run_uniform_steps(pp);
      start_tile(pp, false, 0, n);
      if (ps < last) {
        for (int r : pp.reducers) init_reducer(r);
        reduction_tile(pp, n, 0, 0);
        for (int r : pp.reducers) finish_reducer(r);
      } else if (!pl.root_uniform_) {
        const std::size_t esize = dtype_size(pl.dest_.type);
        unsigned char* d = static_cast<unsigned char*>(pl.dest_.data) + offsets[dest_k] * static_cast<index_t>(esize);
        output_tile(pp, n, 0, 0, d, pl.walk_.back().strides[dest_k], esize);
      }
    }
    if (pl.root_uniform_) write_uniform_root();
  }

  // next: whether group g + 1 runs next in this callback.
  void run_group(index_t g, bool next) {
    if (has_next) std::swap(offsets, next_offsets);  // computed for the prefetch
    else pl.group_offsets(g, offsets);
    fetched = has_next && pl.rows_prefetched_;
    has_next = next && pl.prefetches_next_;
    if (has_next) {
      next_offsets.resize(offsets.size());
      pl.group_offsets(g + 1, next_offsets);
    }
    const std::size_t dest_k = offsets.size() - 1;
    for (std::size_t ps = 0; ps < pl.passes_.size(); ++ps) {
      const pass_plan& pp = pl.passes_[ps];
      pass = &pp;
      run_uniform_steps(pp);
      const bool output_pass = ps + 1 == pl.passes_.size();
      if (!output_pass) {
        for (int r : pp.reducers) init_reducer(r);
        if (ps == 0 && early_ready) {  // fed during the previous group's output pass
          early_ready = false;
          reducer_state& st = states[pl.reducer_index_[static_cast<std::size_t>(pl.early_reducer_)]];
          if (pl.early_f64_) st.extreme_d = early_d;
          else st.extreme_f = early_f;
          for (int r : pp.reducers) finish_reducer(r);
          continue;
        }
        const bool fetch_next = pp.prefetch_next && has_next;
        walk([&](index_t n, index_t pos, index_t start) __attribute__((always_inline)) {
          start_tile(pp, fetch_next, pos, n);
          reduction_tile(pp, n, pos, start);
        });
        for (int r : pp.reducers) finish_reducer(r);
      } else if (!pl.root_uniform_) {
        const index_t dstride = pl.walk_.back().strides[dest_k];
        const std::size_t esize = dtype_size(pl.dest_.type);
        const bool fetch_next = pp.prefetch_next && has_next;
        const bool feed_early = pl.early_reducer_ >= 0 && has_next;
        if (feed_early) {
          kernels::extreme_init(early_f);
          kernels::extreme_init(early_d);
        }
        walk([&](index_t n, index_t pos, index_t start) __attribute__((always_inline)) {
          start_tile(pp, fetch_next, pos, n);
          unsigned char* d = static_cast<unsigned char*>(pl.dest_.data) + (offsets[dest_k] + start * dstride) * static_cast<index_t>(esize);
          output_tile(pp, n, pos, start, d, dstride, esize);
          if (feed_early) feed_next_extreme(n, pos, start);
        });
        early_ready = feed_early;
      }
    }
    if (pl.root_uniform_) write_uniform_root();
  }

  // Early extreme (plan::early_reducer_): the next group's first-pass state, fed tile by tile
  // during this group's output pass exactly as its first pass would feed it.
  kernels::extreme_state<float> early_f;
  kernels::extreme_state<double> early_d;
  bool early_ready = false;  // early_f / early_d hold the state of the group about to run

  void feed_next_extreme(index_t n, index_t pos, index_t start) {
    const auto l = static_cast<std::size_t>(pl.early_leaf_);
    const leaf_info& leaf = p.leaves()[l];
    if (pl.early_f64_) {
      const double* x = static_cast<const double*>(leaf.data) + next_offsets[l] + start;
      if (pl.early_min_) kernels::min_accumulate<double>(early_d, x, n, pos, s, false);
      else kernels::max_accumulate<double>(early_d, x, n, pos, s, false);
    } else {
      const float* x = static_cast<const float*>(leaf.data) + next_offsets[l] + start;
      if (pl.early_min_) kernels::min_accumulate<float>(early_f, x, n, pos, s, false);
      else kernels::max_accumulate<float>(early_f, x, n, pos, s, false);
    }
  }

  // Before a tile's steps: the next group's prefetch (when this pass does it) and the row-cache
  // values computed by earlier passes.
  void start_tile(const pass_plan& pp, bool fetch_next, index_t pos, index_t n) {
    fetch_tile = fetch_next;
    if (fetch_next) prefetch_next_group(pos, n);
    for (const pass_plan::reuse& r : pp.reuses) ptr[static_cast<std::size_t>(r.i)] = scratch + r.at + static_cast<std::size_t>(pos) * r.esize;
  }
  void* slot(const pass_plan& pp, int i) const {
    int s = pp.slot[static_cast<std::size_t>(i)];
    return s < 0 ? nullptr : scratch + static_cast<std::size_t>(s) * pl.slot_bytes_;
  }
};

struct column_runner {
  const plan& pl;
  unsigned char* scratch;
  const program& p;
  std::vector<void*>& ptr;
  std::vector<char>& uni;  // scalar flags
  std::vector<index_t>& offsets;
  unsigned char* invariant_area;
  column_state* states;
  index_t block = 0;  // groups in the current block
  std::vector<index_t>& walk_saved, &walk_idx;  // reused by every block

  column_runner(const plan& pl_, unsigned char* s, runner_workspace& ws)
      : pl(pl_), scratch(s), p(pl_.p_), ptr(ws.ptr), uni(ws.uni), offsets(ws.offsets), walk_saved(ws.walk_saved),
        walk_idx(ws.walk_idx) {
    ptr.assign(p.code().size(), nullptr);  // within the capacity plan::prepare reserved
    uni.assign(pl.scalar_.begin(), pl.scalar_.end());
    offsets.assign(p.leaves().size() + 1, 0);
    invariant_area = scratch + pl.cache_at_;
    auto addr = reinterpret_cast<std::uintptr_t>(invariant_area + p.code().size() * static_cast<std::size_t>(pl.block_) * 8);
    addr = (addr + 63) / 64 * 64;
    states = reinterpret_cast<column_state*>(addr);
    for (std::size_t i = 0; i < p.code().size(); ++i)
      if (pl.uniform_[i]) ptr[i] = home(static_cast<int>(i));
    for (int c : pl.constants_) exec(c, 0, home(c));  // scalar (uni): one value
  }

  unsigned char* home(int i) const { return invariant_area + static_cast<std::size_t>(i) * static_cast<std::size_t>(pl.block_) * 8; }
  // Accumulators of one reducer for the block, as separate arrays so the loops vectorise.
  struct accumulators {
    double* dvalue;
    std::int64_t* ivalue;
    index_t* index;
    bool* bvalue;
  };
  accumulators state_of(int r) const {
    auto* base = reinterpret_cast<unsigned char*>(states) +
                 static_cast<std::size_t>(pl.reducer_index_[static_cast<std::size_t>(r)]) * static_cast<std::size_t>(pl.block_) * sizeof(column_state);
    auto b = static_cast<std::size_t>(pl.block_);
    return {reinterpret_cast<double*>(base), reinterpret_cast<std::int64_t*>(base + 8 * b),
            reinterpret_cast<index_t*>(base + 16 * b), reinterpret_cast<bool*>(base + 24 * b)};
  }
  index_t length(int i) const { return uni[static_cast<std::size_t>(i)] ? 1 : block; }

  // Loads operand values for the block at reduced position `start` of the inner walk axis
  // (invariant loads ignore it), along the retained axis.
  void load(int i, index_t start, void* out) {
    const instruction& in = p.code()[static_cast<std::size_t>(i)];
    const auto l = static_cast<std::size_t>(in.leaf);
    const leaf_info& leaf = p.leaves()[l];
    const index_t stride = pl.k_strides_.back()[l];
    const index_t base = offsets[l] + (pl.uniform_[static_cast<std::size_t>(i)] ? 0 : start * pl.walk_.back().strides[l]);
    const index_t n = length(i);
    with_type(leaf.type, [&](auto tag) {
      using T = decltype(tag);
      const T* src = static_cast<const T*>(leaf.data) + base;
      if (stride == 1 || n == 1) {
        // The stretch a few reduced positions ahead (rows of a column sum are far apart).
        const index_t step = pl.walk_.back().strides[l];
        if (stride == 1 && step != 0 && !pl.uniform_[static_cast<std::size_t>(i)])
          for (index_t b = 0; b < n * static_cast<index_t>(sizeof(T)); b += 64)
            __builtin_prefetch(reinterpret_cast<const unsigned char*>(src + column_prefetch_rows * step) + b);
        ptr[static_cast<std::size_t>(i)] = const_cast<T*>(src);
        return;
      }
      T* dst = static_cast<T*>(out);
      for (index_t j = 0; j < n; ++j) dst[j] = src[j * stride];
      ptr[static_cast<std::size_t>(i)] = dst;
    });
  }

  void exec(int i, index_t start, void* out) {
    if (p.code()[static_cast<std::size_t>(i)].op == opcode::load) return load(i, start, out);
    pl.exec_op(i, length(i), ptr.data(), uni.data(), out, current_settings());
    ptr[static_cast<std::size_t>(i)] = out;
  }

  void init_reducer(int r) {
    auto op = static_cast<reduce_op>(p.code()[static_cast<std::size_t>(r)].sub);
    accumulators a = state_of(r);
    std::fill(a.dvalue, a.dvalue + block, op == reduce_op::prod ? 1.0 : 0.0);
    std::fill(a.ivalue, a.ivalue + block, op == reduce_op::prod ? 1 : 0);
    std::fill(a.index, a.index + block, index_t{-1});
    std::fill(a.bvalue, a.bvalue + block, op == reduce_op::all);
  }

  void feed_reducer(int r, index_t pos) {
    const instruction& in = p.code()[static_cast<std::size_t>(r)];
    const int arg = in.args[0];
    const bool sa = uni[static_cast<std::size_t>(arg)];
    const auto op = static_cast<reduce_op>(in.sub);
    const accumulators a = state_of(r);
    const index_t n = block;
    with_type(p.code()[static_cast<std::size_t>(arg)].type, [&](auto tag) {
      using T = decltype(tag);
      const T* v = static_cast<const T*>(ptr[static_cast<std::size_t>(arg)]);
      const index_t step = sa ? 0 : 1;  // a scalar argument repeats across the block
      if constexpr (std::is_same_v<T, bool>) {
        if (op == reduce_op::all) for (index_t j = 0; j < n; ++j) a.bvalue[j] = a.bvalue[j] && v[j * step];
        else if (op == reduce_op::any) for (index_t j = 0; j < n; ++j) a.bvalue[j] = a.bvalue[j] || v[j * step];
        else for (index_t j = 0; j < n; ++j) a.ivalue[j] += v[j * step] ? 1 : 0;
      } else if constexpr (is_float_v<T>) {
        if (op == reduce_op::sum && step == 1) {
          column::add(a.dvalue, v, n);  // SIMD; same per-element result as the loop below
        } else if (op == reduce_op::sum) {
          for (index_t j = 0; j < n; ++j) a.dvalue[j] += static_cast<double>(v[0]);
        } else if (op == reduce_op::prod) {
          for (index_t j = 0; j < n; ++j) a.dvalue[j] *= static_cast<double>(v[j * step]);
        } else {
          const bool is_max = op == reduce_op::max || op == reduce_op::argmax;
          for (index_t j = 0; j < n; ++j) {
            const double x = static_cast<double>(v[j * step]);
            if (a.index[j] >= 0 && a.dvalue[j] != a.dvalue[j]) continue;  // the first NaN stays
            if (a.index[j] < 0 || x != x || (is_max ? x > a.dvalue[j] : x < a.dvalue[j])) {
              a.dvalue[j] = x;
              a.index[j] = pos;
            }
          }
        }
      } else {
        using U = std::uint64_t;  // wrap around instead of overflowing (UB)
        if (op == reduce_op::sum) {
          for (index_t j = 0; j < n; ++j) a.ivalue[j] = static_cast<std::int64_t>(static_cast<U>(a.ivalue[j]) + static_cast<U>(static_cast<std::int64_t>(v[j * step])));
        } else if (op == reduce_op::prod) {
          for (index_t j = 0; j < n; ++j) a.ivalue[j] = static_cast<std::int64_t>(static_cast<U>(a.ivalue[j]) * static_cast<U>(static_cast<std::int64_t>(v[j * step])));
        } else {
          const bool is_max = op == reduce_op::max || op == reduce_op::argmax;
          for (index_t j = 0; j < n; ++j) {
            const auto x = static_cast<std::int64_t>(v[j * step]);
            if (a.index[j] < 0 || (is_max ? x > a.ivalue[j] : x < a.ivalue[j])) {
              a.ivalue[j] = x;
              a.index[j] = pos;
            }
          }
        }
      }
    });
  }

  void finish_reducer(int r) {
    const instruction& in = p.code()[static_cast<std::size_t>(r)];
    auto op = static_cast<reduce_op>(in.sub);
    const dtype at = p.code()[static_cast<std::size_t>(in.args[0])].type;
    const accumulators a = state_of(r);
    with_type(in.type, [&](auto tag) {
      using T = decltype(tag);
      T* y = static_cast<T*>(ptr[static_cast<std::size_t>(r)]);
      for (index_t j = 0; j < block; ++j) {
        if (op == reduce_op::argmax || op == reduce_op::argmin) y[j] = static_cast<T>(a.index[j]);
        else if (op == reduce_op::all || op == reduce_op::any) y[j] = static_cast<T>(a.bvalue[j]);
        else if (at == dtype::f32 || at == dtype::f64) y[j] = static_cast<T>(a.dvalue[j]);
        else y[j] = static_cast<T>(a.ivalue[j]);
      }
    });
  }

  void write(const void* src, bool src_scalar, index_t start) {
    const std::size_t d = offsets.size() - 1;
    const std::size_t esize = dtype_size(pl.dest_.type);
    const index_t stride = pl.k_strides_.back()[d];
    auto* dst = static_cast<unsigned char*>(pl.dest_.data) + (offsets[d] + start * pl.walk_.back().strides[d]) * static_cast<index_t>(esize);
    const auto* s = static_cast<const unsigned char*>(src);
    if (stride == 1 && !src_scalar) {
      if (dst != s) std::memmove(dst, s, static_cast<std::size_t>(block) * esize);
      return;
    }
    for (index_t j = 0; j < block; ++j)
      std::memcpy(dst + j * stride * static_cast<index_t>(esize), s + (src_scalar ? 0 : static_cast<std::size_t>(j) * esize), esize);
  }

  void run_block(index_t g, index_t count) {
    block = count;
    pl.group_offsets(g, offsets);
    // Walk every reduced position (outer axes by odometer, the inner one step by step).
    auto walk = [&](auto&& body) {
      const auto& w = pl.walk_;
      const index_t inner = w.back().extent;
      if (inner == 0) return;
      const int outer = static_cast<int>(w.size()) - 1;
      if (outer == 0) {
        for (index_t start = 0; start < inner; ++start) body(start, start);
        return;
      }
      std::vector<index_t>& saved = walk_saved;
      std::vector<index_t>& idx = walk_idx;
      saved = offsets;
      idx.assign(static_cast<std::size_t>(outer), 0);
      index_t pos = 0;
      do {
        for (index_t start = 0; start < inner; ++start) body(pos + start, start);
        pos += inner;
      } while (pl.next_outer(offsets, idx));
      offsets = saved;
    };
    for (std::size_t ps = 0; ps < pl.passes_.size(); ++ps) {
      const pass_plan& pp = pl.passes_[ps];
      for (int u : pp.uniforms) exec(u, 0, home(u));  // not ptr[u]: a load may have pointed it at the operand
      auto slot = [&](int i) { return scratch + static_cast<std::size_t>(pp.slot[static_cast<std::size_t>(i)]) * pl.slot_bytes_; };
      if (ps + 1 < pl.passes_.size()) {
        for (int r : pp.reducers) init_reducer(r);
        if (pp.column_sums) {
          // Plain sums of operands (sum over axis 0): whole runs of reduced positions at once.
          for (int r : pp.reducers) {
            const instruction& load = p.code()[static_cast<std::size_t>(p.code()[static_cast<std::size_t>(r)].args[0])];
            const auto l = static_cast<std::size_t>(load.leaf);
            const leaf_info& leaf = p.leaves()[l];
            const index_t stride = pl.walk_.back().strides[l], rows = pl.walk_.back().extent;
            if (leaf.type == dtype::f32)
              column::add_rows(state_of(r).dvalue, static_cast<const float*>(leaf.data) + offsets[l], stride, rows, block);
            else
              column::add_rows(state_of(r).dvalue, static_cast<const double*>(leaf.data) + offsets[l], stride, rows, block);
          }
          for (int r : pp.reducers) finish_reducer(r);
          continue;
        }
        walk([&](index_t pos, index_t start) {
          for (int i : pp.varying) exec(i, start, slot(i));
          for (int r : pp.reducers) feed_reducer(r, pos);
        });
        for (int r : pp.reducers) finish_reducer(r);
      } else if (!pl.root_uniform_) {
        walk([&](index_t, index_t start) {
          for (int i : pp.varying) exec(i, start, slot(i));
          write(ptr[static_cast<std::size_t>(pl.root_)], uni[static_cast<std::size_t>(pl.root_)], start);
        });
      }
    }
    if (pl.root_uniform_) write(ptr[static_cast<std::size_t>(pl.root_)], uni[static_cast<std::size_t>(pl.root_)], 0);
  }
};

void plan::run(index_t start, index_t end, unsigned char* scratch, runner_workspace& ws) const {
  if (plain_) {
    if (p_.code()[0].type == dtype::f32) run_plain<float>(start, end, ws);
    else run_plain<double>(start, end, ws);
    return;
  }
  if (!column_) {
    group_runner runner(*this, scratch, ws);
    if (norm_.fn != nullptr && norm_.f64)
      for (index_t g = start; g < end; ++g) runner.run_norm_row<double>(g);
    else if (norm_.fn != nullptr)
      for (index_t g = start; g < end; ++g) runner.run_norm_row<float>(g);
    else if (one_tile_)
      for (index_t g = start; g < end; ++g) runner.run_one_tile(g);
    else
      for (index_t g = start; g < end; ++g) runner.run_group(g, g + 1 < end);
    if (stream_) stream_fence();  // the results must be visible once this callback returns
    return;
  }
  // Blocks of neighbouring groups along the innermost retained axis; each group's result
  // does not depend on which block it is in.
  column_runner runner(*this, scratch, ws);
  const index_t row = k_extents_.back();
  for (index_t g = start; g < end;) {
    const index_t n = std::min({block_, end - g, row - g % row});
    runner.run_block(g, n);
    g += n;
  }
}

// Scratch blocks for concurrently running callbacks, all allocated by the caller before any
// group runs, so that no allocation can fail once results are being written.
// The calling thread keeps its scratch memory between calls (it is only ever grown), so a
// steady stream of small evaluations does not allocate. A nested evaluation on the same
// thread (from a ct::map functor) finds it busy and allocates its own.
struct caller_arena {
  struct aligned_delete {
    void operator()(unsigned char* p) const { ::operator delete(p, std::align_val_t{64}); }
  };
  std::unique_ptr<unsigned char, aligned_delete> memory;
  std::size_t bytes = 0;
  // The runners' bookkeeping vectors, kept with their capacity like the memory (reserving
  // them afresh cost 0.3 µs per call of a tiny softmax through two workers).
  std::vector<runner_workspace> workspaces;
  bool busy = false;
};
thread_local caller_arena arena;

class scratch_pool {
 public:
  scratch_pool(std::size_t bytes_each, int blocks) : bytes_((bytes_each + 63) / 64 * 64), blocks_(blocks) {
    if (injected_allocation_failure()) throw std::bad_alloc();
    const std::size_t need = bytes_ * static_cast<std::size_t>(blocks_);
    if (!arena.busy) {
      if (arena.bytes < need) {
        arena.memory.reset();
        arena.bytes = 0;
        arena.memory.reset(static_cast<unsigned char*>(::operator new(need, std::align_val_t{64})));
        arena.bytes = need;
      }
      if (arena.workspaces.size() < static_cast<std::size_t>(blocks_)) arena.workspaces.resize(static_cast<std::size_t>(blocks_));
      arena.busy = true;
      borrowed_ = true;
      base_ = arena.memory.get();
      workspaces_ = arena.workspaces.data();
    } else {
      own_.reset(static_cast<unsigned char*>(::operator new(need, std::align_val_t{64})));
      base_ = own_.get();
      own_workspaces_.resize(static_cast<std::size_t>(blocks_));
      workspaces_ = own_workspaces_.data();
    }
  }
  ~scratch_pool() {
    if (borrowed_) arena.busy = false;
  }
  scratch_pool(const scratch_pool&) = delete;
  scratch_pool& operator=(const scratch_pool&) = delete;

  /// A free block's index (its memory: block(b), its runner's vectors: workspace(b)).
  int acquire() {
    for (;;) {
      std::uint64_t used = used_.load();
      for (int b = 0; b < blocks_; ++b)
        if (!(used & (1ull << b)) && used_.compare_exchange_strong(used, used | (1ull << b))) return b;
      std::this_thread::yield();  // more callbacks than blocks: one finishes soon
    }
  }
  void release(int b) { used_.fetch_and(~(1ull << b)); }
  unsigned char* block(int b) const { return base_ + bytes_ * static_cast<std::size_t>(b); }
  runner_workspace& workspace(int b) { return workspaces_[b]; }

 private:
  std::size_t bytes_;
  int blocks_;
  bool borrowed_ = false;
  unsigned char* base_ = nullptr;
  std::unique_ptr<unsigned char, caller_arena::aligned_delete> own_;
  std::atomic<std::uint64_t> used_{0};
  runner_workspace* workspaces_ = nullptr;  // the arena's, or own_workspaces_
  std::vector<runner_workspace> own_workspaces_;
};

bool ranges_overlap(const void* a, index_t amin, index_t amax, std::size_t asize, const void* b, index_t bmin,
                    index_t bmax, std::size_t bsize) {
  auto lo_a = reinterpret_cast<std::uintptr_t>(a) + static_cast<std::uintptr_t>(amin * static_cast<index_t>(asize));
  auto hi_a = reinterpret_cast<std::uintptr_t>(a) + static_cast<std::uintptr_t>((amax + 1) * static_cast<index_t>(asize));
  auto lo_b = reinterpret_cast<std::uintptr_t>(b) + static_cast<std::uintptr_t>(bmin * static_cast<index_t>(bsize));
  auto hi_b = reinterpret_cast<std::uintptr_t>(b) + static_cast<std::uintptr_t>((bmax + 1) * static_cast<index_t>(bsize));
  return lo_a < hi_b && lo_b < hi_a;
}

}  // namespace

void fail_next_scratch_allocations(int n, int skip) noexcept {
  skipped_allocations.store(skip);
  failing_allocations.store(n);
}

void run_program(const program& p, int root, const destination& dest, const char* op) {
  const dims& F = p.full_shape();
  if (element_count(F) == 0 && !p.has_reducers()) return;  // nothing to compute or write
  // Staging: when a functor may throw, or the destination overlaps an operand other than as
  // the very same elements, results go to a private buffer copied out after every group.
  bool staged = p.can_throw();
  for (const leaf_info& leaf : p.leaves()) {
    if (!ranges_overlap(dest.data, dest.min_offset, dest.max_offset, dtype_size(dest.type), leaf.data, leaf.min_offset,
                        leaf.max_offset, dtype_size(leaf.type)))
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
    staging.reset(new unsigned char[static_cast<std::size_t>(std::max<index_t>(count, 1)) * dtype_size(dest.type)]);
    target = destination{staging.get(), dest.type, rm, 0, count - 1};
  }
  // Staged results are read back right away: no streaming stores into the staging buffer.
  plan pl(p, root, target, op, !staged);
  const index_t groups = pl.groups();
  const bool parallel = groups > 1 && static_cast<bool>(current_executor());
  // hardware_concurrency() reads /sys on every call (about 5 us here): ask once.
  static const unsigned max_blocks = std::min(64u, std::max(2u, std::thread::hardware_concurrency() + 1));
  const int blocks = parallel ? static_cast<int>(std::min<index_t>(groups, max_blocks)) : 1;
  scratch_pool pool(pl.scratch_bytes(), blocks);
  for (int b = 0; b < blocks; ++b) pl.prepare(pool.workspace(b));
  schedule(op, groups, [&](index_t start, index_t end) {
    const int b = pool.acquire();
    struct releaser {
      scratch_pool& pool;
      int b;
      ~releaser() { pool.release(b); }
    } release{pool, b};
    pl.run(start, end, pool.block(b), pool.workspace(b));
  });
  if (staged) {
    // Copy the staged results to the caller's destination, position by position.
    dims src_strides = target.strides, dst_strides = dest.strides;
    const std::size_t esize = dtype_size(dest.type);
    const auto* src = staging.get();
    auto* dst = static_cast<unsigned char*>(dest.data);
    for_each_row<2>(out_shape, {dst_strides, src_strides}, [&](auto off, index_t n, auto inner) {
      for (index_t j = 0; j < n; ++j)
        std::memcpy(dst + (off[0] + j * inner[0]) * static_cast<index_t>(esize), src + (off[1] + j * inner[1]) * static_cast<index_t>(esize), esize);
    });
  }
}

}  // namespace ct::detail
