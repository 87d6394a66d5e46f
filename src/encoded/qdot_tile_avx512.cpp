// The prompt-sized x·wᵀ kernels for q8_0 / q4_0 on x86 CPUs with AVX-512 VNNI: weights and
// activations laid out so that the sixteen blocks' integer dots land in their own lanes without
// a fold (qdot.hpp, qtile_activations / qtile_weights; docs/encoded.md), with the bits of the
// portable kernels. Chosen at run time like the row kernels of qdot_avx512.cpp.
#include "src/kernels/fp_contract_off.hpp"  // must stay first

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "src/encoded/qdot_avx512.hpp"
#include "src/matmul/matmul_common.hpp"

namespace ct::detail::encoded {

#if CT_QDOT_AVX512
namespace {

using namespace avx512;

// ---- The tile kernels (prompt-sized x·wᵀ): weight rows laid out like qtile_activations, so
// eight vpdpbusd give sixteen blocks' integer dots in their lanes with no fold, and a tile of
// kRows weight rows x kVecs activation vectors shares every load.

// Weight rows -> qtile_weights (qdot.hpp): lane j of register i of a row's group g holds bytes
// 4i..4i+3 of block 16g + j in unsigned form (w ^ 0x80, or the nibbles); the padding (rows past
// the last quad's end, blocks past the row's end) stays zero.
template <bool kQ4>
CT_AVX512_VNNI void PackTileWeights(const unsigned char* w, std::size_t row_bytes, index_t rows, index_t blocks, qtile_weights& out) {
  constexpr index_t wbytes = kQ4 ? q4_0_bytes : q8_0_bytes;
  const index_t groups = (blocks + 15) / 16, quads = (rows + 3) / 4;
  out.rows = rows;
  out.groups = groups;
  out.q = big_buffer<std::uint8_t>(quads * groups * 4 * 512);
  out.d = big_buffer<float>(quads * groups * 4 * 16);
  // Zeros only where no block lands: the last group of every row when K ends inside it, and the
  // rows past the end in the last quad (the whole buffer zeroed first was a second pass).
  // Row r's group g: the 512 bytes at q + slot * 512 and the 16 scales at d + slot * 16.
  const auto slot = [groups](index_t r, index_t g) { return ((r / 4) * groups + g) * 4 + r % 4; };
  const index_t tail = blocks % 16;
  for (index_t r = 0; r < quads * 4; ++r)
    for (index_t g = r < rows ? (tail != 0 ? groups - 1 : groups) : 0; g < groups; ++g) {
      const index_t at = slot(r, g);
      std::memset(out.q.data() + at * 512, 0, 512);
      std::memset(out.d.data() + at * 16, 0, 16 * sizeof(float));
    }
  for (index_t r = 0; r < rows; ++r) {
    const unsigned char* row = w + static_cast<std::size_t>(r) * row_bytes;
    for (index_t b = 0; b < blocks; ++b) {
      const unsigned char* blk = row + b * wbytes;
      alignas(32) std::uint32_t dw[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(dw), UnsignedBlock<kQ4>(blk));
      const index_t at = slot(r, b / 16);
      std::uint8_t* group = out.q.data() + at * 512 + (b % 16) * 4;
      for (int i = 0; i < 8; ++i) std::memcpy(group + 64 * i, &dw[i], 4);
      out.d.data()[at * 16 + b % 16] = ScaleAt(blk);
    }
  }
}

// One group of sixteen blocks for kRows weight rows x kVecs activation vectors (w, wd, x, xs,
// xd: the group's first row or vector, the others at constant offsets). The integer
// accumulators start at the activations' -c * (quant sum), so after the eight vpdpbusd they hold
// the blocks' integer dots; each weight and activation register is loaded once for all pairs.
// kMasked: the row's last, partial group (lanes past the row's end keep their value, as Dot32's).
template <bool kFused, bool kMasked, int kRows, int kVecs>
CT_AVX512_VNNI inline void TileGroup(const std::uint8_t* w, const float* wd, const std::int8_t* x, const std::int32_t* xs,
                                     const float* xd, __mmask16 keep, __m512 (&lanes)[kRows][kVecs]) {
  __m512i acc[kRows][kVecs];
  for (int t = 0; t < kVecs; ++t) {
    const __m512i start = _mm512_loadu_si512(xs + 16 * t);
    for (int r = 0; r < kRows; ++r) acc[r][t] = start;
  }
  for (int i = 0; i < 8; ++i) {
    __m512i wv[kRows];
    for (int r = 0; r < kRows; ++r) wv[r] = _mm512_loadu_si512(w + 512 * r + 64 * i);
    for (int t = 0; t < kVecs; ++t) {
      const __m512i xv = _mm512_loadu_si512(x + 512 * t + 64 * i);
      for (int r = 0; r < kRows; ++r) acc[r][t] = _mm512_dpbusd_epi32(acc[r][t], wv[r], xv);
    }
  }
  for (int r = 0; r < kRows; ++r) {
    const __m512 dw = _mm512_loadu_ps(wd + 16 * r);
    for (int t = 0; t < kVecs; ++t) {
      const __m512 scale = _mm512_mul_ps(dw, _mm512_loadu_ps(xd + 16 * t));
      const __m512 updated = MulAdd16<kFused>(scale, _mm512_cvtepi32_ps(acc[r][t]), lanes[r][t]);
      lanes[r][t] = kMasked ? _mm512_mask_mov_ps(lanes[r][t], keep, updated) : updated;
    }
  }
}

// kRows weight rows (w, wd: at the first, `rows` in the layout) x kVecs activation vectors from
// v, the float lanes in registers.
template <bool kFused, int kRows, int kVecs>
CT_AVX512_VNNI void Tile(const std::uint8_t* w, const float* wd, index_t rows, const qtile_activations& x, index_t v, float* y,
                         index_t y_row, index_t y_vec) {
  const index_t groups = x.groups, tail = x.blocks % 16, full = tail != 0 ? groups - 1 : groups;
  const index_t xstep = x.vectors * 512, wstep = rows * 512;
  const std::int8_t* xq = x.q.data() + v * 512;
  const std::int32_t* xs = x.start.data() + v * 16;
  const float* xd = x.d.data() + v * 16;
  __m512 lanes[kRows][kVecs];
  for (int r = 0; r < kRows; ++r)
    for (int t = 0; t < kVecs; ++t) lanes[r][t] = _mm512_setzero_ps();
  for (index_t g = 0; g < full; ++g, w += wstep, wd += rows * 16, xq += xstep, xs += x.vectors * 16, xd += x.vectors * 16)
    TileGroup<kFused, false>(w, wd, xq, xs, xd, 0xffff, lanes);
  if (tail != 0) TileGroup<kFused, true>(w, wd, xq, xs, xd, static_cast<__mmask16>((1u << tail) - 1), lanes);
  for (int r = 0; r < kRows; ++r)
    for (int t = 0; t < kVecs; ++t) y[r * y_row + t * y_vec] = FoldLanes(lanes[r][t]);
}

// Activation vectors v0..v1 against kRows weight rows, three at a time (4 x 3 accumulators and
// 4 x 3 lanes: 24 of the 32 registers).
template <bool kFused, int kRows>
CT_AVX512_VNNI void TileRow(const std::uint8_t* w, const float* wd, index_t rows, const qtile_activations& x, index_t v0, index_t v1,
                            float* y, index_t y_row, index_t y_vec) {
  index_t v = v0;
  for (; v + 3 <= v1; v += 3) Tile<kFused, kRows, 3>(w, wd, rows, x, v, y + (v - v0) * y_vec, y_row, y_vec);
  switch (v1 - v) {
    case 2: Tile<kFused, kRows, 2>(w, wd, rows, x, v, y + (v - v0) * y_vec, y_row, y_vec); break;
    case 1: Tile<kFused, kRows, 1>(w, wd, rows, x, v, y + (v - v0) * y_vec, y_row, y_vec); break;
    default: break;
  }
}

template <bool kFused>
CT_AVX512_VNNI void QDotTile(const qtile_weights& w, index_t r0, index_t r1, const qtile_activations& x, index_t v0, index_t v1,
                             float* y, index_t y_row, index_t y_vec) {
  const index_t groups = x.groups, quad_q = groups * 4 * 512, quad_d = groups * 4 * 16;
  // Activation vectors in chunks that stay in L2 while the rows pass them (x.chunk_bytes: 32
  // vectors of 4 KiB at K = 4096 with a 512 KiB L2); a row quad's groups (16 KiB there) stay in
  // L1 across a chunk.
  const index_t chunk = std::max<index_t>(3, x.chunk_bytes / std::max<index_t>(groups * 512, 1) / 3 * 3);
  for (index_t c0 = v0; c0 < v1; c0 += chunk) {
    const index_t c1 = std::min(v1, c0 + chunk);
    float* yc = y + (c0 - v0) * y_vec;
    for (index_t r = r0; r < r1; r += 4) {
      const std::uint8_t* wq = w.q.data() + (r / 4) * quad_q;
      const float* wd = w.d.data() + (r / 4) * quad_d;
      float* yr = yc + (r - r0) * y_row;
      switch (std::min<index_t>(4, r1 - r)) {
        case 4: TileRow<kFused, 4>(wq, wd, 4, x, c0, c1, yr, y_row, y_vec); break;
        case 3: TileRow<kFused, 3>(wq, wd, 4, x, c0, c1, yr, y_row, y_vec); break;
        case 2: TileRow<kFused, 2>(wq, wd, 4, x, c0, c1, yr, y_row, y_vec); break;
        default: TileRow<kFused, 1>(wq, wd, 4, x, c0, c1, yr, y_row, y_vec); break;
      }
    }
  }
}

}  // namespace

qdot_tile_fn avx512_qdot_tile(qformat f, bool fused) {
  if (!cpu_has_vnni() || (f != qformat::q8_0 && f != qformat::q4_0)) return nullptr;
  return fused ? &QDotTile<true> : &QDotTile<false>;
}

qdot_tile_pack_fn avx512_qdot_tile_pack(qformat f) {
  if (!cpu_has_vnni()) return nullptr;
  switch (f) {
    case qformat::q8_0: return &PackTileWeights<false>;
    case qformat::q4_0: return &PackTileWeights<true>;
    default: return nullptr;
  }
}

#else

qdot_tile_fn avx512_qdot_tile(qformat, bool) { return nullptr; }
qdot_tile_pack_fn avx512_qdot_tile_pack(qformat) { return nullptr; }

#endif

}  // namespace ct::detail::encoded
