// src/kernels/simd_elementwise.cpp — the simd backend of binary and muladd, and the direct tile
// functions resolve_binary / muladd / scale_then hand out: one pass, one operation per tile
// (unary: simd_unary.cpp). simd_binary / simd_muladd call the functions the resolvers return.
// The vector loop and the per-op vector functions live in simd_elementwise-inl.h (shared with
// simd_fused.cpp, whose kernels must match these bitwise: its layer-norm row forms the same
// multiplies and adds as ScaleThenTile after its own subtraction); the kernels that fuse
// several passes into one are in simd_fused.cpp.
#include "src/kernels/fp_contract_off.hpp"  // must stay first
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/kernels/simd_elementwise.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <bit>
#include <hwy/highway.h>

#include "src/kernels/detail.hpp"
#include "src/kernels/simd_elementwise-inl.h"

HWY_BEFORE_NAMESPACE();
namespace ct::detail::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ---- direct tile functions (resolve_*) -----------------------------------------------------
// One compiled function per operation and uniform flags, so a caller can skip the switches.

template <binary_op kOp, bool kAU, bool kBU, class T, bool kStream>
void BinaryOpTile(const T* a, const T* b, T* y, index_t n) {
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  ForEachVector<kStream>(d, y, n, [](V p, V q) { return BinaryOp<kOp>(p, q); }, Operand<kAU, decltype(d)>{a},
                Operand<kBU, decltype(d)>{b});
}

#if HWY_TARGET != HWY_SCALAR && HWY_NATIVE_FMA
/// The ranges within which DivByUniformTile's reciprocal steps give a / b exactly rounded:
/// b's magnitude within [1/b_range, b_range], every nonzero |a| within [a_low, a_high]. Then
/// 1/b is normal, every quotient is normal (float: |a/b| >= 2^-124; double 2^-900), and the
/// remainder a - b·q of a quotient within an ulp is exactly representable (it is when
/// exponent(b) + exponent(q) >= emin + p - 1: float -103, double -970; here about
/// exponent(a) >= -101 / -701), the conditions of Markstein's theorem below.
template <class T>
struct uniform_division;
template <>
struct uniform_division<float> {
  static constexpr float b_range = 0x1p24f, a_low = 0x1p-100f, a_high = 0x1p100f;
};
template <>
struct uniform_division<double> {
  static constexpr double b_range = 0x1p200, a_low = 0x1p-700, a_high = 0x1p700;
};

/// Whether every element of a[0..n) is ±0 or has a magnitude within [a_low, a_high] (no
/// infinity, NaN or subnormal): one pass over the tile's bit patterns, |a| - 1 (0 wraps to the
/// largest unsigned and the least signed value) under an unsigned minimum and a signed maximum.
template <class T>
HWY_INLINE bool DividendsInRange(const T* HWY_RESTRICT a, index_t n) {
  using L = uniform_division<T>;
  const hn::ScalableTag<T> d;
  const hn::RebindToUnsigned<decltype(d)> du;
  const hn::RebindToSigned<decltype(d)> di;
  using U = hn::TFromD<decltype(du)>;
  using I = hn::TFromD<decltype(di)>;
  constexpr U kMagnitude = static_cast<U>(~U(0) >> 1), kZero = static_cast<U>(~U(0));  // kZero: |0| - 1
  const U low = std::bit_cast<U>(L::a_low) - 1, high = std::bit_cast<U>(L::a_high) - 1;
  const auto mask = hn::Set(du, kMagnitude), one = hn::Set(du, U(1));
  auto lo = hn::Set(du, kZero);
  auto hi = hn::Set(di, I(-1));
  const index_t N = static_cast<index_t>(hn::Lanes(d));
  index_t i = 0;
  for (; i + N <= n; i += N) {
    const auto t = hn::Sub(hn::And(hn::BitCast(du, hn::LoadU(d, a + i)), mask), one);
    lo = hn::Min(lo, t);
    hi = hn::Max(hi, hn::BitCast(di, t));
  }
  bool ok = hn::GetLane(hn::MinOfLanes(du, lo)) >= low && hn::GetLane(hn::MaxOfLanes(di, hi)) <= static_cast<I>(high);
  for (; i < n; ++i) {
    const U t = static_cast<U>((std::bit_cast<U>(a[i]) & kMagnitude) - 1);
    ok = ok && (t == kZero || (t >= low && t <= high));
  }
  return ok;
}

