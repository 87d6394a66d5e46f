// src/matmul/kernels.hpp — the private interface between ct::matmul (header templates
// that validate and schedule) and the compiled kernels in src/matmul.
//
// Every kernel here computes a part of one product, never schedules, and honours the
// settings it is handed (the caller passes ct::current_settings() from inside a callback).
// The accumulation order of each output element is part of the interface, because it is
// what makes results independent of how rows are partitioned:
//
//  * gemm_rows and gevm_cols (floating point): k in chunks of gemm_k_chunk — for chunk q,
//    s = 0; s = muladd(a_ik, b_kj, s) over its k in order; then c = s (q = 0) or c = c + s.
//    A chain of at most 128 + K/128 roundings instead of K: sgemm 4096^3's error against a
//    double reference went from 2.1e-6 to about 5e-7 (docs/matmul.md). Chunk boundaries are
//    multiples of 128 in k whatever the blocking (KC is a multiple of the chunk), the partial
//    sums go through the destination in the element type, so blocking, tiles and edges do not
//    change a single bit, and the scalar backend gives the SIMD one's bits for each FMA
//    policy. Integers: one sequential sum (wrapping, so the order cannot matter).
//  * gemv_rows and dot: element k of the dot product goes to virtual lane k % dot_lanes<T>
//    (each lane accumulates sequentially from +0), then the lanes are summed by a fixed
//    pairwise tree (lane l += lane l + w for w = lanes/2, lanes/4, …, 1). The scalar backend
//    emulates the same lanes, so again both backends agree bitwise.
//
// muladd(a, b, c) is fma(a, b, c) under fma_policy::fused and round(round(a * b) + c) under
// fma_policy::separate. Integer types wrap modulo 2^bits (computed in unsigned arithmetic).
#pragma once
#include <cstdint>
#include <type_traits>

#include "ct/core/index.hpp"
#include "ct/exec/settings.hpp"

