// The multi-vector kernels for q4_K / q6_K on x86 CPUs with AVX-512 VNNI (qdot_kernel::multi,
// qdot.hpp): one weight row against qdot_multi_vectors activation vectors, each super-block
// unpacked once for all of them, each output the value of the one-vector kernel in
// qdot_avx512.cpp (the portable bits). The K formats have no tile kernel (qdot_tile_avx512.cpp
// is q8_0 / q4_0); prompt-sized x·wᵀ and W·X with several columns use these. Chosen at run
// time by qdot_simd.cpp like the row kernels.
#include "src/kernels/fp_contract_off.hpp"  // must stay first

#include <cstdint>
#include <cstring>

#include "src/encoded/qdot_avx512.hpp"
#include "src/encoded/qdot_k_avx512.hpp"
#include "src/matmul/matmul_common.hpp"

namespace ct::detail::encoded {

#if CT_QDOT_AVX512
namespace {

using namespace avx512;

// Super-block s at sb against the V activation vectors at xs, its partials into lane i of each
// vector's batch: q4_K's A_s and B_s (eight int32 each) into a[v][i], b[v][i]; q6_K's sum
// (the "- 32" taken off) into t[v][i]. Functions, not lambdas: clang gives a lambda none of its
// enclosing function's target attribute, and vectors passed across it would change the ABI.
template <int V>
CT_AVX512_VNNI inline void Q4KPartialsMulti(const unsigned char* sb, index_t s, const qactivation* xs, const Q4KPicks& pick,
                                           __m256i (&a)[V][8], __m256i (&b)[V][8], int i) {
  const Q4KBlock u = Q4KUnpack(sb, pick);
  for (int v = 0; v < V; ++v) Q4KDot(u, xs[v].q + s * 256, xs[v].sums + s * 16, a[v][i], b[v][i]);
}
template <int V>
CT_AVX512_VNNI inline void Q6KPartialsMulti(const unsigned char* sb, index_t s, const qactivation* xs, const Q6KConsts& consts,
                                           __m256i (&t)[V][8], int i) {
  const Q6KBlock u = Q6KUnpack(sb, consts);
  for (int v = 0; v < V; ++v) t[v][i] = Q6KDot(u, xs[v].q + s * 256, xs[v].sums + s * 16);
}

// q4_K against qdot_multi_vectors activation vectors at once: each super-block's nibbles,
// scale picks and mins are unpacked once and multiplied with every vector's quants; then per
// vector the steps of QDotQ4K (Sums8x8 trees for eight super-blocks, the float steps in the
// portable order), so each output is QDotQ4K's value. On the Xeon guest the unpacking was
// about half of a vector's work per super-block.
template <bool kFused>
CT_AVX512_VNNI void QDotQ4KMulti(const unsigned char* w, std::size_t row_bytes, index_t rows, const qactivation* xs,
                                 index_t blocks, float* y, index_t y_row, index_t y_vec) {
  constexpr int V = static_cast<int>(qdot_multi_vectors);
  const Q4KPicks pick;
  for (index_t r = 0; r < rows; ++r) {
    const unsigned char* row = w + static_cast<std::size_t>(r) * row_bytes;
    float acc[V] = {};
    index_t s = 0;
    for (; s + 8 <= blocks; s += 8) {
      __m256i a[V][8], b[V][8];
      std::int32_t dd[8];
      for (int i = 0; i < 8; ++i) {
        Q4KPartialsMulti<V>(row + (s + i) * q4_K_bytes, s + i, xs, pick, a, b, i);
        std::memcpy(&dd[i], row + (s + i) * q4_K_bytes, 4);
      }
      const __m256i d16 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(dd));
      const __m256 d = _mm256_cvtph_ps(_mm256_cvtepi32_epi16(d16));
      const __m256 dmin = _mm256_cvtph_ps(_mm256_cvtepi32_epi16(_mm256_srli_epi32(d16, 16)));
      alignas(32) float ma[V][8], mb[V][8], fa[V][8], fb[V][8];
      for (int v = 0; v < V; ++v) {
        const __m256 dx = _mm256_loadu_ps(xs[v].d + s);
        _mm256_store_ps(ma[v], _mm256_mul_ps(dx, d));
        _mm256_store_ps(mb[v], _mm256_xor_ps(_mm256_mul_ps(dx, dmin), _mm256_set1_ps(-0.0f)));  // -(dx dmin)
        _mm256_store_ps(fa[v], _mm256_cvtepi32_ps(Sums8x8(a[v])));
        _mm256_store_ps(fb[v], _mm256_cvtepi32_ps(Sums8x8(b[v])));
      }
      asm volatile("" ::: "memory");  // read back from memory (qdot_avx512.cpp's QDotQ4K says why)
      for (int i = 0; i < 8; ++i)
        for (int v = 0; v < V; ++v) {
          acc[v] = mm::muladd<kFused>(ma[v][i], fa[v][i], acc[v]);
          acc[v] = mm::muladd<kFused>(mb[v][i], fb[v][i], acc[v]);
        }
    }
    for (; s < blocks; ++s) {
      const unsigned char* sb = row + s * q4_K_bytes;
      __m256i a[V][8], b[V][8];
      Q4KPartialsMulti<V>(sb, s, xs, pick, a, b, 0);
      for (int v = 0; v < V; ++v) {
        const float dx = xs[v].d[s];
        acc[v] = mm::muladd<kFused>(dx * ScaleAt(sb), static_cast<float>(HSum8(a[v][0])), acc[v]);
        acc[v] = mm::muladd<kFused>(-(dx * ScaleAt(sb + 2)), static_cast<float>(HSum8(b[v][0])), acc[v]);
      }
    }
    for (int v = 0; v < V; ++v) y[r * y_row + v * y_vec] = acc[v];
  }
}

// q6_K against qdot_multi_vectors activation vectors at once, as QDotQ4KMulti: each
// super-block's quants (rebuilt from ql and qh) and scale picks once, then every vector's
// products, and per vector QDotQ6K's batch of eight and float steps.
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
      __m256i t[V][8];
      std::uint16_t d16[8];
      for (int i = 0; i < 8; ++i) {
        Q6KPartialsMulti<V>(row + (s + i) * q6_K_bytes, s + i, xs, consts, t, i);
        std::memcpy(&d16[i], row + (s + i) * q6_K_bytes + 208, 2);
      }
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(d16)));
      alignas(32) float m[V][8], f[V][8];
      for (int v = 0; v < V; ++v) {
        _mm256_store_ps(m[v], _mm256_mul_ps(_mm256_loadu_ps(xs[v].d + s), d));
        _mm256_store_ps(f[v], _mm256_cvtepi32_ps(Sums8x8(t[v])));
      }
      asm volatile("" ::: "memory");  // read back from memory (qdot_avx512.cpp's QDotQ4K says why)
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
