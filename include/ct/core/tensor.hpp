/// \file
/// The tensor type ct::tensor<T>: an n-dimensional, strided, reference-counted array.
///
/// A tensor is a handle: copying it shares the elements (like a NumPy array or a
/// std::shared_ptr), views (slice, permute, reshape, broadcast_to, …) share them too, and
/// clone()/contiguous() make real copies. Element access through a const handle still
/// yields mutable elements, as with std::span; constness of the handle protects its shape.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "ct/core/dims.hpp"
#include "ct/core/dtype.hpp"
#include "ct/core/error.hpp"
#include "ct/core/storage.hpp"
#include "ct/core/strided.hpp"

/// Bounds checking of t(i, j, …) is on in debug builds (NDEBUG undefined) and whenever
/// CT_CHECK_BOUNDS is defined; t.at(…) always checks.
#if !defined(NDEBUG) && !defined(CT_CHECK_BOUNDS)
#define CT_CHECK_BOUNDS 1
#endif

namespace ct {

/// One axis of a multi-axis slice, with Python semantics: omitted start/stop mean "from the
/// beginning"/"to the end" in the direction of step; negative values count from the end.
struct range {
  /// The first index taken; none: the first in the direction of step.
  std::optional<index_t> start{};
  /// The index the slice stops before; none: run to the end in the direction of step.
  std::optional<index_t> stop{};
  /// The distance between taken indices; negative walks backwards, 0 is an index_error.
  index_t step = 1;
};
/// The whole axis (same as range{}).
inline const range whole{};

template <element T>
class tensor;

namespace detail {
template <element T>
tensor<T> make_view(const tensor<T>& base, T* data, dims shape, dims strides);
/// Lazy expression nodes (ct/expr) mark themselves with is_ct_expression.
template <class E>
concept expression_node = requires { E::is_ct_expression; };
}  // namespace detail

/// An n-dimensional, strided array of T behind a reference-counted handle: copies and views
/// share the elements, clone() copies them (more in ct/core/tensor.hpp). Operations on tensors
/// build lazy expressions (ct/expr) that ct::eval or the converting constructor evaluates.
template <element T>
class tensor {
 public:
  /// The element type.
  using value_type = T;

  /// An empty one-dimensional tensor of extent 0.
  tensor() : shape_{0}, strides_{1} {}

  /// A new zero-filled, row-major tensor of the given shape (ct::shape_error for a negative
  /// extent or an element count that overflows).
  explicit tensor(const dims& shape) : shape_(shape), strides_(row_major_strides(shape)) {
    owner_ = detail::allocate_storage<T>(element_count(shape), &data_);
  }

  /// Evaluates a lazy expression into a new tensor (ct::eval(e)); defined in ct/ops/eval.hpp.
  template <class E>
    requires detail::expression_node<E>
  tensor(const E& e);  // NOLINT(google-explicit-constructor): `tensor<float> t = expr;` by design

  /// Number of axes (0 for a scalar).
  int rank() const noexcept { return shape_.size(); }
  /// The extent of every axis.
  const dims& shape() const noexcept { return shape_; }
  /// The extent of one axis (negative counts from the end); ct::axis_error when out of range.
  index_t shape(int axis) const { return shape_[normalize_axis(axis, shape_, "tensor::shape")]; }
  /// Strides in elements (not bytes); 0 along broadcast axes.
  const dims& strides() const noexcept { return strides_; }
  /// Number of elements: the product of the extents.
  index_t size() const noexcept {
    index_t n = 1;
    for (index_t e : shape_) n *= e;
    return n;
  }
  /// Address of element (0, …, 0). Views point into the storage of their base.
  T* data() const noexcept { return data_; }
  /// True when the tensor owns (shares ownership of) its storage; false for ct::wrap views.
  bool owns_storage() const noexcept { return owner_ != nullptr; }
  /// True when elements are laid out in row-major order without gaps.
  bool is_contiguous() const noexcept {
    index_t expect = 1;
    for (int i = rank() - 1; i >= 0; --i) {
      if (shape_[i] != 1 && strides_[i] != expect) return false;
      expect *= shape_[i];
    }
    return true;
  }

