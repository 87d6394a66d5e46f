// The multi-vector kernels for q4_K / q6_K on x86 CPUs with AVX-512 VNNI (qdot_kernel::multi,
// qdot.hpp): one weight row against qdot_multi_vectors activation vectors, each super-block
// unpacked once for all of them, each output the value of the one-vector kernel in
// qdot_k_rows_avx512.cpp (the portable bits). The K formats have no tile kernel
// (qdot_tile_avx512.cpp is q8_0 / q4_0); prompt-sized x·wᵀ and W·X with several columns use
// these. Chosen at run time by qdot_simd.cpp like the row kernels.
#include "src/kernels/fp_contract_off.hpp"  // must stay first

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "src/encoded/qdot_avx512.hpp"
#include "src/encoded/qdot_k_avx512.hpp"
#include "src/matmul/matmul_common.hpp"

namespace ct::detail::encoded {

#if CT_QDOT_AVX512
namespace {

using namespace avx512;

// q6_K super-block s at sb against the V activation vectors at xs, its sum (the "- 32" taken
// off) into lane i of each vector's batch, t[v][i]. Functions, not lambdas, here: clang gives
// a lambda none of its enclosing function's target attribute, and vectors passed across it
// would change the ABI.
template <int V>
CT_AVX512_VNNI inline void Q6KPartialsMulti(const unsigned char* sb, index_t s, const qactivation* xs, const Q6KConsts& consts,
                                           __m256i (&t)[V][8], int i) {
  const Q6KBlock u = Q6KUnpack(sb, consts);
  for (int v = 0; v < V; ++v) t[v][i] = Q6KDot(u, xs[v].q + s * 256, xs[v].sums + s * 16);
}

// q4_K: super-blocks s .. s + n (n <= 8) of a row at sb against the V vectors at xs, as
// Q4KBatch does for one: m[v], f[v] the float steps' operands of vector v (lanes past n not to
// be read). The heads of four super-blocks unpacked at once, each super-block's nibbles and
// scale picks once for all the vectors.
template <int V, bool kWhole>
CT_AVX512_VNNI inline void Q4KMultiBatch(const unsigned char* sb, index_t s, index_t n, const qactivation* xs, const Q4KPicks& pick,
                                        float (&m)[V][16], float (&f)[V][16]) {
  __m512i a[V][8], b[V][2], heads[2];
  for (int h = 0; h < 2; ++h) {
    const unsigned char* const g = sb + 4 * h * q4_K_bytes;
    if (!kWhole && n <= 4 * h) {
      heads[h] = _mm512_setzero_si512();
      for (int v = 0; v < V; ++v) b[v][h] = a[v][4 * h] = a[v][4 * h + 1] = a[v][4 * h + 2] = a[v][4 * h + 3] = heads[h];
      continue;
    }
    heads[h] = kWhole ? Q4KHeads4(g) : Q4KHeads4(g, n - 4 * h);
    const __m512i sm = Q4KScalesMins4(heads[h]);
    const __m512i mins = Q4KMins4(sm);
    // the activations' buffers have whole cache lines: the 64 bytes of sums are there
    for (int v = 0; v < V; ++v) b[v][h] = _mm512_madd_epi16(mins, _mm512_loadu_si512(xs[v].pair_sums + 8 * (s + 4 * h)));
    for (int i = 0; i < 4; ++i) {
      if (!kWhole && n <= 4 * h + i) {
        for (int v = 0; v < V; ++v) a[v][4 * h + i] = _mm512_setzero_si512();
        continue;
      }
      const Q4KQuants u = Q4KUnpackQuants(g + i * q4_K_bytes, Lane128(sm, i), pick);
      for (int v = 0; v < V; ++v) a[v][4 * h + i] = Q4KDotA(u, xs[v].q + (s + 4 * h + i) * 256);
    }
  }
  const __m512 d = Q4KScales8(heads[0], heads[1]);
  for (int v = 0; v < V; ++v) {
    _mm512_store_ps(m[v], _mm512_mul_ps(Q4KActivationScales8(xs[v].d + s), d));
    _mm512_store_ps(f[v], _mm512_cvtepi32_ps(Q4KSums8(a[v], b[v])));
  }
}

// q4_K rows shorter than a batch (blocks < 8) against the V vectors: eight rows at a time, one
// super-block column at a time, rows for lanes (as the one-vector kernel's Q4KShortRowsIn), so a
// tree's sixteen sums serve eight super-blocks for any K and each vector's float steps are
// vector multiply-adds over the eight rows, each row's in the portable order. Rows past the
// last eight go to QDotQ4KMulti's batches.
template <bool kFused>
CT_AVX512_VNNI index_t Q4KMultiShortRows(const unsigned char* w, std::size_t row_bytes, index_t rows, const qactivation* xs,
                                         index_t blocks, float* y, index_t y_row, index_t y_vec) {
  constexpr int V = static_cast<int>(qdot_multi_vectors);
  const Q4KPicks pick;
  index_t r0 = 0;
  for (; r0 + 8 <= rows; r0 += 8) {
    const unsigned char* const group = w + static_cast<std::size_t>(r0) * row_bytes;
    __m256 acc[V];
    for (int v = 0; v < V; ++v) acc[v] = _mm256_setzero_ps();
    for (index_t j = 0; j < blocks; ++j) {
      const unsigned char* const col = group + j * q4_K_bytes;
      __m512i a[V][8], b[V][2], heads[2];
      for (int h = 0; h < 2; ++h) {
        const unsigned char* const g = col + 4 * h * row_bytes;
        heads[h] = Q4KHeads4(g, row_bytes);
        const __m512i sm = Q4KScalesMins4(heads[h]);
        const __m512i mins = Q4KMins4(sm);
        for (int v = 0; v < V; ++v)  // the activation super-block's sums of 32, the same in every lane
          b[v][h] = _mm512_madd_epi16(
              mins, _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xs[v].pair_sums + 8 * j))));
        for (int i = 0; i < 4; ++i) {
          const Q4KQuants u = Q4KUnpackQuants(g + i * row_bytes, Lane128(sm, i), pick);
          for (int v = 0; v < V; ++v) a[v][4 * h + i] = Q4KDotA(u, xs[v].q + j * 256);
        }
      }
      const __m512 d = Q4KScales8(heads[0], heads[1]);
      for (int v = 0; v < V; ++v) acc[v] = Q4KLaneSteps<kFused>(xs[v].d[j], d, _mm512_cvtepi32_ps(Q4KSums8(a[v], b[v])), acc[v]);
    }
    for (int v = 0; v < V; ++v) {
      alignas(32) float sums[8];
      _mm256_store_ps(sums, acc[v]);
      for (int i = 0; i < 8; ++i) y[(r0 + i) * y_row + v * y_vec] = sums[i];
    }
  }
  return r0;
}

