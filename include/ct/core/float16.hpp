/// \file
/// The 16-bit floating-point storage types ct::bfloat16 and ct::float16.
///
/// Both are storage formats: a tensor holds them two bytes per element, and ct computes with
/// them in float32 (loads widen exactly, the final store rounds to nearest, ties to even).
/// - bfloat16: the top half of a float32 (8 exponent bits, 7 mantissa bits). Widening is exact;
///   narrowing rounds to nearest even, overflows to ±inf (values of at least
///   (2 - 2^-8) * 2^127 in magnitude), keeps subnormals (no flush to zero), and turns a NaN into
///   a quiet NaN with the same sign and the top payload bits.
/// - float16: IEEE 754 binary16 (5 exponent bits, 10 mantissa bits, max 65504). Narrowing
///   rounds to nearest even (values of at least 65520 in magnitude become ±inf), produces
///   subnormals down to 2^-24, and quiets NaNs keeping the top payload bits, as the F16C
///   instructions do.
/// Widening a NaN keeps its bits (sign, payload, and a signalling NaN stays signalling, for
/// both formats: the float has the 16-bit pattern in its top bits), so it is exact for every
/// input; narrowing a NaN always gives a quiet NaN.
/// These scalar conversions are the reference: the SIMD kernels (src/kernels/convert.hpp) give
/// the same bits for every input on every target. They use integer arithmetic only, so they
/// do not depend on the floating-point environment (rounding mode, flush-to-zero).
///
/// Construction from double (and from integers) rounds the exact value once, directly to the
/// 16-bit format: going through float would round twice and can be wrong by one unit in the
/// last place, e.g. 1 + 2^-8 + 2^-30 is above the halfway point between the bfloat16 neighbours
/// 1 and 1 + 2^-7, but float rounds it to 1 + 2^-8 (the halfway point), which then goes to even (1).
#pragma once
#include <bit>
#include <concepts>
#include <cstdint>
#include <type_traits>

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

/// The 16-bit pattern nearest to (neg ? -1 : 1) * sig * 2^exp2, ties to even, in the binary
/// format with kExpBits exponent bits and kMan stored mantissa bits (bfloat16: 8, 7; float16:
/// 5, 10). Overflow gives ±inf; anything below half the smallest subnormal gives ±0. Exact
/// integer rounding of the exact value: one rounding, whatever the source type.
template <int kExpBits, int kMan>
constexpr std::uint16_t round_to_16_bits(bool neg, std::uint64_t sig, int exp2) noexcept {
  constexpr int bias = (1 << (kExpBits - 1)) - 1;
  constexpr int emin = 1 - bias;  // exponent of the smallest normal
  constexpr std::uint32_t inf = ((1u << kExpBits) - 1u) << kMan;
  const std::uint32_t sign = neg ? 0x8000u : 0u;
  if (sig == 0) return static_cast<std::uint16_t>(sign);
  const int e = 63 - std::countl_zero(sig) + exp2;  // the value is in [2^e, 2^(e+1))
  if (e > bias) return static_cast<std::uint16_t>(sign | inf);
  const int scale = e < emin ? emin : e;  // the result's binade (subnormals share emin's)
  const int shift = scale - kMan - exp2;  // bits of sig below the result's last place
  std::uint64_t q = 0;
  if (shift <= 0) {
    q = sig << -shift;  // exact: sig has at most kMan + 1 significant bits here
  } else if (shift <= 64) {
    q = shift == 64 ? 0 : sig >> shift;
    const std::uint64_t rem = shift == 64 ? sig : sig & ((std::uint64_t{1} << shift) - 1);
    const std::uint64_t half = std::uint64_t{1} << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;  // a carry moves to the next binade: still right
  }  // else sig < 2^64 <= half the last place: rounds to zero
  // q holds the implicit bit (2^kMan) for normal results, which adds the 1 to (scale + bias - 1);
  // subnormals have scale == emin, so that term is 0 and q is the whole pattern.
  const std::uint64_t bits = (static_cast<std::uint64_t>(scale + bias - 1) << kMan) + q;
  return static_cast<std::uint16_t>(sign | (bits >= inf ? inf : static_cast<std::uint32_t>(bits)));
}

/// A NaN of the format from a double NaN: quiet, same sign, the top payload bits (as for float).
template <int kExpBits, int kMan>
constexpr std::uint16_t nan_to_16_bits(std::uint64_t x) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(x >> 48) & 0x8000u;
  const std::uint32_t inf = ((1u << kExpBits) - 1u) << kMan;
  const auto payload = static_cast<std::uint32_t>((x >> (52 - kMan)) & ((1u << kMan) - 1u));
  return static_cast<std::uint16_t>(sign | inf | (1u << (kMan - 1)) | payload);
}

