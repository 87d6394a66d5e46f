// The quantized-mode dot products on x86 CPUs with AVX-512 VNNI (Ice Lake and later Intel
// cores, Zen 4 and Zen 5): the 512-bit q8_0 and q4_0 kernels, with the bits of the portable
// kernels (qdot.hpp fixes the float order; every integer below is exact in int32, the bounds
// are in the comments), and the entry points for every format (avx512_qdot, avx512_qdot_rows).
//
// Why apart from qdot_simd.cpp: Debian's Highway 1.0.3 compiles no AVX3_DL target, so the VNNI
// instructions are reached from its AVX3 target (qdot_simd.cpp asks avx512_qdot first) after a
// run-time check of the CPU; the functions here carry their own target attribute.
//
// q8_0 / q4_0: sixteen blocks fill the sixteen float lanes of one register, block g + j in lane
// j — exactly the order's sixteen virtual lanes, so one multiply-add per sixteen blocks. For
// q8_0 a register holds two blocks' quants; vpdpbusd (unsigned times signed bytes, four
// products summed into each int32) gives 8 partials per block, folded to one sum per block by
// a transpose-and-add. For q4_0 a register holds four blocks' nibble bytes (one per 128-bit
// lane), against activation quants in the matching split layout, giving 4 partials per block
// and a shorter fold. q8_0's signed weights become unsigned by w ^ 0x80 = w + 128, and the
// 128 * (sum of the block's activation quants) this adds is taken off after the fold (from the
// precomputed sums of 16); q4_0's nibbles are 0..15 and its "- 8" is taken off the same way.
// The sixteen float16 scales come by word permutes (Scales16).
//
// The other files of the family: q4_K / q6_K's one-vector kernels in qdot_k_rows_avx512.cpp
// (their building blocks in qdot_k_avx512.hpp), their multi-vector kernels in
// qdot_multi_avx512.cpp, and the q8_0 / q4_0 tile kernels (prompt-sized x·wᵀ) in
// qdot_tile_avx512.cpp.
#include "src/kernels/fp_contract_off.hpp"  // must stay first

#include <cstdint>

#include "src/encoded/qdot_avx512.hpp"

namespace ct::detail::encoded {

#if CT_QDOT_AVX512
namespace avx512 {

bool cpu_has_vnni() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  }();
  return has;
}

}  // namespace avx512

namespace {

using namespace avx512;  // the pieces shared with the tile kernels (qdot_avx512.hpp)

// Two blocks' partials (blocks at b0 and b1, their 64 activation quants at x): int32 lanes
// 0..7 block b0's, 8..15 block b1's. q8_0: (w + 128) * x; q4_0: nibble * x.
template <bool kQ4>
CT_AVX512_VNNI inline __m512i PairPartials(const unsigned char* b0, const unsigned char* b1, const std::int8_t* x) {
  const __m512i xv = _mm512_loadu_si512(x);
  if constexpr (kQ4) {
    // Each block's 16 bytes twice (low nibbles = values 0..15, high = 16..31): [b0 b0 b1 b1],
    // the second copy of each shifted right by 4 in its 64-bit lanes, then the low nibble.
    const __m256i lo = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b0 + 2)));
    const __m256i hi = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b1 + 2)));
    const __m512i bytes = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    const __m512i nib = _mm512_and_si512(_mm512_srlv_epi64(bytes, _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4)),
                                         _mm512_set1_epi8(0x0f));
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), nib, xv);
  } else {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0 + 2));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b1 + 2));
    const __m512i w = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_xor_si512(w, _mm512_set1_epi8(static_cast<char>(0x80))), xv);
  }
}

// One block's partials (lanes 0..7; lanes 8..15 zero): the last pair of a partial group, where
// nothing past the block may be read.
template <bool kQ4>
CT_AVX512_VNNI inline __m512i SinglePartials(const unsigned char* b0, const std::int8_t* x) {
  const __m512i xv = _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)));
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_zextsi256_si512(UnsignedBlock<kQ4>(b0)), xv);
}

