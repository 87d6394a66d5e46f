// src/kernels/simd_elementwise.cpp — the simd backend of unary, binary and muladd.
//
// Every lane is computed by the same vector code whatever its position: the partial vector at
// the end of a tile goes through a padded buffer instead of a scalar loop, so results never
// depend on where tile boundaries fall.
#include "src/kernels/fp_contract_off.hpp"  // must stay first
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/kernels/simd_elementwise.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>

#include "src/kernels/detail.hpp"
#include "src/kernels/simd_activation-inl.h"
#include "src/kernels/simd_erf-inl.h"
#include "src/kernels/simd_exp-inl.h"
#include "src/kernels/simd_lanes-inl.h"
#include "src/kernels/simd_log-inl.h"
#include "src/kernels/simd_trig-inl.h"

HWY_BEFORE_NAMESPACE();
namespace ct::detail::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// Operand source: a pointer walked lane by lane (below: one value broadcast, kUniform).
template <bool kUniform, class D>
struct Operand {
  const hn::TFromD<D>* p;
  HWY_INLINE hn::Vec<D> Whole(D d, index_t i) const { return hn::LoadU(d, p + i); }
  /// Lanes [i, i+count) into a vector, the rest zero.
  HWY_INLINE hn::Vec<D> Partial(D d, index_t i, size_t count) const {
    HWY_ALIGN hn::TFromD<D> buf[HWY_MAX_BYTES / sizeof(hn::TFromD<D>)] = {};
    for (size_t j = 0; j < count; ++j) buf[j] = p[i + static_cast<index_t>(j)];
    return hn::Load(d, buf);
  }
};
/// One value for the whole tile, broadcast once when the operand is made. Broadcasting it in
/// the loop reloaded it from memory for every vector (a store through y might change it as far
/// as the compiler knows): one load more per vector, on the load ports that bound these
/// loops — layer norm's output pass took 161 instead of 118 cycles per 1024 floats.
template <class D>
struct Operand<true, D> {
  hn::Vec<D> v;
  explicit Operand(const hn::TFromD<D>* p) : v(hn::Set(D(), p[0])) {}
  HWY_INLINE hn::Vec<D> Whole(D, index_t) const { return v; }
  HWY_INLINE hn::Vec<D> Partial(D, index_t, size_t) const { return v; }
};

/// y[i] = f(operand vectors…) for the lanes [i, i + count), count < one vector: computed as a
/// whole padded vector, so each lane gets the same code as in a full vector.
template <class D, class F, class... Ops>
HWY_INLINE void PartialVector(D d, hn::TFromD<D>* HWY_RESTRICT y, index_t i, index_t count, F f, Ops... ops) {
  const auto rest = static_cast<size_t>(count);
  HWY_ALIGN hn::TFromD<D> buf[HWY_MAX_BYTES / sizeof(hn::TFromD<D>)];
  hn::Store(f(ops.Partial(d, i, rest)...), d, buf);
  for (size_t j = 0; j < rest; ++j) y[i + static_cast<index_t>(j)] = buf[j];
}

