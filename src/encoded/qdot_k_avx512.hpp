// src/encoded/qdot_k_avx512.hpp — the q4_K / q6_K building blocks of the AVX-512 VNNI kernels
// that qdot_avx512.cpp (one activation vector) and qdot_multi_avx512.cpp (several) share: a
// super-block unpacked into registers once (Q4KUnpack, Q6KUnpack), its integer dot with one
// activation super-block (Q4KDot, Q6KDot), and the horizontal sums. Every integer is exact in
// int32 (the bounds are in the comments), so only the float steps' order matters, and the
// kernels keep the portable one. Internal; include only from those files, after
// src/kernels/fp_contract_off.hpp and qdot_avx512.hpp.
#pragma once

#include <cstdint>

#include "src/encoded/qdot_avx512.hpp"

#if CT_QDOT_AVX512
namespace ct::detail::encoded::avx512 {

// The sum of v's eight int32 lanes (exact in any order).
CT_AVX512_VNNI inline std::int32_t HSum8(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

CT_AVX512_VNNI inline __m256i Halve(__m512i v) {
  return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}

// q4_K: a super-block's eight 6-bit scales and mins, unpacked from its 12 bytes (at p) in one
// 128-bit register (docs/encoded.md draws the packing): 32-bit lanes 0..2 hold w0 (scales 0..3
// and the top bits of scales 4..7), w1 (the same for the mins) and w2 (the low nibbles of
// scales 4..7 and, shifted by 4, of mins 4..7). Result: bytes 0..7 the scales of sub-blocks
// 0..7, bytes 8..15 their mins. (The scalar form of these bit operations was about a fifth of
// a super-block's instructions, and fed the vector work through a register move.) Reads 16
// bytes at p: the super-block has 144.
CT_AVX512_VNNI inline __m128i Q4KScalesMins(const unsigned char* p) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i low6 = _mm_and_si128(v, _mm_set1_epi8(0x3f));                         // lanes 0, 1: scales / mins 0..3
  const __m128i w2 = _mm_srlv_epi32(_mm_shuffle_epi32(v, 0xaa), _mm_setr_epi32(0, 4, 0, 0));  // w2, w2 >> 4
  const __m128i top = _mm_slli_epi32(_mm_and_si128(_mm_srli_epi32(v, 6), _mm_set1_epi8(0x03)), 4);
  const __m128i high = _mm_or_si128(_mm_and_si128(w2, _mm_set1_epi8(0x0f)), top);   // lanes 0, 1: scales / mins 4..7
  return _mm_unpacklo_epi32(low6, high);  // [scales 0..3, scales 4..7, mins 0..3, mins 4..7]
}

// q4_K: the vpshufb patterns that put scale byte 2c (int16 lanes 0..15) and 2c + 1 (16..31)
// of a super-block's unpacked scales into the int16 lanes of chunk c (0x80: a zero high byte).
struct Q4KPicks {
  __m512i pick[4];
  CT_AVX512_VNNI Q4KPicks() {
    for (int c = 0; c < 4; ++c) {
      const std::uint64_t a = 0x8000800080008000ull | (0x0001000100010001ull * static_cast<std::uint64_t>(2 * c));
      const std::uint64_t b = 0x8000800080008000ull | (0x0001000100010001ull * static_cast<std::uint64_t>(2 * c + 1));
      pick[c] = _mm512_setr_epi64(static_cast<long long>(a), static_cast<long long>(a), static_cast<long long>(a),
                                  static_cast<long long>(a), static_cast<long long>(b), static_cast<long long>(b),
                                  static_cast<long long>(b), static_cast<long long>(b));
    }
  }
};

// q4_K: one super-block unpacked for the multiplies. Per 64-value chunk c, its 32 bytes twice,
// [low nibbles | high nibbles] = sub-blocks 2c and 2c + 1 (against 64 consecutive activation
// quants), and the two sub-blocks' scales as int16 in the matching halves; the mins as int16
// pairs [m0 m0 m1 m1 ...] (bytes 8..15 of the unpacked scales and mins, each twice).
struct Q4KBlock {
  __m512i nib[4], scale[4];
  __m256i mins;
};
CT_AVX512_VNNI inline Q4KBlock Q4KUnpack(const unsigned char* w, const Q4KPicks& p) {
  const __m512i shifts = _mm512_setr_epi64(0, 0, 0, 0, 4, 4, 4, 4), low = _mm512_set1_epi8(0x0f);
  const __m128i sm = Q4KScalesMins(w + 4);
  const __m512i scb = _mm512_broadcast_i32x4(sm);
  Q4KBlock u;
  for (int c = 0; c < 4; ++c) {
    const __m512i bytes = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 16 + 32 * c)));
    u.nib[c] = _mm512_and_si512(_mm512_srlv_epi64(bytes, shifts), low);
    u.scale[c] = _mm512_shuffle_epi8(scb, p.pick[c]);
  }
  u.mins = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(sm, sm));
  return u;
}

