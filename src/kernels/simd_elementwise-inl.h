// src/kernels/simd_elementwise-inl.h — the vector loop and the per-op vector functions that
// the simd elementwise kernels (simd_elementwise.cpp) and the fused ones (simd_fused.cpp)
// share, so both run literally the same code for a lane: a fused kernel is bitwise the
// separate tile passes it replaces only because its lanes go through these same functions.
//
// Per-target header (included once per Highway target through foreach_target.h).
#if defined(CT_KERNELS_SIMD_ELEMENTWISE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CT_KERNELS_SIMD_ELEMENTWISE_INL_H_
#undef CT_KERNELS_SIMD_ELEMENTWISE_INL_H_
#else
#define CT_KERNELS_SIMD_ELEMENTWISE_INL_H_
#endif

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "src/kernels/kernels.hpp"
#include "src/kernels/simd_activation-inl.h"
#include "src/kernels/simd_erf-inl.h"
#include "src/kernels/simd_exp-inl.h"
#include "src/kernels/simd_log-inl.h"
#include "src/kernels/simd_poly-inl.h"
#include "src/kernels/simd_trig-inl.h"

HWY_BEFORE_NAMESPACE();
namespace ct::detail::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ---- the vector loop -----------------------------------------------------------------------
// Every lane is computed by the same vector code whatever its position: the partial vector at
// the end of a tile goes through a padded buffer instead of a scalar loop, so results never
// depend on where tile boundaries fall.

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
/// each(i): called before the vector at i (and before the padded partial one), for loops that
/// spread prefetches over their vectors (ForEachVectorPrefetching, the norms' output pass).
template <bool kStream, class D, class Each, class F, class... Ops>
HWY_INLINE void ForEachVectorImpl(D d, hn::TFromD<D>* HWY_RESTRICT y, index_t n, Each each, F f, Ops... ops) {
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
        each(i);
        hn::Stream(f(ops.Whole(d, i)...), d, y + i);
      }
    }
  }
  for (; i + N <= n; i += N) {
    each(i);
    hn::StoreU(f(ops.Whole(d, i)...), d, y + i);
  }
  if (i < n) {
    each(i);
    PartialVector(d, y, i, n - i, f, ops...);
  }
}
/// The per-vector callable of a loop that issues nothing of its own.
struct NoEach {
  HWY_INLINE void operator()(index_t) const {}
};
template <bool kStream = false, class D, class F, class... Ops>
HWY_INLINE void ForEachVector(D d, hn::TFromD<D>* HWY_RESTRICT y, index_t n, F f, Ops... ops) {
  ForEachVectorImpl<kStream>(d, y, n, NoEach{}, f, ops...);
}
/// ForEachVector where each vector also prefetches the matching elements of `ahead` (another
/// buffer of the same type, e.g. the next row), so the prefetches are spread over the loop.
template <class D, class F, class... Ops>
HWY_INLINE void ForEachVectorPrefetching(D d, hn::TFromD<D>* HWY_RESTRICT y, index_t n, const void* ahead, F f,
                                         Ops... ops) {
  const auto* at = static_cast<const hn::TFromD<D>*>(ahead);
  ForEachVectorImpl<false>(d, y, n, [at](index_t i) { hwy::Prefetch(at + i); }, f, ops...);
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

}  // namespace HWY_NAMESPACE
}  // namespace ct::detail::kernels
HWY_AFTER_NAMESPACE();

#endif  // include guard