/// y[i] = f(operand vectors…) over the tile, full vectors then one padded partial vector.
/// kStream: the full vectors from the first vector-aligned address of y on are written with
/// non-temporal stores (the lanes before it go through a padded vector too): the same values,
/// without reading y's cache lines first. The caller fences (hwy::FlushStream) before anyone
/// else reads y.
/// kPrefetch: each vector also prefetches the matching elements of `ahead` (another buffer of
/// the same type, e.g. the next row), so the prefetches are spread over the loop.
template <bool kStream, bool kPrefetch, class D, class F, class... Ops>
HWY_INLINE void ForEachVectorImpl(D d, hn::TFromD<D>* HWY_RESTRICT y, index_t n, const hn::TFromD<D>* ahead, F f,
                                  Ops... ops) {
  using T = hn::TFromD<D>;
  const index_t N = static_cast<index_t>(hn::Lanes(d));
  index_t i = 0;
  if constexpr (kStream) {
    const auto bytes = static_cast<std::uintptr_t>(N) * sizeof(T);
    const auto addr = reinterpret_cast<std::uintptr_t>(y);
    if (addr % sizeof(T) == 0) {
      const index_t head = std::min(n, static_cast<index_t>((bytes - addr % bytes) % bytes / sizeof(T)));
      if (head > 0) PartialVector(d, y, 0, head, f, ops...);
      for (i = head; i + N <= n; i += N) {
        if constexpr (kPrefetch) hwy::Prefetch(ahead + i);
        hn::Stream(f(ops.Whole(d, i)...), d, y + i);
      }
    }
  }
  for (; i + N <= n; i += N) {
    if constexpr (kPrefetch) hwy::Prefetch(ahead + i);
    hn::StoreU(f(ops.Whole(d, i)...), d, y + i);
  }
  if (i < n) {
    if constexpr (kPrefetch) hwy::Prefetch(ahead + i);
    PartialVector(d, y, i, n - i, f, ops...);
  }
  (void)ahead;  // unused without kPrefetch
}
template <bool kStream = false, class D, class F, class... Ops>
HWY_INLINE void ForEachVector(D d, hn::TFromD<D>* HWY_RESTRICT y, index_t n, F f, Ops... ops) {
  ForEachVectorImpl<kStream, false>(d, y, n, nullptr, f, ops...);
}
template <class D, class F, class... Ops>
HWY_INLINE void ForEachVectorPrefetching(D d, hn::TFromD<D>* HWY_RESTRICT y, index_t n, const void* ahead, F f,
                                         Ops... ops) {
  ForEachVectorImpl<false, true>(d, y, n, static_cast<const hn::TFromD<D>*>(ahead), f, ops...);
}

// ---- unary ---------------------------------------------------------------------------------

/// One unary function on one vector; defined once here, used by the tile and chain kernels.
template <unary_op kOp, bool kFused, class D, class V>
HWY_INLINE V UnaryOp(D d, V v) {
  using T = hn::TFromD<D>;
  if constexpr (kOp == unary_op::neg) return hn::Neg(v);
  else if constexpr (kOp == unary_op::abs) return hn::Abs(v);
  else if constexpr (kOp == unary_op::sqrt) return hn::Sqrt(v);
  else if constexpr (kOp == unary_op::rsqrt) return hn::Div(hn::Set(d, T(1)), hn::Sqrt(v));
  else if constexpr (kOp == unary_op::exp) return Exp<kFused>(d, v);
  else if constexpr (kOp == unary_op::expm1) return Expm1<kFused>(d, v);
  else if constexpr (kOp == unary_op::log) return Log<kFused>(d, v);
  else if constexpr (kOp == unary_op::log1p) return Log1p<kFused>(d, v);
  else if constexpr (kOp == unary_op::sin) return SinCos<0, kFused>(d, v);
  else if constexpr (kOp == unary_op::cos) return SinCos<1, kFused>(d, v);
  else if constexpr (kOp == unary_op::tanh) return Tanh<kFused>(d, v);
  else if constexpr (kOp == unary_op::sigmoid) return Sigmoid<kFused>(d, v);
  else if constexpr (kOp == unary_op::relu)  // x > 0 ? x : +0, NaN kept
    return hn::IfThenElse(hn::Or(hn::Gt(v, hn::Zero(d)), hn::IsNaN(v)), v, hn::Zero(d));
  else if constexpr (kOp == unary_op::gelu) return Gelu<kFused>(d, v);
  else if constexpr (kOp == unary_op::silu) return Silu<kFused>(d, v);
  else if constexpr (kOp == unary_op::square) return hn::Mul(v, v);
  else if constexpr (kOp == unary_op::reciprocal) return hn::Div(hn::Set(d, T(1)), v);
  else if constexpr (kOp == unary_op::erf) return Erf<kFused>(d, v);
  else if constexpr (kOp == unary_op::erfc) return Erfc<kFused>(d, v);
  else static_assert(kOp == unary_op::reciprocal, "a unary op of ct/expr/ops.hpp without a SIMD kernel");
}

template <class F>
HWY_INLINE decltype(auto) WithUnaryOp(unary_op op, F&& f) {
  return visit_unary_op(op, std::forward<F>(f));
}

template <bool kFused, class T>
HWY_INLINE void UnaryTile(unary_op op, const T* x, T* y, index_t n) {
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  const Operand<false, decltype(d)> in{x};
  WithUnaryOp(op, [&](auto k) { ForEachVector(d, y, n, [&](V v) { return UnaryOp<decltype(k)::value, kFused>(d, v); }, in); });
}

