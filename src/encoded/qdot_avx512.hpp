// src/encoded/qdot_avx512.hpp — what the AVX-512 VNNI kernels (qdot_avx512.cpp, q8_0 / q4_0
// rows and the entry points; qdot_k_rows_avx512.cpp and qdot_multi_avx512.cpp, the K formats;
// qdot_tile_avx512.cpp, prompt-sized tiles) share: the target attribute, the CPU check, and the
// small block and lane helpers both use. Internal; include only from those files, after
// src/kernels/fp_contract_off.hpp.
#pragma once

#include <cstdint>

#include "src/encoded/builtin.hpp"
#include "src/encoded/qdot.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// g++ 12 reports the AVX-512 intrinsics' own "undefined" operands as maybe uninitialized, and
// warns that vector arguments change the ABI (these functions are internal and inlined).
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
#include <immintrin.h>
#define CT_QDOT_AVX512 1
#define CT_AVX512_VNNI __attribute__((target("avx2,fma,f16c,bmi,bmi2,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))
#endif

#if CT_QDOT_AVX512
namespace ct::detail::encoded::avx512 {

/// Whether this CPU runs the kernels (AVX-512 F, BW, VL, DQ and VNNI); checked once.
bool cpu_has_vnni();

/// The q4_K / q6_K one-vector kernels (qdot_k_rows_avx512.cpp), for avx512_qdot and
/// avx512_qdot_rows: the kernel of format f, or nullptr for the other formats. The caller has
/// checked cpu_has_vnni.
qdot_fn k_qdot(qformat f, bool fused);
qdot_rows_fn k_qdot_rows(qformat f, bool fused);

template <bool kFused>
CT_AVX512_VNNI inline __m512 MulAdd16(__m512 a, __m512 b, __m512 c) {
  if constexpr (kFused) {
    return _mm512_fmadd_ps(a, b, c);
  } else {
    __m512 p = _mm512_mul_ps(a, b);
    asm("" : "+v"(p));  // keep the product out of reach of contraction
    return _mm512_add_ps(c, p);
  }
}

// One block's 32 quants in unsigned form, as vpdpbusd takes them: w ^ 0x80 = w + 128 (q8_0), or
// the 16 low nibbles then the 16 high nibbles (q4_0: the bytes in both halves, the upper half
// shifted right by 4).
template <bool kQ4>
CT_AVX512_VNNI inline __m256i UnsignedBlock(const unsigned char* blk) {
  if constexpr (kQ4) {
    const __m256i bytes = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2)));
    return _mm256_and_si256(_mm256_srlv_epi64(bytes, _mm256_setr_epi64x(0, 0, 4, 4)), _mm256_set1_epi8(0x0f));
  } else {
    return _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2)),
                            _mm256_set1_epi8(static_cast<char>(0x80)));
  }
}

// fold_lanes' pairwise tree: lane l += lane l + w for w = 8, 4, 2, 1.
CT_AVX512_VNNI inline float FoldLanes(__m512 lanes) {
  const __m256 w8 = _mm256_add_ps(_mm512_castps512_ps256(lanes), _mm512_extractf32x8_ps(lanes, 1));
  const __m128 w4 = _mm_add_ps(_mm256_castps256_ps128(w8), _mm256_extractf128_ps(w8, 1));
  const __m128 w2 = _mm_add_ps(w4, _mm_movehl_ps(w4, w4));
  return _mm_cvtss_f32(_mm_add_ss(w2, _mm_shuffle_ps(w2, w2, 1)));
}

// A float16 scale widened by F16C (exact, as f16_bits_to_float; the library function's branches
// for subnormals were a measurable part of a K super-block's time).
CT_AVX512_VNNI inline float ScaleAt(const unsigned char* p) { return _cvtsh_ss(load_u16_le(p)); }

}  // namespace ct::detail::encoded::avx512
#endif
