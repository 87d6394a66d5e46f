// src/kernels/simd_unary.cpp — the simd backend of unary and the tile functions resolve_unary
// hands out: one compiled loop per operation, type and FMA policy. simd_unary calls the same
// function resolve_unary returns, so both give the same bits and each loop is compiled once.
// Its own file (not simd_elementwise.cpp): the math functions are most of the compile time, and
// two files build in parallel.
#include "src/kernels/fp_contract_off.hpp"  // must stay first
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/kernels/simd_unary.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "src/kernels/detail.hpp"
#include "src/kernels/simd_elementwise-inl.h"
#include "src/kernels/simd_poly-inl.h"

HWY_BEFORE_NAMESPACE();
namespace ct::detail::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

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

}  // namespace HWY_NAMESPACE
}  // namespace ct::detail::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ct::detail::kernels {

HWY_EXPORT(ResolveUnaryF32);
HWY_EXPORT(ResolveUnaryF64);

// Every unary_op has a simd function (UnaryOp's static_assert), so the resolver never returns null.
void simd_unary(unary_op op, const float* x, float* y, index_t n, bool fused) {
  HWY_DYNAMIC_DISPATCH(ResolveUnaryF32)(op, fused)(x, y, n);
}
void simd_unary(unary_op op, const double* x, double* y, index_t n, bool fused) {
  HWY_DYNAMIC_DISPATCH(ResolveUnaryF64)(op, fused)(x, y, n);
}

void simd_resolve(unary_op op, bool fused, unary_tile_fn<float>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveUnaryF32)(op, fused);
}
void simd_resolve(unary_op op, bool fused, unary_tile_fn<double>& out) noexcept {
  out = HWY_DYNAMIC_DISPATCH(ResolveUnaryF64)(op, fused);
}

}  // namespace ct::detail::kernels
#endif  // HWY_ONCE
