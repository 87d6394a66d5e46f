// ct/core/dtype.hpp — the element types ct supports and their names for messages.
#pragma once
#include <cstdint>
#include <type_traits>

namespace ct {

static_assert(sizeof(bool) == 1, "ct stores bool tensors one byte per element");

/// True for the element types a ct::tensor may hold.
template <class T>
inline constexpr bool is_element_v =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> ||
    std::is_same_v<T, std::int64_t> || std::is_same_v<T, bool>;

template <class T>
concept element = is_element_v<T>;

/// The name used in messages: "float32", "float64", "int32", "int64", "bool".
template <element T>
constexpr const char* dtype_name() noexcept {
  if constexpr (std::is_same_v<T, float>) return "float32";
  else if constexpr (std::is_same_v<T, double>) return "float64";
  else if constexpr (std::is_same_v<T, std::int32_t>) return "int32";
  else if constexpr (std::is_same_v<T, std::int64_t>) return "int64";
  else return "bool";
}

}  // namespace ct
