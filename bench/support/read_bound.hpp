// bench/support/read_bound.hpp — the read bound's pass shared by the benchmarks that compare
// a product with the time to read its bytes once (bench/encoded, bench/llama). The fastest
// plain read we found, so that a bound fraction can be trusted: where the CPU has AVX-512,
// 512-bit loads walking the two halves of the bytes side by side (on a Zen 5 guest, reading
// from DRAM: 34.1-34.5 GB/s, against 30.4-31.4 for one stream of 256-bit loads, 32-33 for two
// streams of 256-bit or one of 512-bit, 21.6 for four streams, and 24-28 with software
// prefetches added at 0.5-16 KiB); else 256-bit loads in four independent XOR chains (AVX2);
// else 64-bit ones. Checked at run time: the programs are built for the baseline plus these
// functions' target attributes.
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

__attribute__((target("avx512f"))) inline std::uint64_t read_all_avx512(const unsigned char* p, std::size_t bytes) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0;
  const std::size_t half = bytes / 256 * 128;  // two streams: [0, half) and [half, 2 * half)
  for (std::size_t i = 0; i < half; i += 128) {
    a0 = _mm512_xor_si512(a0, _mm512_loadu_si512(p + i));
    a1 = _mm512_xor_si512(a1, _mm512_loadu_si512(p + i + 64));
    a0 = _mm512_xor_si512(a0, _mm512_loadu_si512(p + half + i));
    a1 = _mm512_xor_si512(a1, _mm512_loadu_si512(p + half + i + 64));
  }
  const __m512i all = _mm512_xor_si512(a0, a1);
  alignas(64) std::uint64_t lanes[8];
  _mm512_store_si512(lanes, all);
  std::uint64_t r = 0;
  for (std::uint64_t l : lanes) r ^= l;
  for (std::size_t i = 2 * half; i < bytes; ++i) r ^= p[i];
  return r;
}

/// Reads bytes [p, p + bytes) once; the XOR of them, so the loads cannot be dropped.
inline std::uint64_t read_all(const unsigned char* p, std::size_t bytes) {
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx512) return read_all_avx512(p, bytes);
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
