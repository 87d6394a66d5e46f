// src/kernels/simd_fused.cpp — the simd kernels that do in one pass what the evaluator would
// otherwise run as two or three tile passes: a uniform subtraction before a unary function
// (with or without keeping the difference, with or without prefetching the next row), a
// unary function feeding a lane-wise sum, and a whole layer-norm row. Each is bitwise the
// passes it replaces: it runs the same vector functions (simd_elementwise-inl.h) and the same
// lane sums (simd_lanes-inl.h). Split from simd_elementwise.cpp, which keeps the one-pass
// tile kernels.
#include "src/kernels/fp_contract_off.hpp"  // must stay first
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/kernels/simd_fused.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include "src/kernels/detail.hpp"
#include "src/kernels/simd_elementwise-inl.h"
#include "src/kernels/simd_lanes-inl.h"

HWY_BEFORE_NAMESPACE();
namespace ct::detail::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ---- one value subtracted before a unary function (resolve_sub_unary) ----------------------

/// y = op(x - u[0]): the subtraction is BinaryOp<sub>'s and the function UnaryOp's, lane by
/// lane, so the result is bitwise that of the two tile passes.
template <unary_op kOp, bool kFused, class T>
void SubUnaryTile(const T* x, const T* u, T* y, index_t n) {
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  ForEachVector(d, y, n, [&](V a, V b) { return UnaryOp<kOp, kFused>(d, BinaryOp<binary_op::sub>(a, b)); },
                Operand<false, decltype(d)>{x}, Operand<true, decltype(d)>{u});
}
/// SubUnaryTile and UnaryOpTile that also prefetch `ahead` as they go.
template <unary_op kOp, bool kFused, class T>
void SubUnaryPrefetchTile(const T* x, const T* u, T* y, index_t n, const void* ahead) {
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  ForEachVectorPrefetching(
      d, y, n, ahead, [&](V a, V b) { return UnaryOp<kOp, kFused>(d, BinaryOp<binary_op::sub>(a, b)); },
      Operand<false, decltype(d)>{x}, Operand<true, decltype(d)>{u});
}
template <unary_op kOp, bool kFused, class T>
void UnaryPrefetchTile(const T* x, T* y, index_t n, const void* ahead) {
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  ForEachVectorPrefetching(d, y, n, ahead, [&](V v) { return UnaryOp<kOp, kFused>(d, v); }, Operand<false, decltype(d)>{x});
}
/// d = x - u[0] and y = op(d) in one pass over the tile (op(x - u) where x - u is also kept),
/// prefetching `ahead` as SubUnaryPrefetchTile does when kPrefetch. Lane by lane the same
/// BinaryOp / UnaryOp as the two tile kernels, so both outputs are bitwise theirs.
template <unary_op kOp, bool kFused, bool kPrefetch, class T>
void SubKeepUnaryTile(const T* x, const T* u, T* d, T* y, index_t n,
                      const void* ahead) {
  const hn::ScalableTag<T> dt;
  using V = hn::Vec<decltype(dt)>;
  const index_t N = static_cast<index_t>(hn::Lanes(dt));
  const V uu = hn::Set(dt, u[0]);
  const T* next = static_cast<const T*>(ahead);
  index_t i = 0;
  for (; i + N <= n; i += N) {
    if constexpr (kPrefetch) hwy::Prefetch(next + i);
    const V v = BinaryOp<binary_op::sub>(hn::LoadU(dt, x + i), uu);
    hn::StoreU(v, dt, d + i);
    hn::StoreU(UnaryOp<kOp, kFused>(dt, v), dt, y + i);
  }
  if (i < n) {
    if constexpr (kPrefetch) hwy::Prefetch(next + i);
    const auto rest = static_cast<size_t>(n - i);
    HWY_ALIGN T bd[HWY_MAX_BYTES / sizeof(T)];
    HWY_ALIGN T by[HWY_MAX_BYTES / sizeof(T)];
    const V v = BinaryOp<binary_op::sub>(Operand<false, decltype(dt)>{x}.Partial(dt, i, rest), uu);
    hn::Store(v, dt, bd);
    hn::Store(UnaryOp<kOp, kFused>(dt, v), dt, by);
    for (size_t j = 0; j < rest; ++j) {
      d[i + static_cast<index_t>(j)] = bd[j];
      y[i + static_cast<index_t>(j)] = by[j];
    }
  }
  (void)next;  // unused without kPrefetch
}
template <class T>
HWY_INLINE sub_keep_unary_fn<T> ResolveSubKeepUnary(unary_op op, bool fused, bool prefetch) {
  if (op != unary_op::exp) return nullptr;
  if (prefetch) return fused ? &SubKeepUnaryTile<unary_op::exp, true, true, T> : &SubKeepUnaryTile<unary_op::exp, false, true, T>;
  return fused ? &SubKeepUnaryTile<unary_op::exp, true, false, T> : &SubKeepUnaryTile<unary_op::exp, false, false, T>;
}
sub_keep_unary_fn<float> ResolveSubKeepUnaryF32(unary_op op, bool fused, bool prefetch) {
  return ResolveSubKeepUnary<float>(op, fused, prefetch);
}
sub_keep_unary_fn<double> ResolveSubKeepUnaryF64(unary_op op, bool fused, bool prefetch) {
  return ResolveSubKeepUnary<double>(op, fused, prefetch);
}
unary_prefetch_fn<float> ResolveUnaryPrefetchF32(unary_op op, bool fused) {
  if (op != unary_op::exp) return nullptr;
  return fused ? &UnaryPrefetchTile<unary_op::exp, true, float> : &UnaryPrefetchTile<unary_op::exp, false, float>;
}
unary_prefetch_fn<double> ResolveUnaryPrefetchF64(unary_op op, bool fused) {
  if (op != unary_op::exp) return nullptr;
  return fused ? &UnaryPrefetchTile<unary_op::exp, true, double> : &UnaryPrefetchTile<unary_op::exp, false, double>;
}
sub_unary_prefetch_fn<float> ResolveSubUnaryPrefetchF32(unary_op op, bool fused) {
  if (op != unary_op::exp) return nullptr;
  return fused ? &SubUnaryPrefetchTile<unary_op::exp, true, float> : &SubUnaryPrefetchTile<unary_op::exp, false, float>;
}
sub_unary_prefetch_fn<double> ResolveSubUnaryPrefetchF64(unary_op op, bool fused) {
  if (op != unary_op::exp) return nullptr;
  return fused ? &SubUnaryPrefetchTile<unary_op::exp, true, double> : &SubUnaryPrefetchTile<unary_op::exp, false, double>;
}
binary_tile_fn<float> ResolveSubUnaryF32(unary_op op, bool fused) {
  if (op != unary_op::exp) return nullptr;
  return fused ? &SubUnaryTile<unary_op::exp, true, float> : &SubUnaryTile<unary_op::exp, false, float>;
}
binary_tile_fn<double> ResolveSubUnaryF64(unary_op op, bool fused) {
  if (op != unary_op::exp) return nullptr;
  return fused ? &SubUnaryTile<unary_op::exp, true, double> : &SubUnaryTile<unary_op::exp, false, double>;
}

