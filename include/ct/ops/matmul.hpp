/// \file
/// Matrix products with NumPy's matmul semantics, and ct::dot.
///
/// ```
/// ct::tensor<T> ct::matmul(a, b)        a new row-major tensor holding a @ b
/// void          ct::matmul(a, b, out)   writes a @ b into an existing tensor or view
/// T             ct::dot(x, y)           the scalar product of two vectors
/// ```
///
/// T is a floating type (float, double, bfloat16, float16) or int32 / int64, the same for every
/// operand (mixing element types does not compile). bfloat16 and float16 products accumulate in
/// float32 and round each result element once. Shapes follow numpy.matmul: a 1-D left operand is a row vector and a
/// 1-D right operand a column vector (the added axis is dropped from the result), operands of
/// rank > 2 are stacks of matrices whose leading (batch) axes broadcast against each other.
/// Operands and destination may be any strided view (transposed, sliced, wrapped).
///
/// Scheduling (docs/matmul.md, CONTRACT §4): matrix and batched products have one group per
/// output row (batch-then-row order), matrix-vector and vector-matrix products one group per
/// output element, dot products one group. Every output element is accumulated by one
/// callback in an order fixed by the shapes, so results are bitwise identical under any
/// executor and partition (for a given backend and FMA policy).
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "ct/core/const_tensor.hpp"
#include "ct/core/dims.hpp"
#include "ct/core/error.hpp"
#include "ct/core/storage.hpp"
#include "ct/core/tensor.hpp"
#include "ct/exec/parallel_for.hpp"
#include "ct/exec/settings.hpp"
#include "ct/select/hooks.hpp"

