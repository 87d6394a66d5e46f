// src/encoded/builtin.hpp — the built-in block formats' row encoders and decoders (internal).
// Each follows the block_format contract of ct/encoded/format.hpp; the layouts are drawn in
// docs/encoded.md.
#pragma once
#include <cstdint>
#include <limits>

#include "ct/core/float16.hpp"
#include "ct/core/index.hpp"

namespace ct::detail::encoded {

// q8_0: 32 values per 34-byte block — float16 scale d, then 32 int8 q; value = q * d.
inline constexpr index_t q8_0_elements = 32, q8_0_bytes = 34;
void encode_q8_0(const float* x, unsigned char* blocks, index_t n);
void decode_q8_0(const unsigned char* blocks, float* y, index_t n);

// q4_0: 32 values per 18-byte block — float16 scale d, then 16 bytes whose low nibbles hold
// values 0..15 and high nibbles values 16..31; value = (nibble - 8) * d.
inline constexpr index_t q4_0_elements = 32, q4_0_bytes = 18;
void encode_q4_0(const float* x, unsigned char* blocks, index_t n);
void decode_q4_0(const unsigned char* blocks, float* y, index_t n);

// bf16 / f16: one 16-bit float per value, little-endian.
void encode_bf16(const float* x, unsigned char* blocks, index_t n);
void decode_bf16(const unsigned char* blocks, float* y, index_t n);
void encode_f16(const float* x, unsigned char* blocks, index_t n);
void decode_f16(const unsigned char* blocks, float* y, index_t n);

/// The little-endian 16-bit pattern at p (block bytes have no alignment and a fixed byte
/// order, whatever the host's), and storing one.
inline std::uint16_t load_u16_le(const unsigned char* p) noexcept { return static_cast<std::uint16_t>(p[0] | (p[1] << 8)); }
inline void store_u16_le(unsigned char* p, std::uint16_t bits) noexcept {
  p[0] = static_cast<unsigned char>(bits & 0xff);
  p[1] = static_cast<unsigned char>(bits >> 8);
}
/// std::round (half away from zero) without the library call: the same value for every float
/// except that a result of zero is +0 (the quantizers convert it to an integer). Below 2^23 the
/// truncation and the fraction q - t are exact; larger values, infinities and NaN are returned
/// as std::round returns them. (The quantizers call it once per value; the
/// call measured most of the activation quantization's time.)
inline float round_half_away(float q) noexcept {
  if (!(q < 8388608.0f && q > -8388608.0f)) return q;
  const float t = static_cast<float>(static_cast<std::int32_t>(q));
  const float f = q - t;
  // Branch-free: quantized data rounds up or down at random, and the branches mispredicted.
  return t + static_cast<float>(f >= 0.5f) - static_cast<float>(f <= -0.5f);
}
/// 1 / d for a block scale d >= 0, or 0 when d is 0 or so small (below 2^-128) that 1 / d
/// overflows: such a d is 0 in float16 anyway, so every quant of the block decodes to 0, and an
/// infinite reciprocal would make the quants infinite or NaN (and their conversion to an
/// integer undefined).
inline float reciprocal_or_zero(float d) noexcept {
  const float r = d != 0.0f ? 1.0f / d : 0.0f;
  return r <= std::numeric_limits<float>::max() ? r : 0.0f;
}
/// max(a, |x|) for a >= 0 and finite x (what std::fmax(a, std::fabs(x)) gives there), inline.
inline float max_abs(float a, float x) noexcept {
  const float ax = x < 0.0f ? -x : x;
  return ax > a ? ax : a;
}

/// A block's float16 scale at p, widened (exactly).
inline float load_f16_le(const unsigned char* p) noexcept { return f16_bits_to_float(load_u16_le(p)); }

/// Throws format_error naming the format and the column when x[j] is NaN or infinite (a scaled
/// block has no encoding for it).
void require_finite(const char* format, const float* x, index_t n);

}  // namespace ct::detail::encoded

namespace ct::detail::encoded {

// q4_K / q6_K: ggml's K-quant super-blocks of 256 values (src/encoded/k_blocks.cpp draws them).
// q4_K: 144 bytes — float16 d, float16 dmin, 12 bytes of 6-bit scales and mins for the eight
// 32-value sub-blocks, 128 bytes of 4-bit q; value = d * sc * q - dmin * m.
inline constexpr index_t q4_K_elements = 256, q4_K_bytes = 144;
void encode_q4_K(const float* x, unsigned char* blocks, index_t n);
void decode_q4_K(const unsigned char* blocks, float* y, index_t n);

// q6_K: 210 bytes — 128 bytes ql (low 4 bits of q), 64 bytes qh (high 2 bits), 16 int8 scales
// (one per 16 values), float16 d; value = d * scale * (q - 32).
inline constexpr index_t q6_K_elements = 256, q6_K_bytes = 210;
void encode_q6_K(const float* x, unsigned char* blocks, index_t n);
void decode_q6_K(const unsigned char* blocks, float* y, index_t n);

/// q4_K: the 6-bit scale and min of sub-block j (0..7) from the block's 12 scale bytes p.
inline void q4_K_scale_min(const unsigned char* p, int j, int& sc, int& m) noexcept {
  if (j < 4) {
    sc = p[j] & 0x3f;
    m = p[4 + j] & 0x3f;
  } else {
    const int i = j - 4;
    sc = (p[8 + i] & 0x0f) | ((p[i] >> 6) << 4);
    m = (p[8 + i] >> 4) | ((p[4 + i] >> 6) << 4);
  }
}

/// q6_K: where value r (0..127) of a 128-value half keeps its bits — its ql byte and nibble
/// shift, its qh byte and bit shift (offsets within the half's 64 ql and 32 qh bytes).
struct q6_K_place {
  int ql, ql_shift, qh, qh_shift;
};
inline q6_K_place q6_K_place_of(int r) noexcept {
  const int k = r / 32, l = r % 32;
  return {32 * (k % 2) + l, k < 2 ? 0 : 4, l, 2 * k};
}
/// q6_K: the 6-bit quant q (0..63) of value v (0..255) of the block at `block`.
inline int q6_K_quant(const unsigned char* block, int v) noexcept {
  const int h = v / 128;
  const q6_K_place p = q6_K_place_of(v % 128);
  return ((block[64 * h + p.ql] >> p.ql_shift) & 0x0f) | (((block[128 + 32 * h + p.qh] >> p.qh_shift) & 0x03) << 4);
}

}  // namespace ct::detail::encoded
