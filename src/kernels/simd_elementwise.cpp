// src/kernels/simd_elementwise.cpp — the simd backend of unary, binary and muladd, and the
// direct tile functions resolve_unary / binary / muladd / scale_then hand out: one pass, one
// operation per tile. The vector loop and the per-op vector functions live in
// simd_elementwise-inl.h (shared with simd_fused.cpp, whose kernels must match these bitwise);
// the kernels that fuse several passes into one are in simd_fused.cpp.
#include "src/kernels/fp_contract_off.hpp"  // must stay first
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/kernels/simd_elementwise.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "src/kernels/detail.hpp"
#include "src/kernels/simd_elementwise-inl.h"
#include "src/kernels/simd_poly-inl.h"

HWY_BEFORE_NAMESPACE();
namespace ct::detail::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ---- unary ---------------------------------------------------------------------------------

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
HWY_EXPORT(ResolveScaleThenF32);
HWY_EXPORT(ResolveScaleThenF64);

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
void simd_resolve_scale_then(bool muladd, bool cu, bool fused, bool stream, scale_then_tile_fn<float>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveScaleThenF32)(muladd, cu, fused, stream);
}
void simd_resolve_scale_then(bool muladd, bool cu, bool fused, bool stream, scale_then_tile_fn<double>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveScaleThenF64)(muladd, cu, fused, stream);
}

}  // namespace ct::detail::kernels
#endif  // HWY_ONCE