// Sixteen blocks' integer dots, block j in lane j, from p[i] = PairPartials(blocks 2i, 2i + 1).
// Per 128-bit lane c, pair32 then pair64 leave [s(p0,c) s(p1,c) s(p2,c) s(p3,c)] (s: the sum of
// the four int32s of p's lane c); block 2i is lanes 0-1 of p[i], block 2i + 1 lanes 2-3.
CT_AVX512_VNNI inline __m512i pair32(__m512i a, __m512i b) {
  return _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
}
CT_AVX512_VNNI inline __m512i pair64(__m512i a, __m512i b) {
  return _mm512_add_epi32(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b));
}
CT_AVX512_VNNI inline __m512i FoldSixteen(const __m512i* p) {
  const __m512i lo = pair64(pair32(p[0], p[1]), pair32(p[2], p[3]));  // blocks 0..7
  const __m512i hi = pair64(pair32(p[4], p[5]), pair32(p[6], p[7]));  // blocks 8..15
  // [lo0 lo2 hi0 hi2] + [lo1 lo3 hi1 hi3]: blocks 0 2 4 6 | 1 3 5 7 | 8 10 12 14 | 9 11 13 15
  const __m512i s = _mm512_add_epi32(_mm512_shuffle_i32x4(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)),
                                     _mm512_shuffle_i32x4(lo, hi, _MM_SHUFFLE(3, 1, 3, 1)));
  return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15), s);
}

// q4_0, four blocks at b against their split activation quants at xs (qdot.hpp, split_quants:
// the four blocks' quants 0..15, then their quants 16..31): the blocks' 16 nibble bytes side by
// side, block j in 128-bit lane j; the low nibbles against the first 64 quants and the high
// ones against the next 64, both into one accumulator, leave four partials per block in its
// lane (the pair layout above leaves eight over two lanes, and its fold costs twice as much).
// Reads the blocks' bytes only.
CT_AVX512_VNNI inline __m512i QuadPartials(const unsigned char* b, const std::int8_t* xs) {
  constexpr int wbytes = static_cast<int>(q4_0_bytes);
  __m512i v = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2)));
  v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + wbytes + 2)), 1);
  v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2 * wbytes + 2)), 2);
  v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 3 * wbytes + 2)), 3);
  const __m512i low = _mm512_set1_epi8(0x0f);
  const __m512i lo = _mm512_and_si512(v, low), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
  return _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, _mm512_loadu_si512(xs)), hi,
                             _mm512_loadu_si512(xs + 64));
}

// Sixteen blocks' integer dots, block j in lane j, from p[i] = QuadPartials(blocks 4i..4i+3):
// pair32 then pair64 leave in lane 4c + i the sum of p[i]'s 128-bit lane c (block 4i + c).
CT_AVX512_VNNI inline __m512i FoldQuads(const __m512i* p) {
  const __m512i s = pair64(pair32(p[0], p[1]), pair32(p[2], p[3]));
  return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), s);
}

// The partials of the sixteen blocks at w against their activation quants at xq (q8_0: eight
// pairs; q4_0: four quads, xq in the split layout).
template <bool kQ4>
CT_AVX512_VNNI inline void Partials16(const unsigned char* w, const std::int8_t* xq, __m512i* part) {
  constexpr int wbytes = kQ4 ? static_cast<int>(q4_0_bytes) : static_cast<int>(q8_0_bytes);
  if constexpr (kQ4) {
    for (int i = 0; i < 4; ++i) part[i] = QuadPartials(w + 4 * i * wbytes, xq + 128 * i);
  } else {
    for (int i = 0; i < 8; ++i) part[i] = PairPartials<kQ4>(w + 2 * i * wbytes, w + (2 * i + 1) * wbytes, xq + 64 * i);
  }
}

// 64 bytes at w + offset; with kTail only those before w + limit (the rest read as zeros, and
// masked-off bytes are never touched: a tail group may end at the end of the weights).
template <bool kTail>
CT_AVX512_VNNI inline __m512i Load64(const unsigned char* w, index_t offset, index_t limit) {
  if constexpr (kTail) {
    const index_t rem = limit - offset;
    const __mmask64 m = rem >= 64 ? ~__mmask64{0} : rem <= 0 ? __mmask64{0} : (__mmask64{1} << rem) - 1;
    return _mm512_maskz_loadu_epi8(m, w + offset);
  } else {
    (void)limit;
    return _mm512_loadu_si512(w + offset);
  }
}