/// y = a / b[0] without a division per vector (vdivps is ~10 cycles a vector on the Xeon guest:
/// softmax's output pass): y = RN(1/b) once, then q = RN(a·y), r = a - b·q (exact, one FMA) and
/// q' = RN(q + r·y), which Markstein's theorem makes the correctly rounded a / b when y is the
/// correctly rounded reciprocal, q is within an ulp of a/b (it is: |a·y - a/b| < 1 ulp before
/// q's own rounding, so q is one of the two floats around a/b) and nothing underflows or
/// overflows (uniform_division's ranges; tiles with a value outside them divide). The same bits
/// as the division (tests/kernels/test_division.cpp: every float mantissa of a against a set of
/// divisors on every target; a one-off run checked 50064 divisors, all 2^23 mantissas each).
/// A zero a: r is +0, so q' is +0 for a -0 whose quotient is -0; q's sign is put back (q' has
/// it already otherwise).
template <class T, bool kStream>
void DivByUniformTile(const T* a, const T* b, T* y, index_t n) {
  using L = uniform_division<T>;
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  const T divisor = b[0];
  const T size = divisor < 0 ? -divisor : divisor;
  if (!(size >= T(1) / L::b_range && size <= L::b_range) || !DividendsInRange(a, n)) {
    BinaryOpTile<binary_op::div, false, true, T, kStream>(a, b, y, n);
    return;
  }
  const T reciprocal = T(1) / divisor;
  const V by = hn::Set(d, divisor), ry = hn::Set(d, reciprocal), sign = hn::SignBit(d);
  ForEachVector<kStream>(
      d, y, n,
      [&](V p) {
        const V q = hn::Mul(p, ry);
        const V r = hn::NegMulAdd(q, by, p);  // p - q·b, exact
        return hn::Or(hn::MulAdd(r, ry, q), hn::And(q, sign));
      },
      Operand<false, decltype(d)>{a});
}
#endif

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

template <bool kAU, bool kBU, class T>
HWY_INLINE binary_tile_fn<T> ResolveBinaryU(binary_op op, bool stream) {
#if HWY_TARGET != HWY_SCALAR && HWY_NATIVE_FMA
  if constexpr (!kAU && kBU)
    if (op == binary_op::div) return stream ? &DivByUniformTile<T, true> : &DivByUniformTile<T, false>;
#endif
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
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  ForEachVector<kStream>(
      d, y, n, [](V p, V q, V r) { return Fma<kFused>(p, q, r); }, Operand<kAU, decltype(d)>{a},
      Operand<kBU, decltype(d)>{b}, Operand<kCU, decltype(d)>{c});
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

}  // namespace HWY_NAMESPACE
}  // namespace ct::detail::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ct::detail::kernels {

HWY_EXPORT(ResolveBinaryF32);
HWY_EXPORT(ResolveBinaryF64);
HWY_EXPORT(ResolveMulAddF32);
HWY_EXPORT(ResolveMulAddF64);
HWY_EXPORT(ResolveScaleThenF32);
HWY_EXPORT(ResolveScaleThenF64);

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
void simd_resolve_scale_then(bool muladd, bool cu, bool fused, bool stream, scale_then_tile_fn<float>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveScaleThenF32)(muladd, cu, fused, stream);
}
void simd_resolve_scale_then(bool muladd, bool cu, bool fused, bool stream, scale_then_tile_fn<double>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveScaleThenF64)(muladd, cu, fused, stream);
}

// pow is not vectorised (no simd pow meets std::pow's accuracy cheaply): it runs the scalar loop.
// The others call the very tile function resolve_binary / resolve_muladd hand out.
template <class T>
void binary_through_resolver(binary_op op, const T* a, bool au, const T* b, bool bu, T* y, index_t n) {
  if (op == binary_op::pow) return scalar_binary(op, a, au, b, bu, y, n);
  binary_tile_fn<T> f = nullptr;
  simd_resolve(op, au, bu, false, f);
  f(a, b, y, n);
}
void simd_binary(binary_op op, const float* a, bool au, const float* b, bool bu, float* y, index_t n) {
  binary_through_resolver(op, a, au, b, bu, y, n);
}
void simd_binary(binary_op op, const double* a, bool au, const double* b, bool bu, double* y, index_t n) {
  binary_through_resolver(op, a, au, b, bu, y, n);
}

// No tile function when fused is asked for on a target without hardware FMA (hn::MulAdd would
// round twice): std::fma in the scalar loop then.
template <class T>
void muladd_through_resolver(const T* a, bool au, const T* b, bool bu, const T* c, bool cu, T* y, index_t n,
                             bool fused) {
  muladd_tile_fn<T> f = nullptr;
  simd_resolve(au, bu, cu, fused, false, f);
  if (f == nullptr) return scalar_muladd(a, au, b, bu, c, cu, y, n, fused);
  f(a, b, c, y, n);
}
void simd_muladd(const float* a, bool au, const float* b, bool bu, const float* c, bool cu, float* y, index_t n,
                 bool fused) {
  muladd_through_resolver(a, au, b, bu, c, cu, y, n, fused);
}
void simd_muladd(const double* a, bool au, const double* b, bool bu, const double* c, bool cu, double* y,
                 index_t n, bool fused) {
  muladd_through_resolver(a, au, b, bu, c, cu, y, n, fused);
}

}  // namespace ct::detail::kernels
#endif  // HWY_ONCE
