// The quantized-mode dot products on x86 (AVX2 and the AVX-512 targets); the other targets use
// the portable kernels, which give the same bits (qdot.hpp fixes the orders; every integer is
// exact, so only the float steps' order matters).
//
// The AVX-512 targets had their own q8_0 / q4_0 kernel, which widened each block's quants to
// int16 for vpmaddwd; measured on an Intel Xeon with AVX-512 (family 6 model 167) it was half
// the speed of the AVX2 kernel below on the same machine (gemv q4_0 4096x4096 1.0 vs 0.51 ms,
// CT_SIMD_TARGET=AVX2), so every x86 target from AVX2 up now runs that one — unless the CPU has
// AVX-512 VNNI, where the AVX-512 targets run qdot_avx512.cpp's kernels instead.
//
// Highway 1.0.3 exposes no int8 dot product, so these use vpmaddubsw (unsigned times signed
// bytes, adjacent pairs summed to int16) directly. The unsigned operand: |w| for q8_0 (with x taking w's sign through vpsignb — exact
// because activation quants are in [-127, 127], so no sign flip overflows and a pair is at most
// 2 * 128 * 127 < 2^15), the nibbles 0..15 for q4_0 (the "- 8" is 8 * (x pair sum) subtracted
// from each pair) and q4_K, and q = 0..63 for q6_K (its "- 32" is 32 * sum_g sc_g * (sum of
// group g's activation quants), from the precomputed sums). vpmaddwd then widens the pairs to
// int32 — with ones for q8_0/q4_0, with the sub-block's scale for the K formats.
#include "src/kernels/fp_contract_off.hpp"  // must stay first
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/encoded/qdot_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>

#include "src/encoded/builtin.hpp"
#include "src/encoded/qdot.hpp"
#include "src/matmul/matmul_common.hpp"

HWY_BEFORE_NAMESPACE();
namespace ct::detail::encoded {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2

// ---- AVX2 building blocks (also valid on the AVX-512 targets)

template <bool kFused>
HWY_INLINE __m256 MulAdd8(__m256 a, __m256 b, __m256 c) {
  if constexpr (kFused) {
    return _mm256_fmadd_ps(a, b, c);
  } else {
    __m256 p = _mm256_mul_ps(a, b);
    asm("" : "+x"(p));  // keep the product out of reach of contraction
    return _mm256_add_ps(c, p);
  }
}

HWY_INLINE std::int32_t HSum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

HWY_INLINE __m256i LoadBytes(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// The lane sums of eight vectors of eight int32 (exact in any order): lane i of the result is
// v[i]'s sum. Unpack-and-add twice, then the 128-bit halves (the AVX-512 kernels' Sums8x8).
HWY_INLINE __m256i Sums8x8(const __m256i (&v)[8]) {
  __m256i t[4];
  for (int i = 0; i < 4; ++i)
    t[i] = _mm256_add_epi32(_mm256_unpacklo_epi32(v[2 * i], v[2 * i + 1]), _mm256_unpackhi_epi32(v[2 * i], v[2 * i + 1]));
  const __m256i u0 = _mm256_add_epi32(_mm256_unpacklo_epi64(t[0], t[1]), _mm256_unpackhi_epi64(t[0], t[1]));
  const __m256i u1 = _mm256_add_epi32(_mm256_unpacklo_epi64(t[2], t[3]), _mm256_unpackhi_epi64(t[2], t[3]));
  return _mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20), _mm256_permute2x128_si256(u0, u1, 0x31));
}

