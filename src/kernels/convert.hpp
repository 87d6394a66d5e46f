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

#include "ct/core/index.hpp"
#include "ct/exec/settings.hpp"

namespace ct::detail::kernels {

/// y[i] = float(x[i]) for i in [0, n): bfloat16 / float16 bits to float32 (exact).
void widen_bf16(const std::uint16_t* x, float* y, index_t n, const settings& s);
void widen_f16(const std::uint16_t* x, float* y, index_t n, const settings& s);

/// y[i] = the bits of x[i] rounded to nearest, ties to even.
void narrow_bf16(const float* x, std::uint16_t* y, index_t n, const settings& s);
void narrow_f16(const float* x, std::uint16_t* y, index_t n, const settings& s);

/// The simd tile function the settings select, resolved once (no dispatch per call): the
/// current (possibly pinned) target's. nullptr on the scalar backend: use the functions above.
using widen_fn = void (*)(const std::uint16_t*, float*, index_t);
using narrow_fn = void (*)(const float*, std::uint16_t*, index_t);
widen_fn resolve_widen_bf16(const settings& s) noexcept;
widen_fn resolve_widen_f16(const settings& s) noexcept;
narrow_fn resolve_narrow_bf16(const settings& s) noexcept;
narrow_fn resolve_narrow_f16(const settings& s) noexcept;

}  // namespace ct::detail::kernels
