/// \file
/// Elementwise operators and functions building lazy expressions.
///
/// Operands are tensors, expressions, or (for all but unary functions) plain numbers. Both
/// operands of a binary function must have the same element type: mixing needs an explicit
/// ct::cast<U>(e). A plain number adopts the element type of the other operand; a
/// floating-point number next to an integer operand is rejected at compile time.
/// Shapes broadcast like NumPy's; shapes that do not broadcast raise ct::shape_error naming both.
#pragma once
#include <limits>

#include "ct/expr/node.hpp"

namespace ct {

namespace detail {

// The operation structs differ only in opcode, sub-operation and result type; this base
// emits the one instruction they all lower to.
template <opcode Code, std::uint8_t Sub = 0>
struct simple_fn {
  template <std::size_t N>
  int emit(program& p, dtype t, const std::array<int, N>& r) const {
    return emit_simple(p, Code, Sub, t, r);
  }
};

template <unary_op K>
struct unary_fn : simple_fn<opcode::unary, static_cast<std::uint8_t>(K)> {
  static constexpr const char* name = unary_name(K);
  template <class T>
  using result = T;
};

template <binary_op K>
struct binary_fn : simple_fn<opcode::binary, static_cast<std::uint8_t>(K)> {
  static constexpr const char* name = binary_name(K);
  template <class T, class U>
  using result = T;
};

template <compare_op C>
struct compare_fn : simple_fn<opcode::compare, static_cast<std::uint8_t>(C)> {
  static constexpr const char* name = compare_name(C);
  template <class T, class U>
  using result = bool;
};

template <opcode Code>
struct logical_fn : simple_fn<Code> {
  static constexpr const char* name = Code == opcode::logical_and ? "logical_and" : Code == opcode::logical_or ? "logical_or" : "logical_not";
  template <class... T>
  using result = bool;
};

struct where_fn : simple_fn<opcode::where> {
  static constexpr const char* name = "where";
  template <class C, class T, class U>
  using result = T;
};

struct muladd_fn : simple_fn<opcode::muladd> {
  static constexpr const char* name = "muladd";
  template <class T, class U, class V>
  using result = T;
};

// A cast knows its source type too: a 16-bit float value is rounded to that type when it leaves
// it (the fused kernels compute it in float32), and a cast to a 16-bit float rounds to it.
template <element U, element From>
struct cast_fn {
  static constexpr const char* name = "cast";
  template <class T>
  using result = U;
  template <std::size_t N>
  int emit(program& p, dtype, const std::array<int, N>& r) const {
    return p.emit_cast(r[0], dtype_of<From>(), dtype_of<U>());
  }
};

// A tile holds compute_type_t values; a functor sees and returns the element types.
template <class A>
A from_compute(compute_type_t<A> v) {
  if constexpr (std::is_same_v<A, compute_type_t<A>>) return v;
  else return A(v);
}

// ct::map: the functor runs per element on tiles, through a trampoline instantiated here.
template <class F, class R, class... A>
void map_tile(const void* functor, const void* const* args, const bool* uniform, void* out, index_t n) {
  const F& f = *static_cast<const F*>(functor);
  using RC = compute_type_t<R>;
  RC* y = static_cast<RC*>(out);
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    for (index_t j = 0; j < n; ++j)
      y[j] = static_cast<RC>(static_cast<R>(f(from_compute<A>(static_cast<const compute_type_t<A>*>(args[I])[uniform[I] ? 0 : j])...)));
  }(std::index_sequence_for<A...>{});
}

template <class F>
struct map_fn {
  static constexpr const char* name = "map";
  template <class... T>
  using result = std::remove_cvref_t<std::invoke_result_t<const F&, T...>>;
  F f;
  template <class... A>
  static map_tile_fn trampoline() {
    return &map_tile<F, result<A...>, A...>;
  }
  map_tile_fn fn = nullptr;
  std::uint64_t id = 0;  // next_map_id(): copies of this node are one call per element
  template <std::size_t N>
  int emit(program& p, dtype t, const std::array<int, N>& r) const {
    return p.emit_map(t, &f, fn, std::vector<int>(r.begin(), r.end()), id);
  }
};

template <class X>
using value_t = typename value_of<X>::type;

// Two operands (at least one a tensor/expression) as nodes of one element type.
template <class A, class B>
auto as_pair(const A& a, const B& b) {
  if constexpr (scalar_value<A>) {
    using T = value_t<B>;
    static_assert(!(is_floating_element_v<A> && !is_floating_element_v<T>),
                  "ct: a floating-point number next to an integer or bool operand; cast one of them explicitly");
    return std::make_pair(constant<T>::of_number(a), to_node(b));
  } else if constexpr (scalar_value<B>) {
    using T = value_t<A>;
    static_assert(!(is_floating_element_v<B> && !is_floating_element_v<T>),
                  "ct: a floating-point number next to an integer or bool operand; cast one of them explicitly");
    return std::make_pair(to_node(a), constant<T>::of_number(b));
  } else {
    static_assert(std::is_same_v<value_t<A>, value_t<B>>,
                  "ct: mixed element types need an explicit ct::cast<T>(...)");
    return std::make_pair(to_node(a), to_node(b));
  }
}

template <class A, class B>
concept binary_operands = (operand<A> && (operand<B> || scalar_value<B>)) || (scalar_value<A> && operand<B>);

template <class Op, class A, class B>
auto make_binary(const A& a, const B& b) {
  auto [x, y] = as_pair(a, b);
  return make_fn(Op{}, std::move(x), std::move(y));
}

template <class X>
inline constexpr bool is_float_operand_v = is_floating_element_v<value_t<X>>;
template <class X>
inline constexpr bool is_numeric_operand_v = !std::is_same_v<value_t<X>, bool>;

}  // namespace detail

