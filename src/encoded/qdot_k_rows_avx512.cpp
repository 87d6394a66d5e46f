// The q4_K / q6_K one-vector kernels on x86 CPUs with AVX-512 VNNI: a weight row (or several)
// against one activation vector, with the bits of the portable kernels (qdot.hpp fixes the
// float order; every integer below is exact in int32, the bounds are in the building blocks'
// comments, qdot_k_avx512.hpp).
//
// Per super-block, the quants against their activation quants by vpmaddubsw (pairs to int16: at
// most 2 * 63 * 127 < 2^15), then vpdpwssd with the 16- or 32-value group's scale accumulates
// into int32; then the horizontal sums of eight super-blocks in one transpose tree (Q4KSums8,
// Sums8x16; a row's last batch padded), each exact, so the order only fixes the float steps,
// which follow the portable kernel's order one super-block at a time (rows shorter than a
// batch: q4_K's eight rows at once, each row's steps in one lane).
//
// Apart from qdot_avx512.cpp (the q8_0 / q4_0 kernels, and the entry points that hand the K
// formats to k_qdot / k_qdot_rows here) so that each file holds one family of kernels; the
// multi-vector kernels are in qdot_multi_avx512.cpp.
#include "src/kernels/fp_contract_off.hpp"  // must stay first

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "src/encoded/qdot_avx512.hpp"
#include "src/encoded/qdot_k_avx512.hpp"
#include "src/matmul/matmul_common.hpp"

namespace ct::detail::encoded {

#if CT_QDOT_AVX512
namespace {

using namespace avx512;

// q4_K: super-blocks s .. s + n of a row (n <= 8; sb at super-block s) against x, as the
// float steps want them: f = [A_0 .. A_7, B_0 .. B_7] and m = [dx d, -(dx dmin)] per
// super-block, in the order of the portable kernel's steps (acc += (dx d) A_s, then
// acc -= (dx dmin) B_s); the lanes of super-blocks past n are not to be read (BatchRowsIn
// steps through the first n only). Per four super-blocks, their heads (d, dmin, scales and mins) in
// one register, unpacked once (Q4KScalesMins4); the sixteen horizontal sums in one tree
// (Q4KSums8). kPrefetch: each super-block prefetches its own bytes x.prefetch_bytes ahead
// (into L1), for the two runs of rows only (BatchRowsIn says why). One prefetch per super-block
// rather than a batch's eighteen lines at once: on the Xeon guest, from DRAM at one thread,
// alternated in three rounds, q4_K 4096² 0.80-0.82 -> 0.72-0.73 ms, 11008 x 4096 2.13-2.15 ->
// 1.84-1.86 (q6_K's 26 lines: 1.07-1.09 -> 0.95-0.97, 2.69-2.73 -> 2.42-2.47).
template <bool kPrefetch, bool kWhole>
CT_AVX512_VNNI inline void Q4KBatch(const unsigned char* sb, const qactivation& x, index_t s, index_t n, const Q4KPicks& pick,
                                   __m512& m, __m512& f) {
  const __m512i zero = _mm512_setzero_si512();
  __m512i a[8], b[2], heads[2];
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    const unsigned char* const g = sb + 4 * h * q4_K_bytes;
    if (!kWhole && n <= 4 * h) {
      heads[h] = b[h] = a[4 * h] = a[4 * h + 1] = a[4 * h + 2] = a[4 * h + 3] = zero;
      continue;
    }
    heads[h] = kWhole ? Q4KHeads4(g) : Q4KHeads4(g, n - 4 * h);
    const __m512i sm = Q4KScalesMins4(heads[h]);
    b[h] = Q4KMinDots4(sm, x.pair_sums + 8 * (s + 4 * h));
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      if (!kWhole && n <= 4 * h + i) {
        a[4 * h + i] = zero;
        continue;
      }
      if constexpr (kPrefetch) ahead_prefetch(g + i * q4_K_bytes, q4_K_bytes, x.prefetch_bytes);
      a[4 * h + i] = Q4KSubDots(g + i * q4_K_bytes, Lane128(sm, i), x.q + (s + 4 * h + i) * 256, pick);
    }
  }
  f = _mm512_cvtepi32_ps(Q4KSums8(a, b));
  // x.d's buffer has whole cache lines, so the eight floats at s are there even past the last
  // super-block
  m = _mm512_mul_ps(Q4KActivationScales8(x.d + s), Q4KScales8(heads[0], heads[1]));
}

