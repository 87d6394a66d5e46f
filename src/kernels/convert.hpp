// src/kernels/convert.hpp — tile kernels converting between float32 and the 16-bit storage
// types (ct::bfloat16, ct::float16; the uint16_t arguments are their bit patterns).
//
// Every kernel gives, for every input, bitwise the result of the scalar conversions in
// ct/core/float16.hpp (widening exact, NaN bits kept; narrowing to nearest even, subnormals
// kept, overflow to ±inf, NaNs quieted with the top payload bits), on the scalar backend and
// on every simd target. Which instructions each target uses: docs/kernels.md.
// x and y must not overlap. n >= 0.
#pragma once
#include <cstdint>

#include "ct/core/float16.hpp"
#include "ct/core/index.hpp"
#include "ct/exec/settings.hpp"

namespace ct::detail::kernels {

/// y[i] = float(x[i]) for i in [0, n): bfloat16 / float16 bits to float32 (exact).
void widen_bf16(const std::uint16_t* x, float* y, index_t n, const settings& s);
void widen_f16(const std::uint16_t* x, float* y, index_t n, const settings& s);

/// y[i] = the bits of x[i] rounded to nearest, ties to even.
void narrow_bf16(const float* x, std::uint16_t* y, index_t n, const settings& s);
void narrow_f16(const float* x, std::uint16_t* y, index_t n, const settings& s);

/// The same for a strided run (stride in elements): y[j] = float(x[j * stride]) from bfloat16
/// (bf16) or float16 bits; contiguous runs go through the kernels above.
inline void widen_strided(bool bf16, const std::uint16_t* x, index_t stride, float* y, index_t n, const settings& s) {
  if (stride == 1) return bf16 ? widen_bf16(x, y, n, s) : widen_f16(x, y, n, s);
  for (index_t j = 0; j < n; ++j) y[j] = bf16 ? bf16_bits_to_float(x[j * stride]) : f16_bits_to_float(x[j * stride]);
}
/// y[j * stride] = the bits of x[j] rounded to nearest, ties to even.
inline void narrow_strided(bool bf16, const float* x, std::uint16_t* y, index_t stride, index_t n, const settings& s) {
  if (stride == 1) return bf16 ? narrow_bf16(x, y, n, s) : narrow_f16(x, y, n, s);
  for (index_t j = 0; j < n; ++j) y[j * stride] = bf16 ? float_to_bf16_bits(x[j]) : float_to_f16_bits(x[j]);
}

/// The simd tile function the settings select, resolved once (no dispatch per call): the
/// current (possibly pinned) target's. nullptr on the scalar backend: use the functions above.
using widen_fn = void (*)(const std::uint16_t*, float*, index_t);
using narrow_fn = void (*)(const float*, std::uint16_t*, index_t);
widen_fn resolve_widen_bf16(const settings& s) noexcept;
widen_fn resolve_widen_f16(const settings& s) noexcept;
narrow_fn resolve_narrow_bf16(const settings& s) noexcept;
narrow_fn resolve_narrow_f16(const settings& s) noexcept;

}  // namespace ct::detail::kernels