namespace ct {

/// The element types the matmul family accepts: the floating types (bfloat16 and float16
/// accumulate in float32 and round the result once) and 32- and 64-bit integers.
template <class T>
concept matmul_element = is_floating_element_v<T> || (is_integer_element_v<T> && sizeof(T) >= 4);

namespace detail::mm {

enum class product_kind { matrix, matrix_vector, vector_matrix, vector_vector };

/// Everything matmul needs to know about one call, computed (and validated) up front.
struct plan {
  product_kind kind = product_kind::matrix;
  index_t m = 1, n = 1, k = 0;
  dims batch;          // broadcast batch shape
  index_t batches = 1;
  dims result;         // full result shape
};

inline std::string shapes_str(const dims& a, const dims& b) { return a.str() + " and " + b.str(); }

inline plan make_plan(const char* op, const dims& as, const dims& bs) {
  plan p;
  const int ra = as.size(), rb = bs.size();
  if (ra == 0 || rb == 0)
    throw shape_error(std::string("ct::") + op + ": operands must have rank >= 1, got shapes " +
                      shapes_str(as, bs));
  const index_t ka = as[ra - 1];
  const index_t kb = rb == 1 ? bs[0] : bs[rb - 2];
  if (ka != kb)
    throw shape_error(std::string("ct::") + op + ": inner dimensions differ for shapes " + shapes_str(as, bs) +
                      " (" + std::to_string(ka) + " != " + std::to_string(kb) + ")");
  p.k = ka;
  dims ab, bb;  // batch shapes
  for (int i = 0; i + 2 < ra; ++i) ab.push_back(as[i]);
  for (int i = 0; i + 2 < rb; ++i) bb.push_back(bs[i]);
  {
    int r = std::max(ab.size(), bb.size());
    p.batch = dims::filled(r, 1);
    for (int i = 0; i < r; ++i) {
      index_t ea = i < r - ab.size() ? 1 : ab[i - (r - ab.size())];
      index_t eb = i < r - bb.size() ? 1 : bb[i - (r - bb.size())];
      if (ea != eb && ea != 1 && eb != 1)
        throw shape_error(std::string("ct::") + op + ": batch dimensions of shapes " + shapes_str(as, bs) +
                          " do not broadcast");
      p.batch[i] = ea == 1 ? eb : ea;
    }
  }
  p.batches = element_count(p.batch);
  p.result = p.batch;
  if (ra >= 2) p.m = as[ra - 2];
  if (rb >= 2) p.n = bs[rb - 1];
  if (ra >= 2) p.result.push_back(p.m);
  if (rb >= 2) p.result.push_back(p.n);
  element_count(p.result);
  p.kind = ra >= 2 ? (rb >= 2 ? product_kind::matrix : product_kind::matrix_vector)
                   : (rb >= 2 ? product_kind::vector_matrix : product_kind::vector_vector);
  return p;
}

/// Validates the destination, snapshots inputs it overlaps, and schedules the product
/// (compiled in src/matmul/run.cpp for every matmul_element type).
template <class T>
void run(const char* op, const plan& p, tensor<T> a, tensor<T> b, const tensor<T>& c);
/// The dot product of two validated vectors, as one group.
template <class T>
T dot_call(const tensor<T>& x, const tensor<T>& y);

/// The destination checks of every product, ct's own and selected ones alike: the result
/// shape, then no elements sharing memory (broadcast or overlapping strides), which would make
/// several groups write the same element.
inline void check_destination(const char* op, const plan& p, const dims& as, const dims& bs, const dims& cs,
                              const dims& cstrides) {
  if (cs != p.result)
    throw shape_error(std::string("ct::") + op + ": destination of shape " + cs.str() +
                      " does not match the result shape " + p.result.str() + " of " + shapes_str(as, bs));
  if (!elements_distinct(cs, cstrides))
    throw shape_error(std::string("ct::") + op + ": destination of shape " + cs.str() + " and strides " +
                      cstrides.str() + " repeats elements (a broadcast or overlapping view)");
}

/// A validated product: asks the selectors (ct/select/selector.hpp) first when any may
/// exist, then runs ct's own implementation — or, for element types ct has no product for,
/// throws ct::unsupported_operation.
template <class A, class B, class C>
void dispatch(const plan& p, const tensor<A>& a, const tensor<B>& b, const tensor<C>& out) {
  constexpr bool ours = std::is_same_v<A, B> && std::is_same_v<B, C> && matmul_element<A>;
  if (!ours || selectors_possible()) {
    check_destination("matmul", p, a.shape(), b.shape(), out.shape(), out.strides());
    if (run_selected_product(operation::matmul, "matmul", view_of(a), view_of(b), view_of(out), out.data(), !ours))
      return;
  }
  if constexpr (ours) {
    selection_off own;  // ct calls made by ct's own implementation are not routed
    run<A>("matmul", p, a, b, out);
  }
}

}  // namespace detail::mm

/// Writes a @ b (numpy.matmul semantics) into out, whose shape must be exactly the result
/// shape; out may be any strided view with distinct elements, and may overlap a or b (an
/// overlapping input is copied first). Throws ct::shape_error, naming the shapes, before any
/// work when the shapes do not fit. If an error occurs while computing (an executor or
/// allocation failure), out may be left partly written. ct computes products whose three
/// element types are the same ct::matmul_element; any other combination (mixed types, int8, …)
/// runs only through an operation selector (ct/select/selector.hpp) and is a
/// ct::unsupported_operation, naming the types, when none accepts it.
template <element A, element B, element C>
void matmul(const tensor<A>& a, const tensor<B>& b, const tensor<C>& out) {
  const detail::mm::plan p = detail::mm::make_plan("matmul", a.shape(), b.shape());
  detail::mm::dispatch(p, a, b, out);
}

/// a @ b (numpy.matmul semantics) as a new row-major tensor. Two vectors give a rank-0
/// tensor; use ct::dot for the plain value. Operands of different element types need the
/// destination overload (its type is the result type).
template <element T>
tensor<T> matmul(const tensor<T>& a, const tensor<T>& b) {
  const detail::mm::plan p = detail::mm::make_plan("matmul", a.shape(), b.shape());
  tensor<T> out(p.result);
  detail::mm::dispatch(p, a, b, out);
  return out;
}

/// Read-only operands (ct::const_tensor, e.g. ct::wrap of a const pointer) are inputs like
/// tensors; the destination must be a writable tensor.
template <class X, class Y, element C>
  requires(detail::is_const_tensor_v<X> || detail::is_const_tensor_v<Y>) && detail::readable_tensor<X> &&
          detail::readable_tensor<Y>
void matmul(const X& a, const Y& b, const tensor<C>& out) {
  matmul(detail::readable(a), detail::readable(b), out);
}
/// The same as a new tensor.
template <class X, class Y>
  requires(detail::is_const_tensor_v<X> || detail::is_const_tensor_v<Y>) && detail::readable_tensor<X> &&
          detail::readable_tensor<Y>
auto matmul(const X& a, const Y& b) {
  return matmul(detail::readable(a), detail::readable(b));
}

/// The scalar product of two vectors of equal length (one group: always computed on the
/// calling thread, in the fixed lane order described in docs/matmul.md). Selectors for
/// operation::dot are asked first; element types ct has no product for need one
/// (ct::unsupported_operation otherwise).
template <element T>
T dot(const tensor<T>& x, const tensor<T>& y) {
  if (x.rank() != 1 || y.rank() != 1 || x.shape()[0] != y.shape()[0])
    throw shape_error("ct::dot: needs two vectors of equal length, got shapes " + x.shape().str() + " and " +
                      y.shape().str());
  constexpr bool ours = matmul_element<T>;
  if (!ours || detail::selectors_possible()) {
    T result{};
    operand_view scalar;
    scalar.type = dtype_of<T>();
    if (detail::run_selected_product(operation::dot, "dot", detail::view_of(x), detail::view_of(y), scalar, &result, !ours))
      return result;
  }
  if constexpr (ours) {
    detail::selection_off own;
    return detail::mm::dot_call(x, y);
  } else {
    __builtin_unreachable();  // run_selected_product threw
  }
}

/// dot of read-only operands (ct::const_tensor) as of tensors.
template <class X, class Y>
  requires(detail::is_const_tensor_v<X> || detail::is_const_tensor_v<Y>) && detail::readable_tensor<X> &&
          detail::readable_tensor<Y>
auto dot(const X& x, const Y& y) {
  return dot(detail::readable(x), detail::readable(y));
}

}  // namespace ct
