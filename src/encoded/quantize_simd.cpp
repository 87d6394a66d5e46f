// The activation quantizer of quantized mode on x86 (AVX2 and the AVX-512 targets): what
// quantize_activation (qdot.cpp) computes with its scalar loops — the finiteness check, each
// block's scale and quants, the sums of 16 — with the same bits; the other targets return
// false and the scalar loops run.
#include "src/kernels/fp_contract_off.hpp"  // must stay first
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/encoded/quantize_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "src/encoded/builtin.hpp"
#include "src/encoded/qdot.hpp"

HWY_BEFORE_NAMESPACE();
namespace ct::detail::encoded {
namespace HWY_NAMESPACE {

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2

// The largest |x| of the block at x (8 lanes; exact in any order, as the scalar chain).
HWY_INLINE __m256 AbsMax8(const float* x, index_t block) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 m8 = _mm256_andnot_ps(sign, _mm256_loadu_ps(x));
  for (index_t c = 8; c < block; c += 8) m8 = _mm256_max_ps(m8, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + c)));
  return m8;
}

// Lane j: the largest lane of m[j] (eight horizontal maxima in one transpose tree).
HWY_INLINE __m256 LaneMaxima8(const __m256 (&m)[8]) {
  __m256 w[2];
  for (int h = 0; h < 2; ++h) {
    const __m256* v = m + 4 * h;
    // per 128-bit half: [v0 0|2, v1 0|2, v0 1|3, v1 1|3], the same for v2, v3; then v0..v3
    const __m256 u01 = _mm256_max_ps(_mm256_unpacklo_ps(v[0], v[1]), _mm256_unpackhi_ps(v[0], v[1]));
    const __m256 u23 = _mm256_max_ps(_mm256_unpacklo_ps(v[2], v[3]), _mm256_unpackhi_ps(v[2], v[3]));
    w[h] = _mm256_max_ps(_mm256_shuffle_ps(u01, u23, _MM_SHUFFLE(1, 0, 1, 0)), _mm256_shuffle_ps(u01, u23, _MM_SHUFFLE(3, 2, 3, 2)));
  }
  return _mm256_max_ps(_mm256_permute2f128_ps(w[0], w[1], 0x20), _mm256_permute2f128_ps(w[0], w[1], 0x31));
}