// The float16 scales of two runs of eight blocks, widened: the blocks at a in lanes 0..7, those
// at b in lanes 8..15. A scale is the block's first 16-bit word (blocks are 18 or 34 bytes: an
// even number of words apart), so a two-register word permute (vpermt2w) picks those of the
// blocks whose first words lie in a 128-byte window: q4_0 eight blocks from [0, 128) of a run,
// q8_0 four blocks from each of [0, 128) and [136, 264). A blend puts the windows' lanes
// together. (Built in general registers from sixteen 2-byte loads instead, this took ~45
// instructions per group, a third of q4_0's.) kTail: a run has fewer blocks, its bytes ending at
// a + limit_a (b + limit_b); nothing past them is read and their lanes are zeros.
template <bool kQ4, bool kTail>
CT_AVX512_VNNI inline __m512 ScalesOfHalves(const unsigned char* a, index_t limit_a, const unsigned char* b, index_t limit_b) {
  __m512i h;
  if constexpr (kQ4) {
    alignas(64) static constexpr std::int16_t words[32] = {0, 9, 18, 27, 36, 45, 54, 63, 0, 9, 18, 27, 36, 45, 54, 63};
    const __m512i idx = _mm512_load_si512(words);
    const __m512i lo = _mm512_permutex2var_epi16(Load64<kTail>(a, 0, limit_a), idx, Load64<kTail>(a, 64, limit_a));
    const __m512i hi = _mm512_permutex2var_epi16(Load64<kTail>(b, 0, limit_b), idx, Load64<kTail>(b, 64, limit_b));
    h = _mm512_mask_blend_epi16(0xff00u, lo, hi);
  } else {
    alignas(64) static constexpr std::int16_t words[32] = {0, 17, 34, 51, 0, 17, 34, 51, 0, 17, 34, 51, 0, 17, 34, 51};
    const __m512i idx = _mm512_load_si512(words);
    const unsigned char* base[4] = {a, a, b, b};
    const index_t limit[4] = {limit_a, limit_a, limit_b, limit_b};
    __m512i p[4];
    for (int i = 0; i < 4; ++i) {
      const index_t at = 136 * (i % 2);
      p[i] = _mm512_permutex2var_epi16(Load64<kTail>(base[i], at, limit[i]), idx, Load64<kTail>(base[i], at + 64, limit[i]));
    }
    h = _mm512_mask_blend_epi16(0xff00u, _mm512_mask_blend_epi16(0x00f0u, p[0], p[1]), _mm512_mask_blend_epi16(0xf000u, p[2], p[3]));
  }
  return _mm512_cvtph_ps(_mm512_castsi512_si256(h));
}

// The scales of the sixteen blocks at w, block j in lane j (blocks 8..15 are the second run);
// kTail: fewer blocks, their bytes ending at w + limit.
template <bool kQ4, bool kTail = false>
CT_AVX512_VNNI inline __m512 Scales16(const unsigned char* w, index_t limit = 0) {
  constexpr index_t run = 8 * (kQ4 ? q4_0_bytes : q8_0_bytes);
  return ScalesOfHalves<kQ4, kTail>(w, limit, w + run, limit - run);
}

// lanes = muladd(d_w * d_x, float(isum), lanes) for the sixteen blocks at w (their partials in
// part, the activation scales at xd, the sums of 16 at sums). Integer bounds: a partial's four
// products at most 4 * 255 * 127; a block's sum at most 32 * 255 * 127 before the correction;
// 128 * (sum of 32 quants) < 2^20.
template <bool kQ4, bool kFused>
CT_AVX512_VNNI inline __m512 Finish16(const __m512i* part, const unsigned char* w, const float* xd, const std::int16_t* sums,
                                      __m512 lanes) {
  // sums[2j] + sums[2j + 1]: block j's activation quant sum, times 8 (q4_0) or 128 (q8_0).
  const __m512i offset = _mm512_madd_epi16(_mm512_loadu_si512(sums), _mm512_set1_epi16(kQ4 ? 8 : 128));
  const __m512i isum = _mm512_sub_epi32(kQ4 ? FoldQuads(part) : FoldSixteen(part), offset);
  const __m512 scale = _mm512_mul_ps(Scales16<kQ4>(w), _mm512_loadu_ps(xd));
  return MulAdd16<kFused>(scale, _mm512_cvtepi32_ps(isum), lanes);
}