// Runs a row's super-blocks against V activation vectors: `partial(s, out)` leaves
// super-block s's int32 partials for vector v in out[v][0..kSums) (eight lanes each), and the
// float steps `step(acc, s, v, totals)` run in order per vector: eight super-blocks at a time,
// their horizontal sums in Sums8x8 trees, each batch's float steps after the next batch's
// integer work is issued (their dependent chains then overlap it); a last part batch one
// super-block at a time. acc[v]: vector v's sum (from 0).
template <int V, int kSums, class Partial, class Step>
HWY_INLINE void RunSuperBlocks(index_t blocks, Partial partial, Step step, float (&acc)[V]) {
  alignas(32) std::int32_t tot[V][kSums][8];
  index_t s = 0, done = 0;
  const auto steps = [&] {
    for (int i = 0; i < 8; ++i)
      for (int v = 0; v < V; ++v) {
        std::int32_t t[kSums];
        for (int j = 0; j < kSums; ++j) t[j] = tot[v][j][i];
        acc[v] = step(acc[v], done + i, v, t);
      }
  };
  bool pending = false;
  for (; s + 8 <= blocks; s += 8) {
    __m256i lanes[V][kSums][8];
    for (int i = 0; i < 8; ++i) {
      __m256i one[V][kSums];
      partial(s + i, one);
      for (int v = 0; v < V; ++v)
        for (int j = 0; j < kSums; ++j) lanes[v][j][i] = one[v][j];
    }
    __m256i sums[V][kSums];
    for (int v = 0; v < V; ++v)
      for (int j = 0; j < kSums; ++j) sums[v][j] = Sums8x8(lanes[v][j]);
    if (pending) steps();
    for (int v = 0; v < V; ++v)
      for (int j = 0; j < kSums; ++j) _mm256_store_si256(reinterpret_cast<__m256i*>(tot[v][j]), sums[v][j]);
    done = s;
    pending = true;
  }
  if (pending) steps();
  for (; s < blocks; ++s) {
    __m256i one[V][kSums];
    partial(s, one);
    for (int v = 0; v < V; ++v) {
      std::int32_t t[kSums];
      for (int j = 0; j < kSums; ++j) t[j] = HSum(one[v][j]);
      acc[v] = step(acc[v], s, v, t);
    }
  }
}

// q4_K, one row against V vectors: per 64-value chunk c, the low nibbles (sub-block 2c) and
// high nibbles (2c + 1) against their 32 activation quants, each pair sum times the sub-block's
// scale; the eight 6-bit scales and mins unpacked in a vector register (the AVX-512 kernel's
// Q4KScalesMins), the scales picked into int16 lanes by vpshufb, B_s's partials m_j * (the
// sub-block's activation sums) by one vpmaddwd. Each chunk is unpacked once for all V vectors.
template <bool kFused, int V>
HWY_INLINE void Q4KRow(const unsigned char* w, const qactivation* const* xs, index_t blocks, float (&acc)[V],
                       index_t ahead = 0) {
  const __m256i low = _mm256_set1_epi8(0x0f);
  const auto partial = [&](index_t s, __m256i (&out)[V][2]) {
    const unsigned char* sb = w + static_cast<std::size_t>(s) * q4_K_bytes;
    ahead_prefetch(sb, q4_K_bytes, ahead);  // 0 unless QDotKRows asks (contiguous super-blocks cover every line)
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + 4));
    const __m128i low6 = _mm_and_si128(v, _mm_set1_epi8(0x3f));
    const __m128i w2 = _mm_srlv_epi32(_mm_shuffle_epi32(v, 0xaa), _mm_setr_epi32(0, 4, 0, 0));
    const __m128i top = _mm_slli_epi32(_mm_and_si128(_mm_srli_epi32(v, 6), _mm_set1_epi8(0x03)), 4);
    const __m128i high = _mm_or_si128(_mm_and_si128(w2, _mm_set1_epi8(0x0f)), top);
    const __m128i sm = _mm_unpacklo_epi32(low6, high);  // bytes 0..7 scales, 8..15 mins
    const __m256i scb = _mm256_broadcastsi128_si256(sm);
    __m256i a[V];
    for (int x = 0; x < V; ++x) a[x] = _mm256_setzero_si256();
    for (int c = 0; c < 4; ++c) {
      const __m256i qb = LoadBytes(sb + 16 + 32 * c);
      const __m256i lo = _mm256_and_si256(qb, low), hi = _mm256_and_si256(_mm256_srli_epi16(qb, 4), low);
      // every int16 lane takes scale byte 2c (2c + 1); 0x80: a zero high byte
      const __m256i s0 = _mm256_shuffle_epi8(scb, _mm256_set1_epi16(static_cast<short>(0x8000 | (2 * c))));
      const __m256i s1 = _mm256_shuffle_epi8(scb, _mm256_set1_epi16(static_cast<short>(0x8000 | (2 * c + 1))));
      for (int x = 0; x < V; ++x) {
        const std::int8_t* xq = xs[x]->q + s * 256 + 64 * c;
        a[x] = _mm256_add_epi32(a[x], _mm256_madd_epi16(_mm256_maddubs_epi16(lo, LoadBytes(xq)), s0));
        a[x] = _mm256_add_epi32(a[x], _mm256_madd_epi16(_mm256_maddubs_epi16(hi, LoadBytes(xq + 32)), s1));
      }
    }
    // the mins as int16 pairs [m0 m0 m1 m1 ...] against the sums of 16
    const __m256i m16 = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(sm, sm));
    for (int x = 0; x < V; ++x) {
      out[x][0] = a[x];
      out[x][1] = _mm256_madd_epi16(LoadBytes(xs[x]->sums + s * 16), m16);
    }
  };
  const auto step = [&](float sum, index_t s, int x, const std::int32_t (&t)[2]) {
    const unsigned char* sb = w + static_cast<std::size_t>(s) * q4_K_bytes;
    const float dx = xs[x]->d[s];
    sum = mm::muladd<kFused>(dx * load_f16_le(sb), static_cast<float>(t[0]), sum);
    return mm::muladd<kFused>(-(dx * load_f16_le(sb + 2)), static_cast<float>(t[1]), sum);
  };
  RunSuperBlocks<V, 2>(blocks, partial, step, acc);
}