template <class T>
HWY_INLINE void UnaryAny(unary_op op, const T* x, T* y, index_t n, bool fused) {
  if (fused)
    UnaryTile<true>(op, x, y, n);
  else
    UnaryTile<false>(op, x, y, n);
}
void UnaryF32(unary_op op, const float* x, float* y, index_t n, bool fused) { UnaryAny(op, x, y, n, fused); }
void UnaryF64(unary_op op, const double* x, double* y, index_t n, bool fused) { UnaryAny(op, x, y, n, fused); }

// ---- binary --------------------------------------------------------------------------------

/// One binary function on one vector (not pow). min/max as in the scalar backend: a NaN
/// operand wins (a's first), ties keep a.
template <binary_op kOp, class V>
HWY_INLINE V BinaryOp(V p, V q) {
  if constexpr (kOp == binary_op::add) return hn::Add(p, q);
  else if constexpr (kOp == binary_op::sub) return hn::Sub(p, q);
  else if constexpr (kOp == binary_op::mul) return hn::Mul(p, q);
  else if constexpr (kOp == binary_op::div) return hn::Div(p, q);
  else if constexpr (kOp == binary_op::min) {
    const V m = hn::IfThenElse(hn::Lt(q, p), q, p);
    return hn::IfThenElse(hn::IsNaN(p), p, hn::IfThenElse(hn::IsNaN(q), q, m));
  } else {
    static_assert(kOp == binary_op::max, "pow is not vectorised");
    const V m = hn::IfThenElse(hn::Gt(q, p), q, p);
    return hn::IfThenElse(hn::IsNaN(p), p, hn::IfThenElse(hn::IsNaN(q), q, m));
  }
}

template <class F>
HWY_INLINE void WithBinaryOp(binary_op op, F&& f) {
  using B = binary_op;
  switch (op) {
    case B::add: return f(std::integral_constant<B, B::add>{});
    case B::sub: return f(std::integral_constant<B, B::sub>{});
    case B::mul: return f(std::integral_constant<B, B::mul>{});
    case B::div: return f(std::integral_constant<B, B::div>{});
    case B::min: return f(std::integral_constant<B, B::min>{});
    case B::max: return f(std::integral_constant<B, B::max>{});
    case B::pow: return;  // not vectorised: handled by the caller
  }
}

template <bool kAU, bool kBU, class T>
HWY_INLINE void BinaryTile(binary_op op, const T* a, const T* b, T* y, index_t n) {
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  const Operand<kAU, decltype(d)> pa{a};
  const Operand<kBU, decltype(d)> pb{b};
  WithBinaryOp(op, [&](auto k) { ForEachVector(d, y, n, [](V p, V q) { return BinaryOp<decltype(k)::value>(p, q); }, pa, pb); });
}

template <class T>
HWY_INLINE void BinaryAny(binary_op op, const T* a, bool au, const T* b, bool bu, T* y, index_t n) {
  if (au && bu) return BinaryTile<true, true>(op, a, b, y, n);
  if (au) return BinaryTile<true, false>(op, a, b, y, n);
  if (bu) return BinaryTile<false, true>(op, a, b, y, n);
  BinaryTile<false, false>(op, a, b, y, n);
}
void BinaryF32(binary_op op, const float* a, bool au, const float* b, bool bu, float* y, index_t n) {
  BinaryAny(op, a, au, b, bu, y, n);
}
void BinaryF64(binary_op op, const double* a, bool au, const double* b, bool bu, double* y, index_t n) {
  BinaryAny(op, a, au, b, bu, y, n);
}

// ---- muladd --------------------------------------------------------------------------------

template <bool kFused, bool kAU, bool kBU, bool kCU, class T, bool kStream = false>
HWY_INLINE void MulAddTile(const T* a, const T* b, const T* c, T* y, index_t n) {
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  ForEachVector<kStream>(
      d, y, n, [](V p, V q, V r) { return Fma<kFused>(p, q, r); }, Operand<kAU, decltype(d)>{a},
      Operand<kBU, decltype(d)>{b}, Operand<kCU, decltype(d)>{c});
}