  /// Element access; one index per axis, each in [0, extent). Checked in debug builds.
  template <class... I>
    requires(std::is_integral_v<I> && ...)
  T& operator()(I... idx) const {
#ifdef CT_CHECK_BOUNDS
    return at(idx...);
#else
    index_t off = 0;
    int a = 0;
    ((off += static_cast<index_t>(idx) * strides_[a++]), ...);
    return data_[off];
#endif
  }

  /// Element access, always bounds-checked (ct::index_error).
  template <class... I>
    requires(std::is_integral_v<I> && ...)
  T& at(I... idx) const {
    if (static_cast<int>(sizeof...(I)) != rank())
      throw index_error("ct::tensor::at: " + std::to_string(sizeof...(I)) +
                        " indices for a tensor of rank " + std::to_string(rank()));
    index_t off = 0;
    int a = 0;
    auto one = [&](index_t i) {
      if (i < 0 || i >= shape_[a])
        throw index_error("ct::tensor::at: index " + std::to_string(i) + " is out of range for axis " +
                          std::to_string(a) + " of shape " + shape_.str());
      off += i * strides_[a++];
    };
    (one(static_cast<index_t>(idx)), ...);
    return data_[off];
  }

  /// The element of a rank-0 tensor (or of a one-element tensor).
  T item() const {
    if (size() != 1)
      throw shape_error("ct::tensor::item: tensor of shape " + shape_.str() + " has " +
                        std::to_string(size()) + " elements, not 1");
    return *data_;
  }

  // ---- views (share storage) ----

  /// Python-style slice of one axis: start/stop clamp, negative values count from the end.
  tensor slice(int axis, std::optional<index_t> start, std::optional<index_t> stop,
               index_t step = 1) const {
    int a = normalize_axis(axis, shape_, "slice");
    if (step == 0) throw index_error("ct::slice: step must not be 0 (axis " + std::to_string(a) + ")");
    index_t n = shape_[a];
    auto clamp = [&](std::optional<index_t> v, index_t dflt) {
      if (!v) return dflt;
      index_t x = *v < 0 ? *v + n : *v;
      if (step > 0) return std::clamp<index_t>(x, 0, n);
      return std::clamp<index_t>(x, -1, n - 1);
    };
    index_t b = clamp(start, step > 0 ? 0 : n - 1);
    index_t e = clamp(stop, step > 0 ? n : -1);
    index_t len = step > 0 ? (e > b ? (e - b + step - 1) / step : 0)
                           : (b > e ? (b - e + (-step) - 1) / (-step) : 0);
    dims shp = shape_, str = strides_;
    shp[a] = len;
    str[a] = strides_[a] * step;
    T* d = len > 0 ? data_ + b * strides_[a] : data_;
    return detail::make_view(*this, d, shp, str);
  }

  /// Multi-axis slice: one ct::range per leading axis; axes not named are kept whole.
  tensor slice(std::initializer_list<range> ranges) const {
    if (static_cast<int>(ranges.size()) > rank())
      throw index_error("ct::slice: " + std::to_string(ranges.size()) + " ranges for a tensor of shape " +
                        shape_.str());
    tensor t = *this;
    int a = 0;
    for (const range& r : ranges) t = t.slice(a++, r.start, r.stop, r.step);
    return t;
  }

  /// The sub-tensor at index i of axis (negative counts from the end); drops that axis.
  tensor select(int axis, index_t i) const {
    int a = normalize_axis(axis, shape_, "select");
    index_t x = i < 0 ? i + shape_[a] : i;
    if (x < 0 || x >= shape_[a])
      throw index_error("ct::select: index " + std::to_string(i) + " is out of range for axis " +
                        std::to_string(a) + " of shape " + shape_.str());
    dims shp = shape_, str = strides_;
    shp.erase(a);
    str.erase(a);
    return detail::make_view(*this, data_ + x * strides_[a], shp, str);
  }