// The partials of the first nb blocks at w (activation quants at xq) in `pairs` registers, blocks
// 2i and 2i + 1 in part[i] as PairPartials leaves them, zeros past nb; reads nothing past them.
template <bool kQ4>
CT_AVX512_VNNI inline void TailPartials(const unsigned char* w, const std::int8_t* xq, index_t nb, int pairs, __m512i* part) {
  constexpr int wbytes = kQ4 ? static_cast<int>(q4_0_bytes) : static_cast<int>(q8_0_bytes);
  for (int i = 0; i < pairs; ++i) {
    if (2 * i + 1 < nb) part[i] = PairPartials<kQ4>(w + 2 * i * wbytes, w + (2 * i + 1) * wbytes, xq + 64 * i);
    else if (2 * i < nb) part[i] = SinglePartials<kQ4>(w + 2 * i * wbytes, xq + 64 * i);
    else part[i] = _mm512_setzero_si512();
  }
}

// Partials16 + Finish16 for the row's last nb < 16 blocks, reading nothing past them (weights, activation
// quants, scales and sums); the lanes from nb on keep their value.
template <bool kQ4, bool kFused>
CT_AVX512_VNNI inline __m512 TailGroup(const unsigned char* w, const std::int8_t* xq, const float* xd, const std::int16_t* sums,
                                       index_t nb, __m512 lanes) {
  constexpr int wbytes = kQ4 ? static_cast<int>(q4_0_bytes) : static_cast<int>(q8_0_bytes);
  __m512i part[8];
  TailPartials<kQ4>(w, xq, nb, 8, part);
  const __mmask16 keep = static_cast<__mmask16>((1u << nb) - 1);
  const __m512i offset = _mm512_madd_epi16(_mm512_maskz_loadu_epi16(static_cast<__mmask32>((1ull << (2 * nb)) - 1), sums),
                                           _mm512_set1_epi16(kQ4 ? 8 : 128));
  const __m512i isum = _mm512_sub_epi32(FoldSixteen(part), offset);
  // The scales by Scales16's permutes, its loads masked to the group's bytes (sixteen 2-byte
  // stores read back as one vector stalled store forwarding, and rows of 24 blocks — K = 768,
  // the Llama bench's — spend a third of their blocks here).
  const __m512 scale = _mm512_mul_ps(Scales16<kQ4, true>(w, nb * wbytes), _mm512_maskz_loadu_ps(keep, xd));
  return _mm512_mask_mov_ps(lanes, keep, MulAdd16<kFused>(scale, _mm512_cvtepi32_ps(isum), lanes));
}

// TailGroup for two rows at once, whose tails of nb <= 8 blocks (at wa and wb) share one
// fold, one offset and one scale step: row a's blocks in lanes 0..7, row b's in 8..15, against
// the same activation blocks. Lane by lane the same integer sums and float steps as TailGroup
// on each row, so the same bits; la and lb keep their lanes from nb on. TailPairFinish is the
// part after the fold: `folded` holds the tails' integer dots before the activation offset.
template <bool kQ4, bool kFused>
CT_AVX512_VNNI inline void TailPairFinish(__m512i folded, const unsigned char* wa, const unsigned char* wb, const float* xd,
                                          const std::int16_t* sums, index_t nb, __m512& la, __m512& lb) {
  constexpr int wbytes = kQ4 ? static_cast<int>(q4_0_bytes) : static_cast<int>(q8_0_bytes);
  const __mmask8 keep8 = static_cast<__mmask8>((1u << nb) - 1);
  const __m256i tail_sums = _mm256_maskz_loadu_epi16(static_cast<__mmask16>((1u << (2 * nb)) - 1), sums);
  const __m512i offset = _mm512_madd_epi16(_mm512_broadcast_i64x4(tail_sums), _mm512_set1_epi16(kQ4 ? 8 : 128));
  const __m512i isum = _mm512_sub_epi32(folded, offset);
  const __m512 dx = _mm512_broadcast_f32x8(_mm256_maskz_loadu_ps(keep8, xd));
  const __m512 scale = _mm512_mul_ps(ScalesOfHalves<kQ4, true>(wa, nb * wbytes, wb, nb * wbytes), dx);
  const __m512 both = _mm512_shuffle_f32x4(la, lb, _MM_SHUFFLE(1, 0, 1, 0));  // la's lanes 0..7, lb's 0..7
  const __m512 res = MulAdd16<kFused>(scale, _mm512_cvtepi32_ps(isum), both);
  la = _mm512_mask_mov_ps(la, static_cast<__mmask16>(keep8), res);
  lb = _mm512_mask_mov_ps(lb, static_cast<__mmask16>(keep8), _mm512_shuffle_f32x4(res, res, _MM_SHUFFLE(3, 2, 3, 2)));
}
template <bool kQ4, bool kFused>
CT_AVX512_VNNI inline void TailPair(const unsigned char* wa, const unsigned char* wb, const std::int8_t* xq, const float* xd,
                                    const std::int16_t* sums, index_t nb, __m512& la, __m512& lb) {
  __m512i part[8];
  TailPartials<kQ4>(wa, xq, nb, 4, part);
  TailPartials<kQ4>(wb, xq, nb, 4, part + 4);
  TailPairFinish<kQ4, kFused>(FoldSixteen(part), wa, wb, xd, sums, nb, la, lb);
}