// q6_K, one row against V vectors: per 128-value half, four 32-value quarters rebuilt from ql's
// nibbles and qh's 2-bit fields (docs/encoded.md draws them); each quarter covers two 16-value
// scale groups, one per 128-bit half of the pair sums, their int8 scales widened to int16 once
// and picked by vpshufb. Each quarter is rebuilt once for all V vectors.
template <bool kFused, int V>
HWY_INLINE void Q6KRow(const unsigned char* w, const qactivation* const* xs, index_t blocks, float (&acc)[V],
                       index_t ahead = 0) {
  const __m256i low = _mm256_set1_epi8(0x0f), three = _mm256_set1_epi8(0x03);
  const auto partial = [&](index_t s, __m256i (&out)[V][1]) {
    const unsigned char* sb = w + static_cast<std::size_t>(s) * q6_K_bytes;
    ahead_prefetch(sb, q6_K_bytes, ahead);  // as in Q4KRow
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + 192)));
    // the scales of groups 8h..8h + 7 in both 128-bit halves
    const __m256i half_scs[2] = {_mm256_permute2x128_si256(sc16, sc16, 0x00), _mm256_permute2x128_si256(sc16, sc16, 0x11)};
    __m256i a[V];
    for (int x = 0; x < V; ++x) a[x] = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i l0 = LoadBytes(sb + 64 * h), l1 = LoadBytes(sb + 64 * h + 32), hb = LoadBytes(sb + 128 + 32 * h);
      const __m256i half_sc = half_scs[h];
      for (int k = 0; k < 4; ++k) {
        const __m256i nib = k == 0 ? _mm256_and_si256(l0, low)
                            : k == 1 ? _mm256_and_si256(l1, low)
                            : k == 2 ? _mm256_and_si256(_mm256_srli_epi16(l0, 4), low)
                                     : _mm256_and_si256(_mm256_srli_epi16(l1, 4), low);
        const __m256i q = _mm256_or_si256(nib, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * k), three), 4));
        // int16 lanes 0..7 take word 2k of a 128-bit half (group 8h + 2k), lanes 8..15 word 2k + 1
        const __m256i pick = _mm256_setr_m128i(_mm_set1_epi16(static_cast<short>(0x0100 * (4 * k + 1) + 4 * k)),
                                               _mm_set1_epi16(static_cast<short>(0x0100 * (4 * k + 3) + 4 * k + 2)));
        const __m256i scales = _mm256_shuffle_epi8(half_sc, pick);
        for (int x = 0; x < V; ++x) {
          const __m256i p = _mm256_maddubs_epi16(q, LoadBytes(xs[x]->q + s * 256 + 128 * h + 32 * k));
          a[x] = _mm256_add_epi32(a[x], _mm256_madd_epi16(p, scales));
        }
      }
    }
    // the "- 32": 32 * sum_g sc_g * sums_g, as eight int32 partials
    for (int x = 0; x < V; ++x) {
      const __m256i off = _mm256_madd_epi16(sc16, LoadBytes(xs[x]->sums + s * 16));
      out[x][0] = _mm256_sub_epi32(a[x], _mm256_slli_epi32(off, 5));
    }
  };
  const auto step = [&](float sum, index_t s, int x, const std::int32_t (&t)[1]) {
    return mm::muladd<kFused>(xs[x]->d[s] * load_f16_le(w + static_cast<std::size_t>(s) * q6_K_bytes + 208),
                              static_cast<float>(t[0]), sum);
  };
  RunSuperBlocks<V, 1>(blocks, partial, step, acc);
}

