// Building the tile program: instruction merging, leaf broadcasting, reducer axis checks.
#include "ct/expr/program.hpp"

#include <algorithm>
#include <atomic>

#include "ct/core/error.hpp"

namespace ct::detail {

namespace {
std::string mask_text(std::uint32_t mask, int rank) {
  dims axes;
  for (int a = 0; a < rank; ++a)
    if (mask & (1u << a)) axes.push_back(a);
  return axes.str();
}
}  // namespace

program program::box(int axis, index_t start, index_t end) const {
  program b = *this;
  b.full_shape_[axis] = end - start;
  for (leaf_info& leaf : b.leaves_)
    leaf.data = static_cast<const unsigned char*>(leaf.data) +
                start * leaf.strides[axis] * static_cast<index_t>(dtype_bytes(leaf.type));
  return b;
}

program program::with_reductions_of_nothing(std::uint32_t drop, int root) const {
  program q = *this;
  const auto constant = [](dtype t, bool one) {
    instruction c{opcode::constant, t};
    if (t == dtype::f32 || t == dtype::f64) c.fvalue = one ? 1.0 : 0.0;
    else c.ivalue = one ? 1 : 0;
    return c;
  };
  for (instruction& in : q.code_)
    if (in.op == opcode::reduce) {
      const auto op = static_cast<reduce_op>(in.sub);
      in = constant(in.type, op == reduce_op::prod || op == reduce_op::all);
    }
  // What root still needs; the rest (the reducers' arguments, which run along the dropped
  // axes and may have no elements at all) must not be computed, so it becomes constants.
  std::vector<char> needed(q.code_.size(), 0);
  needed[static_cast<std::size_t>(root)] = 1;
  for (int i = root; i >= 0; --i) {
    const instruction& in = q.code_[static_cast<std::size_t>(i)];
    if (!needed[static_cast<std::size_t>(i)]) continue;
    if (in.op == opcode::map) {
      for (int a : q.maps_[static_cast<std::size_t>(in.leaf)].args) needed[static_cast<std::size_t>(a)] = 1;
    } else {
      for (int a : in.args)
        if (a >= 0) needed[static_cast<std::size_t>(a)] = 1;
    }
  }
  for (std::size_t i = 0; i < q.code_.size(); ++i)
    if (!needed[i]) q.code_[i] = constant(q.code_[i].type, false);
  for (int a = full_shape_.size() - 1; a >= 0; --a) {
    if (!(drop & (1u << a))) continue;
    q.full_shape_.erase(a);
    for (leaf_info& leaf : q.leaves_) leaf.strides.erase(a);
  }
  q.reduce_mask_ = 0;
  q.has_reducers_ = false;
  return q;
}

int program::emit(const instruction& in) {
  // Under the fused FMA policy a product feeding a sum becomes one multiply-add (one
  // rounding, one kernel pass), as a compiler contracting a*b+c would; under the separate
  // policy it stays two operations. The product itself stays available to other users.
  if (fused_multiply_add_ && in.op == opcode::binary && in.sub == static_cast<std::uint8_t>(binary_op::add) &&
      (in.type == dtype::f32 || in.type == dtype::f64)) {
    for (int k = 0; k < 2; ++k) {
      const instruction& m = code_[static_cast<std::size_t>(in.args[k])];
      if (m.op == opcode::binary && m.sub == static_cast<std::uint8_t>(binary_op::mul)) {
        instruction fma{opcode::muladd, in.type};
        fma.args[0] = m.args[0];
        fma.args[1] = m.args[1];
        fma.args[2] = in.args[1 - k];
        return emit(fma);
      }
    }
  }
  auto it = std::find(code_.begin(), code_.end(), in);
  if (it != code_.end() && in.op != opcode::map) return static_cast<int>(it - code_.begin());
  if (in.op == opcode::binary && in.sub == static_cast<std::uint8_t>(binary_op::div) &&
      in.type != dtype::f32 && in.type != dtype::f64)
    integer_division_ = true;  // throws on a zero divisor
  code_.push_back(in);
  return static_cast<int>(code_.size()) - 1;
}

int program::emit_load(const void* data, dtype type, const dims& shape, const dims& strides) {
  const int r = full_shape_.size(), lead = r - shape.size();
  if (lead < 0) throw shape_error("ct::eval: operand of shape " + shape.str() + " exceeds the expression shape " + full_shape_.str());
  leaf_info leaf{data, type, dims::filled(r, 0), 0, 0, shape, strides};
  for (int i = 0; i < shape.size(); ++i) {
    index_t e = shape[i], f = full_shape_[lead + i];
    if (e != f && e != 1)
      throw shape_error("ct::eval: operand of shape " + shape.str() + " does not broadcast to " + full_shape_.str());
    leaf.strides[lead + i] = e == 1 ? 0 : strides[i];
    if (e > 0) (strides[i] < 0 ? leaf.min_offset : leaf.max_offset) += (e - 1) * strides[i];
  }
  int index = -1;
  for (std::size_t i = 0; i < leaves_.size(); ++i)
    if (leaves_[i].data == data && leaves_[i].type == type && leaves_[i].strides == leaf.strides) index = static_cast<int>(i);
  if (index < 0) {
    leaves_.push_back(leaf);
    index = static_cast<int>(leaves_.size()) - 1;
  }
  instruction in{opcode::load, compute_dtype(type)};  // 16-bit floats widen as they load
  in.leaf = index;
  return emit(in);
}

int program::emit_cast(int arg, dtype from, dtype to) {
  auto round_to = [&](int r, dtype storage) {
    instruction in{opcode::round_to, dtype::f32, static_cast<std::uint8_t>(storage)};
    in.args[0] = r;
    return emit(in);
  };
  if (from == to) return arg;
  // A 16-bit float value leaves its type rounded to it, unless it is one already: a load of
  // that type or a constant (rounded when the expression was built).
  if (kind_of(from) == dtype_kind::storage_float) {
    const instruction& a = code_[static_cast<std::size_t>(arg)];
    const bool exact = a.op == opcode::constant || (a.op == opcode::load && leaves_[static_cast<std::size_t>(a.leaf)].type == from);
    if (!exact) arg = round_to(arg, from);
  }
  const dtype cf = compute_dtype(from), tc = compute_dtype(to);
  // Into a 16-bit float: one rounding from the source value (float32 or float64 alike), so a
  // double is not rounded to float first.
  if (kind_of(to) == dtype_kind::storage_float && (cf == dtype::f32 || cf == dtype::f64)) return round_to(arg, to);
  if (cf != tc) {
    instruction in{opcode::cast, tc};
    in.args[0] = arg;
    arg = emit(in);
  }
  if (kind_of(to) == dtype_kind::storage_float) arg = round_to(arg, to);
  return arg;
}

std::uint64_t next_map_id() noexcept {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

int program::emit_map(dtype type, const void* functor, map_tile_fn fn, std::vector<int> args, std::uint64_t id) {
  for (std::size_t i = 0; i < code_.size(); ++i) {
    const instruction& in = code_[i];
    if (in.op != opcode::map || in.type != type) continue;
    const map_call& m = maps_[static_cast<std::size_t>(in.leaf)];
    if (m.id == id && m.fn == fn && m.args == args) return static_cast<int>(i);
  }
  maps_.push_back({functor, fn, std::move(args), id});
  instruction in{opcode::map, type};
  in.leaf = static_cast<int>(maps_.size()) - 1;
  return emit(in);
}

int program::emit_reduce(reduce_op op, dtype type, int arg, const dims& arg_shape, const dims& axes, const char* name) {
  const int r = full_shape_.size(), lead = r - arg_shape.size();
  std::uint32_t mask = 0;
  for (index_t a : axes) {
    int f = lead + static_cast<int>(a);
    mask |= 1u << f;
    if (arg_shape[static_cast<int>(a)] != full_shape_[f])
      throw shape_error(std::string("ct::") + name + ": reduced axis " + std::to_string(a) + " of " + arg_shape.str() +
                        " is broadcast to " + std::to_string(full_shape_[f]) +
                        " in the expression; reduce it before broadcasting");
  }
  if (has_reducers_ && mask != reduce_mask_)
    throw axis_error(std::string("ct::") + name + ": all reducers of one expression must reduce the same axes, got " +
                     mask_text(reduce_mask_, r) + " and " + mask_text(mask, r) + " of shape " + full_shape_.str());
  has_reducers_ = true;
  reduce_mask_ = mask;
  instruction in{opcode::reduce, type, static_cast<std::uint8_t>(op)};
  in.args[0] = arg;
  return emit(in);
}

}  // namespace ct::detail
