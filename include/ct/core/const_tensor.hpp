/// \file
/// ct::const_tensor<T>: a tensor whose elements cannot be written through it.
///
/// What ct::wrap gives for a `const T*` (read-only foreign memory: a constant table, a
/// read-only mapping of a model file). It reads like a tensor<T> — shape, strides, element
/// access by value or const reference, the same views — and is an operand of expressions,
/// of ct::matmul and of ct::encode, but there is no way to write through it: ct::eval,
/// ct::matmul's destination, assign and fill take a tensor<T>, and passing a const_tensor
/// there is a compile error. clone() makes a writable copy. A tensor<T> converts to a
/// const_tensor<T> implicitly (a read-only view of the same elements), never the other way.
#pragma once
#include <utility>

#include "ct/core/tensor.hpp"

namespace ct {

template <element T>
class const_tensor;

namespace detail {
/// ct's own read access to the elements, as a tensor<T> for code that only reads it (the
/// expression leaves, the matmul and encode inputs). Not for users: writing through it is
/// what const_tensor exists to prevent.
template <element T>
const tensor<T>& read_only_elements(const const_tensor<T>& t) noexcept;
}  // namespace detail

template <element T>
class const_tensor {
 public:
  /// The element type.
  using value_type = T;

  /// An empty one-dimensional tensor of extent 0.
  const_tensor() = default;
  /// A read-only view of t's elements (shares them, like any copy of a tensor).
  const_tensor(tensor<T> t) noexcept : t_(std::move(t)) {}  // NOLINT(google-explicit-constructor): like span<const T>

  /// Number of axes (0 for a scalar).
  int rank() const noexcept { return t_.rank(); }
  /// The extent of every axis.
  const dims& shape() const noexcept { return t_.shape(); }
  /// The extent of one axis (negative counts from the end); ct::axis_error when out of range.
  index_t shape(int axis) const { return t_.shape(axis); }
  /// Strides in elements; 0 along broadcast axes.
  const dims& strides() const noexcept { return t_.strides(); }
  /// Number of elements.
  index_t size() const noexcept { return t_.size(); }
  /// Address of element (0, …, 0), read-only.
  const T* data() const noexcept { return t_.data(); }
  /// True when the elements are shared storage; false for ct::wrap views.
  bool owns_storage() const noexcept { return t_.owns_storage(); }
  /// True when elements are laid out in row-major order without gaps.
  bool is_contiguous() const noexcept { return t_.is_contiguous(); }

  /// Element access (read-only); checked in debug builds, like tensor's.
  template <class... I>
    requires(std::is_integral_v<I> && ...)
  const T& operator()(I... idx) const {
    return t_(idx...);
  }
  /// Element access, always bounds-checked (ct::index_error).
  template <class... I>
    requires(std::is_integral_v<I> && ...)
  const T& at(I... idx) const {
    return t_.at(idx...);
  }
  /// The element of a one-element tensor.
  T item() const { return t_.item(); }

  // ---- views (read-only, share the elements; the same rules and errors as tensor's) ----
  const_tensor slice(int axis, std::optional<index_t> start, std::optional<index_t> stop, index_t step = 1) const {
    return t_.slice(axis, start, stop, step);
  }
  const_tensor slice(std::initializer_list<range> ranges) const { return t_.slice(ranges); }
  const_tensor select(int axis, index_t i) const { return t_.select(axis, i); }
  const_tensor permute(const dims& order) const { return t_.permute(order); }
  const_tensor transpose() const { return t_.transpose(); }
  const_tensor transpose(int axis0, int axis1) const { return t_.transpose(axis0, axis1); }
  const_tensor reshape(const dims& new_shape) const { return t_.reshape(new_shape); }
  const_tensor broadcast_to(const dims& target) const { return t_.broadcast_to(target); }
  const_tensor squeeze() const { return t_.squeeze(); }
  const_tensor squeeze(int axis) const { return t_.squeeze(axis); }
  const_tensor unsqueeze(int axis) const { return t_.unsqueeze(axis); }

  // ---- copies ----
  /// This tensor if already row-major contiguous, else a contiguous (read-only) copy.
  const_tensor contiguous() const { return t_.contiguous(); }
  /// A new, writable row-major tensor with a copy of the elements.
  tensor<T> clone() const { return t_.clone(); }

 private:
  friend const tensor<T>& detail::read_only_elements<T>(const const_tensor<T>&) noexcept;
  tensor<T> t_;
};

namespace detail {
template <element T>
const tensor<T>& read_only_elements(const const_tensor<T>& t) noexcept {
  return t.t_;
}

template <class X>
struct is_const_tensor : std::false_type {};
template <class T>
struct is_const_tensor<const_tensor<T>> : std::true_type {};
template <class X>
inline constexpr bool is_const_tensor_v = is_const_tensor<std::remove_cvref_t<X>>::value;

template <class X>
inline constexpr bool is_plain_tensor_v = false;
template <class T>
inline constexpr bool is_plain_tensor_v<tensor<T>> = true;
/// A tensor or a const_tensor: something ct can read elements from.
template <class X>
concept readable_tensor = is_plain_tensor_v<std::remove_cvref_t<X>> || is_const_tensor_v<X>;

/// A tensor or const_tensor as the tensor<T> ct reads it through (operands only).
template <element T>
const tensor<T>& readable(const tensor<T>& t) noexcept {
  return t;
}
template <element T>
const tensor<T>& readable(const const_tensor<T>& t) noexcept {
  return read_only_elements(t);
}
}  // namespace detail

/// A read-only non-owning tensor over caller memory (no copy), for `const T*`: the same
/// rules as ct::wrap(T*, …) — strides in elements, the memory valid while the tensor or
/// anything using it is alive — and no way to write through the result.
template <element T>
const_tensor<T> wrap(const T* ptr, const dims& shape, const dims& strides) {
  // The only const_cast of ct's public API: the result gives no access that writes.
  return wrap(const_cast<T*>(ptr), shape, strides);
}
/// The same with row-major strides.
template <element T>
const_tensor<T> wrap(const T* ptr, const dims& shape) {
  return wrap(ptr, shape, row_major_strides(shape));
}

}  // namespace ct