template <bool kFused>
float QDotQ4K(const unsigned char* w, const qactivation& x, index_t blocks) {
  const qactivation* xs[1] = {&x};
  float acc[1] = {0.0f};
  Q4KRow<kFused, 1>(w, xs, blocks, acc);
  return acc[0];
}

template <bool kFused>
float QDotQ6K(const unsigned char* w, const qactivation& x, index_t blocks) {
  const qactivation* xs[1] = {&x};
  float acc[1] = {0.0f};
  Q6KRow<kFused, 1>(w, xs, blocks, acc);
  return acc[0];
}

// q4_K / q6_K rows in row_runs' order; with two runs each super-block prefetching
// its run's weights x.prefetch_bytes ahead, as the AVX-512 kernels do (qdot_k_rows_avx512.cpp's
// BatchRowsIn says why both), with one run not. Each row's value is QDotQ4K's /
// QDotQ6K's (same bits). Forced on the Xeon guest (CT_SIMD_TARGET=AVX2), from DRAM at one
// thread, against the generic one-run loop in three alternated rounds: q4_K 4096² 1.11-1.16 ->
// 0.91-0.96 ms, 11008 x 4096 2.96-3.52 -> 2.32-2.51; q6_K 1.66-1.78 -> 1.04-1.08, 3.93-4.04 ->
// 2.64-2.84; in L3 8-15% faster. Not measured on an AVX2-only CPU.
template <bool kFused, bool kQ6>
void QDotKRows(const unsigned char* w, std::size_t row_bytes, index_t rows, const qactivation& x, index_t blocks, float* y,
               index_t y_stride) {
  const qactivation* xs[1] = {&x};
  const row_runs runs(rows);
  const index_t ahead = runs.two() ? x.prefetch_bytes : 0;
  for (index_t j = 0; j < rows; ++j) {
    const index_t r = runs.row(j);
    const unsigned char* row = w + static_cast<std::size_t>(r) * row_bytes;
    if (r + 1 < runs.run_end(r)) burst_prefetch(row + row_bytes, row_bytes, x.burst_bytes);
    float acc[1] = {0.0f};
    if constexpr (kQ6) Q6KRow<kFused, 1>(row, xs, blocks, acc, ahead);
    else Q4KRow<kFused, 1>(row, xs, blocks, acc, ahead);
    y[r * y_stride] = acc[0];
  }
}

// The multi-vector form (qdot_multi_fn) of Q4KRow / Q6KRow.
template <bool kFused, bool kQ6>
void QDotKMulti(const unsigned char* w, std::size_t row_bytes, index_t rows, const qactivation* xs, index_t blocks, float* y,
                index_t y_row, index_t y_vec) {
  constexpr int V = static_cast<int>(qdot_multi_vectors);
  const qactivation* p[V];
  for (int v = 0; v < V; ++v) p[v] = xs + v;
  for (index_t r = 0; r < rows; ++r) {
    float acc[V] = {};
    const unsigned char* row = w + static_cast<std::size_t>(r) * row_bytes;
    if constexpr (kQ6) Q6KRow<kFused, V>(row, p, blocks, acc);
    else Q4KRow<kFused, V>(row, p, blocks, acc);
    for (int v = 0; v < V; ++v) y[r * y_row + v * y_vec] = acc[v];
  }
}

#endif

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2