// ---- a unary function feeding a lane-wise sum (resolve_unary_sum) -------------------------

#if HWY_TARGET != HWY_SCALAR
/// y[i] = op(x[i]) (stored only when kStore) and element i added to lane i % 32 for i < n,
/// n a multiple of 32. With kSub, x[i] - u[0] is formed first and is what y receives, and op
/// of it is summed (resolve_sub_unary_sum); round() is called once per round before its loads
/// (NormRowsOf's prefetches). The lanes are AccumulateLanes' (simd_lanes-inl.h):
/// one double vector per group of consecutive lanes, each fed in stream order, so they end
/// bitwise as the separate tile passes followed by a lane-wise sum would leave them.
template <unary_op kOp, bool kFused, bool kStore, bool kSub, class T, class Round = NoRound>
HWY_INLINE void UnarySumLoop(const T* HWY_RESTRICT x, T* HWY_RESTRICT y, index_t n, double* HWY_RESTRICT lane,
                             bool fresh, const T* u, Round round = {}) {
  const hn::ScalableTag<double> dd;
  constexpr size_t ND = HWY_LANES(double);
  constexpr size_t kVecs = reduce_lanes / ND;
  static_assert(kVecs * ND == reduce_lanes && kVecs % 2 == 0, "32 lanes must split evenly into vector pairs");
  using VD = hn::Vec<decltype(dd)>;
  VD acc[kVecs];
  for (size_t j = 0; j < kVecs; ++j) acc[j] = fresh ? hn::Zero(dd) : hn::LoadU(dd, lane + j * ND);
  // u[0] broadcast once, not per vector (see Operand<true, D>).
  const auto uu = hn::Set(hn::Repartition<T, decltype(dd)>(), kSub ? u[0] : T(0));
  for (index_t i = 0; i < n; i += reduce_lanes) {
    round();
    if constexpr (sizeof(T) == sizeof(double)) {
      HWY_UNROLL(16)
      for (size_t j = 0; j < kVecs; ++j) {
        VD in = hn::LoadU(dd, x + i + j * ND);
        if constexpr (kSub) {
          in = BinaryOp<binary_op::sub>(in, uu);
          if constexpr (kStore) hn::StoreU(in, dd, y + i + j * ND);
        }
        const VD v = UnaryOp<kOp, kFused>(dd, in);
        if constexpr (kStore && !kSub) hn::StoreU(v, dd, y + i + j * ND);
        acc[j] = hn::Add(acc[j], v);
      }
    } else {
      const hn::Repartition<float, decltype(dd)> df;  // 2*ND floats: lanes of two double vectors
      const hn::Half<decltype(df)> dh;
      HWY_UNROLL(8)
      for (size_t j = 0; j < kVecs / 2; ++j) {
        auto in = hn::LoadU(df, x + i + j * 2 * ND);
        if constexpr (kSub) {
          in = BinaryOp<binary_op::sub>(in, uu);
          if constexpr (kStore) hn::StoreU(in, df, y + i + j * 2 * ND);
        }
        const auto v = UnaryOp<kOp, kFused>(df, in);
        if constexpr (kStore && !kSub) hn::StoreU(v, df, y + i + j * 2 * ND);
        acc[2 * j] = hn::Add(acc[2 * j], hn::PromoteTo(dd, hn::LowerHalf(dh, v)));
        acc[2 * j + 1] = hn::Add(acc[2 * j + 1], hn::PromoteTo(dd, hn::UpperHalf(dh, v)));
      }
    }
  }
  for (size_t j = 0; j < kVecs; ++j) hn::StoreU(acc[j], dd, lane + j * ND);
}
template <unary_op kOp, bool kFused, bool kStore, class T>
void UnarySumTile(const T* HWY_RESTRICT x, T* HWY_RESTRICT y, index_t n, double* HWY_RESTRICT lane, bool fresh) {
  UnarySumLoop<kOp, kFused, kStore, false>(x, y, n, lane, fresh, static_cast<const T*>(nullptr));
}
#endif

