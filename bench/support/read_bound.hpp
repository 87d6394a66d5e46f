// bench/support/read_bound.hpp — the read bound's pass shared by the benchmarks that compare
// a product with the time to read its bytes once (bench/encoded, bench/llama): 256-bit loads in
// four independent XOR chains where the CPU has AVX2 (checked at run time; the programs are
// built for the baseline plus this function's target attribute), else 64-bit ones in four.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <immintrin.h>

namespace ct_bench {

__attribute__((target("avx2"))) inline std::uint64_t read_all_avx2(const unsigned char* p, std::size_t bytes) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  std::size_t i = 0;
  for (; i + 128 <= bytes; i += 128) {
    a0 = _mm256_xor_si256(a0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
    a1 = _mm256_xor_si256(a1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
    a2 = _mm256_xor_si256(a2, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 64)));
    a3 = _mm256_xor_si256(a3, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 96)));
  }
  const __m256i all = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
  std::uint64_t r = static_cast<std::uint64_t>(_mm256_extract_epi64(all, 0) ^ _mm256_extract_epi64(all, 1) ^
                                               _mm256_extract_epi64(all, 2) ^ _mm256_extract_epi64(all, 3));
  for (; i < bytes; ++i) r ^= p[i];
  return r;
}

/// Reads bytes [p, p + bytes) once; the XOR of them, so the loads cannot be dropped.
inline std::uint64_t read_all(const unsigned char* p, std::size_t bytes) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) return read_all_avx2(p, bytes);
  std::uint64_t r[4] = {};
  std::size_t i = 0;
  for (; i + 32 <= bytes; i += 32)
    for (int c = 0; c < 4; ++c) {
      std::uint64_t v;
      std::memcpy(&v, p + i + 8 * c, 8);
      r[c] ^= v;
    }
  for (; i < bytes; ++i) r[0] ^= p[i];
  return r[0] ^ r[1] ^ r[2] ^ r[3];
}

}  // namespace ct_bench
