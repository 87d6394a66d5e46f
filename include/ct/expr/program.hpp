// ct/expr/program.hpp — the tile program an expression is lowered to (internal).
//
// ct::eval walks the compile-time expression tree once and emits a flat list of typed
// instructions (identical ones are merged, so a repeated sub-expression such as max(x, -1)
// is computed once per group). The evaluator in src/expr runs that list per group, tile by
// tile, with precompiled kernels. Expression templates therefore instantiate little code in
// the user's translation unit; only ct::map functors do (a small per-tile trampoline).
#pragma once
#include <bit>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "ct/core/dims.hpp"
#include "ct/core/dtype.hpp"
#include "ct/expr/ops.hpp"

namespace ct::detail {

// Instructions carry the type ct computes in (ct::compute_dtype: float32 for bfloat16 and
// float16); leaves and destinations carry their storage type.
using ct::dtype;

enum class opcode : std::uint8_t {
  load,         // leaf tensor
  constant,     // scalar
  unary,        // sub = unary_op (ct/expr/ops.hpp)
  binary,       // sub = binary_op
  muladd,       // a*b+c under the FMA policy
  compare,      // sub = compare_op; result bool
  logical_and,  // bool
  logical_or,   // bool
  logical_not,  // bool
  where,        // args: cond, a, b
  cast,         // to `type`
  round_to,     // a float32 or float64 argument rounded once to the 16-bit float type `sub` (a
                // ct::dtype); the result is that value as float32
  map,          // user functor; see map_call
  reduce        // sub = reduce_op; result is one value per group
};
/// Runs a user functor over one tile: out[i] = f(args[0][i], …) where an argument flagged
/// uniform holds one value for the whole tile. Instantiated in the user's translation unit.
using map_tile_fn = void (*)(const void* functor, const void* const* args, const bool* uniform, void* out,
                             index_t n);

struct instruction {
  opcode op;
  dtype type;  // of the result
  std::uint8_t sub = 0;
  int args[3] = {-1, -1, -1};
  int leaf = -1;  // load: index into program::leaves; map: index into program::maps
  double fvalue = 0;
  std::int64_t ivalue = 0;
  /// Identical instructions are merged (program::emit), so constants compare by bit pattern:
  /// -0.0 and +0.0 are different constants (1/(x*-0.0) is -inf), as are NaNs with different bits.
  bool operator==(const instruction& o) const noexcept {
    return op == o.op && type == o.type && sub == o.sub && args[0] == o.args[0] && args[1] == o.args[1] &&
           args[2] == o.args[2] && leaf == o.leaf && std::bit_cast<std::uint64_t>(fvalue) == std::bit_cast<std::uint64_t>(o.fvalue) &&
           ivalue == o.ivalue;
  }
};

struct leaf_info {
  const void* data;
  dtype type;
  dims strides;  // over the full iteration shape; 0 along broadcast axes
  index_t min_offset, max_offset;  // element range it touches (for overlap checks)
  dims own_shape, own_strides;     // the tensor's own, as an operation selector sees it
};

/// A name for the value of one register: ct's normalisations (softmax, layer_norm, …) mark
/// their result, so operation selectors see "softmax" as the root instead of a division.
struct value_name {
  int reg = -1;
  const char* name = nullptr;
  int axis = -1;
  double eps = 0;
};

struct map_call {
  const void* functor;
  map_tile_fn fn;
  std::vector<int> args;
  std::uint64_t id;  // of the ct::map node (next_map_id): copies of one node share it
};

/// A process-wide unique id for a new ct::map node.
std::uint64_t next_map_id() noexcept;

/// The lowered expression plus its iteration space. Built by the expression nodes.
class program {
 public:
  /// fused_multiply_add: contract a*b+c into one muladd (the caller's FMA policy is fused).
  program(const dims& full_shape, bool fused_multiply_add) : full_shape_(full_shape), fused_multiply_add_(fused_multiply_add) {}