// q6_K: super-blocks s .. s + n of a row (n <= 8; sb at super-block s) against x, as the float
// steps want them (acc += (dx d) A_s): f = [A_0 .. A_7], m = [dx d] per super-block (lanes 8..15
// undefined). The eight horizontal sums in one Sums8x16 tree. kPrefetch as in Q4KBatch.
template <bool kPrefetch, bool kWhole>
CT_AVX512_VNNI inline void Q6KBatch(const unsigned char* sb, const qactivation& x, index_t s, index_t n, const Q6KConsts& k,
                                   __m512& m, __m512& f) {
  __m512i t[8];
  std::uint16_t d16[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    if (!kWhole && n <= i) {
      t[i] = _mm512_setzero_si512();
      d16[i] = 0;
      continue;
    }
    const unsigned char* const w = sb + i * q6_K_bytes;
    if constexpr (kPrefetch) ahead_prefetch(w, q6_K_bytes, x.prefetch_bytes);
    t[i] = Q6KDot16(Q6KUnpack(w, k), x.q + (s + i) * 256, x.minus16_sums + (s + i) * 16);
    std::memcpy(&d16[i], w + 208, 2);
  }
  f = _mm512_castps256_ps512(_mm256_cvtepi32_ps(Sums8x16(t)));
  // x.d's buffer has whole cache lines: the eight floats at s are there
  const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(d16)));
  const __m256 dx = _mm256_loadu_ps(x.d + s);
  m = _mm512_castps256_ps512(_mm256_mul_ps(dx, d));
}

// The K formats' batches for BatchRows: bytes per super-block, float steps per super-block
// (the lanes i and, for two, 8 + i of a batch's m and f), the constants and the batch.
struct Q4KBatches {
  static constexpr index_t bytes = q4_K_bytes;
  static constexpr int steps = 2;
  using consts = Q4KPicks;
  template <bool kPrefetch, bool kWhole>
  CT_AVX512_VNNI static void batch(const unsigned char* sb, const qactivation& x, index_t s, index_t n, const consts& k, __m512& m,
                                   __m512& f) {
    Q4KBatch<kPrefetch, kWhole>(sb, x, s, n, k, m, f);
  }
};
struct Q6KBatches {
  static constexpr index_t bytes = q6_K_bytes;
  static constexpr int steps = 1;
  using consts = Q6KConsts;
  template <bool kPrefetch, bool kWhole>
  CT_AVX512_VNNI static void batch(const unsigned char* sb, const qactivation& x, index_t s, index_t n, const consts& k, __m512& m,
                                   __m512& f) {
    Q6KBatch<kPrefetch, kWhole>(sb, x, s, n, k, m, f);
  }
};