// q8_0 / q4_0 on AVX2: 8 int32 partials per block (vpmaddwd with ones); 8 blocks' partials fold
// into one vector (block j in lane j) by three levels of hadd and a cross-lane add, and the 16
// virtual lanes are two float vectors (blocks g..g+7, g a multiple of 8, are lanes g % 16 on).
// q4_0's "- 8" is not a second vpmaddubsw per block: 8 * (the block's activation quant sum) is
// subtracted from the folded sums, from the precomputed sums of 16 (one vpmaddwd per 8 blocks).
// Whole groups of 8 blocks read their scales into registers (no store and reload through
// memory, which defeats store-to-load forwarding); a last partial group goes through arrays.
template <bool kQ4>
HWY_INLINE __m256i BlockPartials(const unsigned char* blk, const std::int8_t* x) {
  const __m256i xv = LoadBytes(x);
  __m256i pairs;
  if constexpr (kQ4) {
    // The 16 bytes in both halves (a load, no shuffle), the upper half shifted by 4: low nibbles
    // then high nibbles. (vinserti128 instead costs a shuffle-port uop per block, the port the
    // fold below needs too: q4_0 gemv was shuffle-bound on an Intel AVX-512 Xeon.)
    const __m256i bytes = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2)));
    const __m256i nib = _mm256_and_si256(_mm256_srlv_epi64(bytes, _mm256_setr_epi64x(0, 0, 4, 4)), _mm256_set1_epi8(0x0f));
    pairs = _mm256_maddubs_epi16(nib, xv);  // sum of nibble * x; the "- 8" comes after the fold
  } else {
    const __m256i wv = LoadBytes(blk + 2);
    pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(wv, wv), _mm256_sign_epi8(xv, wv));
  }
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

// Lane j: the sum of p[j]'s lanes. A transpose-and-add with unpacks (one uop each) rather than
// vphaddd (several uops each on AMD cores); the integer sums are exact either way.
HWY_INLINE __m256i FoldEight(const __m256i* p) {
  const auto pair32 = [](__m256i a, __m256i b) {
    return _mm256_add_epi32(_mm256_unpacklo_epi32(a, b), _mm256_unpackhi_epi32(a, b));
  };
  const auto pair64 = [](__m256i a, __m256i b) {
    return _mm256_add_epi32(_mm256_unpacklo_epi64(a, b), _mm256_unpackhi_epi64(a, b));
  };
  const __m256i lo = pair64(pair32(p[0], p[1]), pair32(p[2], p[3]));  // blocks 0..3, per 128-bit half
  const __m256i hi = pair64(pair32(p[4], p[5]), pair32(p[6], p[7]));  // blocks 4..7
  return _mm256_add_epi32(_mm256_permute2x128_si256(lo, hi, 0x20), _mm256_permute2x128_si256(lo, hi, 0x31));
}

// The integer dots of blocks g..g+7 (lane j: block g + j), p holding their partials.
template <bool kQ4>
HWY_INLINE __m256i BlockSums(const __m256i* p, const std::int16_t* sums16) {
  const __m256i isum = FoldEight(p);
  if constexpr (!kQ4) return isum;
  // 8 * (sums[2j] + sums[2j + 1]): block j's activation quant sum, times 8, in lane j.
  return _mm256_sub_epi32(isum, _mm256_madd_epi16(LoadBytes(sums16), _mm256_set1_epi16(8)));
}

template <bool kQ4, bool kFused>
HWY_INLINE __m256 FullGroup(const unsigned char* blk, const std::int8_t* xq, const float* xd, const std::int16_t* sums16,
                            __m256 acc) {
  constexpr index_t wbytes = kQ4 ? q4_0_bytes : q8_0_bytes;
  __m256i part[8];
  for (index_t j = 0; j < 8; ++j) part[j] = BlockPartials<kQ4>(blk + j * wbytes, xq + j * 32);
  __m128i sb = _mm_cvtsi32_si128(load_u16_le(blk));
  sb = _mm_insert_epi16(sb, load_u16_le(blk + 1 * wbytes), 1);
  sb = _mm_insert_epi16(sb, load_u16_le(blk + 2 * wbytes), 2);
  sb = _mm_insert_epi16(sb, load_u16_le(blk + 3 * wbytes), 3);
  sb = _mm_insert_epi16(sb, load_u16_le(blk + 4 * wbytes), 4);
  sb = _mm_insert_epi16(sb, load_u16_le(blk + 5 * wbytes), 5);
  sb = _mm_insert_epi16(sb, load_u16_le(blk + 6 * wbytes), 6);
  sb = _mm_insert_epi16(sb, load_u16_le(blk + 7 * wbytes), 7);
  const __m256 scale = _mm256_mul_ps(_mm256_cvtph_ps(sb), _mm256_loadu_ps(xd));
  return MulAdd8<kFused>(scale, _mm256_cvtepi32_ps(BlockSums<kQ4>(part, sums16)), acc);
}

