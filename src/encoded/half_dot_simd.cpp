// Exact-mode products of bf16 / f16 weight rows with float activations, the 16-bit values
// widened in registers. The general exact path decodes a row into float scratch and then runs
// the float dot product over it: three passes over a row (read 16-bit, write float, read float)
// where one suffices. Widening is exact and the lanes, FMA policy and fold below are those of
// the float dot product (src/matmul/vector_simd.cpp dot_rows: element p in virtual lane
// p % dot_lanes, lanes folded by lane_tree), so every result is the general path's bits.
//
// x86 targets from AVX2 up only (F16C and FMA instructions); elsewhere the general path runs.
#include "src/kernels/fp_contract_off.hpp"  // must stay first
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/encoded/half_dot_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include <hwy/cache_control.h>

#include "src/encoded/half_dot.hpp"
#include "src/matmul/matmul_common.hpp"

HWY_BEFORE_NAMESPACE();
namespace ct::detail::encoded {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2

using DF = hn::ScalableTag<float>;
constexpr index_t L = static_cast<index_t>(hn::MaxLanes(DF()));
constexpr index_t W = mm::dot_lanes<float>;
constexpr index_t NV = W / L;
// Rows per pass (sharing the activation loads): as many accumulators as the float kernel.
#if HWY_TARGET <= HWY_AVX3
constexpr index_t kRows = 16 / NV;
#else
constexpr index_t kRows = 8 / NV;
#endif

template <bool kBF16>
HWY_INLINE hn::Vec<DF> Widen(const unsigned char* p) {
  const DF df;
  const hn::Rebind<std::uint16_t, DF> d16;
  const auto bits = hn::LoadU(d16, reinterpret_cast<const std::uint16_t*>(p));  // little-endian x86
  if constexpr (kBF16) {
    const hn::RebindToUnsigned<DF> du32;
    return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du32, bits)));
  } else {
    const hn::Rebind<hwy::float16_t, DF> dh;
    return hn::PromoteTo(df, hn::BitCast(dh, bits));
  }
}

template <bool kFused>
HWY_INLINE hn::Vec<DF> MulAdd(hn::Vec<DF> a, hn::Vec<DF> b, hn::Vec<DF> c) {
  if constexpr (kFused) {
    return hn::MulAdd(a, b, c);
  } else {
    auto p = hn::Mul(a, b);
    asm("" : "+v"(p.raw));  // keep the product out of reach of contraction
    return hn::Add(c, p);
  }
}

template <bool kBF16, bool kFused, index_t R>
HWY_INLINE void Rows(const unsigned char* const* rows, index_t k, const float* HWY_RESTRICT x, float* out,
                     index_t ahead_bytes) {
  const DF df;
  using V = hn::Vec<DF>;
  V acc[R][NV];
#pragma GCC unroll 16
  for (index_t r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (index_t v = 0; v < NV; ++v) acc[r][v] = hn::Zero(df);
  index_t p = 0;
  for (; p + W <= k; p += W) {
#pragma GCC unroll 16
    for (index_t r = 0; r < R; ++r)  // W values are one line; an address, as it may lie past the row's end
      hwy::Prefetch(reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(rows[r] + 2 * p) +
                                                  static_cast<std::uintptr_t>(ahead_bytes)));
#pragma GCC unroll 16
    for (index_t v = 0; v < NV; ++v) {
      const V xv = hn::LoadU(df, x + p + v * L);
#pragma GCC unroll 16
      for (index_t r = 0; r < R; ++r) acc[r][v] = MulAdd<kFused>(Widen<kBF16>(rows[r] + 2 * (p + v * L)), xv, acc[r][v]);
    }
  }
  if (p < k) {  // tail, as the float kernel: lanes without an element keep their value
    alignas(64) unsigned char tail[R][2 * W] = {};
    for (index_t r = 0; r < R; ++r) std::memcpy(tail[r], rows[r] + 2 * p, static_cast<std::size_t>(2 * (k - p)));
#pragma GCC unroll 16
    for (index_t v = 0; v < NV; ++v) {
      const index_t left = std::clamp<index_t>(k - p - v * L, 0, L);
      const auto m = hn::FirstN(df, static_cast<size_t>(left));
      const V xv = hn::MaskedLoad(m, df, x + p + v * L);
#pragma GCC unroll 16
      for (index_t r = 0; r < R; ++r)
        acc[r][v] = hn::IfThenElse(m, MulAdd<kFused>(Widen<kBF16>(tail[r] + 2 * v * L), xv, acc[r][v]), acc[r][v]);
    }
  }
  alignas(64) float lanes[R][W];
#pragma GCC unroll 16
  for (index_t r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (index_t v = 0; v < NV; ++v) hn::Store(acc[r][v], df, lanes[r] + v * L);
  for (index_t r = 0; r < R; ++r) out[r] = mm::lane_tree(lanes[r]);
}

template <bool kBF16, bool kFused>
void HalfDotRows(const unsigned char* w, std::size_t row_bytes, index_t rows, index_t k, const float* x, float* y,
                 index_t y_stride, index_t ahead_bytes) {
  index_t i = 0;
  for (; i + kRows <= rows; i += kRows) {
    const unsigned char* r[kRows];
    float out[kRows];
    for (index_t j = 0; j < kRows; ++j) r[j] = w + static_cast<std::size_t>(i + j) * row_bytes;
    Rows<kBF16, kFused, kRows>(r, k, x, out, ahead_bytes);
    for (index_t j = 0; j < kRows; ++j) y[(i + j) * y_stride] = out[j];
  }
  for (; i < rows; ++i) {
    const unsigned char* r[1] = {w + static_cast<std::size_t>(i) * row_bytes};
    float out[1];
    Rows<kBF16, kFused, 1>(r, k, x, out, ahead_bytes);
    y[i * y_stride] = out[0];
  }
}

half_dot_fn HalfDotFor(bool bf16, bool fused) {
  if (bf16) return fused ? &HalfDotRows<true, true> : &HalfDotRows<true, false>;
  return fused ? &HalfDotRows<false, true> : &HalfDotRows<false, false>;
}

#else

half_dot_fn HalfDotFor(bool, bool) { return nullptr; }

#endif

}  // namespace HWY_NAMESPACE
}  // namespace ct::detail::encoded
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ct::detail::encoded {
HWY_EXPORT(HalfDotFor);
half_dot_fn simd_half_dot(bool bf16, bool fused) { return HWY_DYNAMIC_DISPATCH(HalfDotFor)(bf16, fused); }
}  // namespace ct::detail::encoded
#endif
