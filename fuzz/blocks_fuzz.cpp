// fuzz/blocks_fuzz.cpp — libFuzzer target: encoded blocks of arbitrary bytes (docs/reliability.md).
// Input: byte 0 picks the format (q8_0, q4_0, q4_K, q6_K, bf16, f16), byte 1 the rows (1-4); the
// rest, cut to whole rows of whole blocks, are the weight bytes, as a model file may hold them.
// Checks: decoding never crashes or reads out of bounds; each decoded value equals the
// format's definition computed here independently for q8_0 and q4_0 (value = q * d, (n - 8) * d
// with the float16 scale widened); and the quantized product of every simd target gives the
// portable kernels' bits (NaN compared as NaN) for an activation derived from the input.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ct/ct.hpp"

namespace {

// IEEE binary16 at p (little-endian), widened: written here from the format's definition.
float f16(const unsigned char* p) {
  const unsigned h = static_cast<unsigned>(p[0] | (p[1] << 8));
  const int e = static_cast<int>((h >> 10) & 31), m = static_cast<int>(h & 1023);
  float v;
  if (e == 0)
    v = std::ldexp(static_cast<float>(m), -24);
  else if (e == 31)
    v = m != 0 ? NAN : INFINITY;
  else
    v = std::ldexp(static_cast<float>(m + 1024), e - 25);
  return (h >> 15) != 0 ? -v : v;
}

bool same(float a, float b) { return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  static const char* names[] = {"q8_0", "q4_0", "q4_K", "q6_K", "bf16", "f16"};
  const std::string name = names[data[0] % 6];
  const ct::format f = ct::find_format(name);
  const ct::index_t rows = 1 + data[1] % 4;
  const std::size_t per_block = static_cast<std::size_t>(f.block_bytes());
  const std::size_t blocks = (size - 2) / (per_block * static_cast<std::size_t>(rows));
  if (blocks == 0 || blocks > 64) return 0;
  const ct::index_t k = static_cast<ct::index_t>(blocks) * f.block_elements();
  const unsigned char* bytes = data + 2;
  const std::size_t used = blocks * per_block * static_cast<std::size_t>(rows);
  const auto w = ct::encoded_tensor::view(f, {rows, k}, bytes, used);

  const auto decoded = ct::decode(w);
  if (name == "q8_0" || name == "q4_0") {
    for (ct::index_t r = 0; r < rows; ++r)
      for (ct::index_t j = 0; j < k; ++j) {
        const unsigned char* blk = bytes + static_cast<std::size_t>(r) * blocks * per_block +
                                   static_cast<std::size_t>(j / 32) * per_block;
        const int i = static_cast<int>(j % 32);
        const float d = f16(blk);
        float want;
        if (name == "q8_0") {
          want = static_cast<float>(static_cast<std::int8_t>(blk[2 + i])) * d;
        } else {
          const int n = i < 16 ? (blk[2 + i] & 0x0f) : (blk[2 + i - 16] >> 4);
          want = static_cast<float>(n - 8) * d;
        }
        if (!same(decoded(r, j), want)) __builtin_trap();
      }
  }

  // The product in the default mode (quantized activations for the block formats, decoded rows
  // for bf16 / f16): portable against simd, both FMA policies; an activation from the input's
  // bytes (finite, varied magnitudes).
  {
    ct::tensor<float> x({k});
    for (ct::index_t j = 0; j < k; ++j) {
      const unsigned char b = data[static_cast<std::size_t>(j) % size];
      x(j) = std::ldexp(static_cast<float>(static_cast<std::int8_t>(b)), static_cast<int>(b % 13) - 6);
    }
    for (ct::fma_policy p : {ct::fma_policy::fused, ct::fma_policy::separate}) {
      ct::tensor<float> portable;
      {
        ct::settings_scope s({ct::backend::scalar, p});
        portable = ct::matmul(w, x);
      }
      ct::settings_scope s({ct::backend::simd, p});
      const auto simd = ct::matmul(w, x);
      for (ct::index_t r = 0; r < rows; ++r)
        if (!same(simd(r), portable(r))) __builtin_trap();
    }
  }
  return 0;
}