// TailPair for q4_0 tails of exactly 8 blocks (K = 768: Llama-100M's), from the quads of
// QuadPartials against the tail's split activation quants at xs (split_quants splits every
// whole run of four blocks): row a's two quads and row b's fold in one FoldQuads, whose lanes
// then hold row a's blocks 0..7 and row b's 0..7, as FoldSixteen leaves them in TailPair. The
// same integers and float steps, so the same bits. Two rows' pairs took about as long as the
// sixteen-block group before them (a stand-alone loop on the Zen 5 guest: 41 cycles a row of
// 24 blocks against 22-24 for a row of 16).
template <bool kFused>
CT_AVX512_VNNI inline void TailPairQuads(const unsigned char* wa, const unsigned char* wb, const std::int8_t* xs,
                                         const float* xd, const std::int16_t* sums, __m512& la, __m512& lb) {
  constexpr int wbytes = static_cast<int>(q4_0_bytes);
  const __m512i part[4] = {QuadPartials(wa, xs), QuadPartials(wa + 4 * wbytes, xs + 128), QuadPartials(wb, xs),
                           QuadPartials(wb + 4 * wbytes, xs + 128)};
  TailPairFinish<true, kFused>(FoldQuads(part), wa, wb, xd, sums, 8, la, lb);
}

// The weight prefetch (ahead_prefetch, qdot.hpp: into L1 at the tuning's weight_prefetch_bytes)
// goes with the row order of the row loops (row_runs: two runs of rows taken in turns). With
// one run, into L2 (prefetcht2) at 6 KiB was best on the Xeon guest (family 6 model 167), and
// prefetcht0 at 12 KiB slower than none for q4_0 (a single stream of L1 prefetches held the
// few L1 miss buffers). With two runs, L1 at L1d / 16 (3 KiB there) measured best, alternated
// with the one-run choice in three rounds, from DRAM at one thread: q4_0 4096² 0.76-0.77 ->
// 0.62-0.66 ms, 11008 x 4096 2.03 -> 1.72-1.80; q8_0 1.39 -> 1.31-1.34 and 3.48-3.59 ->
// 3.42-3.55; with the weights in L3 q8_0 0.64-0.65 -> 0.61-0.62 ms, q4_0 unchanged.
// (prefetcht2 at 3 KiB: q4_0 from DRAM as fast, from L3 0.46-0.49 ms against 0.42-0.47.) The
// helper is always inlined: as an ordinary inline function here GCC 12 found it free of side
// effects and deleted every call, so these kernels ran without it until the twelfth session.

// One weight row against x, software pipelined: group g + 16's loads and vpdpbusd are issued
// before group g's fold and multiply-add, so the out-of-order window sees independent work next
// to the fold's chain. (Two adjacent rows side by side instead measured 1.7-2.3x slower on a Zen
// 5 guest, gemv q8_0 11008x4096 2.8-3.9 ms against 1.2-1.7, though two workers on the core's two
// hardware threads run 1.8x one; two rows far apart is DotRowPair below.)
template <bool kQ4, bool kFused>
CT_AVX512_VNNI inline float DotRow(const unsigned char* w, const qactivation& x, index_t blocks) {
  constexpr index_t wbytes = kQ4 ? q4_0_bytes : q8_0_bytes;
  constexpr int kRegs = kQ4 ? 4 : 8;
  // A group's quants sit at the same offset in both layouts.
  const std::int8_t* const xq = kQ4 ? x.q_split : x.q;
  __m512 lanes = _mm512_setzero_ps();
  index_t g = 0;
  if (blocks >= 16) {
    __m512i cur[8], nxt[8];
    Partials16<kQ4>(w, xq, cur);
    for (; g + 16 <= blocks; g += 16) {
      const bool more = g + 32 <= blocks;
      ahead_prefetch(w + g * wbytes, 16 * wbytes, x.prefetch_bytes);
      if (more) Partials16<kQ4>(w + (g + 16) * wbytes, xq + (g + 16) * 32, nxt);
      lanes = Finish16<kQ4, kFused>(cur, w + g * wbytes, x.d + g, x.sums + 2 * g, lanes);
      if (more)
        for (int i = 0; i < kRegs; ++i) cur[i] = nxt[i];
    }
  }
  if (g < blocks) lanes = TailGroup<kQ4, kFused>(w + g * wbytes, x.q + g * 32, x.d + g, x.sums + 2 * g, blocks - g, lanes);
  return FoldLanes(lanes);
}

