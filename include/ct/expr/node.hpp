// ct/expr/node.hpp — the lazy expression nodes.
//
// Every node is a small value type with
//   value_type            the element type it produces,
//   shape()               the shape of its value (reducers keep their reduced axes as 1),
//   full_shape()          the iteration shape it needs (a reducer's is its argument's),
//   lower(program&)       emits its instructions and returns the register of its value.
// Nodes hold tensors by handle (cheap copies sharing the elements). Children of n-ary nodes
// live in a boost::hana::tuple and every tree walk is a hana fold or for_each.
#pragma once
#include <array>
#include <boost/hana/fold_left.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/length.hpp>
#include <boost/hana/tuple.hpp>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "ct/core/const_tensor.hpp"
#include "ct/core/tensor.hpp"
#include "ct/expr/program.hpp"

namespace ct {

namespace detail {

template <class T>
struct is_tensor : std::false_type {};
template <class T>
struct is_tensor<tensor<T>> : std::true_type {};
template <class X>
inline constexpr bool is_tensor_v = is_tensor<std::remove_cvref_t<X>>::value;

template <class X>
inline constexpr bool is_node_v = expression_node<std::remove_cvref_t<X>>;

/// A tensor (read-only ones included) or an expression node: something with elements.
template <class X>
concept operand = is_tensor_v<X> || is_const_tensor_v<X> || is_node_v<X>;

/// A plain number (adopts the element type of the other operand): an arithmetic value or a
/// 16-bit float value.
template <class X>
concept scalar_value = std::is_arithmetic_v<std::remove_cvref_t<X>> || is_floating_element_v<std::remove_cvref_t<X>>;

template <class X>
struct value_of {
  using type = typename std::remove_cvref_t<X>::value_type;
};

/// Broadcast of full shapes; a clearer message than broadcast_shapes for the one case where
/// the value shapes broadcast but the iteration shapes do not (a reduced axis meeting an
/// axis of another extent).
inline dims broadcast_full(const dims& a, const dims& b) {
  try {
    return broadcast_shapes(a, b, "eval");
  } catch (const shape_error&) {
    throw shape_error("ct::eval: a reduced axis cannot be broadcast against another extent in one fused expression "
                      "(iteration shapes " + a.str() + " and " + b.str() + "); evaluate the reduction first");
  }
}

// ---- leaves ----

template <element T>
struct tensor_leaf {
  using value_type = T;
  static constexpr bool is_ct_expression = true;
  tensor<T> t;
  const dims& shape() const noexcept { return t.shape(); }
  const dims& full_shape() const noexcept { return t.shape(); }
  int lower(program& p) const { return p.emit_load(t.data(), dtype_of<T>(), t.shape(), t.strides()); }
};

/// A number of element type T, held as ct computes it (float for the 16-bit floats): a number
/// next to a T operand is rounded to T first (of_number), while mean's count stays exact.
template <element T>
struct constant {
  using value_type = T;
  static constexpr bool is_ct_expression = true;
  compute_type_t<T> value;
  template <class N>
  static constant of_number(N n) {
    return constant{static_cast<compute_type_t<T>>(to_element<T>(n))};
  }
  const dims& shape() const noexcept { return empty_shape(); }
  const dims& full_shape() const noexcept { return empty_shape(); }
  int lower(program& p) const {
    instruction in{opcode::constant, compute_dtype_of<T>()};
    if constexpr (is_floating_element_v<T>) in.fvalue = static_cast<double>(value);  // exact
    else in.ivalue = static_cast<std::int64_t>(value);
    return p.emit(in);
  }
  static const dims& empty_shape() noexcept {
    static const dims d{};
    return d;
  }
};

/// The node for an operand: tensors become leaves (a leaf only reads), nodes stay as they are.
template <class X>
auto to_node(const X& x) {
  if constexpr (is_tensor_v<X>) return tensor_leaf<typename X::value_type>{x};
  else if constexpr (is_const_tensor_v<X>) return tensor_leaf<typename X::value_type>{read_only_elements(x)};
  else return x;
}

// ---- n-ary functions of their children ----

/// Op describes the function: Op::result<Ts...> is its element type and
/// Op::emit(program&, dtype, regs) emits its instruction.
template <class Op, class... C>
struct fn_node {
  using value_type = typename Op::template result<typename C::value_type...>;
  static constexpr bool is_ct_expression = true;

  fn_node(Op o, C... c) : op(std::move(o)), children(std::move(c)...) {
    shape_ = boost::hana::fold_left(children, dims{}, [](dims acc, const auto& ch) {
      return broadcast_shapes(acc, ch.shape(), Op::name);
    });
    full_ = boost::hana::fold_left(children, dims{}, [](dims acc, const auto& ch) { return broadcast_full(acc, ch.full_shape()); });
  }
  const dims& shape() const noexcept { return shape_; }
  const dims& full_shape() const noexcept { return full_; }
  int lower(program& p) const {
    std::array<int, sizeof...(C)> regs{};
    std::size_t k = 0;
    boost::hana::for_each(children, [&](const auto& ch) { regs[k++] = ch.lower(p); });
    return op.emit(p, compute_dtype_of<value_type>(), regs);
  }

  Op op;
  boost::hana::tuple<C...> children;
  dims shape_, full_;
};

/// Children passed as temporaries are moved in: copying an operand tensor costs two atomic
/// reference-count updates, and expression trees repeat their operands.
template <class Op, class... C>
auto make_fn(Op op, C&&... c) {
  return fn_node<Op, std::remove_cvref_t<C>...>(std::move(op), std::forward<C>(c)...);
}

/// Emits one instruction of the given kind over the children's registers.
template <std::size_t N>
int emit_simple(program& p, opcode code, std::uint8_t sub, dtype type, const std::array<int, N>& regs) {
  instruction in{code, type, sub};
  for (std::size_t i = 0; i < N; ++i) in.args[i] = regs[i];
  return p.emit(in);
}

/// The shape a top-level evaluation produces: reductions may drop their reduced axes.
template <class N>
dims result_shape(const N& n) {
  if constexpr (requires { n.result_shape(); }) return n.result_shape();
  else return n.shape();
}

}  // namespace detail
}  // namespace ct
