// src/encoded/qdot_k_avx512.hpp — the q4_K / q6_K building blocks of the AVX-512 VNNI kernels
// that qdot_k_rows_avx512.cpp (one activation vector) and qdot_multi_avx512.cpp (several)
// share: a super-block unpacked into registers once (q4_K's heads four super-blocks at a time,
// Q4KHeads4 and Q4KScalesMins4, then Q4KUnpackQuants; Q6KUnpack), its integer dot with one
// activation super-block (Q4KDotA, Q4KMinDots4; Q6KDot16, Q6KDot), and the horizontal sums.
// Every integer is exact in int32 (the bounds are in the comments), so only the float steps'
// order matters, and the kernels keep the portable one. Internal; include only from those
// files, after src/kernels/fp_contract_off.hpp and qdot_avx512.hpp.
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

// q4_K, four super-blocks at a time (the one-vector kernel's batches of eight, Q4KBatch): each
// super-block's first 16 bytes (d, dmin and the 12 bytes of scales and mins) in one 128-bit
// lane, super-block i in lane i, by one load and three inserts.
// The super-blocks are `stride` bytes apart: 144 along a row, a row's bytes across rows.
CT_AVX512_VNNI inline __m512i Q4KHeads4(const unsigned char* w, std::size_t stride = 144) {
  __m512i h = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w)));
  h = _mm512_inserti32x4(h, _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + stride)), 1);
  h = _mm512_inserti32x4(h, _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 2 * stride)), 2);
  return _mm512_inserti32x4(h, _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 3 * stride)), 3);
}

// The same, for the first n (0..4) of the four; lanes past them 0 (nothing read there).
CT_AVX512_VNNI inline __m512i Q4KHeads4(const unsigned char* w, index_t n) {
  __m512i h = _mm512_setzero_si512();
  if (n > 0) h = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w)));
  if (n > 1) h = _mm512_inserti32x4(h, _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 144)), 1);
  if (n > 2) h = _mm512_inserti32x4(h, _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 288)), 2);
  if (n > 3) h = _mm512_inserti32x4(h, _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 432)), 3);
  return h;
}

// 128-bit lane i (0..3) of v in all four lanes.
CT_AVX512_VNNI inline __m512i Lane128(__m512i v, int i) {
  switch (i) {
    case 0: return _mm512_shuffle_i32x4(v, v, 0x00);
    case 1: return _mm512_shuffle_i32x4(v, v, 0x55);
    case 2: return _mm512_shuffle_i32x4(v, v, 0xaa);
    default: return _mm512_shuffle_i32x4(v, v, 0xff);
  }
}

// q4_K: the eight 6-bit scales and mins of Q4KHeads4's four super-blocks, unpacked from their
// 12 bytes each (docs/encoded.md draws the packing) by one set of vector bit operations for
// the four. Per 128-bit lane, after the 4-byte shift: 32-bit lanes 0..2 hold w0 (scales 0..3
// and the top bits of scales 4..7), w1 (the same for the mins) and w2 (the low nibbles of
// scales 4..7 and, shifted by 4, of mins 4..7); the top two bits come by one shift of 2 and a
// mask (bits 6-7 of each byte to bits 4-5 of the same byte). Result: lane i bytes 0..7 the
// scales of super-block i's sub-blocks 0..7, bytes 8..15 their mins. (Unpacked one super-block
// at a time, in 128-bit registers, these were a fifth of a super-block's operations.)
CT_AVX512_VNNI inline __m512i Q4KScalesMins4(__m512i heads) {
  const __m512i v = _mm512_bsrli_epi128(heads, 4);  // per lane [w0, w1, w2, 0]
  const __m512i low6 = _mm512_and_si512(v, _mm512_set1_epi8(0x3f));
  const __m512i w2 = _mm512_srlv_epi32(_mm512_shuffle_epi32(v, _MM_PERM_CCCC), _mm512_setr4_epi32(0, 4, 0, 0));
  const __m512i top = _mm512_and_si512(_mm512_srli_epi32(v, 2), _mm512_set1_epi8(0x30));
  const __m512i high = _mm512_ternarylogic_epi32(w2, _mm512_set1_epi8(0x0f), top, 0xEA);  // (w2 & 0x0f) | top
  return _mm512_unpacklo_epi32(low6, high);
}