namespace ct::detail::mm {

/// The cache budgets (bytes) the SIMD matmul kernels block by: the caller's tuning
/// (ct/core/tuning.hpp), which its settings carry to every callback, so all callbacks of one
/// call block alike. Blocking changes speed only: each element's order is fixed by k alone.
/// The k chunk of matrix and vector-matrix products (the order above).
inline constexpr index_t gemm_k_chunk = 128;

struct mm_budgets {
  index_t a_panel_bytes = 0, a_block_bytes = 0, b_block_bytes = 0, direct_b_bytes = 0, gemv_prefetch_bytes = 0;
};
mm_budgets budgets_of(const settings& s);

/// Number of virtual lanes of the fixed-order dot product (two 512-bit registers' worth).
template <class T>
inline constexpr index_t dot_lanes = static_cast<index_t>(128 / sizeof(T));

/// Memory a callback touches next (the next batch piece's A rows, B and C rows of a batched
/// product), up to three spans of whole 64-byte lines. While the current piece runs, its
/// micro-kernel calls fetch these into L2, one line per step of k: a small product's matrices
/// otherwise arrive from L3 or memory one after another while the FMA units wait. Only
/// addresses: nothing here is read by the prefetch, so a span may be any memory.
struct ahead_spans {
  const char* start[3] = {};
  index_t lines[3] = {};
  int count = 0;
  void add(const void* first, index_t bytes) noexcept {
    if (bytes <= 0 || count == 3) return;
    const auto at = reinterpret_cast<std::uintptr_t>(first);
    const std::uintptr_t line = at & ~std::uintptr_t{63};
    start[count] = reinterpret_cast<const char*>(line);
    lines[count] = static_cast<index_t>((at + static_cast<std::uintptr_t>(bytes) - line + 63) / 64);
    ++count;
  }
};

/// One 2-D product C[m x n] = A[m x k] * B[k x n] on strided operands: element (i, j) of a
/// matrix lives at p[i * rs + j * cs] (strides in elements, any sign). ahead: what to prefetch
/// for the caller's next product (only used when B is read in place; never changes results).
template <class T>
struct gemm_args {
  index_t m = 0, n = 0, k = 0;
  const T* a = nullptr;
  index_t ars = 0, acs = 0;
  const T* b = nullptr;
  index_t brs = 0, bcs = 0;
  T* c = nullptr;
  index_t crs = 0, ccs = 0;
  ahead_spans ahead;
};

/// Elements of the shared packed copy of a k x n B that gemm_rows wants under settings s,
/// or 0 when it reads this B directly (small B, scalar backend, integer types). Decided from
/// shapes, strides and settings only; it never changes results, only speed.
template <class T>
index_t gemm_packed_b_size(index_t k, index_t n, index_t brs, index_t bcs, const settings& s);

/// Packs B into out (gemm_packed_b_size elements, 64-byte aligned). Run before scheduling;
/// afterwards the packed copy is shared read-only by every callback. stream: write the panels
/// of a row-contiguous B with streaming stores, past the caches (run.cpp says when).
template <class T>
void gemm_pack_b(index_t k, index_t n, const T* b, index_t brs, index_t bcs, T* out, const settings& s,
                 bool stream = false);

/// gemm_pack_b<float> of a bfloat16 (bf16 true) or float16 B, given as its bits, widened to
/// float32 as it is packed: the same packed copy gemm_pack_b<float> makes of the widened B,
/// without the widened B in memory. Only when gemm_packed_b_size<float> is not 0.
void gemm_pack_b_widened(index_t k, index_t n, const std::uint16_t* b, bool bf16, index_t brs, index_t bcs, float* out,
                         const settings& s);

/// Rows [r0, r1) of C = A * B. packed_b is the gemm_pack_b copy of this B (or nullptr when
/// gemm_packed_b_size was 0). Uses its own scratch; never touches other rows of C.
template <class T>
void gemm_rows(const gemm_args<T>& g, const T* packed_b, index_t r0, index_t r1, const settings& s);

/// y[i] = dot(A[i, :], x) for i in [i0, i1), fixed lane order (see above).
template <class T>
void gemv_rows(index_t k, const T* a, index_t ars, index_t acs, const T* x, index_t xs, T* y, index_t ys,
               index_t i0, index_t i1, const settings& s);

/// y[j] = sum_k x[k] * B[k, j] for j in [j0, j1), sequential in k.
template <class T>
void gevm_cols(index_t k, const T* x, index_t xs, const T* b, index_t brs, index_t bcs, T* y, index_t ys,
               index_t j0, index_t j1, const settings& s);

/// dot(x, y) over n elements, fixed lane order.
template <class T>
T dot(index_t n, const T* x, index_t xs, const T* y, index_t ys, const settings& s);

#define CT_MM_DECLARE(T)                                                                                   \
  extern template index_t gemm_packed_b_size<T>(index_t, index_t, index_t, index_t, const settings&);     \
  extern template void gemm_pack_b<T>(index_t, index_t, const T*, index_t, index_t, T*, const settings&, bool); \
  extern template void gemm_rows<T>(const gemm_args<T>&, const T*, index_t, index_t, const settings&);    \
  extern template void gemv_rows<T>(index_t, const T*, index_t, index_t, const T*, index_t, T*, index_t,  \
                                    index_t, index_t, const settings&);                                   \
  extern template void gevm_cols<T>(index_t, const T*, index_t, const T*, index_t, index_t, T*, index_t,  \
                                    index_t, index_t, const settings&);                                   \
  extern template T dot<T>(index_t, const T*, index_t, const T*, index_t, const settings&);
CT_MM_DECLARE(float)
CT_MM_DECLARE(double)
CT_MM_DECLARE(std::int32_t)
CT_MM_DECLARE(std::int64_t)
#undef CT_MM_DECLARE

}  // namespace ct::detail::mm
