/// \file
/// The element types ct supports: one table, and everything derived from it.
///
/// Each row of CT_ELEMENT_TYPES is (tag, C++ type, name, kind). The runtime tag (ct::dtype), the
/// compile-time traits, the names in messages and the dispatch from a tag to its C++ type
/// (ct::visit_dtype) all come from that list, so adding a type is one row here (plus its
/// kernels where its kind needs new ones).
///
/// Kinds:
/// - floating:      float, double — computed in their own precision.
/// - storage_float: bfloat16, float16 — stored in two bytes, computed in float32 (loads widen
///                  exactly, the final store rounds to nearest even; see ct/core/float16.hpp).
/// - signed_int, unsigned_int: computed in their own type; results wrap modulo 2^bits like
///                  NumPy's fixed-width integers (sums and products of the narrow ones
///                  accumulate in int64, see docs/expressions.md).
/// - boolean:       one byte per element, 0 or 1.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "ct/core/float16.hpp"

namespace ct {

static_assert(sizeof(bool) == 1, "ct stores bool tensors one byte per element");

// clang-format off
/// The element-type table: X(tag, C++ type, name, kind) once per type. ct::dtype,
/// ct::element_traits and ct::visit_dtype are generated from it; expand it with your own X to
/// list the types.
#define CT_ELEMENT_TYPES(X)                              \
  X(f32,  float,          "float32",  floating)          \
  X(f64,  double,         "float64",  floating)          \
  X(i32,  std::int32_t,   "int32",    signed_int)        \
  X(i64,  std::int64_t,   "int64",    signed_int)        \
  X(b8,   bool,           "bool",     boolean)           \
  X(bf16, ::ct::bfloat16, "bfloat16", storage_float)     \
  X(f16,  ::ct::float16,  "float16",  storage_float)     \
  X(i8,   std::int8_t,    "int8",     signed_int)        \
  X(u8,   std::uint8_t,   "uint8",    unsigned_int)      \
  X(i16,  std::int16_t,   "int16",    signed_int)
// clang-format on

/// The runtime tag of an element type. Its enumerators are generated, one per row of
/// CT_ELEMENT_TYPES (so the reference cannot list them): f32, f64, i32, i64, b8 (bool), bf16,
/// f16, i8, u8, i16.
enum class dtype : std::uint8_t {
#define CT_DTYPE_ENUM(tag, T, name, kind) tag,
  CT_ELEMENT_TYPES(CT_DTYPE_ENUM)
#undef CT_DTYPE_ENUM
};

/// How ct stores and computes an element type: floating, storage_float (16-bit floats computed
/// in float32), signed_int, unsigned_int or boolean (see ct/core/dtype.hpp).
enum class dtype_kind : std::uint8_t { floating, storage_float, signed_int, unsigned_int, boolean };

/// Compile-time facts about an element type; only the table's types have them: `tag` (its
/// ct::dtype), `name` (as in messages) and `kind` (its ct::dtype_kind).
template <class T>
struct element_traits;

#define CT_DTYPE_TRAITS(tag_, T, name_, kind_)                    \
  template <>                                                      \
  struct element_traits<T> {                                       \
    static constexpr dtype tag = dtype::tag_;                      \
    static constexpr const char* name = name_;                     \
    static constexpr dtype_kind kind = dtype_kind::kind_;          \
  };
// (Doxygen: the generated specializations stay out of the reference; element_traits says it all.)
/// \cond
CT_ELEMENT_TYPES(CT_DTYPE_TRAITS)
/// \endcond
#undef CT_DTYPE_TRAITS

/// True for the element types a ct::tensor may hold.
template <class T>
inline constexpr bool is_element_v = requires { element_traits<T>::tag; };

/// A type a ct::tensor may hold: one of the CT_ELEMENT_TYPES rows.
template <class T>
concept element = is_element_v<T>;

/// The ct::dtype_kind of T.
template <element T>
inline constexpr dtype_kind kind_of_v = element_traits<T>::kind;

/// Floating-point element types, including the 16-bit storage ones (transcendentals, mean,
/// softmax… accept these).
template <class T>
inline constexpr bool is_floating_element_v = false;
/// The value for element types: true for the floating and storage_float kinds.
template <element T>
inline constexpr bool is_floating_element_v<T> = kind_of_v<T> == dtype_kind::floating || kind_of_v<T> == dtype_kind::storage_float;

/// Integer element types (not bool).
template <class T>
inline constexpr bool is_integer_element_v = false;
/// The value for element types: true for the signed_int and unsigned_int kinds.
template <element T>
inline constexpr bool is_integer_element_v<T> = kind_of_v<T> == dtype_kind::signed_int || kind_of_v<T> == dtype_kind::unsigned_int;

/// The type ct computes in for T: float for the 16-bit floats, T itself otherwise.
template <element T>
using compute_type_t = std::conditional_t<kind_of_v<T> == dtype_kind::storage_float, float, T>;

/// The runtime tag of T.
template <element T>
constexpr dtype dtype_of() noexcept {
  return element_traits<T>::tag;
}
/// The tag of compute_type_t<T>.
template <element T>
constexpr dtype compute_dtype_of() noexcept {
  return element_traits<compute_type_t<T>>::tag;
}

/// A plain number converted to element type T (16-bit floats round once, from double).
template <element T, class N>
constexpr T to_element(N v) noexcept {
  if constexpr (kind_of_v<T> == dtype_kind::storage_float) return T(static_cast<double>(v));
  else return static_cast<T>(v);
}

/// The name used in messages: "float32", "bfloat16", "int8", "bool", …
template <element T>
constexpr const char* dtype_name() noexcept {
  return element_traits<T>::name;
}

/// Calls f(T{}) with the C++ type T of tag t and returns what f returns (the same type for
/// every T). The only switch from a runtime tag to a type.
template <class F>
constexpr decltype(auto) visit_dtype(dtype t, F&& f) {
  switch (t) {
#define CT_DTYPE_VISIT(tag, T, name, kind) \
  case dtype::tag:                         \
    return f(T{});
    CT_ELEMENT_TYPES(CT_DTYPE_VISIT)
#undef CT_DTYPE_VISIT
  }
  __builtin_unreachable();  // every enumerator has a case above (-Wswitch checks it)
}

/// The name of tag t used in messages.
constexpr const char* dtype_name(dtype t) noexcept {
  return visit_dtype(t, [](auto v) { return element_traits<decltype(v)>::name; });
}
/// Bytes per element of tag t.
constexpr std::size_t dtype_bytes(dtype t) noexcept {
  return visit_dtype(t, [](auto v) { return sizeof(v); });
}
/// The ct::dtype_kind of tag t.
constexpr dtype_kind kind_of(dtype t) noexcept {
  return visit_dtype(t, [](auto v) { return element_traits<decltype(v)>::kind; });
}
/// The tag of compute_type_t: f32 for bf16 and f16, t itself otherwise.
constexpr dtype compute_dtype(dtype t) noexcept {
  return kind_of(t) == dtype_kind::storage_float ? dtype::f32 : t;
}
/// True for the floating-point tags, the 16-bit storage floats included.
constexpr bool is_floating(dtype t) noexcept {
  return kind_of(t) == dtype_kind::floating || kind_of(t) == dtype_kind::storage_float;
}

}  // namespace ct