  /// Reorders the axes: result axis i is this tensor's axis order[i].
  tensor permute(const dims& order) const {
    if (order.size() != rank())
      throw axis_error("ct::permute: order " + order.str() + " does not match rank " + std::to_string(rank()));
    dims shp = dims::filled(rank(), 0), str = dims::filled(rank(), 0);
    unsigned seen = 0;
    for (int i = 0; i < rank(); ++i) {
      int a = normalize_axis(order[i], shape_, "permute");
      if (seen & (1u << a)) throw axis_error("ct::permute: axis repeated in order " + order.str());
      seen |= 1u << a;
      shp[i] = shape_[a];
      str[i] = strides_[a];
    }
    return detail::make_view(*this, data_, shp, str);
  }
  /// Reverses all axes (the matrix transpose for rank 2).
  tensor transpose() const {
    dims order;
    for (int i = rank() - 1; i >= 0; --i) order.push_back(i);
    return permute(order);
  }
  /// Swaps two axes.
  tensor transpose(int axis0, int axis1) const {
    int a = normalize_axis(axis0, shape_, "transpose"), b = normalize_axis(axis1, shape_, "transpose");
    dims order;
    for (int i = 0; i < rank(); ++i) order.push_back(i);
    std::swap(order[a], order[b]);
    return permute(order);
  }

  /// A view with a new shape (one extent may be -1). Throws shape_error when the element
  /// count differs or when the layout cannot be expressed without copying; in that case
  /// call contiguous().reshape(…), which copies.
  tensor reshape(const dims& new_shape) const {
    dims shp = new_shape;
    int infer = -1;
    index_t known = 1;
    for (int i = 0; i < shp.size(); ++i) {
      if (shp[i] == -1) {
        if (infer >= 0) throw shape_error("ct::reshape: more than one -1 in " + new_shape.str());
        infer = i;
      } else {
        if (shp[i] < 0) throw shape_error("ct::reshape: negative extent in " + new_shape.str());
        if (__builtin_mul_overflow(known, shp[i], &known))
          throw shape_error("ct::reshape: element count of " + new_shape.str() + " overflows index_t");
      }
    }
    if (infer >= 0) {
      if (known == 0 || size() % known != 0)
        throw shape_error("ct::reshape: cannot reshape " + shape_.str() + " into " + new_shape.str());
      shp[infer] = size() / known;
      known = size();
    }
    if (known != size())
      throw shape_error("ct::reshape: cannot reshape " + shape_.str() + " (" + std::to_string(size()) +
                        " elements) into " + new_shape.str());
    dims str;
    if (!view_strides(shp, str))
      throw shape_error("ct::reshape: a tensor of shape " + shape_.str() + " and strides " + strides_.str() +
                        " cannot be viewed as " + new_shape.str() + " without a copy; use contiguous().reshape()");
    return detail::make_view(*this, data_, shp, str);
  }

  /// A read view repeated along new or size-1 axes (stride 0), NumPy broadcasting rules.
  tensor broadcast_to(const dims& target) const {
    if (target.size() < rank())
      throw shape_error("ct::broadcast_to: cannot broadcast " + shape_.str() + " to " + target.str());
    dims str = dims::filled(target.size(), 0);
    int lead = target.size() - rank();
    for (int i = 0; i < rank(); ++i) {
      index_t t = target[lead + i];
      if (shape_[i] == t) str[lead + i] = strides_[i];
      else if (shape_[i] == 1) str[lead + i] = 0;
      else throw shape_error("ct::broadcast_to: cannot broadcast " + shape_.str() + " to " + target.str());
    }
    element_count(target);
    return detail::make_view(*this, data_, target, str);
  }

  /// Drops every axis of extent 1.
  tensor squeeze() const {
    dims shp, str;
    for (int i = 0; i < rank(); ++i)
      if (shape_[i] != 1) {
        shp.push_back(shape_[i]);
        str.push_back(strides_[i]);
      }
    return detail::make_view(*this, data_, shp, str);
  }
  /// Drops one axis, which must have extent 1.
  tensor squeeze(int axis) const {
    int a = normalize_axis(axis, shape_, "squeeze");
    if (shape_[a] != 1)
      throw shape_error("ct::squeeze: axis " + std::to_string(a) + " of shape " + shape_.str() + " is not 1");
    dims shp = shape_, str = strides_;
    shp.erase(a);
    str.erase(a);
    return detail::make_view(*this, data_, shp, str);
  }
  /// Inserts an axis of extent 1 at position axis in [-(rank+1), rank].
  tensor unsqueeze(int axis) const {
    int a = normalize_axis(axis, rank() + 1, "unsqueeze");
    dims shp = shape_, str = strides_;
    shp.insert(a, 1);
    str.insert(a, a < rank() ? strides_[a] * shape_[a] : 1);
    return detail::make_view(*this, data_, shp, str);
  }