/// Only square (the norms' variance and mean square); nullptr for the rest and on the scalar
/// target. An exp version measured slower than exp and sum as two passes: softmax 4096x4096
/// 6.6 -> 7.5 ms, logsumexp 5.3 -> 6.0 ms (converting and adding the results while the exp
/// polynomial runs did not overlap as well as two tight loops).
template <bool kFused, class T>
HWY_INLINE unary_sum_tile_fn<T> ResolveUnarySum(unary_op op, bool store) {
#if HWY_TARGET == HWY_SCALAR
  (void)op;
  (void)store;
  return nullptr;
#else
  if (op == unary_op::square) return store ? &UnarySumTile<unary_op::square, kFused, true, T> : &UnarySumTile<unary_op::square, kFused, false, T>;
  return nullptr;
#endif
}
unary_sum_tile_fn<float> ResolveUnarySumF32(unary_op op, bool fused, bool store) {
  return fused ? ResolveUnarySum<true, float>(op, store) : ResolveUnarySum<false, float>(op, store);
}
unary_sum_tile_fn<double> ResolveUnarySumF64(unary_op op, bool fused, bool store) {
  return fused ? ResolveUnarySum<true, double>(op, store) : ResolveUnarySum<false, double>(op, store);
}

#if HWY_TARGET != HWY_SCALAR
template <bool kFused, class T>
void SubSquareSumTile(const T* x, const T* u, T* d, index_t n, double* lane, bool fresh) {
  UnarySumLoop<unary_op::square, kFused, true, true>(x, d, n, lane, fresh, u);
}
/// SubSquareSumTile's sums without its store of d (NormRowsOf's output pass forms x - u again),
/// calling round() once per round (NormRowsOf's prefetches).
template <bool kFused, class T, class Round = NoRound>
HWY_INLINE void SubSquareSums(const T* x, const T* u, index_t n, double* lane, Round round = {}) {
  UnarySumLoop<unary_op::square, kFused, false, true>(x, static_cast<T*>(nullptr), n, lane, true, u, round);
}
#endif
template <class T>
HWY_INLINE sub_unary_sum_tile_fn<T> ResolveSubUnarySum(unary_op op, bool fused) {
#if HWY_TARGET == HWY_SCALAR
  (void)op;
  (void)fused;
  return nullptr;
#else
  if (op != unary_op::square) return nullptr;
  return fused ? &SubSquareSumTile<true, T> : &SubSquareSumTile<false, T>;
#endif
}
sub_unary_sum_tile_fn<float> ResolveSubUnarySumF32(unary_op op, bool fused) { return ResolveSubUnarySum<float>(op, fused); }
sub_unary_sum_tile_fn<double> ResolveSubUnarySumF64(unary_op op, bool fused) { return ResolveSubUnarySum<double>(op, fused); }