// K-format rows in row_runs' order, each after prefetching the next row of its run into L2 in a
// burst (qactivation::burst_bytes), as qdot_avx512.cpp's RowsInRuns does; kPrefetch with the
// two runs. The two runs and the prefetch go together: on the Xeon guest, from DRAM at one
// thread, two runs without a prefetch made q6_K 11008 x 4096 slower (3.03 -> 3.75-3.79 ms) and
// a single run with it slower still (1.14 -> 1.49 ms at 4096²), but both at once, against one
// run without (alternated twice): q4_K 4096² 0.93 -> 0.81 ms, 11008 x 4096 2.27 -> 2.04-2.10;
// q6_K 1.14 -> 1.08, 3.03 -> 2.76-2.81. Each row in
// batches of eight super-blocks (the last batch as many as remain), each batch's float steps
// (a chain of eight or sixteen dependent multiply-adds) run after the next batch's integer work
// is issued, so that the chain overlaps it — across rows too: a row's last steps wait for the
// next row's first batch. (Run at a row's end, a 4096-wide q4_K row's last chain was exposed:
// on the Zen 5 guest, from L2, 14.2 cycles per super-block with it and 10.6 without any float
// steps.)
template <class F, bool kFused, bool kPrefetch>
CT_AVX512_VNNI void BatchRowsIn(const unsigned char* w, std::size_t row_bytes, index_t rows, const qactivation& x, index_t blocks,
                                float* y, index_t y_stride) {
  const typename F::consts consts;
  const row_runs runs(rows);
  alignas(64) float m[16], f[16];
  float acc = 0.0f;
  float* out = nullptr;  // where the pending batch's row sum goes after its steps, when it ends its row
  index_t pending = 0;   // super-blocks in the pending batch
  const auto steps = [&] {
    // Read back from memory (the load ports are idle here); left to itself the compiler moves
    // each lane out with a shuffle, 32 more operations on the vector ports.
    asm volatile("" ::: "memory");
    // Only the batch's super-blocks: a short row's chain would otherwise be mostly padding.
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {
      if (i == pending) break;
      acc = mm::muladd<kFused>(m[i], f[i], acc);
      if constexpr (F::steps == 2) acc = mm::muladd<kFused>(m[8 + i], f[8 + i], acc);
    }
    if (out != nullptr) {
      *out = acc;
      acc = 0.0f;
    }
  };
  for (index_t j = 0; j < rows; ++j) {
    const index_t r = runs.row(j);
    const unsigned char* const row = w + static_cast<std::size_t>(r) * row_bytes;
    if (r + 1 < runs.run_end(r)) burst_prefetch(row + row_bytes, row_bytes, x.burst_bytes);
    for (index_t s = 0; s < blocks; s += 8) {
      __m512 mv, fv;
      if (s + 8 <= blocks)
        F::template batch<kPrefetch, true>(row + s * F::bytes, x, s, 8, consts, mv, fv);
      else
        F::template batch<kPrefetch, false>(row + s * F::bytes, x, s, blocks - s, consts, mv, fv);
      if (pending > 0) steps();
      _mm512_store_ps(m, mv);
      _mm512_store_ps(f, fv);
      pending = std::min<index_t>(8, blocks - s);
      out = s + 8 >= blocks ? y + r * y_stride : nullptr;
    }
  }
  if (pending > 0) steps();
}