// q4_K: an unpacked super-block against one activation super-block (quants xq, sums of 16 at
// sums): A_s as eight int32 partials (pairs times the sub-block's scale, by vpdpwssd), and
// B_s = sum_j m_j * (sums[2j] + sums[2j + 1]) as eight. A_s at most 256 * 15 * 127 * 63, B_s at
// most 256 * 127 * 63.
CT_AVX512_VNNI inline void Q4KDot(const Q4KBlock& u, const std::int8_t* xq, const std::int16_t* sums, __m256i& a_out,
                                 __m256i& b_out) {
  // Two accumulators (chunks 0, 2 and 1, 3): a chain of four vpdpwssd was the loop's latency.
  __m512i acc2[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
  for (int c = 0; c < 4; ++c)
    acc2[c % 2] = _mm512_dpwssd_epi32(acc2[c % 2], _mm512_maddubs_epi16(u.nib[c], _mm512_loadu_si512(xq + 64 * c)), u.scale[c]);
  a_out = Halve(_mm512_add_epi32(acc2[0], acc2[1]));
  b_out = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sums)), u.mins);
}

CT_AVX512_VNNI inline void Q4KPartials(const unsigned char* w, const std::int8_t* xq, const std::int16_t* sums, const Q4KPicks& p,
                                      __m256i& a_out, __m256i& b_out) {
  Q4KDot(Q4KUnpack(w, p), xq, sums, a_out, b_out);
}

// The lane sums of four vectors of eight int32 (exact in any order): out = {sum p0, sum q0,
// sum p1, sum q1}. One tree for all four: the two horizontal sums per super-block each took as
// many shuffles and adds as the whole tree.
CT_AVX512_VNNI inline void HSum4x8(__m256i p0, __m256i q0, __m256i p1, __m256i q1, std::int32_t (&out)[4]) {
  const __m512i p = _mm512_inserti64x4(_mm512_castsi256_si512(p0), p1, 1);
  const __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(q0), q1, 1);
  // per 128-bit lane: [p0 + p2, q0 + q2, p1 + p3, q1 + q3], then [P, Q, P, Q] for the lane
  __m512i t = _mm512_add_epi32(_mm512_unpacklo_epi32(p, q), _mm512_unpackhi_epi32(p, q));
  t = _mm512_add_epi32(t, _mm512_shuffle_epi32(t, _MM_PERM_BADC));
  t = _mm512_add_epi32(t, _mm512_shuffle_i32x4(t, t, _MM_SHUFFLE(2, 3, 0, 1)));  // lanes 0 + 1, 2 + 3
  const __m128i lo = _mm512_castsi512_si128(t), hi = _mm512_extracti32x4_epi32(t, 2);
  out[0] = _mm_cvtsi128_si32(lo);
  out[1] = _mm_extract_epi32(lo, 1);
  out[2] = _mm_cvtsi128_si32(hi);
  out[3] = _mm_extract_epi32(hi, 1);
}

// The lane sums of eight vectors of eight int32 (exact in any order): lane i of the result is
// the sum of v[i]'s lanes. Three levels of unpack-and-add, then the two 128-bit halves: 21
// operations for eight sums, where one horizontal sum per vector takes six.
CT_AVX512_VNNI inline __m256i Sums8x8(const __m256i (&v)[8]) {
  __m256i t[4];
  for (int i = 0; i < 4; ++i)  // per 128-bit half: [v2i 0+2, v2i+1 0+2, v2i 1+3, v2i+1 1+3]
    t[i] = _mm256_add_epi32(_mm256_unpacklo_epi32(v[2 * i], v[2 * i + 1]), _mm256_unpackhi_epi32(v[2 * i], v[2 * i + 1]));
  // per 128-bit half: [v0, v1, v2, v3] and [v4, v5, v6, v7], each that half's sum
  const __m256i u0 = _mm256_add_epi32(_mm256_unpacklo_epi64(t[0], t[1]), _mm256_unpackhi_epi64(t[0], t[1]));
  const __m256i u1 = _mm256_add_epi32(_mm256_unpacklo_epi64(t[2], t[3]), _mm256_unpackhi_epi64(t[2], t[3]));
  return _mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20), _mm256_permute2x128_si256(u0, u1, 0x31));
}