// q4_K: one super-block's nibbles and scale picks for the multiplies, its unpacked scales and
// mins broadcast to every lane in scb (a lane of Q4KScalesMins4's, by Lane128). Per 64-value
// chunk c, its 32 bytes twice, [low nibbles | high nibbles] = sub-blocks 2c and 2c + 1
// (against 64 consecutive activation quants), and the two sub-blocks' scales as int16 in the
// matching halves.
struct Q4KQuants {
  __m512i nib[4], scale[4];
};
CT_AVX512_VNNI inline Q4KQuants Q4KUnpackQuants(const unsigned char* w, __m512i scb, const Q4KPicks& p) {
  const __m512i shifts = _mm512_setr_epi64(0, 0, 0, 0, 4, 4, 4, 4), low = _mm512_set1_epi8(0x0f);
  Q4KQuants u;
  for (int c = 0; c < 4; ++c) {
    const __m512i bytes = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 16 + 32 * c)));
    u.nib[c] = _mm512_and_si512(_mm512_srlv_epi64(bytes, shifts), low);
    u.scale[c] = _mm512_shuffle_epi8(scb, p.pick[c]);
  }
  return u;
}

// q4_K: an unpacked super-block's A_s against one activation super-block's quants, as sixteen
// int32 partials: pairs times the sub-block's scale, by vpdpwssd. A_s at most
// 256 * 15 * 127 * 63.
CT_AVX512_VNNI inline __m512i Q4KDotA(const Q4KQuants& u, const std::int8_t* xq) {
  // Two accumulators (chunks 0, 2 and 1, 3): a chain of four vpdpwssd was the loop's latency.
  __m512i acc2[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
  for (int c = 0; c < 4; ++c)
    acc2[c % 2] = _mm512_dpwssd_epi32(acc2[c % 2], _mm512_maddubs_epi16(u.nib[c], _mm512_loadu_si512(xq + 64 * c)), u.scale[c]);
  return _mm512_add_epi32(acc2[0], acc2[1]);
}

// Both at once, for one activation vector (the one-vector kernel's).
CT_AVX512_VNNI inline __m512i Q4KSubDots(const unsigned char* w, __m512i scb, const std::int8_t* xq, const Q4KPicks& p) {
  return Q4KDotA(Q4KUnpackQuants(w, scb, p), xq);
}

// q4_K: B_s of Q4KScalesMins4's four super-blocks (sm) against their activation sums of 32
// (pair_sums, eight per super-block): lane i holds four int32 partials of super-block i's. Each
// product at most 63 * 32 * 127. Q4KMins4: the mins as int16, for several vectors' sums.
CT_AVX512_VNNI inline __m512i Q4KMins4(__m512i sm) { return _mm512_unpackhi_epi8(sm, _mm512_setzero_si512()); }
CT_AVX512_VNNI inline __m512i Q4KMinDots4(__m512i sm, const std::int16_t* pair_sums) {
  return _mm512_madd_epi16(Q4KMins4(sm), _mm512_loadu_si512(pair_sums));
}

// [d_0 .. d_7, dmin_0 .. dmin_7] as floats from two Q4KHeads4 (words 0 and 1 of each head).
CT_AVX512_VNNI inline __m512 Q4KScales8(__m512i heads0, __m512i heads1) {
  const __m512i words = _mm512_setr_epi32(0x00080000, 0x00180010, 0x00280020, 0x00380030, 0x00090001, 0x00190011, 0x00290021,
                                          0x00390031, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutex2var_epi16(heads0, words, heads1)));
}

// [dx, -dx] for eight activation super-blocks' scales at d ((-dx) dmin is -(dx dmin) exactly).
CT_AVX512_VNNI inline __m512 Q4KActivationScales8(const float* d) {
  return _mm512_xor_ps(_mm512_broadcast_f32x8(_mm256_loadu_ps(d)),
                       _mm512_castsi512_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN,
                                                             INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN)));
}

// q4_K with rows for lanes (the short-row kernels): one super-block column's two float steps
// for eight rows at once — acc += (dx d) A_s, then acc -= (dx dmin) B_s, lane i row i's: the
// portable kernel's operations in its order. dx: the column's activation scale; d: the rows'
// [d, dmin] (Q4KScales8); f: their [A_s, B_s] as floats (Q4KSums8).
template <bool kFused>
CT_AVX512_VNNI inline __m256 Q4KLaneSteps(float dx, __m512 d, __m512 f, __m256 acc) {
  const __m512 m = _mm512_mul_ps(_mm512_set1_ps(dx), d);
  const __m256 ma = _mm512_castps512_ps256(m), fa = _mm512_castps512_ps256(f);
  // -(dx dmin): exact negation of the product, as in the portable kernel
  const __m256 mb = _mm256_xor_ps(_mm512_extractf32x8_ps(m, 1), _mm256_set1_ps(-0.0f)), fb = _mm512_extractf32x8_ps(f, 1);
  if constexpr (kFused) return _mm256_fmadd_ps(mb, fb, _mm256_fmadd_ps(ma, fa, acc));
  return _mm256_add_ps(_mm256_mul_ps(mb, fb), _mm256_add_ps(_mm256_mul_ps(ma, fa), acc));
}