template <bool kQ4, bool kFused>
CT_AVX512_VNNI float QDot32(const unsigned char* w, const qactivation& x, index_t blocks) {
  return DotRow<kQ4, kFused>(w, x, blocks);
}

// DotRow on two rows at once, far apart (one from each of row_runs' runs), their groups of 16
// taken in turns: row a's group g, row b's group g, row a's group g + 16, ... — the weights
// then come from memory as two streams switched every 288 (q4_0) or 544 (q8_0) bytes. Each
// row's groups, tail and fold are DotRow's, in its order (same bits).
template <bool kQ4, bool kFused>
CT_AVX512_VNNI inline void DotRowPair(const unsigned char* wa, const unsigned char* wb, const qactivation& x, index_t blocks,
                                      float& ya, float& yb) {
  constexpr index_t wbytes = kQ4 ? q4_0_bytes : q8_0_bytes;
  const std::int8_t* const xq = kQ4 ? x.q_split : x.q;
  __m512 la = _mm512_setzero_ps(), lb = _mm512_setzero_ps();
  index_t g = 0;
  if (blocks >= 16) {
    __m512i pa[8], pb[8];
    Partials16<kQ4>(wa, xq, pa);
    for (; g + 16 <= blocks; g += 16) {
      const bool more = g + 32 <= blocks;
      ahead_prefetch(wa + g * wbytes, 16 * wbytes, x.prefetch_bytes);
      Partials16<kQ4>(wb + g * wbytes, xq + g * 32, pb);
      la = Finish16<kQ4, kFused>(pa, wa + g * wbytes, x.d + g, x.sums + 2 * g, la);
      ahead_prefetch(wb + g * wbytes, 16 * wbytes, x.prefetch_bytes);
      if (more) Partials16<kQ4>(wa + (g + 16) * wbytes, xq + (g + 16) * 32, pa);
      lb = Finish16<kQ4, kFused>(pb, wb + g * wbytes, x.d + g, x.sums + 2 * g, lb);
    }
  }
  const index_t nb = blocks - g;
  if (nb > 0 && nb <= 8) {
    TailPair<kQ4, kFused>(wa + g * wbytes, wb + g * wbytes, x.q + g * 32, x.d + g, x.sums + 2 * g, nb, la, lb);
  } else if (nb > 0) {
    la = TailGroup<kQ4, kFused>(wa + g * wbytes, x.q + g * 32, x.d + g, x.sums + 2 * g, nb, la);
    lb = TailGroup<kQ4, kFused>(wb + g * wbytes, x.q + g * 32, x.d + g, x.sums + 2 * g, nb, lb);
  }
  ya = FoldLanes(la);
  yb = FoldLanes(lb);
}

