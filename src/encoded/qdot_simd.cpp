// The quantized-mode dot products on AVX-512 (Highway's AVX3 targets; the other targets use
// the portable kernel, which gives the same bits — qdot.hpp fixes the order).
//
// Per group of 16 blocks: each block's 32 weight and 32 activation quants widen to int16 and
// multiply-add in pairs into 16 int32 partial sums (vpmaddwd; exact), the 16 blocks' partials
// fold into one vector holding block j's integer dot in lane j (four levels of
// ConcatEven/ConcatOdd + Add), and the 16 virtual lanes of the order take one vector
// muladd(d_w * d_x, isum, lane). q4_0's nibbles become the values 0..15 minus 8 before widening.
#include "src/kernels/fp_contract_off.hpp"  // must stay first
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/encoded/qdot_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>

#include "src/encoded/qdot.hpp"

HWY_BEFORE_NAMESPACE();
namespace ct::detail::encoded {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL

template <bool kFused, class V>
HWY_INLINE V MulAddPolicy(V a, V b, V c) {
  if constexpr (kFused) {
    return hn::MulAdd(a, b, c);
  } else {
    V p = hn::Mul(a, b);
    asm("" : "+v"(p.raw));  // keep the product out of reach of contraction
    return hn::Add(c, p);
  }
}

template <bool kQ4, bool kFused>
float QDot(const unsigned char* w, const std::int8_t* xq, const float* xd, index_t blocks) {
  const hn::ScalableTag<std::int32_t> di;  // 16 lanes: one per block of a group
  const hn::ScalableTag<float> df;
  const hn::Repartition<std::int16_t, decltype(di)> d16;  // 32 lanes: one block
  const hn::Half<hn::Repartition<std::int8_t, decltype(di)>> d8;
  const hn::Half<hn::Repartition<std::uint8_t, decltype(di)>> du8;
  const hn::Repartition<std::uint16_t, decltype(di)> du16;
  const hn::Half<decltype(du8)> du8h;  // 16 bytes
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  using VI = hn::Vec<decltype(di)>;
  constexpr index_t wbytes = kQ4 ? 18 : 34;
  auto acc = hn::Zero(df);
  alignas(64) std::uint16_t scale_bits[16];
  for (index_t g = 0; g < blocks; g += 16) {
    const index_t nb = std::min<index_t>(16, blocks - g);
    VI part[16];
    for (index_t j = 0; j < 16; ++j) {
      if (j >= nb) {
        part[j] = hn::Zero(di);
        scale_bits[j] = 0;
        continue;
      }
      const unsigned char* blk = w + (g + j) * wbytes;
      scale_bits[j] = static_cast<std::uint16_t>(blk[0] | (blk[1] << 8));
      hn::Vec<decltype(d16)> w16;
      if constexpr (kQ4) {
        const auto bytes = hn::LoadU(du8h, blk + 2);
        const auto lo = hn::And(bytes, hn::Set(du8h, 0x0f));
        const auto hi = hn::ShiftRight<4>(bytes);
        w16 = hn::Sub(hn::BitCast(d16, hn::PromoteTo(du16, hn::Combine(du8, hi, lo))), hn::Set(d16, 8));
      } else {
        w16 = hn::PromoteTo(d16, hn::LoadU(d8, reinterpret_cast<const std::int8_t*>(blk + 2)));
      }
      const auto x16 = hn::PromoteTo(d16, hn::LoadU(d8, xq + (g + j) * 32));
      VI odd = hn::Zero(di);
      part[j] = hn::ReorderWidenMulAccumulate(di, w16, x16, hn::Zero(di), odd);
      part[j] = hn::Add(part[j], odd);
    }
    // Fold: after the four levels lane j holds the sum of part[j]'s lanes.
    for (index_t width = 8; width >= 1; width /= 2)
      for (index_t i = 0; i < width; ++i)
        part[i] = hn::Add(hn::ConcatOdd(di, part[2 * i + 1], part[2 * i]), hn::ConcatEven(di, part[2 * i + 1], part[2 * i]));
    const auto isum = hn::ConvertTo(df, part[0]);
    const auto mask = hn::FirstN(df, static_cast<std::size_t>(nb));
    const auto dw = hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(scale_bits)));
    const auto dx = hn::MaskedLoad(mask, df, xd + g);
    const auto updated = MulAddPolicy<kFused>(hn::Mul(dw, dx), isum, acc);
    acc = hn::IfThenElse(mask, updated, acc);
  }
  alignas(64) float lane[16];
  hn::Store(acc, df, lane);
  for (index_t width = qdot_lanes / 2; width >= 1; width /= 2)
    for (index_t l = 0; l < width; ++l) lane[l] = lane[l] + lane[l + width];
  return lane[0];
}

qdot_fn QDotFor(bool q4, bool fused) {
  if (q4) return fused ? &QDot<true, true> : &QDot<true, false>;
  return fused ? &QDot<false, true> : &QDot<false, false>;
}

#else

qdot_fn QDotFor(bool, bool) { return nullptr; }

#endif

}  // namespace HWY_NAMESPACE
}  // namespace ct::detail::encoded
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ct::detail::encoded {
HWY_EXPORT(QDotFor);
qdot_fn simd_qdot(bool q4, bool fused) { return HWY_DYNAMIC_DISPATCH(QDotFor)(q4, fused); }
}  // namespace ct::detail::encoded
#endif
