// src/kernels/kernels.hpp — the precompiled tile kernels the expression engine calls (private).
//
// Internal interface (namespace ct::detail::kernels) between the evaluator and src/kernels.
// Every kernel works on one tile of n contiguous elements and honours the settings it is
// given: backend::scalar runs portable C++ loops; backend::simd runs Highway code for the
// best target found at run time. fma_policy::fused evaluates a*b+c (in muladd and inside
// polynomial approximations) with one rounding, fma_policy::separate with two.
// For a given backend and policy every kernel is a pure function of its inputs: the same
// inputs give bitwise the same outputs whatever thread or tile boundary is involved.
#pragma once
#include <cstdint>

#include "ct/core/index.hpp"
#include "ct/exec/settings.hpp"
#include "ct/expr/ops.hpp"

namespace ct::detail::kernels {

/// The operations: one table in ct/expr/ops.hpp.
using ct::detail::binary_op;
using ct::detail::unary_op;

/// y[i] = op(x[i]) for i in [0, n). y may equal x (in place); other overlap is not allowed.
template <class T>
void unary(unary_op op, const T* x, T* y, index_t n, const settings& s);

/// y[i] = op(a[i], b[i]). An operand flagged uniform is one value (a[0] / b[0]) used for every i.
/// y may equal a or b.
template <class T>
void binary(binary_op op, const T* a, bool a_uniform, const T* b, bool b_uniform, T* y, index_t n,
            const settings& s);

/// y[i] = a[i]*b[i] + c[i], fused or separate per s.fma; uniform flags as in binary().
template <class T>
void muladd(const T* a, bool a_uniform, const T* b, bool b_uniform, const T* c, bool c_uniform, T* y,
            index_t n, const settings& s);

/// Direct tile functions: what unary(), binary() and muladd() end up calling for given
/// settings and uniform flags, for callers that run the same instruction on many tiles and
/// want to skip the dispatch (operation switch, backend and CPU-target selection) each time.
/// Calling one is the same as calling the general kernel. The resolvers return nullptr when
/// there is no such function (scalar backend, pow, fused FMA on a target without hardware
/// FMA); the caller then uses the general kernel.
/// stream (binary and muladd): y is written with non-temporal stores where it is vector-aligned
/// (the same values; for results too large to stay in the caches, whose lines then need not be
/// read first). The caller must fence (hwy::FlushStream) before y is read by another thread.
template <class T>
using unary_tile_fn = void (*)(const T* x, T* y, index_t n);
template <class T>
using binary_tile_fn = void (*)(const T* a, const T* b, T* y, index_t n);
template <class T>
using muladd_tile_fn = void (*)(const T* a, const T* b, const T* c, T* y, index_t n);
template <class T>
unary_tile_fn<T> resolve_unary(unary_op op, const settings& s) noexcept;
template <class T>
binary_tile_fn<T> resolve_binary(binary_op op, bool a_uniform, bool b_uniform, const settings& s,
                                 bool stream = false) noexcept;
template <class T>
muladd_tile_fn<T> resolve_muladd(bool a_uniform, bool b_uniform, bool c_uniform, const settings& s,
                                 bool stream = false) noexcept;

/// Number of virtual lanes of the lane-wise sum and product.
inline constexpr int reduce_lanes = 32;

/// Lane-wise accumulator for sums (and products) of float or double streams. The k-th element
/// fed to it (counting across calls) goes to lane k % reduce_lanes; lanes are double for both
/// float and double inputs. The result depends only on the values and their order — not on
/// how the stream was cut into calls, nor on the backend or the CPU's vector width.
struct lane_accumulator {
  double lane[reduce_lanes];
  index_t count;  // elements fed so far
};
void sum_init(lane_accumulator& acc) noexcept;   // lanes 0, count 0
void prod_init(lane_accumulator& acc) noexcept;  // lanes 1, count 0
/// ahead: 0 when x is in the caches; when it is being read from memory for the first time, the
/// prefetch distance stream_ahead(s) (computed once per operation: it reads the tuning), and
/// the simd kernels then prefetch that far ahead of their reads, interleaved with them.
/// Results are the same either way.
template <class T>
void sum_accumulate(lane_accumulator& acc, const T* x, index_t n, const settings& s, index_t ahead = 0);
template <class T>
void prod_accumulate(lane_accumulator& acc, const T* x, index_t n, const settings& s);
/// The lane kernel sum_accumulate runs for whole rounds of 32 elements (nullptr on the scalar
/// backend), resolved once for the current backend and CPU target; sum_with(fn, …) then feeds
/// exactly the lanes sum_accumulate would, without its per-call dispatch.
/// ahead: as for sum_accumulate (0: from the caches; > 0: prefetch that far ahead).
template <class T>
using sum_bulk_fn = void (*)(double* lane, const T* x, index_t n, bool fresh, index_t ahead);
template <class T>
sum_bulk_fn<T> resolve_sum(const settings& s) noexcept;
template <class T>
void sum_with(sum_bulk_fn<T> bulk, lane_accumulator& acc, const T* x, index_t n, index_t ahead = 0);
/// Combines the lanes by a fixed pairwise tree: (l0+l1)+(l2+l3)… level by level.
double sum_result(const lane_accumulator& acc) noexcept;
double prod_result(const lane_accumulator& acc) noexcept;

/// The running state of a logsumexp read once (the online normalizer). Element k of the
/// stream (counting across calls) meets lane k % reduce_lanes, which keeps a reference m (one
/// of its elements, -inf before any), a partial sum p in T and a sum s in double, so that
/// s + p is the sum of exp(x - m) over its elements. Per element x, in stream order:
///   m' = x if x > m + lse_headroom, else m   (a NaN in either sticks: m' is NaN)
///   if m' != m:  s = (s + p) * exp(m - m')  in double;  p = 0
///   p  = p + exp(x - m')   in T; the term is exactly 1 when x == m' (no inf - inf for ±inf)
///   m  = m'
/// and after every lse_block_rounds whole rounds of 32 (counting from the stream's start)
/// every lane moves p into s: s = s + p, p = 0.
/// The reference moves only when an element is more than lse_headroom above it, so a row
/// whose values span less than that rescales once per lane (at its first element) instead
/// of at every new maximum: on random rows of 4096 most rounds held a new maximum in some
/// lane. Terms stay below e^8, far from overflow; the argument x - m carries a rounding error
/// of at most 8 u / 2 and a partial of up to eight terms (rows of 225 or more) seven
/// roundings in T, well inside logsumexp's documented bound. The partials in T spare a
/// conversion to double per element (1.4x in a microbenchmark of the kernel); eight rounds
/// per block rather than four halve the flushes' conversions (rows in L2 5-7% faster, Xeon 6
/// guest; the worst error of the accuracy test's rows is unchanged, 0.81 of the bound).
/// lse_result combines the lanes: M = max m, result M + log(sum of (s + p) * exp(m - M)) in
/// double (NaN if any lane saw a NaN; M itself when M is ±inf). Like the lane sums, the
/// result depends only on the values and their order, not on how the stream was cut into
/// calls nor on the vector width; the backends differ only in their exp.
inline constexpr int lse_headroom = 8;
inline constexpr int lse_block_rounds = 8;
template <class T>
struct lse_state {
  T max[reduce_lanes];
  T part[reduce_lanes];
  double sum[reduce_lanes];
  index_t count;  // elements fed so far
};
/// s += p, p = 0 in every lane (a block's end).
template <class T>
void lse_flush(lse_state<T>& st) noexcept {
  for (int i = 0; i < reduce_lanes; ++i) {
    st.sum[i] += static_cast<double>(st.part[i]);
    st.part[i] = T(0);
  }
}
template <class T>
void lse_init(lse_state<T>& st) noexcept;  // maxima -inf, sums 0, count 0
/// exp follows s (the backend and its FMA policy). ahead: as for sum_accumulate.
template <class T>
void lse_accumulate(lse_state<T>& st, const T* x, index_t n, const settings& s, index_t ahead = 0);
/// The rescaling exps of lse_result follow s's backend too.
template <class T>
double lse_result(const lse_state<T>& st, const settings& s) noexcept;

/// Running max/min with the position where it was found. index is -1 while nothing was fed.
/// Rules: the first NaN wins (value NaN, its index) for both max and min; otherwise the
/// extreme value by > (max) or < (min), and on ties (==, so also -0 vs +0) the first index.
template <class T>
struct extreme_state {
  T value;
  index_t index;
};
template <class T>
void extreme_init(extreme_state<T>& st) noexcept {
  st.value = T(0);
  st.index = -1;
}
/// Feeds x[0..n) whose positions are first_index, first_index+1, …
/// with_index false: only st.value is wanted (max/min, not argmax/argmin); st.index may then
/// hold any position of the winning tile, which saves searching for it. st.value is the same.
/// ahead: as for sum_accumulate.
template <class T>
void max_accumulate(extreme_state<T>& st, const T* x, index_t n, index_t first_index, const settings& s,
                    bool with_index = true, index_t ahead = 0);
template <class T>
void min_accumulate(extreme_state<T>& st, const T* x, index_t n, index_t first_index, const settings& s,
                    bool with_index = true, index_t ahead = 0);

/// How far ahead streamed reads are prefetched: the tuning's stream_ahead_bytes (half of L1d;
/// an eighth on Intel cores, where 6 KiB beat 24 KiB by 4-25% at 48 KiB, docs/tuning.md).
/// One prefetch per cache line as the loop goes: issuing a tile's prefetches in one burst
/// before the kernel (what the evaluator did) stalls on the CPU's few outstanding-miss slots.
/// On Zen 3 (32 KiB L1d), row sums of 4096x4096 f32: 1.70 ms with bursts, interleaved
/// 1.18–1.27 ms at 16 KiB ahead (4 KiB 1.8, 8 KiB 1.45, 24–32 KiB 1.24–1.29); row argmax
/// 1.72 -> 1.38 ms, best at 16 KiB too.
index_t stream_ahead(const settings& s);

/// A unary function whose results also feed a lane-wise sum, in one pass over the tile:
/// unary_sum(fn, plain, x, y, n, acc) leaves y and acc bitwise as plain(x, y, n) followed by
/// sum_accumulate(acc, y, n, s) under the simd backend (plain = resolve_unary(op, s)) — the
/// sum just does not re-read y. With store == false y is not written at all (pass nullptr).
/// resolve_unary_sum returns nullptr where there is no such function: the scalar backend, ops
/// other than square, or a CPU target too narrow for it.
template <class T>
using unary_sum_tile_fn = void (*)(const T* x, T* y, index_t n, double* lane, bool fresh);
template <class T>
unary_sum_tile_fn<T> resolve_unary_sum(unary_op op, bool store, const settings& s) noexcept;
template <class T>
void unary_sum(unary_sum_tile_fn<T> fn, unary_tile_fn<T> plain, const T* x, T* y, index_t n, lane_accumulator& acc);

/// A scaling by one value feeding a multiply or a multiply-add, in one pass:
/// y[i] = (x[i] * u[0]) * w[i]            (muladd false; c unused, may be nullptr)
/// y[i] = (x[i] * u[0]) * w[i] + c[i]     (muladd true; c[0] for every i when c_uniform)
/// bitwise what binary(mul, x, u uniform) followed by binary(mul) / muladd() (under s.fma)
/// gives under the simd backend — the output pass of layer norm with weight and bias and of
/// RMS norm with weight. stream as for resolve_binary. nullptr for the scalar backend and where
/// resolve_muladd has no function (fused FMA without hardware FMA).
template <class T>
using scale_then_tile_fn = void (*)(const T* x, const T* u, const T* w, const T* c, T* y, index_t n);
template <class T>
scale_then_tile_fn<T> resolve_scale_then(bool muladd, bool c_uniform, const settings& s, bool stream = false) noexcept;

/// y[i] = op(x[i] - u[0]) for i in [0, n): a subtraction of one value feeding a unary function
/// in one pass, bitwise what binary(sub, x, u uniform) followed by unary(op) gives under the
/// simd backend (exp(x - max) in softmax and logsumexp). nullptr for the scalar backend and
/// for ops other than exp.
template <class T>
binary_tile_fn<T> resolve_sub_unary(unary_op op, const settings& s) noexcept;
/// The same function that also prefetches (into L1) the n elements of T at `ahead`, one cache
/// line per vector as it goes: a caller that wants the next row fetched while this compute-
/// heavy tile runs. Prefetches issued in one burst before the tile mostly get dropped once the
/// CPU's miss buffers are full; spread over the loop they arrive (softmax 4096x4096 6.3 -> 4.9
/// ms). The results are those of resolve_sub_unary's function. nullptr where that one is.
template <class T>
using sub_unary_prefetch_fn = void (*)(const T* x, const T* u, T* y, index_t n, const void* ahead);
template <class T>
sub_unary_prefetch_fn<T> resolve_sub_unary_prefetch(unary_op op, const settings& s) noexcept;
/// resolve_unary's function for op, prefetching as resolve_sub_unary_prefetch's does (exp only).
template <class T>
using unary_prefetch_fn = void (*)(const T* x, T* y, index_t n, const void* ahead);
template <class T>
unary_prefetch_fn<T> resolve_unary_prefetch(unary_op op, const settings& s) noexcept;

/// d[i] = x[i] - u[0] and y[i] = op(d[i]), both written, in one pass: bitwise what
/// binary(sub, x, u uniform) into d followed by unary(op) of d into y give under the simd
/// backend (log-softmax's exp(x - max), where x - max is kept for the output). With prefetch,
/// the function also prefetches the n elements at `ahead` as resolve_sub_unary_prefetch's
/// does; without, `ahead` is ignored. nullptr for the scalar backend and for ops other than exp.
template <class T>
using sub_keep_unary_fn = void (*)(const T* x, const T* u, T* d, T* y, index_t n, const void* ahead);
template <class T>
sub_keep_unary_fn<T> resolve_sub_keep_unary(unary_op op, bool prefetch, const settings& s) noexcept;

/// d[i] = x[i] - u[0] written out, and op(d[i]) fed to a lane-wise sum, in one pass:
/// sub_unary_sum(fn, sub, plain, x, u, d, n, acc) leaves d and acc bitwise as
/// sub(x, u, d, n); plain(d, tmp, n); sum_accumulate(acc, tmp, n) would (sub and plain the
/// direct tile functions of binary sub with u uniform and of op) — the variance pass of layer
/// norm, where x - mean is kept for the output. nullptr where resolve_unary_sum is.
template <class T>
using sub_unary_sum_tile_fn = void (*)(const T* x, const T* u, T* d, index_t n, double* lane, bool fresh);
template <class T>
sub_unary_sum_tile_fn<T> resolve_sub_unary_sum(unary_op op, const settings& s) noexcept;
template <class T>
void sub_unary_sum(sub_unary_sum_tile_fn<T> fn, binary_tile_fn<T> sub, unary_tile_fn<T> plain, const T* x, const T* u,
                   T* d, index_t n, lane_accumulator& acc);

/// A whole row of layer norm's shape in one call: the three passes the evaluator would run as
/// sum_with(resolve_sum) of x; sub_unary_sum(square) of d = x - m; and the output
/// y = d * r (norm_output::mul), (d * r) * w (mul_mul), or resolve_scale_then's (d * r) * w + c
/// with c varying (mul_add) or one value (mul_add_uniform_c) — bitwise, lane by lane, though d
/// is formed again from x in the output pass rather than stored. Between the passes it calls
/// stage(ctx, 0, s) with x's sum (sum_result of its lanes), which returns where m is, then
/// stage(ctx, 1, s) with the sum of the squares, which returns where r is: the caller computes
/// the group's one-value steps (mean, 1/sqrt(var + eps)) its usual way. acc is scratch for the
/// lanes; stream: y is written with non-temporal stores as resolve_scale_then's stream variant
/// does (the caller fences). nullptr for the scalar backend, and for the multiply-add outputs
/// where resolve_scale_then has none.
///
/// It takes one or two rows (count), each with its own operands and lanes. Two rows run each
/// pass for both before the next stage, so that one row's chain between passes (the lanes'
/// tree, the division and square root of the one-value steps) overlaps the other's instead of
/// leaving the core idle; every row's operations are still the one-row call's. Stages come in
/// the order (0, row 0), (0, row 1), (1, row 0), (1, row 1), each value read before the next
/// call: the caller pairs rows only when the stage-1 steps do not read what stage 0 computes.
/// ahead: x comes from memory (streamed), prefetched this far ahead (stream_ahead); 0: from
/// the caches, nothing prefetched.
enum class norm_output : std::uint8_t { mul, mul_mul, mul_add, mul_add_uniform_c };
template <class T>
using norm_row_stage_fn = const T* (*)(void* ctx, int stage, double sum);
template <class T>
struct norm_row_io {
  const T* x;
  T* y;
  const T* w;
  const T* c;
  lane_accumulator* acc;
};
template <class T>
using norm_row_fn = void (*)(const norm_row_io<T>* rows, int count, index_t n, index_t ahead, norm_row_stage_fn<T> stage,
                             void* ctx);
template <class T>
norm_row_fn<T> resolve_norm_row(norm_output out, const settings& s, bool stream) noexcept;

/// Name of the SIMD target the simd backend dispatches to on this CPU (e.g. "AVX3", "AVX2").
const char* simd_target_name() noexcept;

}  // namespace ct::detail::kernels