// The block at x quantized with the reciprocal scale id into q.
HWY_INLINE void QuantizeBlock(const float* x, index_t block, float id, std::int8_t* q) {
  const __m256 half = _mm256_set1_ps(0.5f), minus_half = _mm256_set1_ps(-0.5f), one = _mm256_set1_ps(1.0f);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  const __m256 vid = _mm256_set1_ps(id);
  for (index_t c0 = 0; c0 < block; c0 += 32) {
    __m256i r[4];
    for (int c = 0; c < 4; ++c) {
      const __m256 qv = _mm256_mul_ps(_mm256_loadu_ps(x + c0 + 8 * c), vid);
      const __m256 t = _mm256_round_ps(qv, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
      const __m256 f = _mm256_sub_ps(qv, t);
      const __m256 up = _mm256_and_ps(_mm256_cmp_ps(f, half, _CMP_GE_OQ), one);
      const __m256 down = _mm256_and_ps(_mm256_cmp_ps(f, minus_half, _CMP_LE_OQ), one);
      r[c] = _mm256_cvttps_epi32(_mm256_sub_ps(_mm256_add_ps(t, up), down));
    }
    // packs work per 128-bit half: the 4-byte groups come out as r0a r1a r2a r3a | r0b r1b r2b r3b
    const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(r[0], r[1]), _mm256_packs_epi32(r[2], r[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + c0), _mm256_permutevar8x32_epi32(bytes, order));
  }
}

// The activation quantizer, 8 lanes at a time, with the bits of quantize_activation's scalar
// loops (qdot.cpp): max |x| (exact in any order), the scale steps, then q = x * (1 / d)
// rounded half away from zero by truncation plus the exact fraction's comparison with one half.
// Blocks of 32 (q8_0 / q4_0 products: the scale as encode_q8_0 rounds it to float16, widened)
// or 256 (the K formats: the float scale). (The K formats' blocks
// went through the scalar loop before: ~6 µs of a 4096-value product's call on a Zen 5 guest,
// as long as the AVX-512 q4_K kernel takes for 40 of its rows.)
// The scale steps go eight blocks at a time in vectors: the same IEEE division, reciprocal and
// float16 rounding (F16C's, to nearest even, as float16's constructor) as the scalar steps, so
// the same bits. One block at a time, their chain of two divisions, the float16 rounding and
// its widening was most of the quantizer's time (4096 values: ~2.4 µs on the Zen 5 guest).
void QuantizeBlocks8(const float* v, index_t k, index_t block, std::int8_t* q, float* d) {
  const index_t blocks = k / block;
  index_t b = 0;
  for (; b + 8 <= blocks; b += 8) {
    __m256 m[8];
    for (int j = 0; j < 8; ++j) m[j] = AbsMax8(v + block * (b + j), block);
    const __m256 db = _mm256_div_ps(LaneMaxima8(m), _mm256_set1_ps(127.0f));
    // reciprocal_or_zero: 1 / d, or 0 where d is 0 or 1 / d overflows
    const __m256 r = _mm256_div_ps(_mm256_set1_ps(1.0f), db);
    const __m256 keep = _mm256_and_ps(_mm256_cmp_ps(db, _mm256_setzero_ps(), _CMP_NEQ_OQ),
                                      _mm256_cmp_ps(r, _mm256_set1_ps(std::numeric_limits<float>::max()), _CMP_LE_OQ));
    alignas(32) float id[8];
    _mm256_store_ps(id, _mm256_and_ps(r, keep));
    _mm256_storeu_ps(d + b, block == 32 ? _mm256_cvtph_ps(_mm256_cvtps_ph(db, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)) : db);
    for (int j = 0; j < 8; ++j) QuantizeBlock(v + block * (b + j), block, id[j], q + block * (b + j));
  }
  for (; b < blocks; ++b) {
    const __m256 m8 = AbsMax8(v + block * b, block);
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m8), _mm256_extractf128_ps(m8, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    const float amax = _mm_cvtss_f32(_mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1)));
    const float db = amax / 127.0f;
    d[b] = block == 32 ? f16_bits_to_float(float16(db).bits) : db;
    QuantizeBlock(v + block * b, block, reciprocal_or_zero(db), q + block * b);
  }
}