template <bool kFused, bool kAU, bool kBU, class T>
HWY_INLINE void MulAddC(const T* a, const T* b, const T* c, bool cu, T* y, index_t n) {
  if (cu)
    MulAddTile<kFused, kAU, kBU, true>(a, b, c, y, n);
  else
    MulAddTile<kFused, kAU, kBU, false>(a, b, c, y, n);
}

template <bool kFused, class T>
HWY_INLINE void MulAddAB(const T* a, bool au, const T* b, bool bu, const T* c, bool cu, T* y, index_t n) {
  if (au && bu) return MulAddC<kFused, true, true>(a, b, c, cu, y, n);
  if (au) return MulAddC<kFused, true, false>(a, b, c, cu, y, n);
  if (bu) return MulAddC<kFused, false, true>(a, b, c, cu, y, n);
  MulAddC<kFused, false, false>(a, b, c, cu, y, n);
}

/// Returns false when the target has no hardware FMA and fused was asked for: hn::MulAdd would
/// then round twice, so the caller uses std::fma instead.
template <class T>
HWY_INLINE bool MulAddAny(const T* a, bool au, const T* b, bool bu, const T* c, bool cu, T* y, index_t n,
                          bool fused) {
  if (fused) {
#if HWY_NATIVE_FMA
    MulAddAB<true>(a, au, b, bu, c, cu, y, n);
    return true;
#else
    return false;
#endif
  }
  MulAddAB<false>(a, au, b, bu, c, cu, y, n);
  return true;
}
bool MulAddF32(const float* a, bool au, const float* b, bool bu, const float* c, bool cu, float* y, index_t n,
               bool fused) {
  return MulAddAny(a, au, b, bu, c, cu, y, n, fused);
}
bool MulAddF64(const double* a, bool au, const double* b, bool bu, const double* c, bool cu, double* y,
               index_t n, bool fused) {
  return MulAddAny(a, au, b, bu, c, cu, y, n, fused);
}

// ---- direct tile functions (resolve_*) -----------------------------------------------------
// One compiled function per operation and uniform flags, so a caller can skip the switches.

template <unary_op kOp, bool kFused, class T>
void UnaryOpTile(const T* x, T* y, index_t n) {
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  ForEachVector(d, y, n, [&](V v) { return UnaryOp<kOp, kFused>(d, v); }, Operand<false, decltype(d)>{x});
}

template <bool kFused, class T>
HWY_INLINE unary_tile_fn<T> ResolveUnary(unary_op op) {
  unary_tile_fn<T> f = nullptr;
  WithUnaryOp(op, [&](auto k) { f = &UnaryOpTile<decltype(k)::value, kFused, T>; });
  return f;
}
unary_tile_fn<float> ResolveUnaryF32(unary_op op, bool fused) {
  return fused ? ResolveUnary<true, float>(op) : ResolveUnary<false, float>(op);
}
unary_tile_fn<double> ResolveUnaryF64(unary_op op, bool fused) {
  return fused ? ResolveUnary<true, double>(op) : ResolveUnary<false, double>(op);
}

template <binary_op kOp, bool kAU, bool kBU, class T, bool kStream>
void BinaryOpTile(const T* a, const T* b, T* y, index_t n) {
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  ForEachVector<kStream>(d, y, n, [](V p, V q) { return BinaryOp<kOp>(p, q); }, Operand<kAU, decltype(d)>{a},
                Operand<kBU, decltype(d)>{b});
}

template <bool kAU, bool kBU, class T>
HWY_INLINE binary_tile_fn<T> ResolveBinaryU(binary_op op, bool stream) {
  binary_tile_fn<T> f = nullptr;  // stays null for pow
  WithBinaryOp(op, [&](auto k) {
    f = stream ? &BinaryOpTile<decltype(k)::value, kAU, kBU, T, true> : &BinaryOpTile<decltype(k)::value, kAU, kBU, T, false>;
  });
  return f;
}
template <class T>
HWY_INLINE binary_tile_fn<T> ResolveBinary(binary_op op, bool au, bool bu, bool stream) {
  if (au && bu) return ResolveBinaryU<true, true, T>(op, stream);
  if (au) return ResolveBinaryU<true, false, T>(op, stream);
  if (bu) return ResolveBinaryU<false, true, T>(op, stream);
  return ResolveBinaryU<false, false, T>(op, stream);
}
binary_tile_fn<float> ResolveBinaryF32(binary_op op, bool au, bool bu, bool stream) {
  return ResolveBinary<float>(op, au, bu, stream);
}
binary_tile_fn<double> ResolveBinaryF64(binary_op op, bool au, bool bu, bool stream) {
  return ResolveBinary<double>(op, au, bu, stream);
}