// The lane sums of eight vectors of sixteen int32 (exact in any order): lane i of the result is
// the sum of a[i]'s lanes. Two levels of in-lane unpack-and-add (the cheap operations), then
// the 128-bit lanes: 24 operations, where halving each vector and a tree of eight 256-bit
// vectors took 37.
CT_AVX512_VNNI inline __m256i Sums8x16(const __m512i (&a)[8]) {
  __m512i t[4];
  for (int k = 0; k < 4; ++k)  // per lane [a2k 0+2, a2k+1 0+2, a2k 1+3, a2k+1 1+3]
    t[k] = _mm512_add_epi32(_mm512_unpacklo_epi32(a[2 * k], a[2 * k + 1]), _mm512_unpackhi_epi32(a[2 * k], a[2 * k + 1]));
  // per lane [a0, a1, a2, a3] (u0) and [a4, a5, a6, a7] (u1), that lane's sums
  const __m512i u0 = _mm512_add_epi32(_mm512_unpacklo_epi64(t[0], t[1]), _mm512_unpackhi_epi64(t[0], t[1]));
  const __m512i u1 = _mm512_add_epi32(_mm512_unpacklo_epi64(t[2], t[3]), _mm512_unpackhi_epi64(t[2], t[3]));
  // lanes [u0 0+1, u0 2+3, u1 0+1, u1 2+3], then [u0, u1] in the low 256 bits
  const __m512i p = _mm512_add_epi32(_mm512_shuffle_i32x4(u0, u1, _MM_SHUFFLE(2, 0, 2, 0)),
                                     _mm512_shuffle_i32x4(u0, u1, _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512i q = _mm512_shuffle_i32x4(p, p, _MM_SHUFFLE(3, 1, 2, 0));
  return _mm256_add_epi32(_mm512_castsi512_si256(q), _mm512_extracti64x4_epi64(q, 1));
}

// Sums8x16 of a[0..7], and the sums of two vectors of four-per-lane partials b[0..1]
// (Q4KMinDots4's): int32 lane i < 8 of the result is the sum of a[i]'s lanes, lane 8 + i the sum
// of super-block i's B partials (b[i / 4], lane i % 4). 30 operations for the sixteen sums.
CT_AVX512_VNNI inline __m512i Q4KSums8(const __m512i (&a)[8], const __m512i (&b)[2]) {
  const __m256i sa = Sums8x16(a);
  // per lane l: [B_l, B_4+l, B_l, B_4+l]
  __m512i tb = _mm512_add_epi32(_mm512_unpacklo_epi32(b[0], b[1]), _mm512_unpackhi_epi32(b[0], b[1]));
  tb = _mm512_add_epi32(tb, _mm512_shuffle_epi32(tb, _MM_PERM_BADC));
  const __m512i idx = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 16, 20, 24, 28, 17, 21, 25, 29);
  return _mm512_permutex2var_epi32(_mm512_castsi256_si512(sa), idx, tb);
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

// q6_K: an unpacked super-block against one activation super-block as sixteen int32 partials,
// the "- 32" in them: the first accumulator starts from -32 * sum_g sc_g * sums_g, one
// vpmaddwd of the doubled scales against -16 * the sums of 16 (qactivation::minus16_sums: -32
// would not fit int16), which Q6KDot's shift and subtract and its halving then need not do.
CT_AVX512_VNNI inline __m512i Q6KDot16(const Q6KBlock& u, const std::int8_t* xq, const std::int16_t* minus16_sums) {
  const __m256i off = _mm256_madd_epi16(_mm256_add_epi16(u.sc16, u.sc16),
                                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(minus16_sums)));
  __m512i a[2] = {_mm512_zextsi256_si512(off), _mm512_setzero_si512()};  // two chains, as Q6KDot
  for (int j = 0; j < 4; ++j)
    a[j % 2] = _mm512_dpwssd_epi32(a[j % 2], _mm512_maddubs_epi16(u.q[j], _mm512_loadu_si512(xq + 128 * (j / 2) + 64 * (j % 2))),
                                   u.scale[j]);
  return _mm512_add_epi32(a[0], a[1]);
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
