// src/expr/run/narrow_io.hpp — moving values between the 16-bit float storage types and the
// float32 tiles the evaluator computes them in (internal).
//
// Loads widen exactly; stores round to nearest even (src/kernels/convert.hpp). Every other
// element type is stored as it is computed, so these are the only conversions at the edges.
#pragma once
#include <cstdint>
#include <cstring>

#include "ct/core/dtype.hpp"
#include "ct/exec/settings.hpp"
#include "src/kernels/convert.hpp"

namespace ct::detail {
namespace [[gnu::visibility("hidden")]] evaluator {  // see plan.hpp

/// Whether values of element type t live in memory in another type than they compute in.
inline bool widened(dtype t) noexcept { return kind_of(t) == dtype_kind::storage_float; }

/// dst[j] = float(src[j * stride]) for j in [0, n) from a bfloat16/float16 operand.
inline void widen_values(dtype from, const void* src, index_t stride, float* dst, index_t n, const settings& s) {
  kernels::widen_strided(from == dtype::bf16, static_cast<const std::uint16_t*>(src), stride, dst, n, s);
}

/// dst[j * stride] = the 16-bit value nearest src[j] (src[0] for every j when uniform).
inline void narrow_values(dtype to, const float* src, bool uniform, void* dst, index_t stride, index_t n, const settings& s) {
  auto* y = static_cast<std::uint16_t*>(dst);
  const bool bf = to == dtype::bf16;
  if (!uniform) return kernels::narrow_strided(bf, src, y, stride, n, s);
  const std::uint16_t bits = bf ? float_to_bf16_bits(src[0]) : float_to_f16_bits(src[0]);
  for (index_t j = 0; j < n; ++j) y[j * stride] = bits;
}

/// The value of a float32 or float64 rounded once to the 16-bit type `to`, as float32.
inline float round_through(dtype to, double v) noexcept {
  if (to == dtype::bf16) return static_cast<float>(bfloat16(v));
  return static_cast<float>(float16(v));
}

}  // namespace evaluator
}  // namespace ct::detail