template <bool kFused, bool kAU, bool kBU, bool kCU, class T, bool kStream>
void MulAddOpTile(const T* a, const T* b, const T* c, T* y, index_t n) {
  MulAddTile<kFused, kAU, kBU, kCU, T, kStream>(a, b, c, y, n);
}
template <bool kFused, class T, bool kStream>
HWY_INLINE muladd_tile_fn<T> ResolveMulAddF(bool au, bool bu, bool cu) {
  const int key = (au ? 4 : 0) + (bu ? 2 : 0) + (cu ? 1 : 0);
  switch (key) {
    case 0: return &MulAddOpTile<kFused, false, false, false, T, kStream>;
    case 1: return &MulAddOpTile<kFused, false, false, true, T, kStream>;
    case 2: return &MulAddOpTile<kFused, false, true, false, T, kStream>;
    case 3: return &MulAddOpTile<kFused, false, true, true, T, kStream>;
    case 4: return &MulAddOpTile<kFused, true, false, false, T, kStream>;
    case 5: return &MulAddOpTile<kFused, true, false, true, T, kStream>;
    case 6: return &MulAddOpTile<kFused, true, true, false, T, kStream>;
    default: return &MulAddOpTile<kFused, true, true, true, T, kStream>;
  }
}
template <class T>
HWY_INLINE muladd_tile_fn<T> ResolveMulAdd(bool au, bool bu, bool cu, bool fused, bool stream) {
  if (!fused) return stream ? ResolveMulAddF<false, T, true>(au, bu, cu) : ResolveMulAddF<false, T, false>(au, bu, cu);
#if HWY_NATIVE_FMA
  return stream ? ResolveMulAddF<true, T, true>(au, bu, cu) : ResolveMulAddF<true, T, false>(au, bu, cu);
#else
  return nullptr;  // the general kernel falls back to std::fma
#endif
}
muladd_tile_fn<float> ResolveMulAddF32(bool au, bool bu, bool cu, bool fused, bool stream) {
  return ResolveMulAdd<float>(au, bu, cu, fused, stream);
}
muladd_tile_fn<double> ResolveMulAddF64(bool au, bool bu, bool cu, bool fused, bool stream) {
  return ResolveMulAdd<double>(au, bu, cu, fused, stream);
}

// ---- a scaling by one value before a multiply or multiply-add (resolve_scale_then) -----------

/// y = (x * u[0]) * w  or  (x * u[0]) * w + c: hn::Mul as BinaryOp<mul>, then hn::Mul or
/// Fma<kFused> as the second tile function would, lane by lane: bitwise the two tile passes.
template <bool kMulAdd, bool kFused, bool kCU, class T, bool kStream>
void ScaleThenTile(const T* x, const T* u, const T* w, const T* c, T* y, index_t n) {
  const hn::ScalableTag<T> d;
  using D = decltype(d);
  using V = hn::Vec<D>;
  if constexpr (kMulAdd)
    ForEachVector<kStream>(
        d, y, n, [](V p, V q, V r, V t) { return Fma<kFused>(hn::Mul(p, q), r, t); }, Operand<false, D>{x},
        Operand<true, D>{u}, Operand<false, D>{w}, Operand<kCU, D>{c});
  else
    ForEachVector<kStream>(d, y, n, [](V p, V q, V r) { return hn::Mul(hn::Mul(p, q), r); }, Operand<false, D>{x},
                           Operand<true, D>{u}, Operand<false, D>{w});
}