/// Rounds d directly (once) to the format; NaNs as nan_to_16_bits.
template <int kExpBits, int kMan>
constexpr std::uint16_t double_to_16_bits(double d) noexcept {
  const std::uint64_t x = std::bit_cast<std::uint64_t>(d);
  const bool neg = (x >> 63) != 0;
  const std::uint64_t ax = x & 0x7fffffffffffffffu;
  if (ax > 0x7ff0000000000000u) return nan_to_16_bits<kExpBits, kMan>(x);
  if (ax == 0x7ff0000000000000u)
    return static_cast<std::uint16_t>((neg ? 0x8000u : 0u) | (((1u << kExpBits) - 1u) << kMan));
  const auto e = static_cast<int>(ax >> 52);
  const std::uint64_t m = ax & 0xfffffffffffffu;
  return e == 0 ? round_to_16_bits<kExpBits, kMan>(neg, m, -1074)
                : round_to_16_bits<kExpBits, kMan>(neg, m | (std::uint64_t{1} << 52), e - 1075);
}

/// Rounds the integer v (at most 64 bits) once to the format.
template <int kExpBits, int kMan, std::integral I>
  requires(sizeof(I) <= sizeof(std::uint64_t))
constexpr std::uint16_t integer_to_16_bits(I v) noexcept {
  if constexpr (std::is_signed_v<I>) {
    const bool neg = v < 0;
    const auto u = static_cast<std::uint64_t>(static_cast<std::int64_t>(v));
    return round_to_16_bits<kExpBits, kMan>(neg, neg ? 0 - u : u, 0);
  } else {
    return round_to_16_bits<kExpBits, kMan>(false, static_cast<std::uint64_t>(v), 0);
  }
}

constexpr std::uint16_t double_to_bf16_bits(double d) noexcept { return double_to_16_bits<8, 7>(d); }
constexpr std::uint16_t double_to_f16_bits(double d) noexcept { return double_to_16_bits<5, 10>(d); }

}  // namespace detail

/// Brain floating point: a float32 with the low 16 mantissa bits dropped (rounded).
struct bfloat16 {
  /// The bit pattern: sign, 8 exponent bits, 7 mantissa bits.
  std::uint16_t bits = 0;
  /// +0.
  constexpr bfloat16() noexcept = default;
  /// From a float, rounded to nearest, ties to even. Each constructor rounds its argument's
  /// exact value once (double and integers directly, not through float).
  constexpr explicit bfloat16(float f) noexcept : bits(detail::float_to_bf16_bits(f)) {}
  /// From a double, rounded once (not through float).
  constexpr explicit bfloat16(double d) noexcept : bits(detail::double_to_bf16_bits(d)) {}
  /// From an integer of at most 64 bits, rounded once.
  template <std::integral I>
    requires(sizeof(I) <= sizeof(std::uint64_t))
  constexpr explicit bfloat16(I v) noexcept : bits(detail::integer_to_16_bits<8, 7>(v)) {}
  /// The value as a float, exactly (a signalling NaN stays signalling).
  constexpr explicit operator float() const noexcept { return detail::bf16_bits_to_float(bits); }
  /// The value as a double: exact, except that a signalling NaN may become quiet.
  constexpr explicit operator double() const noexcept { return detail::bf16_bits_to_float(bits); }
  /// The value with bit pattern b.
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
  /// The bit pattern: sign, 5 exponent bits, 10 mantissa bits.
  std::uint16_t bits = 0;
  /// +0.
  constexpr float16() noexcept = default;
  /// From a float, rounded to nearest, ties to even. Each constructor rounds its argument's
  /// exact value once (double and integers directly, not through float).
  constexpr explicit float16(float f) noexcept : bits(detail::float_to_f16_bits(f)) {}
  /// From a double, rounded once (not through float).
  constexpr explicit float16(double d) noexcept : bits(detail::double_to_f16_bits(d)) {}
  /// From an integer of at most 64 bits, rounded once.
  template <std::integral I>
    requires(sizeof(I) <= sizeof(std::uint64_t))
  constexpr explicit float16(I v) noexcept : bits(detail::integer_to_16_bits<5, 10>(v)) {}
  /// The value as a float, exactly (a signalling NaN stays signalling).
  constexpr explicit operator float() const noexcept { return detail::f16_bits_to_float(bits); }
  /// The value as a double: exact, except that a signalling NaN may become quiet.
  constexpr explicit operator double() const noexcept { return detail::f16_bits_to_float(bits); }
  /// The value with bit pattern b.
  static constexpr float16 from_bits(std::uint16_t b) noexcept {
    float16 v;
    v.bits = b;
    return v;
  }
  /// Bitwise equality (what tensors compare for "the same bits"); use float(x) for numeric ==.
  friend constexpr bool same_bits(float16 a, float16 b) noexcept { return a.bits == b.bits; }
};

static_assert(sizeof(bfloat16) == 2 && sizeof(float16) == 2, "ct stores 16-bit floats in two bytes");

}  // namespace ct
