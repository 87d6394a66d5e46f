/// \file
/// The signed index type ct::index_t, used for every extent, stride and group count, and
/// ct::max_rank.
#pragma once
#include <cstdint>

/// Everything ct offers: tensors, lazy expressions and their evaluation, matrix products,
/// encoded weights, and the executor and settings bindings of the calling thread.
namespace ct {

/// Signed 64-bit index. Signed so that negative axes/indices and stride arithmetic read
/// naturally; 64-bit so that no realistic tensor overflows it.
using index_t = std::int64_t;

/// The largest rank a tensor may have. Shapes and strides live inline (no allocation).
inline constexpr int max_rank = 8;

}  // namespace ct
