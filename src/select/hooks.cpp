// Where ct's operations ask the selectors (ct/select/selector.hpp): the description of an
// evaluated expression and of a dense product. Only reached when a selector is registered or
// bound (detail::selectors_possible).
#include <bit>
#include <string>

#include "ct/expr/program.hpp"
#include "src/select/select.hpp"

namespace ct::detail {

namespace {

// The name of the operation an instruction computes, as call_info::name gives it.
const char* root_name(const program& p, int root) {
  const value_name& named = p.named_value();
  if (named.name && named.reg == root) return named.name;
  const instruction& in = p.code()[static_cast<std::size_t>(root)];
  switch (in.op) {
    case opcode::load: return "copy";
    case opcode::constant: return "constant";
    case opcode::unary: return unary_name(static_cast<unary_op>(in.sub));
    case opcode::binary: return binary_name(static_cast<binary_op>(in.sub));
    case opcode::muladd: return "muladd";
    case opcode::compare: return compare_name(static_cast<compare_op>(in.sub));
    case opcode::logical_and: return "logical_and";
    case opcode::logical_or: return "logical_or";
    case opcode::logical_not: return "logical_not";
    case opcode::where: return "where";
    case opcode::cast:
    case opcode::round_to: return "cast";
    case opcode::map: return "map";
    case opcode::reduce: return reduce_name(static_cast<reduce_op>(in.sub));
  }
  return "?";
}

operand_view destination_view(dtype type, const dims& shape, const dims& strides) {
  operand_view d;
  d.type = type;
  d.shape = shape;
  d.strides = strides;
  return d;
}

}  // namespace

bool run_selected_eval(const program& p, int root, void* data, dtype type, const dims& shape, const dims& strides) {
  call_info call;
  call.op = operation::eval;
  call.name = root_name(p, root);
  call.settings = current_settings();
  for (const leaf_info& leaf : p.leaves()) {
    operand_view o;
    o.type = leaf.type;
    o.shape = leaf.own_shape;
    o.strides = leaf.own_strides;
    o.data = leaf.data;
    call.operands.push_back(std::move(o));
  }
  call.destination = destination_view(type, shape, strides);
  const value_name& named = p.named_value();
  if (named.name && named.reg == root) {
    call.axis = named.axis;
    call.eps = named.eps;
  } else if (p.code()[static_cast<std::size_t>(root)].op == opcode::reduce && std::popcount(p.reduce_mask()) == 1) {
    call.axis = std::countr_zero(p.reduce_mask());
  }
  const kernel k = select(call);
  if (!k) return false;
  run_selected(k, call, data);
  return true;
}

bool run_selected_product(operation op, const char* name, const operand_view& a, const operand_view& b,
                          const operand_view& dest, void* data, bool must) {
  call_info call;
  call.op = op;
  call.name = name;
  call.settings = current_settings();
  call.operands = {a, b};
  call.destination = dest;
  if (op == operation::matmul && a.shape.size() == 1 && b.shape.size() == 1) {
    // A product of two vectors is a dot product first.
    call.op = operation::dot;
    call.name = "dot";
    if (const kernel k = select(call)) {
      run_selected(k, call, data);
      return true;
    }
    call.op = operation::matmul;
    call.name = name;
  }
  if (const kernel k = select(call)) {
    run_selected(k, call, data);
    return true;
  }
  if (must) throw_unsupported(call);
  return false;
}

}  // namespace ct::detail