// q4_K against qdot_multi_vectors activation vectors at once, in batches of eight super-blocks
// (Q4KMultiBatch; a row's last batch as many as remain; short rows by Q4KMultiShortRows), per
// vector the float steps in the portable order, so each output is the one-vector kernel's
// value. (Unpacking one super-block at a time, with two halving steps and two Sums8x8 trees per
// vector, took 28-29.5 ms for a 128 x 4096 x 4096 product on the Zen 5 guest, against 24.3-25
// this way; 128 x 2048 x 768, three super-blocks a row, ran 48 GMAC/s in padded batches and
// 95-97 by Q4KMultiShortRows.)
template <bool kFused>
CT_AVX512_VNNI void QDotQ4KMulti(const unsigned char* w, std::size_t row_bytes, index_t rows, const qactivation* xs,
                                 index_t blocks, float* y, index_t y_row, index_t y_vec) {
  constexpr int V = static_cast<int>(qdot_multi_vectors);
  const Q4KPicks pick;
  const index_t done = blocks < 8 ? Q4KMultiShortRows<kFused>(w, row_bytes, rows, xs, blocks, y, y_row, y_vec) : 0;
  for (index_t r = done; r < rows; ++r) {
    const unsigned char* row = w + static_cast<std::size_t>(r) * row_bytes;
    float acc[V] = {};
    for (index_t s = 0; s < blocks; s += 8) {
      alignas(64) float m[V][16], f[V][16];
      const index_t n = std::min<index_t>(8, blocks - s);
      if (n == 8)
        Q4KMultiBatch<V, true>(row + s * q4_K_bytes, s, 8, xs, pick, m, f);
      else
        Q4KMultiBatch<V, false>(row + s * q4_K_bytes, s, n, xs, pick, m, f);
      // read back from memory (qdot_k_rows_avx512.cpp's BatchRowsIn says why)
      asm volatile("" ::: "memory");
      for (int i = 0; i < n; ++i)
        for (int v = 0; v < V; ++v) {
          acc[v] = mm::muladd<kFused>(m[v][i], f[v][i], acc[v]);
          acc[v] = mm::muladd<kFused>(m[v][8 + i], f[v][8 + i], acc[v]);
        }
    }
    for (int v = 0; v < V; ++v) y[r * y_row + v * y_vec] = acc[v];
  }
}