// q6_K: per 128-value half h, ql's 64 bytes [l0 | l1] and qh's 32 bytes twice: quarters 0 and 1
// are the low nibbles with qh's bits 0-1 and 2-3, quarters 2 and 3 the high nibbles with bits
// 4-5 and 6-7 (one register each, against 64 consecutive activation quants). Each register
// spans four 16-value scale groups: int16 lanes 8i..8i+7 take group 4r + i's scale (vpermw).
// A_s at most 256 * 63 * 127 * 128 before the "- 32" (32 * sum_g sc_g * sums_g) comes off.
struct Q6KConsts {
  // qh's two bits for quarters 0 / 1 (bits 0-1 / 2-3, in the register's two halves) and 2 / 3
  // (bits 4-5 / 6-7), masked first so that the 64-bit shift moving them to bits 4-5 carries
  // nothing across bytes; then one vpternlogd forms (nibble & 0x0f) | bits.
  __m512i low, mask01, mask23, left01, right23;
  __m512i group[4];  // vpermw indices: int16 lane l of register r takes scale 4r + l / 8
  CT_AVX512_VNNI Q6KConsts() {
    low = _mm512_set1_epi8(0x0f);
    mask01 = _mm512_setr_epi64(0x0303030303030303ll, 0x0303030303030303ll, 0x0303030303030303ll, 0x0303030303030303ll,
                               0x0c0c0c0c0c0c0c0cll, 0x0c0c0c0c0c0c0c0cll, 0x0c0c0c0c0c0c0c0cll, 0x0c0c0c0c0c0c0c0cll);
    mask23 = _mm512_setr_epi64(0x3030303030303030ll, 0x3030303030303030ll, 0x3030303030303030ll, 0x3030303030303030ll,
                               static_cast<long long>(0xc0c0c0c0c0c0c0c0ull), static_cast<long long>(0xc0c0c0c0c0c0c0c0ull),
                               static_cast<long long>(0xc0c0c0c0c0c0c0c0ull), static_cast<long long>(0xc0c0c0c0c0c0c0c0ull));
    left01 = _mm512_setr_epi64(4, 4, 4, 4, 2, 2, 2, 2);
    right23 = _mm512_setr_epi64(0, 0, 0, 0, 2, 2, 2, 2);
    for (int r = 0; r < 4; ++r) {
      alignas(64) std::int16_t idx[32];
      for (int l = 0; l < 32; ++l) idx[l] = static_cast<std::int16_t>(4 * r + l / 8);
      group[r] = _mm512_load_si512(idx);
    }
  }
};

// q6_K: one super-block unpacked for the multiplies: register j = 2h + (0: quarters 0-1, 1:
// quarters 2-3) of half h, its groups' scales as int16, and the sixteen scales widened.
struct Q6KBlock {
  __m512i q[4], scale[4];
  __m256i sc16;
};
CT_AVX512_VNNI inline Q6KBlock Q6KUnpack(const unsigned char* sb, const Q6KConsts& k) {
  Q6KBlock u;
  u.sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + 192)));
  const __m512i scz = _mm512_castsi256_si512(u.sc16);
  for (int h = 0; h < 2; ++h) {
    const __m512i l = _mm512_loadu_si512(sb + 64 * h);
    const __m512i hb = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + 128 + 32 * h)));
    const __m512i h01 = _mm512_sllv_epi64(_mm512_and_si512(hb, k.mask01), k.left01);   // bits 4-5 only
    const __m512i h23 = _mm512_srlv_epi64(_mm512_and_si512(hb, k.mask23), k.right23);  // bits 4-5 only
    u.q[2 * h] = _mm512_ternarylogic_epi64(l, h01, k.low, 0xEC);                          // (l & low) | h01
    u.q[2 * h + 1] = _mm512_ternarylogic_epi64(_mm512_srli_epi16(l, 4), h23, k.low, 0xEC);  // (l >> 4 & low) | h23
    u.scale[2 * h] = _mm512_permutexvar_epi16(k.group[2 * h], scz);
    u.scale[2 * h + 1] = _mm512_permutexvar_epi16(k.group[2 * h + 1], scz);
  }
  return u;
}

// q6_K: an unpacked super-block against one activation super-block: its eight int32 partials,
// the "- 32" taken off.
CT_AVX512_VNNI inline __m256i Q6KDot(const Q6KBlock& u, const std::int8_t* xq, const std::int16_t* sums) {
  __m512i a[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};  // two chains of vpdpwssd, not one
  for (int j = 0; j < 4; ++j)
    a[j % 2] = _mm512_dpwssd_epi32(a[j % 2], _mm512_maddubs_epi16(u.q[j], _mm512_loadu_si512(xq + 128 * (j / 2) + 64 * (j % 2))),
                                   u.scale[j]);
  const __m256i off = _mm256_madd_epi16(u.sc16, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sums)));
  return _mm256_sub_epi32(Halve(_mm512_add_epi32(a[0], a[1])), _mm256_slli_epi32(off, 5));
}

}  // namespace ct::detail::encoded::avx512
#endif