// Software prefetch of the weight bytes x.prefetch_bytes ahead (into the next rows: a matrix's
// rows are contiguous; a prefetch past the end cannot fault). The distance is the tuning's
// weight_prefetch_bytes (L1d / 16; L1d / 8 before the row loop took two runs). Measured on Zen 3
// (family 25 model 1, L1d 32 KiB) with one run, the 100M Llama's generation step (bench/llama):
// q8_0 8.0-9.3 ms without, 6.7-7.7 ms at 2 KiB, 6.3 ms at 4 KiB, 7.5 ms at 8 KiB; q4_0,
// compute-bound there, unchanged. Neither the two runs nor the shorter distance has been
// measured on Zen 3.
template <bool kQ4, bool kFused>
HWY_INLINE float Dot32(const unsigned char* w, const qactivation& x, index_t blocks) {
  constexpr index_t wbytes = kQ4 ? q4_0_bytes : q8_0_bytes;
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  index_t g = 0;
  for (; g + 16 <= blocks; g += 16) {
    ahead_prefetch(w + g * wbytes, 16 * wbytes, x.prefetch_bytes);
    acc[0] = FullGroup<kQ4, kFused>(w + g * wbytes, x.q + g * 32, x.d + g, x.sums + 2 * g, acc[0]);
    acc[1] = FullGroup<kQ4, kFused>(w + (g + 8) * wbytes, x.q + (g + 8) * 32, x.d + g + 8, x.sums + 2 * (g + 8), acc[1]);
  }
  if (g + 8 <= blocks) {
    acc[0] = FullGroup<kQ4, kFused>(w + g * wbytes, x.q + g * 32, x.d + g, x.sums + 2 * g, acc[0]);
    g += 8;
  }
  if (g < blocks) {  // a partial group: lanes past the row's end keep their value
    const index_t nb = blocks - g;
    alignas(32) std::uint16_t scale_bits[8] = {};
    alignas(32) float dx[8] = {};
    alignas(32) std::int32_t keep[8] = {};
    alignas(32) std::int16_t sums[16] = {};
    __m256i part[8];
    for (index_t j = 0; j < 8; ++j) {
      part[j] = _mm256_setzero_si256();
      if (j >= nb) continue;
      const unsigned char* blk = w + (g + j) * wbytes;
      scale_bits[j] = load_u16_le(blk);
      dx[j] = x.d[g + j];
      keep[j] = -1;
      sums[2 * j] = x.sums[2 * (g + j)];
      sums[2 * j + 1] = x.sums[2 * (g + j) + 1];
      part[j] = BlockPartials<kQ4>(blk, x.q + (g + j) * 32);
    }
    const __m256 dw = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(scale_bits)));
    __m256& a = acc[(g / 8) % 2];
    const __m256 updated = MulAdd8<kFused>(_mm256_mul_ps(dw, _mm256_load_ps(dx)), _mm256_cvtepi32_ps(BlockSums<kQ4>(part, sums)), a);
    a = _mm256_blendv_ps(a, updated, _mm256_castsi256_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(keep))));
  }
  // fold_lanes' pairwise tree in registers (each step the same additions: lane l + lane l + w).
  const __m256 w8 = _mm256_add_ps(acc[0], acc[1]);
  const __m128 w4 = _mm_add_ps(_mm256_castps256_ps128(w8), _mm256_extractf128_ps(w8, 1));
  const __m128 w2 = _mm_add_ps(w4, _mm_movehl_ps(w4, w4));
  return _mm_cvtss_f32(_mm_add_ss(w2, _mm_shuffle_ps(w2, w2, 1)));
}

template <bool kQ4, bool kFused>
float QDot32(const unsigned char* w, const qactivation& x, index_t blocks) {
  return Dot32<kQ4, kFused>(w, x, blocks);
}

// The rows in row_runs' order (two weight streams, as qdot_avx512.cpp's RowsInRuns says; the
// same bits in any order), each after its run's next row's burst. This kernel forced on the Xeon
// guest (CT_SIMD_TARGET=AVX2), from DRAM at one thread: q8_0 4096² 1.69-1.75 -> 1.45 ms, 11008 x
// 4096 4.62-4.68 -> 3.71; q4_0 0.93-0.98 -> 0.74, 2.45-2.64 -> 1.94-1.97 (prefetch distance 6
// KiB; 3 KiB, the tuning's L1d / 16 now, measured 0-8% faster again). Not measured on an
// AVX2-only CPU.
template <bool kQ4, bool kFused>
void QDot32Rows(const unsigned char* w, std::size_t row_bytes, index_t rows, const qactivation& x, index_t blocks, float* y,
                index_t y_stride) {
  const row_runs runs(rows);
  for (index_t j = 0; j < rows; ++j) {
    const index_t r = runs.row(j);
    const unsigned char* row = w + static_cast<std::size_t>(r) * row_bytes;
    if (r + 1 < runs.run_end(r)) burst_prefetch(row + row_bytes, row_bytes, x.burst_bytes);
    y[r * y_stride] = Dot32<kQ4, kFused>(row, x, blocks);
  }
}

