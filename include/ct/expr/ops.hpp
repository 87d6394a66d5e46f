// ct/expr/ops.hpp — the operations of expressions: ONE table per family, and what is derived.
//
// Each family is a list of rows. The enumerations, the names in messages, the traits the
// evaluator asks (float-only, computed exactly by IEEE operations, identities) and the
// switches over the operations (ct::detail::visit_unary_op, …) are generated from the rows,
// so adding an operation is one row here, its public function (generated for unary rows),
// and its kernel in each backend (a missing kernel is a compile error there).
#pragma once
#include <cstdint>
#include <type_traits>

namespace ct::detail {

// ---- unary ------------------------------------------------------------------------------
// X(op, public function name, float_only, ieee_exact)
// float_only: integer operands are rejected at compile time.
// ieee_exact: the result is a fixed composition of correctly rounded IEEE operations, so the
//   scalar and SIMD backends give the same bits (the evaluator computes one-element values of
//   these inline instead of calling a kernel). Transcendentals are not: their backends differ.
// Definitions (real x): negative -x; abs |x|; sqrt; rsqrt 1/sqrt(x); exp; expm1 e^x-1; log;
// log1p log(1+x); sin; cos; tanh; sigmoid 1/(1+e^-x); relu x > 0 ? x : +0 (NaN stays NaN, relu(-0) = +0);
// gelu (tanh form) 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3))); silu x*sigmoid(x); square x*x;
// reciprocal 1/x; erf (2/sqrt(pi)) * integral of e^-t^2 over [0, x]; erfc 1 - erf(x).
// clang-format off
#define CT_UNARY_OPS(X)                          \
  X(neg,        negative,   false, true)         \
  X(abs,        abs,        false, true)         \
  X(sqrt,       sqrt,       true,  true)         \
  X(rsqrt,      rsqrt,      true,  true)         \
  X(exp,        exp,        true,  false)        \
  X(expm1,      expm1,      true,  false)        \
  X(log,        log,        true,  false)        \
  X(log1p,      log1p,      true,  false)        \
  X(sin,        sin,        true,  false)        \
  X(cos,        cos,        true,  false)        \
  X(tanh,       tanh,       true,  false)        \
  X(sigmoid,    sigmoid,    true,  false)        \
  X(relu,       relu,       true,  true)         \
  X(gelu,       gelu,       true,  false)        \
  X(silu,       silu,       true,  false)        \
  X(square,     square,     false, true)         \
  X(reciprocal, reciprocal, true,  true)         \
  X(erf,        erf,        true,  false)        \
  X(erfc,       erfc,       true,  false)
// clang-format on

// ---- binary -----------------------------------------------------------------------------
// X(op, name in messages, float_only, vectorised)
// min/max propagate NaN (like numpy.minimum/maximum; a NaN operand wins, a's first; ties keep
// a); pow follows std::pow and has no SIMD kernel (vectorised false).
// clang-format off
#define CT_BINARY_OPS(X)                         \
  X(add, "operator+", false, true)               \
  X(sub, "operator-", false, true)               \
  X(mul, "operator*", false, true)               \
  X(div, "operator/", false, true)               \
  X(min, "minimum",   false, true)               \
  X(max, "maximum",   false, true)               \
  X(pow, "pow",       true,  false)
// clang-format on

// ---- comparisons (results are bool) -------------------------------------------------------
// X(op, name in messages)
#define CT_COMPARE_OPS(X) \
  X(eq, "operator==")     \
  X(ne, "operator!=")     \
  X(lt, "operator<")      \
  X(le, "operator<=")     \
  X(gt, "operator>")      \
  X(ge, "operator>=")

// ---- reducers ---------------------------------------------------------------------------
// X(op, name, arg_reduction)
// arg_reduction: the result is the int64 position of the extreme (first index wins ties).
// clang-format off
#define CT_REDUCE_OPS(X)                         \
  X(sum,    "sum",    false)                     \
  X(prod,   "prod",   false)                     \
  X(max,    "max",    false)                     \
  X(min,    "min",    false)                     \
  X(argmax, "argmax", true)                      \
  X(argmin, "argmin", true)                      \
  X(all,    "all",    false)                     \
  X(any,    "any",    false)                     \
  X(logsumexp, "logsumexp", false)
// clang-format on

#define CT_OP_ENUM_ROW(op, ...) op,
enum class unary_op : std::uint8_t { CT_UNARY_OPS(CT_OP_ENUM_ROW) };
enum class binary_op : std::uint8_t { CT_BINARY_OPS(CT_OP_ENUM_ROW) };
enum class compare_op : std::uint8_t { CT_COMPARE_OPS(CT_OP_ENUM_ROW) };
enum class reduce_op : std::uint8_t { CT_REDUCE_OPS(CT_OP_ENUM_ROW) };
#undef CT_OP_ENUM_ROW

/// Calls f(std::integral_constant<unary_op, op>{}) for the runtime op (the one switch).
template <class F>
constexpr decltype(auto) visit_unary_op(unary_op op, F&& f) {
  switch (op) {
#define CT_OP_CASE(o, ...) \
  case unary_op::o:        \
    return f(std::integral_constant<unary_op, unary_op::o>{});
    CT_UNARY_OPS(CT_OP_CASE)
#undef CT_OP_CASE
  }
  __builtin_unreachable();  // every enumerator has a case (-Wswitch)
}
template <class F>
constexpr decltype(auto) visit_binary_op(binary_op op, F&& f) {
  switch (op) {
#define CT_OP_CASE(o, ...) \
  case binary_op::o:       \
    return f(std::integral_constant<binary_op, binary_op::o>{});
    CT_BINARY_OPS(CT_OP_CASE)
#undef CT_OP_CASE
  }
  __builtin_unreachable();
}

// Traits, constexpr so switches and checks fold at compile time.
constexpr const char* unary_name(unary_op op) noexcept {
  switch (op) {
#define CT_OP_CASE(o, fn, ...) \
  case unary_op::o:            \
    return #fn;
    CT_UNARY_OPS(CT_OP_CASE)
#undef CT_OP_CASE
  }
  __builtin_unreachable();
}
constexpr bool float_only(unary_op op) noexcept {
  switch (op) {
#define CT_OP_CASE(o, fn, fo, ...) \
  case unary_op::o:                \
    return fo;
    CT_UNARY_OPS(CT_OP_CASE)
#undef CT_OP_CASE
  }
  __builtin_unreachable();
}
constexpr bool ieee_exact(unary_op op) noexcept {
  switch (op) {
#define CT_OP_CASE(o, fn, fo, exact) \
  case unary_op::o:                  \
    return exact;
    CT_UNARY_OPS(CT_OP_CASE)
#undef CT_OP_CASE
  }
  __builtin_unreachable();
}
constexpr const char* binary_name(binary_op op) noexcept {
  switch (op) {
#define CT_OP_CASE(o, name, ...) \
  case binary_op::o:             \
    return name;
    CT_BINARY_OPS(CT_OP_CASE)
#undef CT_OP_CASE
  }
  __builtin_unreachable();
}
constexpr bool float_only(binary_op op) noexcept {
  switch (op) {
#define CT_OP_CASE(o, name, fo, vec) \
  case binary_op::o:                 \
    return fo;
    CT_BINARY_OPS(CT_OP_CASE)
#undef CT_OP_CASE
  }
  __builtin_unreachable();
}
constexpr bool vectorised(binary_op op) noexcept {
  switch (op) {
#define CT_OP_CASE(o, name, fo, vec) \
  case binary_op::o:                 \
    return vec;
    CT_BINARY_OPS(CT_OP_CASE)
#undef CT_OP_CASE
  }
  __builtin_unreachable();
}
constexpr const char* compare_name(compare_op op) noexcept {
  switch (op) {
#define CT_OP_CASE(o, name) \
  case compare_op::o:       \
    return name;
    CT_COMPARE_OPS(CT_OP_CASE)
#undef CT_OP_CASE
  }
  __builtin_unreachable();
}
/// The user-facing name of a reducer, for error messages.
constexpr const char* reduce_name(reduce_op op) noexcept {
  switch (op) {
#define CT_OP_CASE(o, name, arg) \
  case reduce_op::o:             \
    return name;
    CT_REDUCE_OPS(CT_OP_CASE)
#undef CT_OP_CASE
  }
  __builtin_unreachable();
}
constexpr bool arg_reduction(reduce_op op) noexcept {
  switch (op) {
#define CT_OP_CASE(o, name, arg) \
  case reduce_op::o:             \
    return arg;
    CT_REDUCE_OPS(CT_OP_CASE)
#undef CT_OP_CASE
  }
  __builtin_unreachable();
}

}  // namespace ct::detail