// Rows of 16 to 31 blocks (K = 512..992: a small model's attention and feed-forward inputs)
// hold one whole group, so DotRow's pipeline has nothing to overlap; here it runs across rows
// instead: row r + 1's group loads and vpdpbusd are issued before row r's fold, tail and final
// sum. The same steps per row as DotRow (same bits).
//
// A tail of at most 8 blocks (K = 544..768: Llama-100M's 768 has 24 blocks) costs about as much
// as the whole group before it, though it fills half a register: there rows go in pairs, each
// pair's tails through one TailPair (same bits): 1024 rows of 24 blocks in L2 on a Xeon guest,
// q4_0 24.4-24.9 -> 20.8-21.1 us, q8_0 30.5-32.0 -> 27.2-27.6 us (docs/encoded.md).
template <bool kQ4, bool kFused>
CT_AVX512_VNNI void ShortRows(const unsigned char* w, std::size_t row_bytes, index_t rows, const qactivation& x, index_t blocks,
                              float* y, index_t y_stride) {
  constexpr index_t wbytes = kQ4 ? q4_0_bytes : q8_0_bytes;
  constexpr int kRegs = kQ4 ? 4 : 8;
  const std::int8_t* const xq = kQ4 ? x.q_split : x.q;
  // Rows in row_runs' order (with two runs, pairs pair row i with row h + i): the Llama
  // bench's generation (K = 768), alternated in three rounds, q8_0 3.97-4.62 -> 3.85-4.57 ms,
  // q4_0 2.71-2.97 -> 2.70-2.89.
  const row_runs runs(rows);
  const auto at = [&](index_t j) { return w + static_cast<std::size_t>(runs.row(j)) * row_bytes; };
  __m512i cur[8], nxt[8];
  Partials16<kQ4>(at(0), xq, cur);
  index_t r = 0;
  if (blocks > 16 && blocks <= 24) {
    for (; r + 1 < rows; r += 2) {
      const unsigned char* ra = at(r);
      const unsigned char* rb = at(r + 1);
      ahead_prefetch(ra, 16 * wbytes, x.prefetch_bytes);
      ahead_prefetch(rb, 16 * wbytes, x.prefetch_bytes);
      Partials16<kQ4>(rb, xq, nxt);
      __m512 la = Finish16<kQ4, kFused>(cur, ra, x.d, x.sums, _mm512_setzero_ps());
      if (r + 2 < rows) Partials16<kQ4>(at(r + 2), xq, cur);  // the next pair's first row
      __m512 lb = Finish16<kQ4, kFused>(nxt, rb, x.d, x.sums, _mm512_setzero_ps());
      if (kQ4 && blocks == 24)
        TailPairQuads<kFused>(ra + 16 * wbytes, rb + 16 * wbytes, xq + 16 * 32, x.d + 16, x.sums + 32, la, lb);
      else
        TailPair<kQ4, kFused>(ra + 16 * wbytes, rb + 16 * wbytes, x.q + 16 * 32, x.d + 16, x.sums + 32, blocks - 16, la, lb);
      y[runs.row(r) * y_stride] = FoldLanes(la);
      y[runs.row(r + 1) * y_stride] = FoldLanes(lb);
    }
  }
  for (; r < rows; ++r) {
    const unsigned char* row = at(r);
    const bool more = r + 1 < rows;
    ahead_prefetch(row, 16 * wbytes, x.prefetch_bytes);
    if (more) Partials16<kQ4>(at(r + 1), xq, nxt);
    __m512 lanes = Finish16<kQ4, kFused>(cur, row, x.d, x.sums, _mm512_setzero_ps());
    if (blocks > 16) lanes = TailGroup<kQ4, kFused>(row + 16 * wbytes, x.q + 16 * 32, x.d + 16, x.sums + 32, blocks - 16, lanes);
    y[runs.row(r) * y_stride] = FoldLanes(lanes);
    if (more)
      for (int i = 0; i < kRegs; ++i) cur[i] = nxt[i];
  }
}

// The rows at w in row_runs' order, y[r * y_stride] = kRow's dot of row r (same bits in any
// order), each row after prefetching the next row of its run into L2 in a burst
// (qactivation::burst_bytes); with two runs each row by kRowAhead (the kernel that prefetches
// its run's weights at the tuning's distance, where it differs from kRow). The K formats' row
// loop (qdot_k_rows_avx512.cpp, BatchRowsIn) takes its rows in the same order.
template <float (*kRow)(const unsigned char*, const qactivation&, index_t),
          float (*kRowAhead)(const unsigned char*, const qactivation&, index_t)>
CT_AVX512_VNNI void RowsInRuns(const unsigned char* w, std::size_t row_bytes, index_t rows, const qactivation& x, index_t blocks,
                               float* y, index_t y_stride) {
  const row_runs runs(rows);
  for (index_t j = 0; j < rows; ++j) {
    const index_t r = runs.row(j);
    const unsigned char* row = w + static_cast<std::size_t>(r) * row_bytes;
    if (r + 1 < runs.run_end(r)) burst_prefetch(row + row_bytes, row_bytes, x.burst_bytes);
    y[r * y_stride] = runs.two() ? kRowAhead(row, x, blocks) : kRow(row, x, blocks);
  }
}