#endif

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2

template <bool kFused>
qdot_fn KernelFor(qformat f) {
  return by_format(f, &QDot32<false, kFused>, &QDot32<true, kFused>, &QDotQ4K<kFused>, &QDotQ6K<kFused>);
}

qdot_fn QDotFor(qformat f, bool fused) {
#if HWY_TARGET <= HWY_AVX3
  if (qdot_fn fn = avx512_qdot(f, fused)) return fn;  // the CPU has AVX-512 VNNI
#endif
  return fused ? KernelFor<true>(f) : KernelFor<false>(f);
}

#else

qdot_fn QDotFor(qformat, bool) { return nullptr; }

#endif

// The several-rows form: q8_0, q4_0, q4_K and q6_K (x86 from AVX2 up).
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2

qdot_rows_fn RowsFor(qformat f, bool fused) {
#if HWY_TARGET <= HWY_AVX3
  if (avx512_qdot(f, fused)) return avx512_qdot_rows(f, fused);
#endif
  switch (f) {
    case qformat::q8_0: return fused ? &QDot32Rows<false, true> : &QDot32Rows<false, false>;
    case qformat::q4_0: return fused ? &QDot32Rows<true, true> : &QDot32Rows<true, false>;
    case qformat::q4_K: return fused ? &QDotKRows<true, false> : &QDotKRows<false, false>;
    case qformat::q6_K: return fused ? &QDotKRows<true, true> : &QDotKRows<false, true>;
  }
  return nullptr;
}

#else

qdot_rows_fn RowsFor(qformat, bool) { return nullptr; }

#endif

// The multi-vector kernels (q4_K, q6_K; x86 from AVX2 up): AVX-512 VNNI's where the CPU has
// it, else the AVX2 ones above.
qdot_multi_fn MultiFor(qformat f, bool fused) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
#if HWY_TARGET <= HWY_AVX3
  if (avx512_qdot(f, fused)) return avx512_qdot_multi(f, fused);
#endif
  switch (f) {
    case qformat::q4_K: return fused ? &QDotKMulti<true, false> : &QDotKMulti<false, false>;
    case qformat::q6_K: return fused ? &QDotKMulti<true, true> : &QDotKMulti<false, true>;
    default: return nullptr;
  }
#else
  (void)f, (void)fused;
  return nullptr;
#endif
}

// The tile kernels: AVX-512 VNNI only (qdot_tile_avx512.cpp).
qdot_tile_fn TileFor(qformat f, bool fused) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  return avx512_qdot_tile(f, fused);
#else
  (void)f, (void)fused;
  return nullptr;
#endif
}
qdot_tile_pack_fn TilePackFor(qformat f) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  return avx512_qdot_tile_pack(f);
#else
  (void)f;
  return nullptr;
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace ct::detail::encoded
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ct::detail::encoded {
HWY_EXPORT(QDotFor);
qdot_fn simd_qdot(qformat f, bool fused) { return HWY_DYNAMIC_DISPATCH(QDotFor)(f, fused); }
HWY_EXPORT(RowsFor);
qdot_rows_fn simd_qdot_rows(qformat f, bool fused) { return HWY_DYNAMIC_DISPATCH(RowsFor)(f, fused); }
HWY_EXPORT(MultiFor);
qdot_multi_fn simd_qdot_multi(qformat f, bool fused) { return HWY_DYNAMIC_DISPATCH(MultiFor)(f, fused); }
HWY_EXPORT(TileFor);
qdot_tile_fn simd_qdot_tile(qformat f, bool fused) { return HWY_DYNAMIC_DISPATCH(TileFor)(f, fused); }
HWY_EXPORT(TilePackFor);
qdot_tile_pack_fn simd_qdot_tile_pack(qformat f) { return HWY_DYNAMIC_DISPATCH(TilePackFor)(f); }
}  // namespace ct::detail::encoded
#endif