// ---- a whole row of layer norm's shape (resolve_norm_row) -----------------------------------

#if HWY_TARGET != HWY_SCALAR
/// Layer norm's output pass from x itself: x - m rounded to T exactly as the variance pass
/// rounds it, then resolve_binary's multiply or resolve_scale_then's multiplies and add, lane by
/// lane. Forming x - m again here instead of storing it in the variance pass and reading it
/// back (one store stream fewer per row, x is in L1 by then) made 8192 x 1024 floats 4-8%
/// faster on the Xeon guest (docs/performance.md, fourteenth session).
template <norm_output kOut, bool kFused, class T, bool kStream, class Each = NoEach>
HWY_INLINE void SubScaleThenTile(const T* x, const T* m, const T* r, const T* w, const T* c, T* y, index_t n,
                                 Each each = {}) {
  const hn::ScalableTag<T> d;
  using D = decltype(d);
  using V = hn::Vec<D>;
  if constexpr (kOut == norm_output::mul)
    ForEachVectorImpl<kStream>(d, y, n, each, [](V p, V u, V q) { return hn::Mul(hn::Sub(p, u), q); }, Operand<false, D>{x},
                           Operand<true, D>{m}, Operand<true, D>{r});
  else if constexpr (kOut == norm_output::mul_mul)
    ForEachVectorImpl<kStream>(d, y, n, each, [](V p, V u, V q, V s) { return hn::Mul(hn::Mul(hn::Sub(p, u), q), s); },
                           Operand<false, D>{x}, Operand<true, D>{m}, Operand<true, D>{r}, Operand<false, D>{w});
  else
    ForEachVectorImpl<kStream>(
        d, y, n, each, [](V p, V u, V q, V s, V t) { return Fma<kFused>(hn::Mul(hn::Sub(p, u), q), s, t); }, Operand<false, D>{x},
        Operand<true, D>{m}, Operand<true, D>{r}, Operand<false, D>{w}, Operand<kOut == norm_output::mul_add_uniform_c, D>{c});
}

