// src/encoded/qdot.hpp — the dot products of quantized mode (internal): a weight row of
// encoded blocks against an activation vector quantized once per call (qactivation below).
//
// The orders, fixed so that every backend and target gives the same bits. Every integer below
// is exact in int32 (the bounds are in the comments of qdot.cpp); float(·) is the correctly
// rounded conversion, and muladd follows the FMA policy (fused or two roundings).
//  * q8_0 and q4_0 (activation blocks of 32): block b's integer dot product isum_b goes to
//    virtual lane b % qdot_lanes, lane = muladd(d_w[b] * d_x[b], float(isum_b), lane) from +0
//    in block order, and the lanes fold by the pairwise tree lane l += lane l + w for
//    w = qdot_lanes / 2, ..., 1.
//  * q4_K (activation blocks of 256, one per super-block s): A_s = sum_j sc_j * (sub-block j's
//    integer dot), B_s = sum_j m_j * (sum of the activation quants of sub-block j); one sum from
//    +0 in super-block order: acc = muladd(d_x * d, float(A_s), acc), then
//    acc = muladd(-(d_x * dmin), float(B_s), acc).
//  * q6_K: A_s = sum_g sc_g * sum_{l in g} (q_l - 32) * x_l; acc = muladd(d_x * d, float(A_s), acc).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "ct/core/index.hpp"
#include "ct/exec/settings.hpp"
#include "src/core/aligned_vector.hpp"
#include "src/core/big_buffer.hpp"