  const dims& full_shape() const noexcept { return full_shape_; }
  /// Bit a set when axis a of the full shape is reduced by the expression's reducers.
  std::uint32_t reduce_mask() const noexcept { return reduce_mask_; }
  bool has_reducers() const noexcept { return has_reducers_; }
  /// Some instruction may throw while results are written (a user functor, an integer
  /// division): run_program then stages the results so a failure changes nothing.
  bool can_throw() const noexcept { return !maps_.empty() || integer_division_; }
  const std::vector<instruction>& code() const noexcept { return code_; }
  const std::vector<leaf_info>& leaves() const noexcept { return leaves_; }
  const std::vector<map_call>& maps() const noexcept { return maps_; }
  /// The name given to a register by name_value (the last one given), if any.
  const value_name& named_value() const noexcept { return named_; }
  /// Names the value of register reg (ct's normalisations: name, normalised axis, epsilon).
  void name_value(int reg, const char* name, int axis, double eps) noexcept { named_ = value_name{reg, name, axis, eps}; }

  /// Appends an instruction, or returns the index of an identical one (common subexpressions).
  int emit(const instruction& in);
  /// A load of a tensor with the given shape and strides, broadcast into the full shape.
  int emit_load(const void* data, dtype type, const dims& shape, const dims& strides);
  /// A user functor call. Calls of the same ct::map node (the same id: the node copied into
  /// several places of the expression, as softmax(m) does) on the same operands are one
  /// instruction, so the functor runs once per element; separate ct::map calls never merge.
  int emit_map(dtype type, const void* functor, map_tile_fn fn, std::vector<int> args, std::uint64_t id);
  /// A conversion of register arg from element type `from` to `to` (storage types, not compute
  /// types): the cast itself, with 16-bit float values rounded to their type on the way.
  int emit_cast(int arg, dtype from, dtype to);
  /// A reducer over `axes` of an argument of shape arg_shape (axes already normalised). Checks
  /// that every reducer of the expression reduces the same axes of the full shape.
  int emit_reduce(reduce_op op, dtype type, int arg, const dims& arg_shape, const dims& axes, const char* name);

  /// The same program over positions [start, end) of one axis of the full shape: every leaf's
  /// data moved to position start (split elementwise evaluation, run_program).
  program box(int axis, index_t start, index_t end) const;
  /// The same program with every reducer replaced by its value over no elements (sum 0,
  /// prod 1, all true, any false; mean is then 0 / 0), every instruction root no longer needs
  /// (the reducers' arguments) replaced by a constant, and the axes in `drop` (a mask of the
  /// full shape) removed: an expression whose reductions are over an empty axis, evaluated
  /// elementwise (run_program). Not for max, min, argmax, argmin: they have no such value.
  program with_reductions_of_nothing(std::uint32_t drop, int root) const;

 private:
  dims full_shape_;
  bool fused_multiply_add_;
  std::uint32_t reduce_mask_ = 0;
  bool has_reducers_ = false;
  bool integer_division_ = false;
  std::vector<instruction> code_;
  std::vector<leaf_info> leaves_;
  std::vector<map_call> maps_;
  value_name named_;
};

/// Where results go: typed base pointer and strides over the full shape (0 along reduced
/// axes when the result is one value per group).
struct destination {
  void* data;
  dtype type;
  dims strides;
  index_t min_offset, max_offset;
};

/// Validates, plans and runs a program (through the bound executor when it has reducers),
/// writing element root of every position into dest. `op` names the operation in errors.
void run_program(const program& p, int root, const destination& dest, const char* op);

/// Test hook: after `skip` more scratch allocations of the evaluator (the staging buffer and
/// the per-callback scratch), the next `n` throw std::bad_alloc.
void fail_next_scratch_allocations(int n, int skip = 0) noexcept;

}  // namespace ct::detail
