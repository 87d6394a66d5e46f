// ct/core/float16.hpp — the 16-bit floating-point storage types ct::bfloat16 and ct::float16.
//
// Both are storage formats: a tensor holds them two bytes per element, and ct computes with
// them in float32 (loads widen exactly, the final store rounds to nearest, ties to even).
// - bfloat16: the top half of a float32 (8 exponent bits, 7 mantissa bits). Widening is exact;
//   narrowing rounds to nearest even, overflows to ±inf, keeps subnormals (no flush to zero),
//   and turns a NaN into a quiet NaN with the same sign and the top payload bits.
// - float16: IEEE 754 binary16 (5 exponent bits, 10 mantissa bits, max 65504). Narrowing
//   rounds to nearest even (values of at least 65520 in magnitude become ±inf), produces
//   subnormals down to 2^-24, and quiets NaNs keeping the top payload bits, as the F16C
//   instructions do.
// These scalar conversions are the reference: the SIMD kernels give the same bits.
#pragma once
#include <bit>
#include <cstdint>

namespace ct {

namespace detail {

constexpr float bf16_bits_to_float(std::uint16_t h) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
}

constexpr std::uint16_t float_to_bf16_bits(float f) noexcept {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x0040u);  // quiet NaN
  return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

constexpr float f16_bits_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t e = (h >> 10) & 0x1fu;
  std::uint32_t m = h & 0x3ffu;
  if (e == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (m << 13));  // inf / NaN (payload kept)
  if (e == 0) {
    if (m == 0) return std::bit_cast<float>(sign);
    // Subnormal: m * 2^-24. Shift the leading one into the implicit position.
    e = 113;  // the float exponent of 2^-14, decremented per shift below
    while ((m & 0x400u) == 0) {
      m <<= 1;
      --e;
    }
    return std::bit_cast<float>(sign | (e << 23) | ((m & 0x3ffu) << 13));
  }
  return std::bit_cast<float>(sign | ((e + 112) << 23) | (m << 13));
}

constexpr std::uint16_t float_to_f16_bits(float f) noexcept {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u)  // inf stays inf; NaN becomes quiet with the top payload bits
    return static_cast<std::uint16_t>(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0u));
  if (ax >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to inf
  if (ax < 0x38800000u) {  // below 2^-14: a subnormal (or zero) in units of 2^-24
    const std::uint32_t e = ax >> 23;
    if (e < 101) return static_cast<std::uint16_t>(sign);  // below 2^-25 (ties at 2^-25 go to even 0 too)
    const std::uint32_t m = (ax & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126 - e;  // 14..25
    std::uint32_t q = m >> shift;
    const std::uint32_t rem = m & ((1u << shift) - 1);
    const std::uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;  // may carry into the smallest normal: still right
    return static_cast<std::uint16_t>(sign | q);
  }
  std::uint32_t r = ax - 0x38000000u;  // rebias the exponent from 127 to 15
  r += 0xfffu + ((r >> 13) & 1u);      // round to nearest even at bit 13
  return static_cast<std::uint16_t>(sign | (r >> 13));
}

}  // namespace detail

/// Brain floating point: a float32 with the low 16 mantissa bits dropped (rounded).
struct bfloat16 {
  std::uint16_t bits = 0;
  constexpr bfloat16() noexcept = default;
  /// Rounds to nearest, ties to even.
  constexpr explicit bfloat16(float f) noexcept : bits(detail::float_to_bf16_bits(f)) {}
  constexpr explicit bfloat16(double d) noexcept : bfloat16(static_cast<float>(d)) {}
  constexpr explicit operator float() const noexcept { return detail::bf16_bits_to_float(bits); }
  constexpr explicit operator double() const noexcept { return detail::bf16_bits_to_float(bits); }
  static constexpr bfloat16 from_bits(std::uint16_t b) noexcept {
    bfloat16 v;
    v.bits = b;
    return v;
  }
  /// Bitwise equality (what tensors compare for "the same bits"); use float(x) for numeric ==.
  friend constexpr bool same_bits(bfloat16 a, bfloat16 b) noexcept { return a.bits == b.bits; }
};

/// IEEE 754 binary16.
struct float16 {
  std::uint16_t bits = 0;
  constexpr float16() noexcept = default;
  /// Rounds to nearest, ties to even.
  constexpr explicit float16(float f) noexcept : bits(detail::float_to_f16_bits(f)) {}
  constexpr explicit float16(double d) noexcept : float16(static_cast<float>(d)) {}
  constexpr explicit operator float() const noexcept { return detail::f16_bits_to_float(bits); }
  constexpr explicit operator double() const noexcept { return detail::f16_bits_to_float(bits); }
  static constexpr float16 from_bits(std::uint16_t b) noexcept {
    float16 v;
    v.bits = b;
    return v;
  }
  friend constexpr bool same_bits(float16 a, float16 b) noexcept { return a.bits == b.bits; }
};

static_assert(sizeof(bfloat16) == 2 && sizeof(float16) == 2, "ct stores 16-bit floats in two bytes");

}  // namespace ct