#if HWY_TARGET <= HWY_AVX3
// The same quantizer 16 lanes at a time, which also checks that every value is finite (one
// fpclass per vector on the max |x| pass; require_finite, which throws, rescans only if not)
// and forms the sums of 16 from the int32 quants before they are narrowed: the same bits.
// (With AVX2's eight lanes, the separate finiteness pass and the scalar sums of 16, a
// 4096-value activation took ~2.3 µs on the Zen 5 guest.)
bool QuantizeBlocks16(const float* v, index_t k, index_t block, std::int8_t* q, float* d, std::int16_t* sums) {
  const index_t blocks = k / block;
  const __m512 half = _mm512_set1_ps(0.5f), minus_half = _mm512_set1_ps(-0.5f), one = _mm512_set1_ps(1.0f);
  __mmask16 bad = 0;
  for (index_t b0 = 0; b0 < blocks; b0 += 16) {
    const int nb = static_cast<int>(std::min<index_t>(16, blocks - b0));
    // max |x| of each block, block j in lane j
    alignas(64) float amax[16] = {};
    for (int j = 0; j < nb; ++j) {
      const float* x = v + block * (b0 + j);
      __m512 m = _mm512_setzero_ps();
      for (index_t c = 0; c < block; c += 16) {
        const __m512 xv = _mm512_loadu_ps(x + c);
        bad = static_cast<__mmask16>(bad | _mm512_fpclass_ps_mask(xv, 0x99));  // QNaN, SNaN, +inf, -inf
        m = _mm512_max_ps(m, _mm512_abs_ps(xv));
      }
      amax[j] = _mm512_reduce_max_ps(m);
    }
    if (bad != 0) return false;  // the caller's require_finite names the value
    const __m512 db = _mm512_div_ps(_mm512_load_ps(amax), _mm512_set1_ps(127.0f));
    // reciprocal_or_zero: 1 / d, or 0 where d is 0 or 1 / d overflows
    const __m512 r = _mm512_div_ps(one, db);
    const __mmask16 keep = _mm512_cmp_ps_mask(db, _mm512_setzero_ps(), _CMP_NEQ_OQ) &
                           _mm512_cmp_ps_mask(r, _mm512_set1_ps(std::numeric_limits<float>::max()), _CMP_LE_OQ);
    alignas(64) float id[16];
    _mm512_store_ps(id, _mm512_maskz_mov_ps(keep, r));
    const __mmask16 lanes = static_cast<__mmask16>((1u << nb) - 1);
    _mm512_mask_storeu_ps(d + b0, lanes,
                          block == 32 ? _mm512_cvtph_ps(_mm512_cvtps_ph(db, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)) : db);
    // the quants, 16 at a time (a vector lies in one block), and their sums of 16
    const index_t begin = block * b0, end = block * (b0 + nb);
    const auto quants16 = [&](index_t at) HWY_ATTR {
      const __m512 qv = _mm512_mul_ps(_mm512_loadu_ps(v + at), _mm512_set1_ps(id[(at - begin) / block]));
      const __m512 t = _mm512_roundscale_ps(qv, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
      const __m512 f = _mm512_sub_ps(qv, t);
      __m512 rq = _mm512_mask_add_ps(t, _mm512_cmp_ps_mask(f, half, _CMP_GE_OQ), t, one);
      rq = _mm512_mask_sub_ps(rq, _mm512_cmp_ps_mask(f, minus_half, _CMP_LE_OQ), rq, one);
      const __m512i r = _mm512_cvttps_epi32(rq);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + at), _mm512_cvtsepi32_epi8(r));  // |r| <= 127: no saturation
      return r;
    };
    index_t at = begin;
    for (; at + 64 <= end; at += 64) {
      __m512i r4[4];
      for (int c = 0; c < 4; ++c) r4[c] = quants16(at + 16 * c);
      // per 128-bit lane l: [sum_l r0, sum_l r1, sum_l r2, sum_l r3]; then the four lanes added
      const auto pair32 = [](__m512i a, __m512i b) HWY_ATTR {
        return _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
      };
      const __m512i p01 = pair32(r4[0], r4[1]), p23 = pair32(r4[2], r4[3]);
      __m512i s4 = _mm512_add_epi32(_mm512_unpacklo_epi64(p01, p23), _mm512_unpackhi_epi64(p01, p23));
      s4 = _mm512_add_epi32(s4, _mm512_shuffle_i32x4(s4, s4, _MM_SHUFFLE(1, 0, 3, 2)));
      s4 = _mm512_add_epi32(s4, _mm512_shuffle_i32x4(s4, s4, _MM_SHUFFLE(2, 3, 0, 1)));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(sums + at / 16), _mm_packs_epi32(_mm512_castsi512_si128(s4), _mm_setzero_si128()));
    }
    for (; at < end; at += 16) sums[at / 16] = static_cast<std::int16_t>(_mm512_reduce_add_epi32(quants16(at)));
  }
  return true;
}
#endif

// quantize_activation's work (the finiteness check, q, d and the sums of 16) for blocks of 32
// or 256; false for another block size, or a value that is not finite (q, d and sums are then
// scratch: the caller's require_finite throws).
bool QuantizeBlocks(const float* v, index_t k, index_t block, std::int8_t* q, float* d, std::int16_t* sums) {
  if (block != 32 && block != 256) return false;
#if HWY_TARGET <= HWY_AVX3
  return QuantizeBlocks16(v, k, block, q, d, sums);
#else
  require_finite(block == 32 ? "q8_0 activation" : "q8_K activation", v, k);
  QuantizeBlocks8(v, k, block, q, d);
  quant_sums(q, k, sums);
  return true;
#endif
}

#else

bool QuantizeBlocks(const float*, index_t, index_t, std::int8_t*, float*, std::int16_t*) { return false; }

#endif

}  // namespace HWY_NAMESPACE
}  // namespace ct::detail::encoded
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ct::detail::encoded {
HWY_EXPORT(QuantizeBlocks);
bool simd_quantize(const float* v, index_t k, index_t block, std::int8_t* q, float* d, std::int16_t* sums) {
  return HWY_DYNAMIC_DISPATCH(QuantizeBlocks)(v, k, block, q, d, sums);
}
}  // namespace ct::detail::encoded
#endif
