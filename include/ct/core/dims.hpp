/// \file
/// Shapes and strides: ct::dims, a small fixed-capacity list of indices, and the shape helpers
/// (element counts, row-major strides, axis normalisation, broadcasting).
#pragma once
#include <algorithm>
#include <array>
#include <initializer_list>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "ct/core/error.hpp"
#include "ct/core/index.hpp"

namespace ct {

/// Up to max_rank indices stored inline, so that shapes and strides never allocate.
class dims {
 public:
  /// An empty list (the shape of a rank-0 tensor).
  constexpr dims() = default;
  /// The given values, such as `{2, 3}`; ct::shape_error when there are more than max_rank.
  dims(std::initializer_list<index_t> values) { assign(values.begin(), values.end()); }
  /// The values of a vector; ct::shape_error when there are more than max_rank.
  explicit dims(const std::vector<index_t>& values) { assign(values.begin(), values.end()); }
  /// n copies of value.
  static dims filled(int n, index_t value) {
    dims d;
    d.resize(n, value);
    return d;
  }

  /// Number of entries (the rank, for a shape).
  int size() const noexcept { return n_; }
  /// True when there are no entries.
  bool empty() const noexcept { return n_ == 0; }
  /// Entry i, unchecked: i must be in [0, size()).
  index_t& operator[](int i) noexcept { return v_[static_cast<std::size_t>(i)]; }
  /// Entry i by value, unchecked: i must be in [0, size()).
  index_t operator[](int i) const noexcept { return v_[static_cast<std::size_t>(i)]; }
  /// Pointer to the first entry.
  index_t* begin() noexcept { return v_.data(); }
  /// Pointer past the last entry.
  index_t* end() noexcept { return v_.data() + n_; }
  /// Pointer to the first entry.
  const index_t* begin() const noexcept { return v_.data(); }
  /// Pointer past the last entry.
  const index_t* end() const noexcept { return v_.data() + n_; }
  /// The last entry; the list must not be empty.
  index_t back() const noexcept { return v_[static_cast<std::size_t>(n_ - 1)]; }

  /// Appends value; ct::shape_error when the list already holds max_rank entries.
  void push_back(index_t value) {
    check_capacity(n_ + 1);
    v_[static_cast<std::size_t>(n_++)] = value;
  }
  /// Inserts value before entry pos (pos in [0, size()]); ct::shape_error when the list is full.
  void insert(int pos, index_t value) {
    check_capacity(n_ + 1);
    for (int i = n_; i > pos; --i) v_[static_cast<std::size_t>(i)] = v_[static_cast<std::size_t>(i - 1)];
    v_[static_cast<std::size_t>(pos)] = value;
    ++n_;
  }
  /// Removes entry pos, unchecked: pos must be in [0, size()).
  void erase(int pos) {
    for (int i = pos; i + 1 < n_; ++i) v_[static_cast<std::size_t>(i)] = v_[static_cast<std::size_t>(i + 1)];
    --n_;
  }
  /// Keeps the first n entries, or appends copies of value up to n; ct::shape_error when
  /// n > max_rank.
  void resize(int n, index_t value = 0) {
    check_capacity(n);
    for (int i = n_; i < n; ++i) v_[static_cast<std::size_t>(i)] = value;
    n_ = n;
  }
  /// The entries as a std::vector.
  std::vector<index_t> to_vector() const { return {begin(), end()}; }

  /// Same number of entries and equal entries.
  friend bool operator==(const dims& a, const dims& b) noexcept {
    return a.n_ == b.n_ && std::equal(a.begin(), a.end(), b.begin());
  }
  /// Not operator==.
  friend bool operator!=(const dims& a, const dims& b) noexcept { return !(a == b); }

  /// "[2, 3, 4]" — the form used in every error message.
  std::string str() const {
    std::string s = "[";
    for (int i = 0; i < n_; ++i) {
      if (i) s += ", ";
      s += std::to_string(v_[static_cast<std::size_t>(i)]);
    }
    return s + "]";
  }
  /// Writes str() to os.
  friend std::ostream& operator<<(std::ostream& os, const dims& d) { return os << d.str(); }