namespace ct::detail::encoded {

inline constexpr index_t qdot_lanes = 16;

/// The q8_0 / q4_0 order's last step, shared by every kernel so the bits agree: the 16 virtual
/// lanes fold pairwise, lane l += lane l + w for w = 8, 4, 2, 1; returns lane 0.
inline float fold_lanes(float* lane) noexcept {
  for (index_t w = qdot_lanes / 2; w >= 1; w /= 2)
    for (index_t l = 0; l < w; ++l) lane[l] = lane[l] + lane[l + w];
  return lane[0];
}

/// An activation vector of K values quantized for an integer dot: K int8 quants in [-127, 127]
/// (ct's quantizer never gives -128: the AVX2 kernels' sign trick needs it), one float scale per
/// activation block (see qdot_kernel), and `sums`, the sum of every 16 consecutive quants (the
/// K formats' mins and offsets use them).
struct qactivation {
  const std::int8_t* q;
  const float* d;
  const std::int16_t* sums;
  /// How far ahead in the weight stream the simd kernels prefetch (the caller's tuning,
  /// weight_prefetch_bytes); 0: no prefetch. Speed only.
  index_t prefetch_bytes = 0;
  /// The quants in the split layout (split_quants) where the kernel asks for it
  /// (qdot_kernel::split), else nullptr.
  const std::int8_t* q_split = nullptr;
  /// Before each row, the row loops (run_rows, the simd rows functions) prefetch this many
  /// bytes of the next row into L2 at once: the tuning's weight_burst_bytes for kernels with
  /// qdot_kernel::burst, else 0 (none). Speed only.
  index_t burst_bytes = 0;
  // (The two below came last for a reason measured, not understood: placed after `sums`, they
  // made the q4_0 kernel 10-15% slower from DRAM on the Zen 5 guest, 0.60-0.74 of the read
  // bound against 0.71-0.83, though no q4_0 code reads them and it ran as fast from L2.)
  /// For activation blocks of 256: the sums of every 32 consecutive quants (pair_sums), which
  /// q4_K's mins multiply; else nullptr.
  const std::int16_t* pair_sums = nullptr;
  /// For activation blocks of 256: -16 times each of `sums` (minus16_sums), which q6_K's
  /// "- 32" multiplies by its doubled scales; else nullptr.
  const std::int16_t* minus16_sums = nullptr;
};

/// The first min(row_bytes, x.burst_bytes) bytes at `next` (the next weight row) into L2, all
/// requests issued back to back. A prefetch never faults, so a row past the end is harmless.
/// Always inlined: GCC may delete calls to a function whose only effect is a prefetch (it did to
/// the AVX-512 encoded kernels' weight prefetch, now ahead_prefetch below).
inline __attribute__((always_inline)) void burst_prefetch(const unsigned char* next, std::size_t row_bytes, index_t burst_bytes) {
  const std::size_t n = row_bytes < static_cast<std::size_t>(burst_bytes) ? row_bytes : static_cast<std::size_t>(burst_bytes);
  for (std::size_t b = 0; b < n; b += 64) __builtin_prefetch(next + b, 0, 1);  // prefetcht2
}

/// The `bytes` bytes `distance` past p into L1 (prefetcht0), for a weight stream (distance 0:
/// nothing). An address past the weights' end is harmless: a prefetch never faults. Always
/// inlined, as burst_prefetch.
inline __attribute__((always_inline)) void ahead_prefetch(const unsigned char* p, index_t bytes, index_t distance) {
  if (distance == 0) return;
  const std::uintptr_t at = reinterpret_cast<std::uintptr_t>(p) + static_cast<std::uintptr_t>(distance);
  for (index_t c = 0; c < bytes; c += 64)
    __builtin_prefetch(reinterpret_cast<const char*>(at + static_cast<std::uintptr_t>(c)), 0, 3);  // prefetcht0
}

/// The order the simd row loops take `rows` weight rows in. From two_runs_min rows on, the
/// first and the second half in turns — rows 0, h, 1, h + 1, ... — so that the weights come
/// from memory as two streams far apart, as the read bound's own pass reads them (measured in
/// qdot_avx512.cpp and docs/encoded.md); fewer rows in order (too short a run for a stream to
/// matter; unmeasured below). A row's value never depends on the order.
struct row_runs {
  static constexpr index_t two_runs_min = 64;
  index_t rows;
  index_t h;  // the second run's first row; rows when there is one run
  explicit row_runs(index_t n) : rows(n), h(n >= two_runs_min ? (n + 1) / 2 : n) {}
  bool two() const { return h < rows; }
  /// The j-th row taken.
  index_t row(index_t j) const { return !two() ? j : j % 2 == 0 ? j / 2 : h + j / 2; }
  /// One past the last row of row r's run (the next row of its run is r + 1 below it).
  index_t run_end(index_t r) const { return r < h ? h : rows; }
};

/// The split layout of K activation quants, for the AVX-512 q4_0 kernel: every whole run of
/// four blocks of 32 (128 quants) keeps its place and becomes their quants 0..15 block by
/// block, then their quants 16..31 (what a register of four blocks' low / high nibbles
/// multiplies). Quants past the last whole run are copied as they are. The kernels read whole
/// groups of 16 blocks, and the tails of 8 blocks of rows of 24, in this layout; other tails
/// in the plain one.
void split_quants(const std::int8_t* q, index_t k, std::int8_t* out);

/// dot(weight row w of `blocks` weight blocks, activation x). x by reference: the 24-byte struct
/// by value went through the stack in a way that defeated store-to-load forwarding (measured).
using qdot_fn = float (*)(const unsigned char* w, const qactivation& x, index_t blocks);

/// y[r * y_stride] = dot(row r, x) for `rows` consecutive weight rows `row_bytes` apart: the
/// same value as fn for each row, without a call per row (a short row's call and set-up cost
/// as much as a third of its dot product).
using qdot_rows_fn = void (*)(const unsigned char* w, std::size_t row_bytes, index_t rows, const qactivation& x,
                              index_t blocks, float* y, index_t y_stride);

/// Activation vectors per call of a multi-vector kernel (qdot_kernel::multi).
inline constexpr index_t qdot_multi_vectors = 8;

/// y[r * y_row + v * y_vec] = dot(row r, xs[v]) for `rows` consecutive weight rows `row_bytes`
/// apart and the qdot_multi_vectors activation vectors xs[0..]: the same value as fn for each,
/// each row's blocks unpacked once for all the vectors (prompt-sized x·wᵀ where the format has
/// no tile kernel).
using qdot_multi_fn = void (*)(const unsigned char* w, std::size_t row_bytes, index_t rows, const qactivation* xs,
                               index_t blocks, float* y, index_t y_row, index_t y_vec);

/// Activation vectors laid out for a tile kernel (prompt-sized x·wᵀ), made once per call before
/// scheduling: groups of 16 activation blocks of 32 (the last zero padded), group-major (group
/// g of every vector, then group g + 1: a tile's loads are then one base address and constant
/// offsets). In group g of vector v, 64-byte register i holds in its 4-byte lane j the quants
/// 4i..4i+3 of block 16g + j, so eight vpdpbusd against weights laid out alike leave block
/// 16g + j's integer dot in lane j (no fold). start: -c * (block 16g + j's quant sum), where the
/// accumulators start, to take off the term the weights' unsigned form adds (c = 128 for q8_0's
/// w + 128, 8 for q4_0's nibbles); d: the blocks' scales (0 past the end).
struct qtile_activations {
  index_t blocks = 0, groups = 0, vectors = 0;
  // How many bytes of laid-out vectors a tile kernel keeps in L2 while the weight rows pass them
  // (the caller's tuning: gemm_a_block_bytes, L2 / 4, the same role as GEMM's A block). Speed only.
  index_t chunk_bytes = 131072;
  aligned_vector<std::int8_t> q;       // [group][vector][512]
  aligned_vector<std::int32_t> start;  // [group][vector][16]
  aligned_vector<float> d;             // [group][vector][16]
};

/// Sizes `out` for `vectors` activation vectors of `blocks` blocks of 32 (zero filled).
void reserve_tile_activations(index_t vectors, index_t blocks, qtile_activations& out);
/// Lays out activation vector v (quants q, scales d, sums of 16 as quantize_activation gives
/// them) into out, with offset factor c.
void pack_tile_activations(const std::int8_t* q, const float* d, const std::int16_t* sums, std::int32_t c, index_t v,
                           qtile_activations& out);

/// Weight rows laid out like qtile_activations, made once per call before scheduling (a shared,
/// read-only copy: ~1.06x the q8_0 bytes, 2x the q4_0 bytes). Quads of 4 rows (the last zero
/// padded), each quad's groups in order, each group the quad's 4 rows' 512 bytes (the weights'
/// unsigned form: w ^ 0x80 for q8_0, the nibbles for q4_0) and their 16 scales as floats.
struct qtile_weights {
  index_t rows = 0, groups = 0;
  big_buffer<std::uint8_t> q;  // [quad][group][4][512]
  big_buffer<float> d;         // [quad][group][4][16]
};

/// Lays out `rows` weight rows (row_bytes apart) of `blocks` blocks into out.
using qdot_tile_pack_fn = void (*)(const unsigned char* w, std::size_t row_bytes, index_t rows, index_t blocks,
                                   qtile_weights& out);
/// y[(r - r0) * y_row + (v - v0) * y_vec] = dot(weight row r, activation vector v) for
/// r0 <= r < r1 (r0 a multiple of 4) and v0 <= v < v1 — each the same value as the format's fn.
using qdot_tile_fn = void (*)(const qtile_weights& w, index_t r0, index_t r1, const qtile_activations& x, index_t v0, index_t v1,
                              float* y, index_t y_row, index_t y_vec);

/// A format's quantized-mode kernel and the activation blocks it wants: 32 (q8_0, q4_0: each
/// activation block is a q8_0 block, its scale the block's float16 scale widened) or 256 (q4_K,
/// q6_K: scale = max|x| / 127 in float). `rows`, where the target has one (else nullptr: call
/// fn per row).
struct qdot_kernel {
  qdot_fn fn = nullptr;
  index_t activation_block = 0;
  qdot_rows_fn rows = nullptr;
  qdot_tile_pack_fn tile_pack = nullptr;  // the tile kernels, where the target has them (q8_0,
  qdot_tile_fn tile = nullptr;            // q4_0 with AVX-512 VNNI), and their activations'
  std::int32_t tile_offset = 0;           // offset factor c (qtile_activations)
  bool split = false;                     // fn / rows read qactivation::q_split
  // The caller asks for bursts of the next row (qactivation::burst_bytes) for the simd q4_0
  // and q4_K kernels, measured faster from memory; not q8_0 or q6_K (docs/tuning.md).
  bool burst = false;
  qdot_multi_fn multi = nullptr;  // where the target has one (q4_K, q6_K on x86 from AVX2 up)
  explicit operator bool() const noexcept { return fn != nullptr; }
  void run_rows(const unsigned char* w, std::size_t row_bytes, index_t n, const qactivation& x, index_t blocks, float* y,
                index_t y_stride) const {
    if (rows) return rows(w, row_bytes, n, x, blocks, y, y_stride);
    for (index_t r = 0; r < n; ++r) {
      const unsigned char* row = w + static_cast<std::size_t>(r) * row_bytes;
      if (r + 1 < n) burst_prefetch(row + row_bytes, row_bytes, x.burst_bytes);
      y[r * y_stride] = fn(row, x, blocks);
    }
  }
};

/// The kernel for weights of this format under settings s: the simd target's when it has one,
/// else the portable one (the same bits); empty for formats without a quantized mode.
qdot_kernel resolve_qdot(std::string_view format, const settings& s);

/// The portable kernels (the reference the simd ones match bit for bit); empty as above.
qdot_kernel portable_qdot(std::string_view format, bool fused);

/// Quantizes v[0, k) in activation blocks of `block` (32 or 256; k a multiple of it) into
/// q[k], d[k / block] and sums[k / 16]. Throws format_error for a NaN or infinite value.
/// `simd`: may use the simd target's quantizer (the same bits).
void quantize_activation(const float* v, index_t k, index_t block, std::int8_t* q, float* d, std::int16_t* sums,
                         bool simd);

/// The formats with a quantized mode, as indices for the simd entry.
enum class qformat { q8_0, q4_0, q4_K, q6_K };

/// The one of a backend's four kernels that serves format f.
inline qdot_fn by_format(qformat f, qdot_fn q8_0, qdot_fn q4_0, qdot_fn q4_K, qdot_fn q6_K) noexcept {
  switch (f) {
    case qformat::q8_0: return q8_0;
    case qformat::q4_0: return q4_0;
    case qformat::q4_K: return q4_K;
    case qformat::q6_K: return q6_K;
  }
  return nullptr;
}

// The simd entry (qdot_simd.cpp): the current target's kernel, or nullptr where it has none;
// and its several-rows form, or nullptr.
qdot_fn simd_qdot(qformat f, bool fused);
qdot_rows_fn simd_qdot_rows(qformat f, bool fused);
qdot_multi_fn simd_qdot_multi(qformat f, bool fused);
// The AVX-512 VNNI kernels (qdot_avx512.cpp; the K formats' in qdot_k_rows_avx512.cpp, the
// tiles in qdot_tile_avx512.cpp), which qdot_simd.cpp's AVX-512 targets take first:
// nullptr where the CPU has no AVX-512 VNNI (or is not x86), and a rows form for q8_0, q4_0,
// q4_K and q6_K.
qdot_fn avx512_qdot(qformat f, bool fused);
qdot_rows_fn avx512_qdot_rows(qformat f, bool fused);
qdot_multi_fn avx512_qdot_multi(qformat f, bool fused);
qdot_tile_fn avx512_qdot_tile(qformat f, bool fused);
qdot_tile_pack_fn avx512_qdot_tile_pack(qformat f);
// The simd entry of the tile kernels: the current target's, or nullptr.
qdot_tile_fn simd_qdot_tile(qformat f, bool fused);
qdot_tile_pack_fn simd_qdot_tile_pack(qformat f);
// The simd quantizer of activation blocks of 32 or 256 (q, d and sums as quantize_activation
// gives them, after the same finiteness check); false where the target has none, or where a
// value is not finite (q, d and sums are scratch then).
bool simd_quantize(const float* v, index_t k, index_t block, std::int8_t* q, float* d, std::int16_t* sums);
// sums[g] = the sum of q[16g .. 16g + 16) for g < k / 16.
void quant_sums(const std::int8_t* q, index_t k, std::int16_t* sums);
// out[j] = sums[2j] + sums[2j + 1] for j < k / 32 (the sums of 32 from quant_sums' sums of 16).
void pair_sums(const std::int16_t* sums, index_t k, std::int16_t* out);
// out[g] = -16 * sums[g] for g < k / 16 (in int16: a sum of 16 quants is at most 2032 in size).
void minus16_sums(const std::int16_t* sums, index_t k, std::int16_t* out);

}  // namespace ct::detail::encoded