/// The three passes of kernels::resolve_norm_row for kRows rows, each pass for every row
/// before the next stage (see norm_row_fn).
///
/// Rows from memory (ahead > 0, the tuning's stream_ahead): each pass fetches a share of the
/// row's bytes `ahead` ahead of x, spread evenly over its rounds or vectors, and with cached
/// stores (not kStream) the destination's lines as far ahead (SpreadLines): a quarter in pass 1,
/// the next half in pass 2 (the longest: a subtraction, a square and the sums' conversions per
/// vector) and the last quarter in the output pass, so that reads stay in flight through all
/// three. Fetching it all in pass 1 (AccumulateLanes' own prefetch) left the bus idle through
/// passes 2 and 3 while the stores to y waited for their lines: 8192 x 1024 floats 3.37-3.48 ->
/// 2.74-2.81 ms with halves in passes 1 and 2 (docs/kernels.md); the quarters took that split's
/// 372-382 ns per row to 346-352 on the Xeon guest (docs/performance.md, twenty-fifth session;
/// a third each, or 20% in the output pass, measured between). The prefetch pointer runs at a
/// quarter of the read rate over pass 1, so its lead shrinks by three quarters of a row there:
/// rows here are one tile (at most 1024 elements, 8 KiB), so it stays at least `ahead` - 6 KiB:
/// 18 KiB at Zen 5's 24 KiB; at an Intel core's 6 KiB, 3 KiB for rows of 1024 floats (0 for
/// doubles, whose rows of 1024 are then fetched during their passes 2 and 3).
template <norm_output kOut, bool kFused, bool kStream, int kRows, class T>
HWY_INLINE void NormRowsOf(const norm_row_io<T>* io, index_t n, index_t ahead, norm_row_stage_fn<T> stage, void* ctx) {
  const index_t whole = n / reduce_lanes * reduce_lanes;
  // The shares: pass 1 a quarter of each round's bytes per round, pass 2 half, the output pass a
  // line per 256 bytes (QuarterLines), each after the earlier passes' lines, `ahead` bytes on.
  constexpr size_t kRoundBytes = reduce_lanes * sizeof(T);
  using Pass1 = SpreadLines<kRoundBytes / 4, !kStream>;
  using Pass2 = SpreadLines<kRoundBytes / 2, !kStream>;
  using Pass3 = QuarterLines<T, HWY_LANES(T) * sizeof(T), !kStream>;
  const index_t quarter = whole / 4 * static_cast<index_t>(sizeof(T));  // pass 1's bytes
  const auto from = [&](const void* p, index_t skip) { return static_cast<const char*>(p) + ahead + skip; };
  const auto to = [&](void* p, index_t skip) { return static_cast<char*>(p) + ahead + skip; };
  HWY_UNROLL(2)
  for (int i = 0; i < kRows; ++i) {
    double* lane = io[i].acc->lane;
    if (ahead > 0) AccumulateLanes<false, false>(lane, io[i].x, whole, true, 0, Pass1{from(io[i].x, 0), to(io[i].y, 0)});
    else AccumulateLanes<false, false>(lane, io[i].x, whole, true);
    for (index_t k = whole; k < n; ++k) lane[k - whole] += static_cast<double>(io[i].x[k]);
  }
  // sum_result's scalar tree: a vector tree (ConcatEven/ConcatOdd pairs, the same additions)
  // made layer norm of 512x1024 7% slower — its shuffles lengthen the chain the next pass waits on.
  T m[kRows];
  HWY_UNROLL(2)
  for (int i = 0; i < kRows; ++i) m[i] = *stage(ctx, 0, sum_result(*io[i].acc));
  HWY_UNROLL(2)
  for (int i = 0; i < kRows; ++i) {
    const T* x = io[i].x;
    double* lane = io[i].acc->lane;
    if (ahead > 0) SubSquareSums<kFused>(x, &m[i], whole, lane, Pass2{from(x, quarter), to(io[i].y, quarter)});
    else SubSquareSums<kFused>(x, &m[i], whole, lane);
    for (index_t k = whole; k < n; ++k) {
      const T t = x[k] - m[i];
      const T square = t * t;  // its own statement: rounded before the add, as scalar_sum adds it
      lane[k - whole] += static_cast<double>(square);
    }
  }
  T r[kRows];
  HWY_UNROLL(2)
  for (int i = 0; i < kRows; ++i) r[i] = *stage(ctx, 1, sum_result(*io[i].acc));
  HWY_UNROLL(2)
  for (int i = 0; i < kRows; ++i) {
    if (ahead > 0)
      SubScaleThenTile<kOut, kFused, T, kStream>(io[i].x, &m[i], &r[i], io[i].w, io[i].c, io[i].y, n,
                                                 Pass3{from(io[i].x, 3 * quarter), to(io[i].y, 3 * quarter)});
    else
      SubScaleThenTile<kOut, kFused, T, kStream>(io[i].x, &m[i], &r[i], io[i].w, io[i].c, io[i].y, n);
  }
}

/// The three passes of kernels::resolve_norm_row in one function, each with the arithmetic of
/// the tile function the runner would call (for streamed rows the same loops with NormRowsOf's
/// prefetches, through their round callable): AccumulateLanes (resolve_sum's) and
/// SubSquareSumTile's sums over the whole 32-element rounds, the rest of the row fed element by
/// element as by_lane_rounds feeds a tail, then SubScaleThenTile. Calling them through the
/// evaluator's runner cost ~45 ns of bookkeeping per row on top of them.
template <norm_output kOut, bool kFused, bool kStream, class T>
void NormRow(const norm_row_io<T>* io, int count, index_t n, index_t ahead, norm_row_stage_fn<T> stage, void* ctx) {
  if (count == 2) NormRowsOf<kOut, kFused, kStream, 2>(io, n, ahead, stage, ctx);
  else NormRowsOf<kOut, kFused, kStream, 1>(io, n, ahead, stage, ctx);
}

