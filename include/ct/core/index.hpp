// ct/core/index.hpp — the signed index type used for every extent, stride and group count.
#pragma once
#include <cstdint>

namespace ct {

/// Signed 64-bit index. Signed so that negative axes/indices and stride arithmetic read
/// naturally; 64-bit so that no realistic tensor overflows it.
using index_t = std::int64_t;

/// The largest rank a tensor may have. Shapes and strides live inline (no allocation).
inline constexpr int max_rank = 8;

}  // namespace ct
