/// \file
/// Reductions: sum, prod, mean, max, min, argmax, argmin, logsumexp, all, any — over all
/// axes, one axis or several, optionally keeping the reduced axes.
///
/// Evaluated on their own, reductions drop the reduced axes unless keepdims is set. Inside a
/// larger expression they always broadcast back along the reduced axes (keep-dims semantics),
/// so x - ct::max(x, -1) is a valid fused expression. All reducers in one expression must
/// reduce the same axes of the expression's shape.
#pragma once
#include <algorithm>

#include "ct/expr/functions.hpp"

namespace ct {

namespace detail {

// Sums and products of bool and of the 8- and 16-bit integers count in int64 (their own
// range is too small for a sum); int32 and int64 keep their type, floats theirs.
template <class T>
inline constexpr bool sums_in_int64_v = std::is_same_v<T, bool> || (is_integer_element_v<T> && sizeof(T) < 4);

template <reduce_op Op, class T>
using reduce_result_t = std::conditional_t<
    Op == reduce_op::argmax || Op == reduce_op::argmin, std::int64_t,
    std::conditional_t<Op == reduce_op::all || Op == reduce_op::any, bool,
                       std::conditional_t<(Op == reduce_op::sum || Op == reduce_op::prod) && sums_in_int64_v<T>,
                                          std::int64_t, T>>>;

/// Normalised, sorted, distinct axes of `shape` (empty list = every axis).
inline dims normalize_axes(const dims& axes, const dims& shape, const char* op, bool all_if_empty) {
  dims out;
  if (axes.empty() && all_if_empty) {
    for (int a = 0; a < shape.size(); ++a) out.push_back(a);
    return out;
  }
  for (index_t a : axes) {
    int n = normalize_axis(a, shape, op);
    if (std::find(out.begin(), out.end(), n) != out.end())
      throw axis_error(std::string("ct::") + op + ": axis " + std::to_string(a) + " repeated in " + axes.str());
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline dims keep_shape(const dims& shape, const dims& axes) {
  dims s = shape;
  for (index_t a : axes) s[static_cast<int>(a)] = 1;
  return s;
}

inline dims drop_shape(const dims& shape, const dims& axes) {
  dims s;
  for (int a = 0; a < shape.size(); ++a)
    if (std::find(axes.begin(), axes.end(), a) == axes.end()) s.push_back(shape[a]);
  return s;
}

/// One reducer over `axes` of its argument (keep-dims shape).
template <reduce_op Op, class A>
struct reduce_node {
  using value_type = reduce_result_t<Op, typename A::value_type>;
  static constexpr bool is_ct_expression = true;
  reduce_node(A a, dims ax) : arg(std::move(a)), axes(std::move(ax)), shape_(keep_shape(arg.shape(), axes)) {}
  const dims& shape() const noexcept { return shape_; }
  const dims& full_shape() const noexcept { return arg.full_shape(); }
  int lower(program& p) const {
    int a = arg.lower(p);
    return p.emit_reduce(Op, compute_dtype_of<value_type>(), a, arg.shape(), axes, reduce_name(Op));
  }
  A arg;
  dims axes;
  dims shape_;
};

/// What the public reduction functions return: an expression over the reduced axes that,
/// evaluated at top level, drops those axes unless keepdims.
template <class E>
struct reduction {
  using value_type = typename E::value_type;
  static constexpr bool is_ct_expression = true;
  E expr;
  dims axes;
  bool keepdims;
  const dims& shape() const noexcept { return expr.shape(); }
  const dims& full_shape() const noexcept { return expr.full_shape(); }
  int lower(program& p) const { return expr.lower(p); }
  dims result_shape() const { return keepdims ? expr.shape() : drop_shape(expr.shape(), axes); }
};

template <class E>
reduction<E> make_reduction(E e, dims axes, bool keepdims) {
  return reduction<E>{std::move(e), std::move(axes), keepdims};
}

template <reduce_op Op, class X>
auto reduce(const X& x, const dims& axes, bool keepdims, bool all_if_empty) {
  auto node = to_node(x);
  using V = value_t<X>;
  static_assert(!((Op == reduce_op::all || Op == reduce_op::any) && !std::is_same_v<V, bool>),
                "ct::all/ct::any need a bool operand (compare first, e.g. ct::any(x > 0))");
  static_assert(!((Op != reduce_op::all && Op != reduce_op::any && Op != reduce_op::sum) && std::is_same_v<V, bool>),
                "this reduction is not defined for bool; cast first");
  dims ax = normalize_axes(axes, node.shape(), reduce_name(Op), all_if_empty);
  return make_reduction(reduce_node<Op, decltype(node)>(std::move(node), ax), ax, keepdims);
}

/// Number of elements the reduced axes span.
inline index_t reduced_count(const dims& shape, const dims& axes) {
  index_t n = 1;
  for (index_t a : axes) n *= shape[static_cast<int>(a)];
  return n;
}

}  // namespace detail

#define CT_REDUCTION(fname, Op)                                                                   \
  template <detail::operand X>                                                                    \
  auto fname(const X& x) {                                                                        \
    return detail::reduce<detail::reduce_op::Op>(x, dims{}, false, true);                         \
  }                                                                                               \
  template <detail::operand X, std::integral I>                                                   \
  auto fname(const X& x, I axis, bool keepdims = false) {                                         \
    return detail::reduce<detail::reduce_op::Op>(x, dims{static_cast<index_t>(axis)}, keepdims, false); \
  }                                                                                               \
  template <detail::operand X>                                                                    \
  auto fname(const X& x, const dims& axes, bool keepdims = false) {                               \
    return detail::reduce<detail::reduce_op::Op>(x, axes, keepdims, true);                        \
  }
///@{
/// \brief The sum over every axis, one axis, or a list of axes (an empty list: every axis).
///
/// bool and the 8- and 16-bit integers sum in int64; other types keep their own. Over empty
/// axes the sum is 0.
/// keepdims keeps the reduced axes as extent 1 when the reduction is evaluated on its own; inside
/// a larger expression it always broadcasts back along them. ct::axis_error for an axis out of
/// range or repeated.
CT_REDUCTION(sum, sum)
///@}
///@{
/// \brief The product over every axis, one axis, or a list of axes (an empty list: every axis).
///
/// Not for bool; the 8- and 16-bit integers multiply in int64. Over empty axes the product is 1.
/// keepdims keeps the reduced axes as extent 1 when the reduction is evaluated on its own; inside
/// a larger expression it always broadcasts back along them. ct::axis_error for an axis out of
/// range or repeated.
CT_REDUCTION(prod, prod)
///@}
///@{
/// \brief The maximum over every axis, one axis, or a list of axes (an empty list: every axis).
///
/// NaN where the reduced elements hold one. Over empty axes: ct::empty_reduction_error. For the
/// elementwise maximum of two operands see ct::maximum.
/// keepdims keeps the reduced axes as extent 1 when the reduction is evaluated on its own; inside
/// a larger expression it always broadcasts back along them. ct::axis_error for an axis out of
/// range or repeated.
CT_REDUCTION(max, max)
///@}
///@{
/// \brief The minimum over every axis, one axis, or a list of axes (an empty list: every axis).
///
/// NaN where the reduced elements hold one. Over empty axes: ct::empty_reduction_error. For the
/// elementwise minimum of two operands see ct::minimum.
/// keepdims keeps the reduced axes as extent 1 when the reduction is evaluated on its own; inside
/// a larger expression it always broadcasts back along them. ct::axis_error for an axis out of
/// range or repeated.
CT_REDUCTION(min, min)
///@}
///@{
/// \brief Whether every element is true, over every axis, one axis, or a list of axes (an empty list:
/// every axis).
///
/// Needs a bool operand: compare first, as in ct::all(x > 0). Over empty axes: true.
/// keepdims keeps the reduced axes as extent 1 when the reduction is evaluated on its own; inside
/// a larger expression it always broadcasts back along them. ct::axis_error for an axis out of
/// range or repeated.
CT_REDUCTION(all, all)
///@}
///@{
/// \brief Whether some element is true, over every axis, one axis, or a list of axes (an empty list:
/// every axis).
///
/// Needs a bool operand: compare first, as in ct::any(x > 0). Over empty axes: false.
/// keepdims keeps the reduced axes as extent 1 when the reduction is evaluated on its own; inside
/// a larger expression it always broadcasts back along them. ct::axis_error for an axis out of
/// range or repeated.
CT_REDUCTION(any, any)
///@}
// argmax/argmin: int64 positions in the reduced axes (row-major over them when several);
// the first position wins ties, and a NaN counts as the extreme (the first NaN wins).
///@{
/// \brief The int64 position of the maximum over every axis, one axis, or a list of axes (an empty
/// list: every axis).
///
/// Positions count row-major over the reduced axes when there are several; the first position
/// wins ties, and the first NaN counts as the maximum. Over empty axes:
/// ct::empty_reduction_error.
/// keepdims keeps the reduced axes as extent 1 when the reduction is evaluated on its own; inside
/// a larger expression it always broadcasts back along them. ct::axis_error for an axis out of
/// range or repeated.
CT_REDUCTION(argmax, argmax)
///@}
///@{
/// \brief The int64 position of the minimum over every axis, one axis, or a list of axes (an empty
/// list: every axis).
///
/// Positions count row-major over the reduced axes when there are several; the first position
/// wins ties, and the first NaN counts as the minimum. Over empty axes:
/// ct::empty_reduction_error.
/// keepdims keeps the reduced axes as extent 1 when the reduction is evaluated on its own; inside
/// a larger expression it always broadcasts back along them. ct::axis_error for an axis out of
/// range or repeated.
CT_REDUCTION(argmin, argmin)
///@}
#undef CT_REDUCTION

/// Arithmetic mean (floating point only): sum / count. Over empty axes it is NaN (0/0).
template <detail::operand X>
auto mean(const X& x, const dims& axes, bool keepdims = false) {
  using T = detail::value_t<X>;
  static_assert(is_floating_element_v<T>, "ct::mean needs floating-point operands; cast first");
  auto s = sum(x, axes, true);
  dims ax = s.axes;
  const index_t n = detail::reduced_count(s.expr.arg.shape(), ax);
  // sum / n, with the sum moved in rather than copied (operator/ takes its operands by const&);
  // n stays exact for the 16-bit floats too (they compute in float)
  auto e = detail::make_fn(detail::binary_fn<detail::binary_op::div>{}, std::move(s.expr),
                           detail::constant<T>{static_cast<compute_type_t<T>>(n)});
  return detail::make_reduction(std::move(e), ax, keepdims);
}
/// The mean over one axis.
template <detail::operand X, std::integral I>
auto mean(const X& x, I axis, bool keepdims = false) {
  return mean(x, dims{static_cast<index_t>(axis)}, keepdims);
}
/// The mean over every axis.
template <detail::operand X>
auto mean(const X& x) {
  return mean(x, dims{}, false);
}

/// log(sum(exp(x))) computed stably and reading x once (the online normalizer): each of 32
/// lanes keeps a reference m (one of its elements, moved only to an element more than 8 above
/// it) and the sum s of exp(x - m), rescaled when m moves; the lanes are combined in double as
/// M + log(sum of s * exp(m - M)). A reduction of its own: inside a
/// larger expression (x - logsumexp(x, -1)) it is one pass like sum or max. Rows of -inf give
/// -inf, rows holding +inf give +inf, NaN gives NaN. Over empty axes: ct::empty_reduction_error
/// (like max, it has no value there). keepdims and the axis rules as for the other reductions.
template <detail::operand X>
auto logsumexp(const X& x, const dims& axes, bool keepdims = false) {
  static_assert(is_floating_element_v<detail::value_t<X>>, "ct::logsumexp needs floating-point operands");
  return detail::reduce<detail::reduce_op::logsumexp>(x, axes, keepdims, true);
}
/// logsumexp over one axis.
template <detail::operand X, std::integral I>
auto logsumexp(const X& x, I axis, bool keepdims = false) {
  return logsumexp(x, dims{static_cast<index_t>(axis)}, keepdims);
}
/// logsumexp over every axis.
template <detail::operand X>
auto logsumexp(const X& x) {
  return logsumexp(x, dims{}, false);
}

}  // namespace ct
