// src/encoded/half_dot.hpp — exact-mode dot products of bf16 / f16 weight rows with float
// activations without a decoded copy of the rows (src/encoded/half_dot_simd.cpp).
#pragma once
#include <cstddef>

#include "ct/core/index.hpp"

namespace ct::detail::encoded {

/// y[r * y_stride] = the float dot product of row r (k 16-bit values at w + r * row_bytes,
/// widened) with x[0..k) for r < rows: the bits of decode_row + mm::dot<float> under the same
/// FMA policy. ahead_bytes: software prefetch distance in each row.
using half_dot_fn = void (*)(const unsigned char* w, std::size_t row_bytes, index_t rows, index_t k, const float* x,
                             float* y, index_t y_stride, index_t ahead_bytes);

/// The kernel for bf16 (true) or f16 rows on this CPU's simd target, or nullptr where there is
/// none (then decode the rows and use the float dot product).
half_dot_fn simd_half_dot(bool bf16, bool fused);

}  // namespace ct::detail::encoded
