// Exact-mode products of bf16 / f16 weight rows with float activations, the 16-bit values
// widened in registers. The general exact path decodes a row into float scratch and then runs
// the float dot product over it: three passes over a row (read 16-bit, write float, read float)
// where one suffices. Widening is exact, and the rows run through the float GEMV's own body
// (src/matmul/dot_rows-inl.h: element p in virtual lane p % dot_lanes, lanes folded by
// lane_tree, the same FMA policy), so every result is the general path's bits.
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
#include "src/matmul/dot_rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace ct::detail::encoded {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2

using DF = hn::ScalableTag<float>;
constexpr index_t L = static_cast<index_t>(hn::MaxLanes(DF()));
constexpr index_t W = mm::dot_lanes<float>;
// Rows per pass (sharing the activation loads): the float GEMV's.
constexpr index_t kRows = mm::HWY_NAMESPACE::kDotRows<float>;

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

// R rows of 16-bit values widened to float in registers, for mm::DotRowsInLaneOrder
// (src/matmul/dot_rows-inl.h): the float GEMV's order, lanes, FMA policy and fold.
template <bool kBF16, index_t R>
struct widened_rows {
  widened_rows(const unsigned char* const* r, index_t ahead) : rows(r), ahead_bytes(ahead) {}  // tail: set by BeginTail
  const unsigned char* const* rows;
  index_t ahead_bytes;
  alignas(64) unsigned char tail[R][2 * W];  // the last partial round, zero padded
  HWY_INLINE hn::Vec<DF> Load(DF, index_t r, index_t p) const { return Widen<kBF16>(rows[r] + 2 * p); }
  // W values are one line; an address, as it may lie past the row's end.
  HWY_INLINE void Prefetch(index_t r, index_t p) const {
    hwy::Prefetch(reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(rows[r] + 2 * p) +
                                                static_cast<std::uintptr_t>(ahead_bytes)));
  }
  HWY_INLINE void BeginTail(index_t p, index_t k) {
    for (index_t r = 0; r < R; ++r) {
      std::memset(tail[r], 0, sizeof(tail[r]));
      std::memcpy(tail[r], rows[r] + 2 * p, static_cast<std::size_t>(2 * (k - p)));
    }
  }
  HWY_INLINE hn::Vec<DF> LoadTail(DF, index_t, index_t r, index_t, index_t v) const {
    return Widen<kBF16>(tail[r] + 2 * v * L);
  }
};

template <bool kBF16, bool kFused, index_t R>
HWY_INLINE void Rows(const unsigned char* const* rows, index_t k, const float* HWY_RESTRICT x, float* out,
                     index_t ahead_bytes) {
  widened_rows<kBF16, R> src(rows, ahead_bytes);
  mm::HWY_NAMESPACE::DotRowsInLaneOrder<float, kFused, R>(src, k, x, out);
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