// q6_K against qdot_multi_vectors activation vectors at once, as QDotQ4KMulti: each
// super-block's quants (rebuilt from ql and qh) and scale picks once, then every vector's
// products, and per vector the one-vector kernel's batch of eight (Q6KBatch) and float steps.
template <bool kFused>
CT_AVX512_VNNI void QDotQ6KMulti(const unsigned char* w, std::size_t row_bytes, index_t rows, const qactivation* xs,
                                 index_t blocks, float* y, index_t y_row, index_t y_vec) {
  constexpr int V = static_cast<int>(qdot_multi_vectors);
  const Q6KConsts consts;
  for (index_t r = 0; r < rows; ++r) {
    const unsigned char* row = w + static_cast<std::size_t>(r) * row_bytes;
    float acc[V] = {};
    index_t s = 0;
    for (; s + 8 <= blocks; s += 8) {
      __m512i t[V][8];  // as the one-vector kernel's Q6KBatch: 512-bit partials, one Sums8x16 tree
      std::uint16_t d16[8];
      for (int i = 0; i < 8; ++i) {
        const unsigned char* const sb = row + (s + i) * q6_K_bytes;
        const Q6KBlock u = Q6KUnpack(sb, consts);
        for (int v = 0; v < V; ++v) t[v][i] = Q6KDot16(u, xs[v].q + (s + i) * 256, xs[v].minus16_sums + (s + i) * 16);
        std::memcpy(&d16[i], sb + 208, 2);
      }
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(d16)));
      alignas(32) float m[V][8], f[V][8];
      for (int v = 0; v < V; ++v) {
        _mm256_store_ps(m[v], _mm256_mul_ps(_mm256_loadu_ps(xs[v].d + s), d));
        _mm256_store_ps(f[v], _mm256_cvtepi32_ps(Sums8x16(t[v])));
      }
      // read back from memory (qdot_k_rows_avx512.cpp's BatchRowsIn says why)
      asm volatile("" ::: "memory");
      for (int i = 0; i < 8; ++i)
        for (int v = 0; v < V; ++v) acc[v] = mm::muladd<kFused>(m[v][i], f[v][i], acc[v]);
    }
    for (; s < blocks; ++s) {
      const unsigned char* sb = row + s * q6_K_bytes;
      __m256i t[V][8];
      Q6KPartialsMulti<V>(sb, s, xs, consts, t, 0);
      for (int v = 0; v < V; ++v)
        acc[v] = mm::muladd<kFused>(xs[v].d[s] * ScaleAt(sb + 208), static_cast<float>(HSum8(t[v][0])), acc[v]);
    }
    for (int v = 0; v < V; ++v) y[r * y_row + v * y_vec] = acc[v];
  }
}

}  // namespace

qdot_multi_fn avx512_qdot_multi(qformat f, bool fused) {
  if (!cpu_has_vnni()) return nullptr;
  if (f == qformat::q4_K) return fused ? &QDotQ4KMulti<true> : &QDotQ4KMulti<false>;
  if (f == qformat::q6_K) return fused ? &QDotQ6KMulti<true> : &QDotQ6KMulti<false>;
  return nullptr;
}

#else

qdot_multi_fn avx512_qdot_multi(qformat, bool) { return nullptr; }

#endif

}  // namespace ct::detail::encoded