// ---- arithmetic ----

#define CT_BINARY_OPERATOR(sym, K, requirement)                                                   \
  template <class A, class B>                                                                     \
    requires detail::binary_operands<A, B>                                                        \
  auto operator sym(const A& a, const B& b) {                                                     \
    auto e = detail::make_binary<detail::binary_fn<detail::binary_op::K>>(a, b);              \
    static_assert(requirement<typename decltype(e)::value_type>, "ct: operator " #sym " is not defined for bool"); \
    return e;                                                                                     \
  }
/// True for every element type but bool: the requirement of the arithmetic operators.
template <class T>
inline constexpr bool not_bool = !std::is_same_v<T, bool>;
/// a + b elementwise: a lazy expression. Operands are tensors, expressions or plain numbers of
/// one element type (not bool), broadcast like NumPy's; integers wrap around on overflow.
CT_BINARY_OPERATOR(+, add, not_bool)
/// a - b elementwise (see operator+ for operands).
CT_BINARY_OPERATOR(-, sub, not_bool)
/// a * b elementwise (see operator+ for operands).
CT_BINARY_OPERATOR(*, mul, not_bool)
/// a / b elementwise (see operator+ for operands). Integer division truncates; an integer
/// division by zero makes ct::eval throw ct::error.
CT_BINARY_OPERATOR(/, div, not_bool)
#undef CT_BINARY_OPERATOR


/// Elementwise maximum of two operands (NaN propagates). For reductions see ct::max.
template <class A, class B>
  requires detail::binary_operands<A, B>
auto maximum(const A& a, const B& b) {
  return detail::make_binary<detail::binary_fn<detail::binary_op::max>>(a, b);
}
/// Elementwise minimum of two operands (NaN propagates).
template <class A, class B>
  requires detail::binary_operands<A, B>
auto minimum(const A& a, const B& b) {
  return detail::make_binary<detail::binary_fn<detail::binary_op::min>>(a, b);
}
/// max(a, b) / min(a, b) of two tensors or expressions (or an expression and a floating-point
/// number) are elementwise; max(x, int) is the reduction over an axis (ct/expr/reductions.hpp).
template <class A, class B>
  requires(detail::operand<A> && (detail::operand<B> || std::is_floating_point_v<B>))
auto max(const A& a, const B& b) {
  return maximum(a, b);
}
/// ct::minimum(a, b), under the name min (see max(a, b)).
template <class A, class B>
  requires(detail::operand<A> && (detail::operand<B> || std::is_floating_point_v<B>))
auto min(const A& a, const B& b) {
  return minimum(a, b);
}

/// a to the power b, as std::pow (floating-point operands only).
template <class A, class B>
  requires detail::binary_operands<A, B>
auto pow(const A& a, const B& b) {
  auto e = detail::make_binary<detail::binary_fn<detail::binary_op::pow>>(a, b);
  static_assert(is_floating_element_v<typename decltype(e)::value_type>, "ct::pow needs floating-point operands");
  return e;
}

/// a*b + c with one rounding or two, as the FMA binding says (floating point only).
template <detail::operand A, class B, class C>
auto muladd(const A& a, const B& b, const C& c) {
  using T = detail::value_t<A>;
  static_assert(is_floating_element_v<T>, "ct::muladd needs floating-point operands");
  auto node = [](const auto& x) {
    if constexpr (detail::scalar_value<decltype(x)>) return detail::constant<T>::of_number(x);
    else {
      static_assert(std::is_same_v<detail::value_t<decltype(x)>, T>, "ct: mixed element types need an explicit ct::cast<T>(...)");
      return detail::to_node(x);
    }
  };
  return detail::make_fn(detail::muladd_fn{}, detail::to_node(a), node(b), node(c));
}

// ---- unary math ----

// One function per row of CT_UNARY_OPS (ct/expr/ops.hpp), e.g. ct::exp(x), ct::negative(x).
#define CT_UNARY_FUNCTION(op, fname, float_only, ...)                                                      \
  template <detail::operand A>                                                                             \
  auto fname(const A& a) {                                                                                 \
    static_assert(detail::is_numeric_operand_v<A>, "ct::" #fname " is not defined for bool");              \
    static_assert(!(float_only) || detail::is_float_operand_v<A>,                                          \
                  "ct::" #fname " needs floating-point operands; use ct::cast<float>(...) first");          \
    return detail::make_fn(detail::unary_fn<detail::unary_op::op>{}, detail::to_node(a));                  \
  }
// Each unary function takes a tensor or an expression (not bool) and returns a lazy expression
// of the same element type; those marked floating point reject integer operands at compile
// time. The generated functions are documented here, one \fn block each.

/// \fn ct::negative(const A& a)
/// -x elementwise; integers wrap around on overflow, like NumPy's (also unary operator-).

/// \fn ct::abs(const A& a)
/// |x| elementwise; integers wrap around on overflow.

/// \fn ct::sqrt(const A& a)
/// The square root, elementwise (floating point).

/// \fn ct::rsqrt(const A& a)
/// 1 / sqrt(x) elementwise (floating point).

/// \fn ct::exp(const A& a)
/// e^x elementwise (floating point).

/// \fn ct::expm1(const A& a)
/// e^x - 1 elementwise, without the cancellation of exp(x) - 1 near 0 (floating point).

/// \fn ct::log(const A& a)
/// The natural logarithm, elementwise (floating point).

/// \fn ct::log1p(const A& a)
/// log(1 + x) elementwise, accurate for small x (floating point).

/// \fn ct::sin(const A& a)
/// The sine, elementwise (floating point).

/// \fn ct::cos(const A& a)
/// The cosine, elementwise (floating point).

/// \fn ct::tanh(const A& a)
/// The hyperbolic tangent, elementwise (floating point).

/// \fn ct::sigmoid(const A& a)
/// 1 / (1 + e^-x) elementwise (floating point).

/// \fn ct::relu(const A& a)
/// max(x, 0) elementwise; NaN stays NaN (floating point).

/// \fn ct::gelu(const A& a)
/// GELU in its tanh form, 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))), elementwise
/// (floating point). The exact GELU is 0.5f * x * (1.0f + ct::erf(x / sqrt(2))).

/// \fn ct::silu(const A& a)
/// x * sigmoid(x) elementwise (floating point).

/// \fn ct::square(const A& a)
/// x * x elementwise; integers wrap around on overflow.

/// \fn ct::reciprocal(const A& a)
/// 1 / x elementwise (floating point).

/// \fn ct::erf(const A& a)
/// The error function, (2/sqrt(pi)) times the integral of e^(-t^2) over [0, x], elementwise
/// (floating point).

/// \fn ct::erfc(const A& a)
/// 1 - erf(x) elementwise (floating point).

CT_UNARY_OPS(CT_UNARY_FUNCTION)
#undef CT_UNARY_FUNCTION

/// -a elementwise (ct::negative; integers wrap like NumPy's).
template <detail::operand A>
auto operator-(const A& a) {
  static_assert(detail::is_numeric_operand_v<A>, "ct: unary minus is not defined for bool");
  return negative(a);
}

/// min(max(x, lo), hi).
template <detail::operand A, class L, class H>
auto clamp(const A& x, const L& lo, const H& hi) {
  return minimum(maximum(x, lo), hi);
}

// ---- comparisons and logic (results are bool) ----

#define CT_COMPARE_OPERATOR(sym, C)                                                  \
  template <class A, class B>                                                        \
    requires detail::binary_operands<A, B>                                           \
  auto operator sym(const A& a, const B& b) {                                        \
    return detail::make_binary<detail::compare_fn<detail::compare_op::C>>(a, b);     \
  }
/// a == b elementwise, a bool expression (operands as for operator+, bool allowed). NaN is
/// unequal to everything.
CT_COMPARE_OPERATOR(==, eq)
/// a != b elementwise, a bool expression (true where either is NaN).
CT_COMPARE_OPERATOR(!=, ne)
/// a < b elementwise, a bool expression (false where either is NaN).
CT_COMPARE_OPERATOR(<, lt)
/// a <= b elementwise, a bool expression (false where either is NaN).
CT_COMPARE_OPERATOR(<=, le)
/// a > b elementwise, a bool expression (false where either is NaN).
CT_COMPARE_OPERATOR(>, gt)
/// a >= b elementwise, a bool expression (false where either is NaN).
CT_COMPARE_OPERATOR(>=, ge)
#undef CT_COMPARE_OPERATOR

/// a AND b elementwise for bool operands; both sides are always evaluated.
template <class A, class B>
  requires detail::binary_operands<A, B>
auto logical_and(const A& a, const B& b) {
  auto e = detail::make_binary<detail::logical_fn<detail::opcode::logical_and>>(a, b);
  static_assert(std::is_same_v<detail::value_t<decltype(std::get<0>(detail::as_pair(a, b)))>, bool>,
                "ct::logical_and needs bool operands");
  return e;
}
/// a OR b elementwise for bool operands; both sides are always evaluated.
template <class A, class B>
  requires detail::binary_operands<A, B>
auto logical_or(const A& a, const B& b) {
  auto e = detail::make_binary<detail::logical_fn<detail::opcode::logical_or>>(a, b);
  static_assert(std::is_same_v<detail::value_t<decltype(std::get<0>(detail::as_pair(a, b)))>, bool>,
                "ct::logical_or needs bool operands");
  return e;
}
/// NOT a elementwise for a bool operand.
template <detail::operand A>
auto logical_not(const A& a) {
  static_assert(std::is_same_v<detail::value_t<A>, bool>, "ct::logical_not needs a bool operand");
  return detail::make_fn(detail::logical_fn<detail::opcode::logical_not>{}, detail::to_node(a));
}
/// ct::logical_and(a, b): elementwise, with no short-circuit.
template <class A, class B>
  requires detail::binary_operands<A, B>
auto operator&&(const A& a, const B& b) {
  return logical_and(a, b);
}
/// ct::logical_or(a, b): elementwise, with no short-circuit.
template <class A, class B>
  requires detail::binary_operands<A, B>
auto operator||(const A& a, const B& b) {
  return logical_or(a, b);
}
/// ct::logical_not(a).
template <detail::operand A>
auto operator!(const A& a) {
  return logical_not(a);
}

/// cond ? a : b elementwise; cond is bool, a and b share an element type (numbers adopt it).
template <detail::operand C, class A, class B>
auto where(const C& cond, const A& a, const B& b) {
  static_assert(std::is_same_v<detail::value_t<C>, bool>, "ct::where needs a bool condition");
  auto [x, y] = detail::as_pair(a, b);
  return detail::make_fn(detail::where_fn{}, detail::to_node(cond), std::move(x), std::move(y));
}

/// Converts elements to U (float to integer truncates toward zero and saturates; NaN gives 0;
/// nonzero to bool gives true).
template <element U, detail::operand A>
auto cast(const A& a) {
  return detail::make_fn(detail::cast_fn<U, detail::value_t<A>>{}, detail::to_node(a));
}

/// Applies a user functor elementwise: f(a_i, b_i, …). f must be callable concurrently from
/// several threads and return an element type; it may throw (ct::eval then leaves its
/// destination unchanged). Operands broadcast together.
template <class F, detail::operand... A>
auto map(F f, const A&... a) {
  static_assert(sizeof...(A) >= 1 && sizeof...(A) <= 16, "ct::map takes 1 to 16 operands");
  detail::map_fn<F> m{std::move(f)};
  m.fn = detail::map_fn<F>::template trampoline<detail::value_t<A>...>();
  m.id = detail::next_map_id();
  static_assert(is_element_v<typename detail::map_fn<F>::template result<detail::value_t<A>...>>,
                "ct::map: the functor must return an element type (ct/core/dtype.hpp)");
  return detail::make_fn(std::move(m), detail::to_node(a)...);
}

// Expression nodes live in ct::detail: make the operators visible to argument-dependent
// lookup from there too, so expressions compose outside namespace ct.
namespace detail {
using ct::operator+;
using ct::operator-;
using ct::operator*;
using ct::operator/;
using ct::operator==;
using ct::operator!=;
using ct::operator<;
using ct::operator<=;
using ct::operator>;
using ct::operator>=;
using ct::operator&&;
using ct::operator||;
using ct::operator!;
}  // namespace detail

}  // namespace ct
