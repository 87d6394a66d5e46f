// src/encoded/builtin.hpp — the built-in block formats' row encoders and decoders (internal).
// Each follows the block_format contract of ct/encoded/format.hpp; the layouts are drawn in
// docs/encoded.md.
#pragma once
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

/// Throws format_error naming the format and the column when x[j] is NaN or infinite (a scaled
/// block has no encoding for it).
void require_finite(const char* format, const float* x, index_t n);

}  // namespace ct::detail::encoded