  // ---- copies ----

  /// This tensor if already row-major contiguous, else a contiguous copy.
  tensor contiguous() const { return is_contiguous() ? *this : clone(); }
  /// A new row-major tensor with a copy of the elements.
  tensor clone() const {
    tensor out(shape_);
    out.assign(*this);
    return out;
  }
  /// Copies src into this tensor's elements; src broadcasts to this shape.
  void assign(const tensor& src) const {
    tensor s = src.shape() == shape_ ? src : src.broadcast_to(shape_);
    T* d = data_;
    const T* p = s.data();
    detail::for_each_row<2>(shape_, {strides_, s.strides()}, [&](auto off, index_t n, auto inner) {
      for (index_t i = 0; i < n; ++i) d[off[0] + i * inner[0]] = p[off[1] + i * inner[1]];
    });
  }
  /// Sets every element to value.
  void fill(T value) const {
    T* d = data_;
    detail::for_each_row<1>(shape_, {strides_}, [&](auto off, index_t n, auto inner) {
      for (index_t i = 0; i < n; ++i) d[off[0] + i * inner[0]] = value;
    });
  }

 private:
  template <element U>
  friend tensor<U> detail::make_view(const tensor<U>&, U*, dims, dims);
  /// ct::wrap sets up a tensor without storage of its own.
  template <element U>
  friend tensor<U> wrap(U*, const dims&, const dims&);

  // NumPy's no-copy reshape: match groups of old axes to groups of new axes with equal
  // element counts; each old group must be internally contiguous.
  bool view_strides(const dims& shp, dims& out) const {
    out = dims::filled(shp.size(), 0);
    if (size() == 0 || is_contiguous()) {
      out = row_major_strides(shp);
      return true;
    }
    dims os, ost;  // old shape/strides without extent-1 axes
    for (int i = 0; i < rank(); ++i)
      if (shape_[i] != 1) {
        os.push_back(shape_[i]);
        ost.push_back(strides_[i]);
      }
    int oi = 0, oj = 1, ni = 0, nj = 1;
    const int on = os.size(), nn = shp.size();
    while (ni < nn && oi < on) {
      index_t np = shp[ni], op = os[oi];
      while (np != op) {
        if (np < op) np *= shp[nj++];
        else op *= os[oj++];
      }
      for (int k = oi; k < oj - 1; ++k)
        if (ost[k] != os[k + 1] * ost[k + 1]) return false;
      out[nj - 1] = ost[oj - 1];
      for (int k = nj - 1; k > ni; --k) out[k - 1] = out[k] * shp[k];
      ni = nj++;
      oi = oj++;
    }
    for (int k = ni; k < nn; ++k) out[k] = 1;  // trailing extent-1 axes
    return true;
  }

  std::shared_ptr<void> owner_;
  T* data_ = nullptr;
  dims shape_;
  dims strides_;
};

namespace detail {
template <element T>
tensor<T> make_view(const tensor<T>& base, T* data, dims shape, dims strides) {
  tensor<T> v = base;
  v.data_ = data;
  v.shape_ = shape;
  v.strides_ = strides;
  return v;
}
}  // namespace detail

/// A non-owning tensor over caller memory (no copy). Strides are in elements; the default
/// is row-major. The caller keeps ownership and must keep the memory valid while the tensor
/// (or any view or operation using it) is alive. ct::shape_error when strides and shape differ
/// in length, ct::error for a null ptr with a non-empty shape.
template <element T>
tensor<T> wrap(T* ptr, const dims& shape, const dims& strides) {
  if (strides.size() != shape.size())
    throw shape_error("ct::wrap: strides " + strides.str() + " do not match shape " + shape.str());
  element_count(shape);
  if (ptr == nullptr && element_count(shape) != 0) throw error("ct::wrap: null pointer for shape " + shape.str());
  tensor<T> t;
  t.data_ = ptr;
  t.shape_ = shape;
  t.strides_ = strides;
  return t;
}
/// The same with row-major strides.
template <element T>
tensor<T> wrap(T* ptr, const dims& shape) {
  return wrap(ptr, shape, row_major_strides(shape));
}

}  // namespace ct