template <bool kMulAdd, bool kFused, class T>
HWY_INLINE scale_then_tile_fn<T> ResolveScaleThenF(bool cu, bool stream) {
  if (cu) return stream ? &ScaleThenTile<kMulAdd, kFused, true, T, true> : &ScaleThenTile<kMulAdd, kFused, true, T, false>;
  return stream ? &ScaleThenTile<kMulAdd, kFused, false, T, true> : &ScaleThenTile<kMulAdd, kFused, false, T, false>;
}
template <class T>
HWY_INLINE scale_then_tile_fn<T> ResolveScaleThen(bool muladd, bool cu, bool fused, bool stream) {
  if (!muladd) return ResolveScaleThenF<false, false, T>(false, stream);
  if (!fused) return ResolveScaleThenF<true, false, T>(cu, stream);
#if HWY_NATIVE_FMA
  return ResolveScaleThenF<true, true, T>(cu, stream);
#else
  return nullptr;  // as ResolveMulAdd: the general kernel would use std::fma
#endif
}
scale_then_tile_fn<float> ResolveScaleThenF32(bool muladd, bool cu, bool fused, bool stream) {
  return ResolveScaleThen<float>(muladd, cu, fused, stream);
}
scale_then_tile_fn<double> ResolveScaleThenF64(bool muladd, bool cu, bool fused, bool stream) {
  return ResolveScaleThen<double>(muladd, cu, fused, stream);
}

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
/// of it is summed (resolve_sub_unary_sum). The lanes are AccumulateLanes' (simd_reduce.cpp):
/// one double vector per group of consecutive lanes, each fed in stream order, so they end
/// bitwise as the separate tile passes followed by a lane-wise sum would leave them.
template <unary_op kOp, bool kFused, bool kStore, bool kSub, class T>
HWY_INLINE void UnarySumLoop(const T* HWY_RESTRICT x, T* HWY_RESTRICT y, index_t n, double* HWY_RESTRICT lane,
                             bool fresh, const T* u) {
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
/// The three passes of kernels::resolve_norm_row in one function, each the tile function the
/// runner would call: AccumulateLanes (resolve_sum's) and SubSquareSumTile over the whole
/// 32-element rounds, the rest of the row fed element by element as by_lane_rounds feeds a
/// tail, then ScaleThenTile or BinaryOpTile's multiply. Calling them through the evaluator's
/// runner cost ~45 ns of bookkeeping per row on top of them.
template <norm_output kOut, bool kFused, bool kStream, class T>
void NormRow(const T* HWY_RESTRICT x, T* HWY_RESTRICT d, T* HWY_RESTRICT y, const T* w, const T* c, index_t n,
             bool streamed, norm_row_stage_fn<T> stage, void* ctx, lane_accumulator& acc) {
  const index_t whole = n / reduce_lanes * reduce_lanes;
  if (streamed) AccumulateLanes<false, true>(acc.lane, x, whole, true);
  else AccumulateLanes<false, false>(acc.lane, x, whole, true);
  for (index_t k = whole; k < n; ++k) acc.lane[k - whole] += static_cast<double>(x[k]);
  // sum_result's scalar tree: a vector tree (ConcatEven/ConcatOdd pairs, the same additions)
  // made layer norm of 512x1024 7% slower — its shuffles lengthen the chain the next pass waits on.
  const T m = *stage(ctx, 0, sum_result(acc));
  SubSquareSumTile<kFused, T>(x, &m, d, whole, acc.lane, true);
  for (index_t k = whole; k < n; ++k) {
    const T t = x[k] - m;
    d[k] = t;
    const T square = t * t;  // its own statement: rounded before the add, as scalar_sum adds it
    acc.lane[k - whole] += static_cast<double>(square);
  }
  const T* r = stage(ctx, 1, sum_result(acc));
  // the tile functions resolve_binary and resolve_scale_then give the runner's output pass
  if constexpr (kOut == norm_output::mul)
    BinaryOpTile<binary_op::mul, false, true, T, kStream>(d, r, y, n);
  else if constexpr (kOut == norm_output::mul_mul)
    ScaleThenTile<false, false, false, T, kStream>(d, r, w, nullptr, y, n);
  else
    ScaleThenTile<true, kFused, kOut == norm_output::mul_add_uniform_c, T, kStream>(d, r, w, c, y, n);
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

HWY_EXPORT(UnaryF32);
HWY_EXPORT(UnaryF64);
HWY_EXPORT(BinaryF32);
HWY_EXPORT(BinaryF64);
HWY_EXPORT(MulAddF32);
HWY_EXPORT(MulAddF64);
HWY_EXPORT(ResolveUnaryF32);
HWY_EXPORT(ResolveUnaryF64);
HWY_EXPORT(ResolveBinaryF32);
HWY_EXPORT(ResolveBinaryF64);
HWY_EXPORT(ResolveMulAddF32);
HWY_EXPORT(ResolveMulAddF64);
HWY_EXPORT(ResolveUnarySumF32);
HWY_EXPORT(ResolveUnarySumF64);
HWY_EXPORT(ResolveScaleThenF32);
HWY_EXPORT(ResolveNormRowF32);
HWY_EXPORT(ResolveNormRowF64);
HWY_EXPORT(ResolveScaleThenF64);
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

void simd_unary(unary_op op, const float* x, float* y, index_t n, bool fused) {
  HWY_DYNAMIC_DISPATCH(UnaryF32)(op, x, y, n, fused);
}
void simd_unary(unary_op op, const double* x, double* y, index_t n, bool fused) {
  HWY_DYNAMIC_DISPATCH(UnaryF64)(op, x, y, n, fused);
}

// pow is not vectorised (no simd pow meets std::pow's accuracy cheaply): it runs the scalar loop.
void simd_binary(binary_op op, const float* a, bool au, const float* b, bool bu, float* y, index_t n) {
  if (op == binary_op::pow) return scalar_binary(op, a, au, b, bu, y, n);
  HWY_DYNAMIC_DISPATCH(BinaryF32)(op, a, au, b, bu, y, n);
}
void simd_binary(binary_op op, const double* a, bool au, const double* b, bool bu, double* y, index_t n) {
  if (op == binary_op::pow) return scalar_binary(op, a, au, b, bu, y, n);
  HWY_DYNAMIC_DISPATCH(BinaryF64)(op, a, au, b, bu, y, n);
}

void simd_muladd(const float* a, bool au, const float* b, bool bu, const float* c, bool cu, float* y, index_t n,
                 bool fused) {
  if (!HWY_DYNAMIC_DISPATCH(MulAddF32)(a, au, b, bu, c, cu, y, n, fused))
    scalar_muladd(a, au, b, bu, c, cu, y, n, fused);
}
void simd_muladd(const double* a, bool au, const double* b, bool bu, const double* c, bool cu, double* y,
                 index_t n, bool fused) {
  if (!HWY_DYNAMIC_DISPATCH(MulAddF64)(a, au, b, bu, c, cu, y, n, fused))
    scalar_muladd(a, au, b, bu, c, cu, y, n, fused);
}

void simd_resolve(unary_op op, bool fused, unary_tile_fn<float>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveUnaryF32)(op, fused);
}
void simd_resolve(unary_op op, bool fused, unary_tile_fn<double>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveUnaryF64)(op, fused);
}
void simd_resolve(binary_op op, bool au, bool bu, bool stream, binary_tile_fn<float>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveBinaryF32)(op, au, bu, stream);
}
void simd_resolve(binary_op op, bool au, bool bu, bool stream, binary_tile_fn<double>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveBinaryF64)(op, au, bu, stream);
}
void simd_resolve(bool au, bool bu, bool cu, bool fused, bool stream, muladd_tile_fn<float>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveMulAddF32)(au, bu, cu, fused, stream);
}
void simd_resolve(bool au, bool bu, bool cu, bool fused, bool stream, muladd_tile_fn<double>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveMulAddF64)(au, bu, cu, fused, stream);
}
void simd_resolve(unary_op op, bool fused, bool store, unary_sum_tile_fn<float>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveUnarySumF32)(op, fused, store);
}
void simd_resolve(unary_op op, bool fused, bool store, unary_sum_tile_fn<double>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveUnarySumF64)(op, fused, store);
}
void simd_resolve_scale_then(bool muladd, bool cu, bool fused, bool stream, scale_then_tile_fn<float>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveScaleThenF32)(muladd, cu, fused, stream);
}
void simd_resolve_scale_then(bool muladd, bool cu, bool fused, bool stream, scale_then_tile_fn<double>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveScaleThenF64)(muladd, cu, fused, stream);
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