// q4_K rows shorter than a batch (fewer than eight super-blocks, e.g. K = 768): eight rows at a
// time, one super-block column at a time — super-block j of each of the eight rows in one
// batch (Q4KBatch's pieces with rows for lanes: their heads a row apart, the activation
// super-block the same for all). Lane i's float steps are row i's, so they run as vector
// multiply-adds: each row's sum gets the same operations in the same order as in the portable
// kernel, with no serial chain and no padded batch. The eight rows' bytes are contiguous, so
// the weights still stream in order. kPrefetch as in Q4KBatch.
template <bool kFused, bool kPrefetch>
CT_AVX512_VNNI void Q4KShortRowsIn(const unsigned char* w, std::size_t row_bytes, index_t rows, const qactivation& x,
                                   index_t blocks, float* y, index_t y_stride) {
  const Q4KPicks pick;
  index_t r0 = 0;
  for (; r0 + 8 <= rows; r0 += 8) {
    const unsigned char* const group = w + static_cast<std::size_t>(r0) * row_bytes;
    __m256 acc = _mm256_setzero_ps();
    for (index_t j = 0; j < blocks; ++j) {
      const unsigned char* const col = group + j * q4_K_bytes;
      const std::int8_t* const xq = x.q + j * 256;
      // the activation super-block's sums of 32, the same for every lane
      const __m512i ps = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x.pair_sums + 8 * j)));
      __m512i a[8], b[2], heads[2];
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const unsigned char* const g = col + 4 * h * row_bytes;
        heads[h] = Q4KHeads4(g, row_bytes);
        const __m512i sm = Q4KScalesMins4(heads[h]);
        b[h] = _mm512_madd_epi16(Q4KMins4(sm), ps);
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) {
          if constexpr (kPrefetch) ahead_prefetch(g + i * row_bytes, q4_K_bytes, x.prefetch_bytes);
          a[4 * h + i] = Q4KSubDots(g + i * row_bytes, Lane128(sm, i), xq, pick);
        }
      }
      acc = Q4KLaneSteps<kFused>(x.d[j], Q4KScales8(heads[0], heads[1]), _mm512_cvtepi32_ps(Q4KSums8(a, b)), acc);
    }
    alignas(32) float sums[8];
    _mm256_store_ps(sums, acc);
    for (int i = 0; i < 8; ++i) y[(r0 + i) * y_stride] = sums[i];
  }
  if (r0 < rows) BatchRowsIn<Q4KBatches, kFused, false>(w + static_cast<std::size_t>(r0) * row_bytes, row_bytes, rows - r0, x, blocks,
                                                        y + r0 * y_stride, y_stride);
}

template <class F, bool kFused>
CT_AVX512_VNNI void BatchRows(const unsigned char* w, std::size_t row_bytes, index_t rows, const qactivation& x, index_t blocks,
                              float* y, index_t y_stride) {
  if constexpr (std::is_same_v<F, Q4KBatches>) {
    // Not for longer rows: eight rows a row apart are eight streams, and from DRAM on the Zen 5
    // guest that read 4096² in 0.46-0.58 ms against 0.33 row by row (11008 x 4096: 1.19-1.23
    // against 0.87), though from L2 it was 8% faster.
    if (blocks < 8 && rows >= 8) {
      if (row_runs(rows).two())
        Q4KShortRowsIn<kFused, true>(w, row_bytes, rows, x, blocks, y, y_stride);
      else
        Q4KShortRowsIn<kFused, false>(w, row_bytes, rows, x, blocks, y, y_stride);
      return;
    }
  }
  if (row_runs(rows).two())
    BatchRowsIn<F, kFused, true>(w, row_bytes, rows, x, blocks, y, y_stride);
  else
    BatchRowsIn<F, kFused, false>(w, row_bytes, rows, x, blocks, y, y_stride);
}

template <class F, bool kFused>
CT_AVX512_VNNI float BatchDot(const unsigned char* w, const qactivation& x, index_t blocks) {
  float y = 0.0f;
  BatchRowsIn<F, kFused, false>(w, 0, 1, x, blocks, &y, 1);
  return y;
}

}  // namespace

namespace avx512 {

qdot_fn k_qdot(qformat f, bool fused) {
  switch (f) {
    case qformat::q4_K: return fused ? &BatchDot<Q4KBatches, true> : &BatchDot<Q4KBatches, false>;
    case qformat::q6_K: return fused ? &BatchDot<Q6KBatches, true> : &BatchDot<Q6KBatches, false>;
    default: return nullptr;
  }
}

qdot_rows_fn k_qdot_rows(qformat f, bool fused) {
  switch (f) {
    case qformat::q4_K: return fused ? &BatchRows<Q4KBatches, true> : &BatchRows<Q4KBatches, false>;
    case qformat::q6_K: return fused ? &BatchRows<Q6KBatches, true> : &BatchRows<Q6KBatches, false>;
    default: return nullptr;
  }
}

}  // namespace avx512
#endif

}  // namespace ct::detail::encoded