 private:
  template <class It>
  void assign(It first, It last) {
    check_capacity(static_cast<int>(last - first));
    n_ = 0;
    for (; first != last; ++first) v_[static_cast<std::size_t>(n_++)] = *first;
  }
  static void check_capacity(int n) {
    if (n > max_rank)
      throw shape_error("ct: rank " + std::to_string(n) + " exceeds the maximum rank " +
                        std::to_string(max_rank));
  }
  std::array<index_t, max_rank> v_{};
  int n_ = 0;
};

/// Number of elements of a shape; throws shape_error when it would overflow index_t or
/// when an extent is negative.
inline index_t element_count(const dims& shape) {
  index_t n = 1;
  for (index_t e : shape) {
    if (e < 0) throw shape_error("ct: negative extent in shape " + shape.str());
    if (__builtin_mul_overflow(n, e, &n))
      throw shape_error("ct: element count of shape " + shape.str() + " overflows index_t");
  }
  return n;
}

/// Whether every element of a view with these extents and strides has its own memory. A
/// sufficient test (the one a destination must pass: several groups writing one element
/// would race): ordered by |stride|, each axis of extent > 1 steps past everything the
/// smaller axes span. Stride 0 (broadcast) and views like strides {1, 1} fail it; so do some
/// exotic interleaved layouts that do not actually overlap (copy those first).
inline bool elements_distinct(const dims& shape, const dims& strides) {
  // (|stride|, extent) of the axes with extent > 1; inline, since every eval checks this
  std::array<std::pair<index_t, index_t>, max_rank> axes{};
  int count = 0;
  for (int i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) return true;  // no elements at all
    if (shape[i] > 1) {  // insertion by |stride| (at most max_rank entries)
      const std::pair<index_t, index_t> axis{strides[i] < 0 ? -strides[i] : strides[i], shape[i]};
      int j = count++;
      for (; j > 0 && axis < axes[static_cast<std::size_t>(j - 1)]; --j) axes[static_cast<std::size_t>(j)] = axes[static_cast<std::size_t>(j - 1)];
      axes[static_cast<std::size_t>(j)] = axis;
    }
  }
  index_t span = 0;  // largest offset reachable with the axes so far
  for (int i = 0; i < count; ++i) {
    const auto [stride, extent] = axes[static_cast<std::size_t>(i)];
    if (stride <= span) return false;
    span += stride * (extent - 1);
  }
  return true;
}

/// Row-major (C order) strides, in elements, for a shape (shape_error when they overflow).
inline dims row_major_strides(const dims& shape) {
  dims s = dims::filled(shape.size(), 1);
  index_t acc = 1;
  for (int i = shape.size() - 1; i >= 0; --i) {
    s[i] = acc;
    if (i > 0 && __builtin_mul_overflow(acc, shape[i] > 0 ? shape[i] : 1, &acc))
      throw shape_error("ct: element count of shape " + shape.str() + " overflows index_t");
  }
  return s;
}

/// Maps a possibly negative axis into [0, rank); throws axis_error naming the operation and,
/// when given, the shape (else the rank).
inline int normalize_axis(index_t axis, int rank, const char* op, const dims* shape = nullptr) {
  index_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    throw axis_error(std::string("ct::") + op + ": axis " + std::to_string(axis) + " is out of range for " +
                     (shape != nullptr ? "shape " + shape->str() : "rank " + std::to_string(rank)));
  return static_cast<int>(a);
}
/// The same for an axis of `shape`.
inline int normalize_axis(index_t axis, const dims& shape, const char* op) {
  return normalize_axis(axis, shape.size(), op, &shape);
}

/// NumPy broadcasting of two shapes; throws shape_error naming both shapes.
inline dims broadcast_shapes(const dims& a, const dims& b, const char* op = "broadcast") {
  int r = std::max(a.size(), b.size());
  dims out = dims::filled(r, 1);
  for (int i = 0; i < r; ++i) {
    index_t ea = i < r - a.size() ? 1 : a[i - (r - a.size())];
    index_t eb = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (ea != eb && ea != 1 && eb != 1)
      throw shape_error(std::string("ct::") + op + ": shapes " + a.str() + " and " + b.str() +
                        " do not broadcast");
    out[i] = ea == 1 ? eb : ea;
  }
  return out;
}

}  // namespace ct