template <bool kFused, bool kStream, class T>
HWY_INLINE norm_row_fn<T> ResolveNormRowF(norm_output o) {
  switch (o) {
    case norm_output::mul: return &NormRow<norm_output::mul, kFused, kStream, T>;
    case norm_output::mul_mul: return &NormRow<norm_output::mul_mul, kFused, kStream, T>;
    case norm_output::mul_add: return &NormRow<norm_output::mul_add, kFused, kStream, T>;
    default: return &NormRow<norm_output::mul_add_uniform_c, kFused, kStream, T>;
  }
}
#endif
/// The FMA policy only matters to the multiply-add outputs; the multiply ones use the
/// separate-policy instantiation.
template <class T>
HWY_INLINE norm_row_fn<T> ResolveNormRow(norm_output o, bool fused, bool stream) {
#if HWY_TARGET == HWY_SCALAR
  (void)o;
  (void)fused;
  (void)stream;
  return nullptr;
#else
  const bool muladd = o == norm_output::mul_add || o == norm_output::mul_add_uniform_c;
  if (!muladd || !fused) return stream ? ResolveNormRowF<false, true, T>(o) : ResolveNormRowF<false, false, T>(o);
#if HWY_NATIVE_FMA
  return stream ? ResolveNormRowF<true, true, T>(o) : ResolveNormRowF<true, false, T>(o);
#else
  return nullptr;  // as resolve_scale_then: the general kernel falls back to std::fma
#endif
#endif
}
norm_row_fn<float> ResolveNormRowF32(norm_output o, bool fused, bool stream) { return ResolveNormRow<float>(o, fused, stream); }
norm_row_fn<double> ResolveNormRowF64(norm_output o, bool fused, bool stream) { return ResolveNormRow<double>(o, fused, stream); }

}  // namespace HWY_NAMESPACE
}  // namespace ct::detail::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ct::detail::kernels {

HWY_EXPORT(ResolveUnarySumF32);
HWY_EXPORT(ResolveUnarySumF64);
HWY_EXPORT(ResolveNormRowF32);
HWY_EXPORT(ResolveNormRowF64);
HWY_EXPORT(ResolveSubKeepUnaryF32);
HWY_EXPORT(ResolveSubKeepUnaryF64);
HWY_EXPORT(ResolveUnaryPrefetchF32);
HWY_EXPORT(ResolveUnaryPrefetchF64);
HWY_EXPORT(ResolveSubUnaryPrefetchF32);
HWY_EXPORT(ResolveSubUnaryPrefetchF64);
HWY_EXPORT(ResolveSubUnaryF32);
HWY_EXPORT(ResolveSubUnaryF64);
HWY_EXPORT(ResolveSubUnarySumF32);
HWY_EXPORT(ResolveSubUnarySumF64);

void simd_resolve(unary_op op, bool fused, bool store, unary_sum_tile_fn<float>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveUnarySumF32)(op, fused, store);
}
void simd_resolve(unary_op op, bool fused, bool store, unary_sum_tile_fn<double>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveUnarySumF64)(op, fused, store);
}
void simd_resolve_norm_row(norm_output o, bool fused, bool stream, norm_row_fn<float>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveNormRowF32)(o, fused, stream);
}
void simd_resolve_norm_row(norm_output o, bool fused, bool stream, norm_row_fn<double>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveNormRowF64)(o, fused, stream);
}
void simd_resolve_sub_keep(unary_op op, bool fused, bool prefetch, sub_keep_unary_fn<float>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveSubKeepUnaryF32)(op, fused, prefetch);
}
void simd_resolve_sub_keep(unary_op op, bool fused, bool prefetch, sub_keep_unary_fn<double>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveSubKeepUnaryF64)(op, fused, prefetch);
}
void simd_resolve_prefetch(unary_op op, bool fused, unary_prefetch_fn<float>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveUnaryPrefetchF32)(op, fused);
}
void simd_resolve_prefetch(unary_op op, bool fused, unary_prefetch_fn<double>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveUnaryPrefetchF64)(op, fused);
}
void simd_resolve_sub_prefetch(unary_op op, bool fused, sub_unary_prefetch_fn<float>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveSubUnaryPrefetchF32)(op, fused);
}
void simd_resolve_sub_prefetch(unary_op op, bool fused, sub_unary_prefetch_fn<double>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveSubUnaryPrefetchF64)(op, fused);
}
void simd_resolve_sub(unary_op op, bool fused, binary_tile_fn<float>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveSubUnaryF32)(op, fused);
}
void simd_resolve_sub(unary_op op, bool fused, binary_tile_fn<double>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveSubUnaryF64)(op, fused);
}
void simd_resolve_sub_sum(unary_op op, bool fused, sub_unary_sum_tile_fn<float>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveSubUnarySumF32)(op, fused);
}
void simd_resolve_sub_sum(unary_op op, bool fused, sub_unary_sum_tile_fn<double>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveSubUnarySumF64)(op, fused);
}

}  // namespace ct::detail::kernels
#endif  // HWY_ONCE
