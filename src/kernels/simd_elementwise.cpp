// src/kernels/simd_elementwise.cpp — the simd backend of unary, binary and muladd.
//
// Every lane is computed by the same vector code whatever its position: the partial vector at
// the end of a tile goes through a padded buffer instead of a scalar loop, so results never
// depend on where tile boundaries fall.
#include "src/kernels/fp_contract_off.hpp"  // must stay first
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/kernels/simd_elementwise.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "src/kernels/detail.hpp"
#include "src/kernels/simd_activation-inl.h"
#include "src/kernels/simd_exp-inl.h"
#include "src/kernels/simd_log-inl.h"
#include "src/kernels/simd_trig-inl.h"

HWY_BEFORE_NAMESPACE();
namespace ct::detail::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// Operand source: a pointer walked lane by lane, or one value broadcast (uniform).
template <bool kUniform, class D>
struct Operand {
  const hn::TFromD<D>* p;
  HWY_INLINE hn::Vec<D> Whole(D d, index_t i) const {
    if constexpr (kUniform)
      return hn::Set(d, p[0]);
    else
      return hn::LoadU(d, p + i);
  }
  /// Lanes [i, i+count) into a vector, the rest zero.
  HWY_INLINE hn::Vec<D> Partial(D d, index_t i, size_t count) const {
    if constexpr (kUniform) {
      return hn::Set(d, p[0]);
    } else {
      HWY_ALIGN hn::TFromD<D> buf[HWY_MAX_BYTES / sizeof(hn::TFromD<D>)] = {};
      for (size_t j = 0; j < count; ++j) buf[j] = p[i + static_cast<index_t>(j)];
      return hn::Load(d, buf);
    }
  }
};

/// y[i] = f(operand vectors…) over the tile, full vectors then one padded partial vector.
template <class D, class F, class... Ops>
HWY_INLINE void ForEachVector(D d, hn::TFromD<D>* HWY_RESTRICT y, index_t n, F f, Ops... ops) {
  const index_t N = static_cast<index_t>(hn::Lanes(d));
  index_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(f(ops.Whole(d, i)...), d, y + i);
  if (i < n) {
    const size_t rest = static_cast<size_t>(n - i);
    HWY_ALIGN hn::TFromD<D> buf[HWY_MAX_BYTES / sizeof(hn::TFromD<D>)];
    hn::Store(f(ops.Partial(d, i, rest)...), d, buf);
    for (size_t j = 0; j < rest; ++j) y[i + static_cast<index_t>(j)] = buf[j];
  }
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
  else return hn::Div(hn::Set(d, T(1)), v);  // reciprocal
}

/// Calls f(std::integral_constant<unary_op, op>) for the runtime op.
template <class F>
HWY_INLINE decltype(auto) WithUnaryOp(unary_op op, F&& f) {
  using U = unary_op;
  switch (op) {
#define CT_UNARY_CASE(name) \
  case U::name: return f(std::integral_constant<U, U::name>{});
    CT_UNARY_CASE(neg) CT_UNARY_CASE(abs) CT_UNARY_CASE(sqrt) CT_UNARY_CASE(rsqrt) CT_UNARY_CASE(exp)
    CT_UNARY_CASE(expm1) CT_UNARY_CASE(log) CT_UNARY_CASE(log1p) CT_UNARY_CASE(sin) CT_UNARY_CASE(cos)
    CT_UNARY_CASE(tanh) CT_UNARY_CASE(sigmoid) CT_UNARY_CASE(relu) CT_UNARY_CASE(gelu) CT_UNARY_CASE(silu)
    CT_UNARY_CASE(square)
#undef CT_UNARY_CASE
    case U::reciprocal: break;
  }
  return f(std::integral_constant<U, U::reciprocal>{});
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

template <bool kFused, bool kAU, bool kBU, bool kCU, class T>
HWY_INLINE void MulAddTile(const T* a, const T* b, const T* c, T* y, index_t n) {
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  ForEachVector(
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

}  // namespace ct::detail::kernels
#endif  // HWY_ONCE
