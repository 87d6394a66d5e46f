// src/matmul/matmul_simd.cpp — the SIMD matrix-matrix kernels and B's packing (Google
// Highway, compiled once per x86 target and dispatched at run time to the best one this CPU
// supports); the matrix-vector ones are in vector_simd.cpp.
//
// GEMM is BLIS-style: B is packed into panels NR columns wide (once, before scheduling, by
// gemm_pack_b — or read in place when it is small and row-contiguous), each callback copies
// its own MC x KC blocks of A into micro-panels of MR rows interleaved by k (or reads a narrow
// product's A in place), each micro-panel passes over a KC x NC block of B panels before the
// next one starts, and a register-blocked MR x NR micro-kernel (broadcast one A value,
// two B vectors, 2*MR accumulators) sums k in chunks of gemm_k_chunk, each from zero, adding
// each chunk's sums to the destination in the element type. Chunk boundaries are fixed by k
// alone, so every element is the same sum whatever the blocking, the tile, the edge handling
// or the rows a callback got. See src/matmul/kernels.hpp for the orders each kernel promises.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/matmul/matmul_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

#include "ct/core/float16.hpp"
#include "src/matmul/matmul_common.hpp"
#include "src/matmul/simd_common-inl.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

HWY_BEFORE_NAMESPACE();
namespace ct::detail::mm {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The cache blocking for budgets b (ct/core/tuning.hpp). KC, a multiple of gemm_k_chunk (at
// least one chunk, so chunk boundaries never depend on the blocking): an MR x KC micro-panel of
// A within a_panel_bytes (the micro-kernel re-reads it for every B panel of a block, from L1),
// and no deeper than the depth that moves the fewest bytes from memory: each block of k reads
// and writes C once (2 * size / KC bytes per multiply-add) and each block of A rows reads B
// once (size / MC), with MC * KC * size = a_block_bytes, a sum smallest at
// KC = sqrt(2 * a_block_bytes / size). An MC x KC block of A within a_block_bytes (re-read from
// L2 for every block of B panels), MC a multiple of MR; a KC x NC block of B panels within
// b_block_bytes (re-read from L2 by every micro-panel of the A block), NC a multiple of NR.
inline index_t whole_multiples(index_t v, index_t unit) { return std::max<index_t>(1, v / unit) * unit; }  // at least one
inline index_t traffic_depth(index_t a_block_bytes, index_t size) {  // floor(sqrt(2 a / size)), at least 1
  const index_t target = 2 * a_block_bytes / size;
  index_t k = std::max<index_t>(1, static_cast<index_t>(std::sqrt(static_cast<double>(target))));
  while (k > 1 && k * k > target) --k;
  while ((k + 1) * (k + 1) <= target) ++k;
  return k;
}
template <class T>
struct blocking {
  static constexpr index_t size = static_cast<index_t>(sizeof(T));
  index_t kc, mc, nc;
  explicit blocking(const mm_budgets& b)
      : kc(whole_multiples(std::min(b.a_panel_bytes / (geom<T>::MR * size), traffic_depth(b.a_block_bytes, size)),
                           gemm_k_chunk)),
        mc(whole_multiples(b.a_block_bytes / (kc * size), geom<T>::MR)),
        nc(whole_multiples(b.b_block_bytes / (kc * size), geom<T>::NR)) {}
};

// ---------------------------------------------------------------- GEMM micro-kernel

template <class T>
using micro_fn = void (*)(index_t kc, const T* a, index_t lda, const T* b, index_t brs, T* c, index_t ldc,
                          index_t nvalid, bool accumulate, const T* b_next);

// C[MR x NR] (= or +=) A_panel[MR x kc] * B_panel[kc x NR], k in chunks of gemm_k_chunk
// (kc is a multiple of it but for the last block of k): each chunk is summed from zero in the
// registers and then stored (the first chunk of the product) or added to C (kernels.hpp's
// order). a: with kPanelA a packed micro-panel, element (i, p) at a[p * G::MR + i] (the
// target's full height, also for the last panel's fewer rows); otherwise row i at a + i * lda,
// unit stride along k. b: NR contiguous values per k, consecutive k brs apart; c: row stride
// ldc, unit column stride, only the first nvalid columns exist. accumulate: this block is not
// the product's first (C holds earlier chunks). b_next: where the next call's B data starts;
// one line of it per step of k is prefetched (an address only: never read, may lie past the
// end of any buffer).
template <class T, index_t MR, bool kFused, bool kPanelA>
HWY_NOINLINE void micro(index_t kc, const T* HWY_RESTRICT a, index_t lda, const T* HWY_RESTRICT b, index_t brs,
                        T* HWY_RESTRICT c, index_t ldc, index_t nvalid, bool accumulate, const T* b_next) {
  using G = geom<T>;
  const typename G::D d;
  constexpr index_t L = G::L;
  using V = decltype(hn::Zero(d));
  V c0[MR], c1[MR];
  const bool full = nvalid == 2 * L;
  const size_t n0 = static_cast<size_t>(std::min(nvalid, L)), n1 = static_cast<size_t>(nvalid > L ? nvalid - L : 0);
  const auto m0 = hn::FirstN(d, n0);
  const auto m1 = hn::FirstN(d, n1);
  std::uintptr_t next_line = reinterpret_cast<std::uintptr_t>(b_next);  // integer: may pass the end
  // An A read in place has MR rows lda apart. Naming each row's address costs a register per
  // row, more than x86 has beside the loop's own (the compiler spilled them, three reloads
  // per step of k); instead one base per three rows, each row at base + 0, lda or 2 * lda,
  // which an address's scaled index expresses with a single lda register.
  constexpr index_t kBases = kPanelA ? 1 : (MR + 2) / 3;
  const T* rows[kBases];
#pragma GCC unroll 16
  for (index_t g = 0; g < kBases; ++g) rows[g] = a + 3 * g * lda;
  // The C tile was last touched a whole sweep of C ago (the previous block of k): in a large
  // product it is in DRAM by now. Fetching it while the k loop runs (thousands of cycles)
  // hides the misses that would otherwise stall the stores and adds at the end.
#pragma GCC unroll 16
  for (index_t i = 0; i < MR; ++i) {
    hwy::Prefetch(c + i * ldc);
    hwy::Prefetch(c + i * ldc + (nvalid - 1));
  }
  for (index_t q = 0; q < kc; q += gemm_k_chunk) {
    const index_t steps = std::min(gemm_k_chunk, kc - q);
#pragma GCC unroll 16
    for (index_t i = 0; i < MR; ++i) c0[i] = c1[i] = hn::Zero(d);
    for (index_t p = 0; p < steps; ++p) {
      // One line per step of the data the next micro-kernel call starts on (b_next: see
      // gemm_rows_t), into L2: a small callback's first pass over a B panel would otherwise
      // wait on memory for every line of it.
      __builtin_prefetch(reinterpret_cast<const void*>(next_line), 0, 2);
      next_line += 64;
      const V b0 = hn::LoadU(d, b);
      const V b1 = hn::LoadU(d, b + L);
#pragma GCC unroll 16
      for (index_t i = 0; i < MR; ++i) {
        const V ai = hn::Set(d, kPanelA ? a[i] : rows[i / 3][(i % 3) * lda]);
        c0[i] = madd<kFused>(ai, b0, c0[i]);
        c1[i] = madd<kFused>(ai, b1, c1[i]);
      }
      if constexpr (kPanelA) {
        a += G::MR;
      } else {
#pragma GCC unroll 16
        for (index_t g = 0; g < kBases; ++g) ++rows[g];
      }
      b += brs;
    }
    const bool add = accumulate || q > 0;
    if (full) {
#pragma GCC unroll 16
      for (index_t i = 0; i < MR; ++i) {
        if (add) {
          c0[i] = hn::Add(hn::LoadU(d, c + i * ldc), c0[i]);
          c1[i] = hn::Add(hn::LoadU(d, c + i * ldc + L), c1[i]);
        }
        hn::StoreU(c0[i], d, c + i * ldc);
        hn::StoreU(c1[i], d, c + i * ldc + L);
      }
    } else {
#pragma GCC unroll 16
      for (index_t i = 0; i < MR; ++i) {
        if (add) {
          c0[i] = hn::Add(LoadFirst(d, c + i * ldc, n0), c0[i]);
          c1[i] = hn::Add(LoadFirst(d, c + i * ldc + L, n1), c1[i]);
        }
        hn::BlendedStore(c0[i], m0, d, c + i * ldc);
        hn::BlendedStore(c1[i], m1, d, c + i * ldc + L);
      }
    }
  }
}

// micro<T, mr> for mr = 1..MR, indexed by mr - 1: the last micro-panel of a block may have
// fewer rows, and runs the same per-element steps.
template <class T, bool kFused, bool kPanelA, std::size_t... I>
constexpr std::array<micro_fn<T>, sizeof...(I)> micro_table(std::index_sequence<I...>) {
  return {&micro<T, static_cast<index_t>(I) + 1, kFused, kPanelA>...};
}
template <class T, bool kFused, bool kPanelA>
inline constexpr auto micro_kernels =
    micro_table<T, kFused, kPanelA>(std::make_index_sequence<static_cast<std::size_t>(kMR)>());

// Rows [0, G) x steps [0, G) of a row-contiguous A (row stride ars), G = 16 / sizeof(T), into
// a micro-panel: step p's G values at out + p * MR. A 4x4 (2x2) transpose in 128-bit vectors.
#if HWY_TARGET != HWY_SCALAR
template <class T>
HWY_INLINE void transpose_into_panel(const T* HWY_RESTRICT a, index_t ars, T* HWY_RESTRICT out) {
  constexpr index_t MR = geom<T>::MR;
  const hn::Full128<T> d;
  if constexpr (sizeof(T) == 4) {
    const auto r0 = hn::LoadU(d, a), r1 = hn::LoadU(d, a + ars);
    const auto r2 = hn::LoadU(d, a + 2 * ars), r3 = hn::LoadU(d, a + 3 * ars);
    const auto t0 = hn::InterleaveLower(d, r0, r1), t1 = hn::InterleaveLower(d, r2, r3);
    const auto t2 = hn::InterleaveUpper(d, r0, r1), t3 = hn::InterleaveUpper(d, r2, r3);
    hn::StoreU(hn::ConcatLowerLower(d, t1, t0), d, out);
    hn::StoreU(hn::ConcatUpperUpper(d, t1, t0), d, out + MR);
    hn::StoreU(hn::ConcatLowerLower(d, t3, t2), d, out + 2 * MR);
    hn::StoreU(hn::ConcatUpperUpper(d, t3, t2), d, out + 3 * MR);
  } else {
    static_assert(sizeof(T) == 8);
    const auto r0 = hn::LoadU(d, a), r1 = hn::LoadU(d, a + ars);
    hn::StoreU(hn::InterleaveLower(d, r0, r1), d, out);
    hn::StoreU(hn::InterleaveUpper(d, r0, r1), d, out + MR);
  }
}
#endif

// A[mc x kc] -> micro-panels of MR rows, panel r at out + r * MR * kc, its element (i, p) at
// p * MR + i: the MR values one step of k broadcasts are side by side (one pointer, one or two
// lines), the layout BLIS packs A in. Rows past the last panel's mr are never read.
template <class T>
void pack_a_panels(const T* a, index_t ars, index_t acs, index_t mc, index_t kc, T* HWY_RESTRICT out) {
  constexpr index_t MR = geom<T>::MR, G = 16 / static_cast<index_t>(sizeof(T));
  for (index_t ir = 0; ir < mc; ir += MR) {
    const index_t mr = std::min(MR, mc - ir);
    T* panel = out + ir * kc;
    const T* src = a + ir * ars;
    index_t i = 0;
#if HWY_TARGET != HWY_SCALAR
    if (acs == 1) {
      const index_t pv = kc / G * G;
      // The next panel's rows, one line each per line of this one: A's rows are short runs
      // (kc values) a row stride apart, too short for the hardware prefetcher to follow.
      constexpr index_t per_line = 64 / static_cast<index_t>(sizeof(T));
      const bool next = ir + MR < mc;
      for (; i + G <= mr; i += G) {
        for (index_t p = 0; p < pv; p += G) {
          if (next && p % per_line == 0)
            for (index_t r = i; r < i + G; ++r) hwy::Prefetch(src + (MR + r) * ars + p);
          transpose_into_panel(src + i * ars + p, ars, panel + p * MR + i);
        }
        for (index_t p = pv; p < kc; ++p)
          for (index_t r = i; r < i + G; ++r) panel[p * MR + r] = src[r * ars + p];
      }
    }
#else
    (void)G;
#endif
    for (; i < mr; ++i)
      for (index_t p = 0; p < kc; ++p) panel[p * MR + i] = src[i * ars + p * acs];
  }
}

// A B whose columns are contiguous (brs == 1: B is the transpose of a row-major W, as in
// x·Wᵀ): per panel, a tile of NR columns x L steps of k is read as NR contiguous vectors (one
// line each), stored to a small buffer and transposed out of L1. The element loop over strided
// columns measured ~1.2 ns an element (a 4096x4096 Wᵀ: 20 ms of a 128-row product's 53).
template <class T>
void pack_b_columns(index_t k, index_t n, const T* b, index_t bcs, T* HWY_RESTRICT out) {
  using G = geom<T>;
  constexpr index_t NR = G::NR, L = G::L;
  const typename G::D d;
  alignas(64) T tile[NR * L];
  for (index_t jr = 0; jr < n; jr += NR) {
    const index_t nr = std::min(NR, n - jr);
    T* panel = out + (jr / NR) * k * NR;
    index_t p = 0;
    for (; p + L <= k; p += L) {
      for (index_t j = 0; j < nr; ++j) hn::Store(hn::LoadU(d, b + (jr + j) * bcs + p), d, tile + j * L);
      for (index_t j = nr; j < NR; ++j) hn::Store(hn::Zero(d), d, tile + j * L);
      T* dst = panel + p * NR;
      for (index_t q = 0; q < L; ++q)
        for (index_t j = 0; j < NR; ++j) dst[q * NR + j] = tile[j * L + q];
    }
    for (; p < k; ++p) {
      T* dst = panel + p * NR;
      for (index_t j = 0; j < nr; ++j) dst[j] = b[(jr + j) * bcs + p];
      for (index_t j = nr; j < NR; ++j) dst[j] = T(0);
    }
  }
}

// B[k x n] -> panels of NR columns (zero padded), each k rows of NR values; panel q starts
// at out + q * k * NR. A row-contiguous B is cut a block of rows at a time, each row read
// start to end across every panel, which the hardware prefetcher follows; panel by panel, with
// rows a row stride apart, every line was a separate miss (sgemm 1024³'s B: 0.66 ms from L3
// or memory, against 0.36 by row blocks, on a Xeon guest). rows_budget: the bytes a block's
// rows may take (they are re-read from L2 for every panel): at most 8 rows, at least 1.
template <class T>
void pack_b_t(index_t k, index_t n, const T* b, index_t brs, index_t bcs, T* HWY_RESTRICT out, index_t rows_budget,
              bool stream = false) {
  constexpr index_t NR = geom<T>::NR, L = geom<T>::L;
  if (brs == 1 && bcs != 1) return pack_b_columns(k, n, b, bcs, out);
  if (bcs == 1) {
    const typename geom<T>::D d;
    const index_t full = n / NR * NR;
    const index_t row_bytes = n * static_cast<index_t>(sizeof(T));
    const index_t rb = std::clamp<index_t>(rows_budget / std::max<index_t>(row_bytes, 1), 1, 8);
    for (index_t p0 = 0; p0 < k; p0 += rb) {
      const index_t pe = std::min(k, p0 + rb);
      // The rows' full panels, written by put (an ordinary or a streaming store; the choice is
      // made once, outside the loop). dst holds NR values: whole aligned vectors.
      const auto full_panels = [&](auto put) HWY_ATTR {
        for (index_t jr = 0; jr < full; jr += NR) {
          T* dst = out + (jr / NR) * k * NR + p0 * NR;
          for (index_t p = p0; p < pe; ++p, dst += NR) {
            const T* src = b + p * brs + jr;
            put(hn::LoadU(d, src), dst);
            put(hn::LoadU(d, src + L), dst + L);
          }
        }
      };
      if (stream) full_panels([&](auto v, T* at) HWY_ATTR { hn::Stream(v, d, at); });
      else full_panels([&](auto v, T* at) HWY_ATTR { hn::Store(v, d, at); });
      if (full < n) {  // the last panel's nr < NR columns, zero padded
        const index_t nr = n - full;
        T* dst = out + (full / NR) * k * NR + p0 * NR;
        for (index_t p = p0; p < pe; ++p, dst += NR) {
          std::memcpy(dst, b + p * brs + full, static_cast<std::size_t>(nr) * sizeof(T));
          for (index_t j = nr; j < NR; ++j) dst[j] = T(0);
        }
      }
    }
    if (stream) hwy::FlushStream();  // the streamed lines are in memory before any callback reads them
    return;
  }
  for (index_t jr = 0; jr < n; jr += NR) {
    const index_t nr = std::min(NR, n - jr);
    T* panel = out + (jr / NR) * k * NR;
    for (index_t p = 0; p < k; ++p) {
      const T* src = b + p * brs + jr * bcs;
      T* dst = panel + p * NR;
      for (index_t j = 0; j < nr; ++j) dst[j] = src[j * bcs];
      for (index_t j = nr; j < NR; ++j) dst[j] = T(0);
    }
  }
}

// pack_b_t of a 16-bit float B widened to float32: each row of B is widened once into a row
// buffer (by the convert kernel when contiguous), then cut into the panels.
void pack_b_widened(index_t k, index_t n, const std::uint16_t* b, bool bf16, index_t brs, index_t bcs,
                    void (*widen)(const std::uint16_t*, float*, index_t), float* HWY_RESTRICT out) {
  using G = geom<float>;
  constexpr index_t NR = G::NR, L = G::L;
  const typename G::D d;
  scratch<float> row(n);
  float* r = row.get();
  for (index_t p = 0; p < k; ++p) {
    const std::uint16_t* src = b + p * brs;
    if (bcs == 1) {
      widen(src, r, n);
    } else {
      for (index_t j = 0; j < n; ++j) r[j] = bf16 ? bf16_bits_to_float(src[j * bcs]) : f16_bits_to_float(src[j * bcs]);
    }
    index_t jr = 0;
    for (; jr + NR <= n; jr += NR) {
      float* dst = out + (jr / NR) * k * NR + p * NR;
      hn::Store(hn::LoadU(d, r + jr), d, dst);
      hn::Store(hn::LoadU(d, r + jr + L), d, dst + L);
    }
    if (jr < n) {
      float* dst = out + (jr / NR) * k * NR + p * NR;
      for (index_t j = 0; j < NR; ++j) dst[j] = jr + j < n ? r[jr + j] : 0.0f;
    }
  }
}

template <class T>
index_t packed_b_size_t(index_t k, index_t n, index_t brs, index_t bcs, const mm_budgets& budgets) {
  (void)brs;
  using G = geom<T>;
  // A small row-contiguous B is read in place (no shared packed copy): it stays in L2.
  if (bcs == 1 && k * n * static_cast<index_t>(sizeof(T)) <= budgets.direct_b_bytes) return 0;
  return (n + G::NR - 1) / G::NR * G::NR * k;
}

// Walks a gemm_args::ahead: each micro-kernel call of a B read in place gets the address of
// the next kc lines (it prefetches one per step of k). A span's last call may run past its end
// (an address only); the next call starts the next span at its first line. nullptr once all
// are handed out.
class ahead_cursor {
 public:
  explicit ahead_cursor(const ahead_spans& s) : s_(s) {}
  const char* next(index_t kc) {
    if (span_ >= s_.count) return nullptr;
    // an integer: the address is only prefetched, and may lie outside any object
    const std::uintptr_t at = reinterpret_cast<std::uintptr_t>(s_.start[span_]) + static_cast<std::uintptr_t>(line_ * 64);
    line_ += kc;
    if (line_ >= s_.lines[span_]) {
      ++span_;
      line_ = 0;
    }
    return reinterpret_cast<const char*>(at);
  }

 private:
  const ahead_spans& s_;
  int span_ = 0;
  index_t line_ = 0;
};

template <class T, bool kFused>
void gemm_rows_t(const gemm_args<T>& g, const T* packed_b, index_t r0, index_t r1, const mm_budgets& budgets) {
  using G = geom<T>;
  constexpr index_t MR = G::MR, NR = G::NR;
  const blocking<T> bl(budgets);
  const index_t KC = bl.kc, MC = bl.mc, NC = bl.nc;
  if (g.k == 0) {  // empty sums
    for (index_t i = r0; i < r1; ++i)
      for (index_t j = 0; j < g.n; ++j) g.c[i * g.crs + j * g.ccs] = T(0);
    return;
  }
  // A B that was not packed before scheduling is read in place; one that cannot be (not
  // row-contiguous) gets a private packed copy — only reachable if the caller skipped
  // gemm_pack_b, kept for robustness.
  std::unique_ptr<scratch<T>> own_b;
  if (packed_b == nullptr && g.bcs != 1) {
    own_b = std::make_unique<scratch<T>>((g.n + NR - 1) / NR * NR * g.k);
    pack_b_t(g.k, g.n, g.b, g.brs, g.bcs, own_b->get(), budgets.b_block_bytes);
    packed_b = own_b->get();
  }
  const bool direct = packed_b == nullptr;
  const index_t n_direct = direct ? g.n / NR * NR : 0;  // columns read in place
  const index_t kc_max = std::min(KC, g.k);
  const index_t mc_max = std::min(MC, r1 - r0);
  // Copying an A block costs about as much as a few micro-kernel steps per element against
  // 2n flops of use: worth it for wide products (and needed for strided A), not for narrow
  // ones, which read a row-contiguous A in place.
  const bool direct_a = g.acs == 1 && g.n <= G::direct_a_max_n;
  scratch<T> apack(direct_a ? 0 : (mc_max + MR - 1) / MR * MR * kc_max);
  scratch<T> bedge(direct ? kc_max * NR : 0);
  alignas(64) T tile[MR * NR];
  const auto& kernels = direct_a ? micro_kernels<T, kFused, false> : micro_kernels<T, kFused, true>;
  ahead_cursor ahead(g.ahead);

  for (index_t pc = 0; pc < g.k; pc += KC) {
    const index_t kc = std::min(KC, g.k - pc);
    const bool accumulate = pc > 0;
    if (direct && n_direct < g.n) {  // the partial last panel, zero padded
      const index_t nr = g.n - n_direct;
      for (index_t p = 0; p < kc; ++p) {
        T* dst = bedge.get() + p * NR;
        const T* src = g.b + (pc + p) * g.brs + n_direct;
        for (index_t j = 0; j < NR; ++j) dst[j] = j < nr ? src[j] : T(0);
      }
    }
    for (index_t ic = r0; ic < r1; ic += MC) {
      const index_t mc = std::min(MC, r1 - ic);
      if (!direct_a) pack_a_panels(g.a + ic * g.ars + pc * g.acs, g.ars, g.acs, mc, kc, apack.get());
      // Blocks of NC columns of B; within one, each micro-panel of A (from L1) passes over the
      // block's panels (from L2) before the next micro-panel starts — also for a B read in
      // place. (Its panels went one at a time before, each meant to stay in L1 across the
      // micro-panels while A's came from L2; with both read in place, rows a power of two
      // apart, batched 64 x 128³ ran 3% slower that way on a Xeon guest: 1.97-2.03 against
      // 1.92-1.95 ms, six alternations.)
      for (index_t jc = 0; jc < g.n; jc += NC) {
        const index_t jc_end = std::min(g.n, jc + NC);
        for (index_t ir = 0; ir < mc; ir += MR) {
          const index_t mr = std::min(MR, mc - ir);
          const T* ap = direct_a ? g.a + (ic + ir) * g.ars + pc : apack.get() + ir * kc;
          const micro_fn<T> kernel = kernels[static_cast<std::size_t>(mr - 1)];
          for (index_t jr = jc; jr < jc_end; jr += NR) {
            const index_t nr = std::min(NR, g.n - jr);
            const T* bp;
            index_t bstride;
            if (!direct) {
              bp = packed_b + (jr / NR) * g.k * NR + pc * NR;
              bstride = NR;
            } else if (jr < n_direct) {
              bp = g.b + pc * g.brs + jr;
              bstride = g.brs;
            } else {
              bp = bedge.get();
              bstride = NR;
            }
            // The first two micro-panels of a block meet each packed panel first: each call
            // prefetches half of the panel the loop reads after this one (the next pc's first
            // after the last jr), kc lines, into L2. Later micro-panels find the block in L2.
            // A B read in place is in L2 already (it is small): its calls fetch the caller's
            // next piece instead, when there is one (batched 64 x 128³: see docs/matmul.md).
            const T* b_next = bp;
            if (!direct && ir < 2 * MR) {
              const T* next = nullptr;
              if (jr + NR < g.n) next = bp + g.k * NR;
              else if (pc + KC < g.k) next = packed_b + pc * NR + KC * NR;
              if (next != nullptr) b_next = next + (ir / MR) * kc * (64 / static_cast<index_t>(sizeof(T)));
            } else if (direct) {
              if (const char* at = ahead.next(kc)) b_next = reinterpret_cast<const T*>(at);
            }
            T* cp = g.c + (ic + ir) * g.crs + jr * g.ccs;
            if (g.ccs == 1) {
              kernel(kc, ap, g.ars, bp, bstride, cp, g.crs, nr, accumulate, b_next);
            } else {  // strided destination: go through a contiguous tile
              if (accumulate)
                for (index_t i = 0; i < mr; ++i)
                  for (index_t j = 0; j < nr; ++j) tile[i * NR + j] = cp[i * g.crs + j * g.ccs];
              kernel(kc, ap, g.ars, bp, bstride, tile, NR, NR, accumulate, b_next);
              for (index_t i = 0; i < mr; ++i)
                for (index_t j = 0; j < nr; ++j) cp[i * g.crs + j * g.ccs] = tile[i * NR + j];
            }
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------- exported entry points

#define CT_MM_TARGET_FUNCS(T, S)                                                                             \
  index_t PackedBSize##S(index_t k, index_t n, index_t brs, index_t bcs, const mm_budgets& b) {           \
    return packed_b_size_t<T>(k, n, brs, bcs, b);                                                            \
  }                                                                                                          \
  void GemmBlocking##S(const mm_budgets& b, index_t& mr, index_t& nr, index_t& kc, index_t& mc, index_t& nc) { \
    const blocking<T> bl(b);                                                                                 \
    mr = geom<T>::MR;                                                                                        \
    nr = geom<T>::NR;                                                                                        \
    kc = bl.kc;                                                                                              \
    mc = bl.mc;                                                                                              \
    nc = bl.nc;                                                                                              \
  }                                                                                                          \
  void PackB##S(index_t k, index_t n, const T* b, index_t brs, index_t bcs, T* out, index_t rows_budget,    \
               bool stream) {                                                                                \
    pack_b_t<T>(k, n, b, brs, bcs, out, rows_budget, stream);                                                \
  }                                                                                                          \
  bool GemmRows##S(const gemm_args<T>& g, const T* packed_b, index_t r0, index_t r1, bool fused,           \
                   const mm_budgets& b) {                                                                    \
    if (fused && !kCanFuse) return false;                                                                    \
    if (fused) gemm_rows_t<T, true>(g, packed_b, r0, r1, b);                                                 \
    else gemm_rows_t<T, false>(g, packed_b, r0, r1, b);                                                      \
    return true;                                                                                             \
  }
CT_MM_TARGET_FUNCS(float, F32)
void PackBWidenedF32(index_t k, index_t n, const std::uint16_t* b, bool bf16, index_t brs, index_t bcs,
                     void (*widen)(const std::uint16_t*, float*, index_t), float* out) {
  pack_b_widened(k, n, b, bf16, brs, bcs, widen, out);
}
CT_MM_TARGET_FUNCS(double, F64)
#undef CT_MM_TARGET_FUNCS

}  // namespace HWY_NAMESPACE
}  // namespace ct::detail::mm
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ct::detail::mm {

HWY_EXPORT(PackedBSizeF32);
HWY_EXPORT(PackedBSizeF64);
HWY_EXPORT(GemmBlockingF32);
HWY_EXPORT(GemmBlockingF64);
HWY_EXPORT(PackBF32);
HWY_EXPORT(PackBF64);
HWY_EXPORT(PackBWidenedF32);
HWY_EXPORT(GemmRowsF32);
HWY_EXPORT(GemmRowsF64);

index_t simd_packed_b_size_f32(index_t k, index_t n, index_t brs, index_t bcs, const mm_budgets& b) {
  return HWY_DYNAMIC_DISPATCH(PackedBSizeF32)(k, n, brs, bcs, b);
}
index_t simd_packed_b_size_f64(index_t k, index_t n, index_t brs, index_t bcs, const mm_budgets& b) {
  return HWY_DYNAMIC_DISPATCH(PackedBSizeF64)(k, n, brs, bcs, b);
}
void simd_gemm_blocking_f32(const mm_budgets& b, index_t& mr, index_t& nr, index_t& kc, index_t& mc, index_t& nc) {
  HWY_DYNAMIC_DISPATCH(GemmBlockingF32)(b, mr, nr, kc, mc, nc);
}
void simd_gemm_blocking_f64(const mm_budgets& b, index_t& mr, index_t& nr, index_t& kc, index_t& mc, index_t& nc) {
  HWY_DYNAMIC_DISPATCH(GemmBlockingF64)(b, mr, nr, kc, mc, nc);
}
void simd_pack_b_f32(index_t k, index_t n, const float* b, index_t brs, index_t bcs, float* out, index_t rows_budget,
                     bool stream) {
  HWY_DYNAMIC_DISPATCH(PackBF32)(k, n, b, brs, bcs, out, rows_budget, stream);
}
void simd_pack_b_f64(index_t k, index_t n, const double* b, index_t brs, index_t bcs, double* out, index_t rows_budget,
                     bool stream) {
  HWY_DYNAMIC_DISPATCH(PackBF64)(k, n, b, brs, bcs, out, rows_budget, stream);
}
void simd_pack_b_widened_f32(index_t k, index_t n, const std::uint16_t* b, bool bf16, index_t brs, index_t bcs,
                             void (*widen)(const std::uint16_t*, float*, index_t), float* out) {
  HWY_DYNAMIC_DISPATCH(PackBWidenedF32)(k, n, b, bf16, brs, bcs, widen, out);
}
bool simd_gemm_rows_f32(const gemm_args<float>& g, const float* packed_b, index_t r0, index_t r1, bool fused,
                        const mm_budgets& b) {
  return HWY_DYNAMIC_DISPATCH(GemmRowsF32)(g, packed_b, r0, r1, fused, b);
}
bool simd_gemm_rows_f64(const gemm_args<double>& g, const double* packed_b, index_t r0, index_t r1, bool fused,
                        const mm_budgets& b) {
  return HWY_DYNAMIC_DISPATCH(GemmRowsF64)(g, packed_b, r0, r1, fused, b);
}
}  // namespace ct::detail::mm
#endif  // HWY_ONCE
