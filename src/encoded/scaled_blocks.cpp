// q8_0 and q4_0: 32 values per block and one float16 scale, quantized the way ggml's reference
// quantizers do (quantize_row_q8_0_ref / quantize_row_q4_0_ref), so a block ct writes is the
// block ggml writes for the same floats:
//  * q8_0: d = max|x| / 127, q = round(x / d) half away from zero (roundf), with the division
//    done as x * (1 / d) in float and d stored rounded to float16 afterwards.
//  * q4_0: m = the value of largest magnitude (the first one on ties), d = m / -8,
//    q = min(15, trunc(x * (1 / d) + 8.5)); so m itself encodes as 0 (-8 * d) and the other
//    side reaches +7 * d.
// A block of zeros has d = 0 and every q = 0 (q4_0: 8). Decoding multiplies in float.
#include <algorithm>
#include <bit>
#include <type_traits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "ct/core/float16.hpp"
#include "ct/encoded/format.hpp"
#include "ct/exec/settings.hpp"
#include "src/encoded/builtin.hpp"
#include "src/kernels/convert.hpp"

namespace ct::detail::encoded {

void require_finite(const char* format, const float* x, index_t n) {
  // A pass without branches first, in integer and / add / or that the compiler vectorises: a
  // value is NaN or infinite exactly when its exponent bits are all ones, and only then does
  // adding one to the exponent field carry into the sign bit. (The early-exit loop below ran a
  // compare and branch per value: a quarter of a short product's call.)
  std::uint32_t carry = 0;
  for (index_t j = 0; j < n; ++j) carry |= (std::bit_cast<std::uint32_t>(x[j]) & 0x7f800000u) + 0x00800000u;
  if ((carry & 0x80000000u) == 0) return;
  for (index_t j = 0; j < n; ++j)
    if (!std::isfinite(x[j]))
      throw format_error(std::string(format) + " cannot encode " + (std::isnan(x[j]) ? "NaN" : "an infinity") +
                         " (column " + std::to_string(j) + "): its blocks scale finite values");
}

void encode_q8_0(const float* x, unsigned char* blocks, index_t n) {
  require_finite("q8_0", x, n);
  for (index_t b = 0; b < n / q8_0_elements; ++b) {
    const float* v = x + b * q8_0_elements;
    unsigned char* out = blocks + b * q8_0_bytes;
    float amax = 0.0f;
    for (index_t j = 0; j < q8_0_elements; ++j) amax = max_abs(amax, v[j]);
    const float d = amax / 127.0f;
    const float id = reciprocal_or_zero(d);
    store_u16_le(out, float16(d).bits);
    for (index_t j = 0; j < q8_0_elements; ++j) {
      const float q = round_half_away(v[j] * id);
      out[2 + j] = static_cast<unsigned char>(static_cast<std::int8_t>(q));
    }
  }
}

void decode_q8_0(const unsigned char* blocks, float* y, index_t n) {
  for (index_t b = 0; b < n / q8_0_elements; ++b) {
    const unsigned char* in = blocks + b * q8_0_bytes;
    const float d = load_f16_le(in);
    for (index_t j = 0; j < q8_0_elements; ++j)
      y[b * q8_0_elements + j] = static_cast<float>(static_cast<std::int8_t>(in[2 + j])) * d;
  }
}

void encode_q4_0(const float* x, unsigned char* blocks, index_t n) {
  require_finite("q4_0", x, n);
  constexpr index_t half = q4_0_elements / 2;
  for (index_t b = 0; b < n / q4_0_elements; ++b) {
    const float* v = x + b * q4_0_elements;
    unsigned char* out = blocks + b * q4_0_bytes;
    float amax = 0.0f, m = 0.0f;
    for (index_t j = 0; j < q4_0_elements; ++j)
      if (amax < std::fabs(v[j])) {
        amax = std::fabs(v[j]);
        m = v[j];
      }
    const float d = m / -8.0f;
    const float id = reciprocal_or_zero(d);
    store_u16_le(out, float16(d).bits);
    for (index_t j = 0; j < half; ++j) {
      // trunc toward zero as a conversion to int8 does; the + 8.5 keeps the argument >= 0.5
      const int lo = std::min(15, static_cast<int>(static_cast<std::int8_t>(v[j] * id + 8.5f)));
      const int hi = std::min(15, static_cast<int>(static_cast<std::int8_t>(v[half + j] * id + 8.5f)));
      out[2 + j] = static_cast<unsigned char>(lo | (hi << 4));
    }
  }
}

void decode_q4_0(const unsigned char* blocks, float* y, index_t n) {
  constexpr index_t half = q4_0_elements / 2;
  for (index_t b = 0; b < n / q4_0_elements; ++b) {
    const unsigned char* in = blocks + b * q4_0_bytes;
    const float d = load_f16_le(in);
    float* out = y + b * q4_0_elements;
    for (index_t j = 0; j < half; ++j) {
      out[j] = static_cast<float>((in[2 + j] & 0x0f) - 8) * d;
      out[half + j] = static_cast<float>((in[2 + j] >> 4) - 8) * d;
    }
  }
}

namespace {
template <class H>
void encode_halves(const float* x, unsigned char* blocks, index_t n) {
  for (index_t j = 0; j < n; ++j) store_u16_le(blocks + 2 * j, H(x[j]).bits);
}
template <class H>
void decode_halves(const unsigned char* blocks, float* y, index_t n) {
  // Little-endian 16-bit values at an even address are the convert kernels' input as they lie
  // (bitwise the scalar conversions, src/kernels/convert.hpp); anything else goes byte by byte.
  if constexpr (std::endian::native == std::endian::little) {
    if (reinterpret_cast<std::uintptr_t>(blocks) % alignof(std::uint16_t) == 0) {
      const auto* bits = reinterpret_cast<const std::uint16_t*>(blocks);
      if constexpr (std::is_same_v<H, bfloat16>) kernels::widen_bf16(bits, y, n, current_settings());
      else kernels::widen_f16(bits, y, n, current_settings());
      return;
    }
  }
  for (index_t j = 0; j < n; ++j)
    y[j] = static_cast<float>(H::from_bits(load_u16_le(blocks + 2 * j)));
}
}  // namespace

void encode_bf16(const float* x, unsigned char* blocks, index_t n) { encode_halves<bfloat16>(x, blocks, n); }
void decode_bf16(const unsigned char* blocks, float* y, index_t n) { decode_halves<bfloat16>(blocks, y, n); }
void encode_f16(const float* x, unsigned char* blocks, index_t n) { encode_halves<float16>(x, blocks, n); }
void decode_f16(const unsigned char* blocks, float* y, index_t n) { decode_halves<float16>(blocks, y, n); }

}  // namespace ct::detail::encoded