// Rows of 16 to 31 blocks go to ShortRows. Rows of 32 blocks or more: from 64 rows on, a row of
// each of row_runs' two runs at once (DotRowPair: the two streams switched group by group
// rather than row by row); fewer rows, or rows of under 16 blocks, one at a time in row_runs'
// order (RowsInRuns). Each row is DotRow's, whatever the order (same bits). On the Zen 5 guest
// (family 26 model 2), from DRAM at one thread, alternated with the row-by-row turns in four
// rounds (nineteenth session; bound fractions of the same runs): q8_0 4096² 0.73-0.78 ->
// 0.78-0.86, 11008 x 4096 0.75-0.78 -> 0.78-0.93; q4_0 0.70-0.96 -> 0.73-0.86 and 0.72-0.81
// -> 0.70-0.78 (within the noise); from L3 q8_0 4096² 0.35-0.59 -> 0.34-0.36 ms.
// Before, row by row in turns, on the Xeon guest (family 6 model 167),
// from DRAM, one thread, alternated with the one-stream order in three rounds: q8_0 4096²
// 1.48-1.51 -> 1.42-1.43 ms, 11008 x 4096 3.64-3.67 -> 3.48-3.50; q4_0 0.79-0.81 -> 0.76 and
// 2.08-2.10 -> 2.00-2.05; two workers 2-5% faster; no change with the weights in L3 or for the
// Llama bench's generation (prefetch then into L2 at 6 KiB; the weight prefetch's comment
// above DotRow has the L1 one's numbers). Three or four runs measured no better than two.
template <bool kQ4, bool kFused>
CT_AVX512_VNNI void QDot32Rows(const unsigned char* w, std::size_t row_bytes, index_t rows, const qactivation& x, index_t blocks,
                               float* y, index_t y_stride) {
  if (blocks >= 16 && blocks < 32 && rows > 1) {
    ShortRows<kQ4, kFused>(w, row_bytes, rows, x, blocks, y, y_stride);
    return;
  }
  const row_runs runs(rows);
  if (!runs.two() || blocks < 16) {
    RowsInRuns<&QDot32<kQ4, kFused>, &QDot32<kQ4, kFused>>(w, row_bytes, rows, x, blocks, y, y_stride);
    return;
  }
  index_t i = 0;
  for (; runs.h + i < rows; ++i) {
    const unsigned char* ra = w + static_cast<std::size_t>(i) * row_bytes;
    const unsigned char* rb = w + static_cast<std::size_t>(runs.h + i) * row_bytes;
    if (i + 1 < runs.h) burst_prefetch(ra + row_bytes, row_bytes, x.burst_bytes);
    if (runs.h + i + 1 < rows) burst_prefetch(rb + row_bytes, row_bytes, x.burst_bytes);
    DotRowPair<kQ4, kFused>(ra, rb, x, blocks, y[i * y_stride], y[(runs.h + i) * y_stride]);
  }
  for (; i < runs.h; ++i) y[i * y_stride] = QDot32<kQ4, kFused>(w + static_cast<std::size_t>(i) * row_bytes, x, blocks);
}

}  // namespace

qdot_fn avx512_qdot(qformat f, bool fused) {
  if (!cpu_has_vnni()) return nullptr;
  switch (f) {
    case qformat::q8_0: return fused ? &QDot32<false, true> : &QDot32<false, false>;
    case qformat::q4_0: return fused ? &QDot32<true, true> : &QDot32<true, false>;
    default: return k_qdot(f, fused);
  }
}

qdot_rows_fn avx512_qdot_rows(qformat f, bool fused) {
  if (!cpu_has_vnni()) return nullptr;
  switch (f) {
    case qformat::q8_0: return fused ? &QDot32Rows<false, true> : &QDot32Rows<false, false>;
    case qformat::q4_0: return fused ? &QDot32Rows<true, true> : &QDot32Rows<true, false>;
    default: return k_qdot_rows(f, fused);
  }
}

#else

qdot_fn avx512_qdot(qformat, bool) { return nullptr; }
qdot_rows_fn avx512_qdot_rows(qformat, bool) { return nullptr; }

#endif

}  // namespace ct::detail::encoded
