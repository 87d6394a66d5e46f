// src/kernels/convert.cpp — float32 <-> bfloat16 / float16 tile conversions (convert.hpp), the
// scalar backend and the simd one.
//
// The scalar conversions of ct/core/float16.hpp are the reference; every simd target gives
// their bits for every input:
// - bfloat16 widening is a shift, narrowing the reference's integer rounding in vector lanes
//   on every target. AVX512-BF16's vcvtneps2bf16 is not used: it treats subnormal inputs as
//   zero (measured on the avx512_bf16 test host: 0x00008001 gives 0x0000, the reference 0x0001).
// - float16 on targets with F16C (Highway's AVX2, AVX3): vcvtps2ph (immediate round to nearest
//   even) matches the reference for every float, NaNs included. vcvtph2ps quiets a signalling
//   NaN (0x7c01 gives 0x7fc02000, the reference keeps 0x7f802000): a vector holding any NaN
//   gets its NaN lanes rebuilt from the input bits.
// - float16 on the other targets (SSE4, SSSE3, the scalar fallback): integer arithmetic that
//   mirrors the reference (Highway's emulation there truncates, flushes subnormals and maps
//   inf/NaN to finite values). The only float operations are exact (int -> float of a value
//   below 2^10, times 2^-24), so nothing depends on the rounding mode or FTZ/DAZ.
// Partial vectors at the end of a tile go through a padded buffer and the same vector code.
#include "src/kernels/fp_contract_off.hpp"  // must stay first
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/kernels/convert.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cstdint>
#include <cstring>

#include "ct/core/float16.hpp"
#include "src/kernels/convert.hpp"

HWY_BEFORE_NAMESPACE();
namespace ct::detail::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Whether this target converts float16 with F16C (Highway's PromoteTo/DemoteTo use
// vcvtph2ps/vcvtps2ph from AVX2 on; below it they are a lossy emulation, never used here).
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
#define CT_CONVERT_F16C 1
#else
#define CT_CONVERT_F16C 0
#endif

/// Runs block(x + i, y + i) for i = 0, B, 2B, … over the tile (B = 2 float vectors); the
/// last, partial block goes through zero-padded buffers, so every element gets the same code
/// wherever it falls.
template <class TIn, class TOut, class Block>
HWY_INLINE void ForEachBlock(const TIn* HWY_RESTRICT x, TOut* HWY_RESTRICT y, index_t n, index_t B, Block block) {
  index_t i = 0;
  for (; i + B <= n; i += B) block(x + i, y + i);
  if (i < n) {
    constexpr size_t kMax = 2 * HWY_MAX_BYTES / sizeof(float);  // two of the widest float vectors
    HWY_ALIGN TIn in[kMax] = {};
    HWY_ALIGN TOut out[kMax];
    const auto rest = static_cast<size_t>(n - i);
    std::memcpy(in, x + i, rest * sizeof(TIn));
    block(in, out);
    std::memcpy(y + i, out, rest * sizeof(TOut));
  }
}

// ---- bfloat16 ------------------------------------------------------------------------------

void WidenBf16(const std::uint16_t* HWY_RESTRICT x, float* HWY_RESTRICT y, index_t n) {
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du32;
  const hn::Rebind<std::uint16_t, decltype(df)> du16;
  const auto N = static_cast<index_t>(hn::Lanes(df));
  const auto widen = [&](const std::uint16_t* HWY_RESTRICT p) {
    return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du32, hn::LoadU(du16, p))));
  };
  ForEachBlock(x, y, n, 2 * N, [&](const std::uint16_t* HWY_RESTRICT xp, float* HWY_RESTRICT yp) {
    hn::StoreU(widen(xp), df, yp);
    hn::StoreU(widen(xp + N), df, yp + N);
  });
}

/// The reference's bfloat16 of each lane of v, in the top 16 bits of the u32 lanes (the low
/// bits are garbage).
template <class DF>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> Bf16InHighHalf(DF df, hn::Vec<DF> v) {
  const hn::RebindToUnsigned<DF> du32;
  const auto u = hn::BitCast(du32, v);
  // Nearest even at bit 16: add 0x7fff plus the lowest kept bit; a carry may reach the
  // exponent (next binade, or inf from the largest finite values): still the right bits.
  const auto lsb = hn::And(hn::ShiftRight<16>(u), hn::Set(du32, 1u));
  const auto rounded = hn::Add(u, hn::Add(hn::Set(du32, 0x7fffu), lsb));
  // NaN: set the quiet bit and keep the top payload bits (no rounding).
  (void)df;
  return hn::IfThenElse(hn::RebindMask(du32, hn::IsNaN(v)), hn::Or(u, hn::Set(du32, 0x400000u)), rounded);
}

void NarrowBf16(const float* HWY_RESTRICT x, std::uint16_t* HWY_RESTRICT y, index_t n) {
  const hn::ScalableTag<float> df;
  const auto N = static_cast<index_t>(hn::Lanes(df));
#if HWY_TARGET == HWY_SCALAR  // one lane: no pairs to pack
  const hn::RebindToSigned<decltype(df)> di32;
  const hn::Rebind<std::uint16_t, decltype(df)> du16;
  const auto narrow = [&](const float* HWY_RESTRICT p) {
    return hn::DemoteTo(du16, hn::BitCast(di32, hn::ShiftRight<16>(Bf16InHighHalf(df, hn::LoadU(df, p)))));
  };
  ForEachBlock(x, y, n, 2 * N, [&](const float* HWY_RESTRICT xp, std::uint16_t* HWY_RESTRICT yp) {
    hn::StoreU(narrow(xp), du16, yp);
    hn::StoreU(narrow(xp + N), du16, yp + N);
  });
#else
  const hn::Repartition<std::uint16_t, decltype(df)> du16;  // 2N lanes
  ForEachBlock(x, y, n, 2 * N, [&](const float* HWY_RESTRICT xp, std::uint16_t* HWY_RESTRICT yp) {
    const auto a = hn::BitCast(du16, Bf16InHighHalf(df, hn::LoadU(df, xp)));
    const auto b = hn::BitCast(du16, Bf16InHighHalf(df, hn::LoadU(df, xp + N)));
    hn::StoreU(hn::ConcatOdd(du16, b, a), du16, yp);  // the high halves, in order (AVX-512: one vpermt2w)
  });
#endif
}

// ---- float16 -------------------------------------------------------------------------------

/// The reference bits of float16 h (in the low half of u32 lanes) as float32 bits, integer
/// arithmetic only; kNanInfOnly: the result is needed only in lanes holding inf or NaN.
template <bool kNanInfOnly, class DU>
HWY_INLINE hn::Vec<DU> F16BitsToF32Bits(DU du32, hn::Vec<DU> h) {
  const hn::RebindToSigned<DU> di32;
  const hn::RebindToFloat<DU> df;
  const auto sign = hn::ShiftLeft<16>(hn::And(h, hn::Set(du32, 0x8000u)));
  const auto a = hn::And(h, hn::Set(du32, 0x7fffu));
  const auto shifted = hn::ShiftLeft<13>(a);
  // inf / NaN: exponent 31 -> 255, payload (and a signalling NaN's clear quiet bit) kept.
  const auto special = hn::Add(shifted, hn::Set(du32, 0x70000000u));
  if constexpr (kNanInfOnly) return hn::Or(sign, special);
  const auto ai = hn::BitCast(di32, a);
  const auto normal = hn::Add(shifted, hn::Set(du32, 0x38000000u));  // exponent bias 15 -> 127
  // Subnormal (and zero): a * 2^-24, exact in float (a < 2^10 converts exactly; scaling by a
  // power of two gives a normal float), so independent of the rounding mode and FTZ/DAZ.
  const auto sub = hn::BitCast(du32, hn::Mul(hn::ConvertTo(df, ai), hn::Set(df, 1.0f / 16777216.0f)));
  const auto finite = hn::IfThenElse(hn::RebindMask(du32, hn::Lt(ai, hn::Set(di32, 0x400))), sub, normal);
  const auto bits = hn::IfThenElse(hn::RebindMask(du32, hn::Gt(ai, hn::Set(di32, 0x7bff))), special, finite);
  return hn::Or(sign, bits);
}

void WidenF16(const std::uint16_t* HWY_RESTRICT x, float* HWY_RESTRICT y, index_t n) {
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du32;
  const hn::Rebind<std::uint16_t, decltype(df)> du16;
  const auto N = static_cast<index_t>(hn::Lanes(df));
#if CT_CONVERT_F16C
  const hn::Rebind<hwy::float16_t, decltype(df)> df16;
  const hn::Repartition<std::int16_t, decltype(df)> di16;  // the whole block's 2N inputs
  const auto widen = [&](const std::uint16_t* HWY_RESTRICT p) {
    return hn::PromoteTo(df, hn::BitCast(df16, hn::LoadU(du16, p)));
  };
  // vcvtph2ps sets the quiet bit of a signalling NaN; the reference keeps the bits. A block
  // holding any NaN gets its NaN lanes rebuilt from the input bits.
  const auto widen_fixing_nan = [&](const std::uint16_t* HWY_RESTRICT p) {
    const auto v = widen(p);
    const auto exact = F16BitsToF32Bits<true>(du32, hn::PromoteTo(du32, hn::LoadU(du16, p)));
    return hn::IfThenElse(hn::IsNaN(v), hn::BitCast(df, exact), v);
  };
  const auto abs_mask = hn::Set(di16, 0x7fff), inf = hn::Set(di16, 0x7c00);
  ForEachBlock(x, y, n, 2 * N, [&](const std::uint16_t* HWY_RESTRICT xp, float* HWY_RESTRICT yp) {
    const auto h = hn::LoadU(di16, reinterpret_cast<const std::int16_t*>(xp));
    if (HWY_LIKELY(hn::AllFalse(di16, hn::Gt(hn::And(h, abs_mask), inf)))) {
      hn::StoreU(widen(xp), df, yp);
      hn::StoreU(widen(xp + N), df, yp + N);
    } else {
      hn::StoreU(widen_fixing_nan(xp), df, yp);
      hn::StoreU(widen_fixing_nan(xp + N), df, yp + N);
    }
  });
#else
  const auto widen = [&](const std::uint16_t* HWY_RESTRICT p) {
    return hn::BitCast(df, F16BitsToF32Bits<false>(du32, hn::PromoteTo(du32, hn::LoadU(du16, p))));
  };
  ForEachBlock(x, y, n, 2 * N, [&](const std::uint16_t* HWY_RESTRICT xp, float* HWY_RESTRICT yp) {
    hn::StoreU(widen(xp), df, yp);
    hn::StoreU(widen(xp + N), df, yp + N);
  });
#endif
}

#if !CT_CONVERT_F16C
/// The reference's float16 bits of each lane of v, in u32 lanes; integer arithmetic plus float
/// steps that are exact (so independent of the rounding mode and FTZ/DAZ).
template <class DF>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> F32ToF16Bits(DF df, hn::Vec<DF> v) {
  const hn::RebindToUnsigned<DF> du32;
  const hn::RebindToSigned<DF> di32;
  const auto u = hn::BitCast(du32, v);
  const auto ax = hn::And(u, hn::Set(du32, 0x7fffffffu));
  const auto axi = hn::BitCast(di32, ax);
  const auto sign = hn::And(hn::ShiftRight<16>(u), hn::Set(du32, 0x8000u));
  // Normal results: rebias the exponent 127 -> 15 and round to nearest even at bit 13; from
  // 65520 on (and inf) this reaches 0x7c00 or more, clamped to inf.
  const auto r = hn::Sub(ax, hn::Set(du32, 0x38000000u));
  const auto r_lsb = hn::And(hn::ShiftRight<13>(r), hn::Set(du32, 1u));
  const auto normal =
      hn::Min(hn::ShiftRight<13>(hn::Add(r, hn::Add(hn::Set(du32, 0xfffu), r_lsb))), hn::Set(du32, 0x7c00u));
  // Below 2^-14: the result is |x| * 2^24 rounded to an integer, nearest even. The product
  // is exact (a power-of-two scaling to a normal float at most 2^10; the min keeps the
  // other lanes in range), truncation and the fraction are exact, and the fraction decides.
  const auto t = hn::Mul(hn::BitCast(df, hn::Min(ax, hn::Set(du32, 0x38800000u))), hn::Set(df, 16777216.0f));
  const auto ti = hn::ConvertTo(di32, t);  // truncates
  const auto frac = hn::Sub(t, hn::ConvertTo(df, ti));
  const auto half = hn::Set(df, 0.5f);
  const auto odd = hn::RebindMask(df, hn::Eq(hn::And(ti, hn::Set(di32, 1)), hn::Set(di32, 1)));
  const auto up = hn::Or(hn::Gt(frac, half), hn::And(hn::Eq(frac, half), odd));
  const auto sub = hn::BitCast(du32, hn::Sub(ti, hn::VecFromMask(di32, hn::RebindMask(di32, up))));  // may be 0x400: right
  // NaN: quiet, the top 10 payload bits.
  const auto nan_bits = hn::Or(hn::And(hn::ShiftRight<13>(ax), hn::Set(du32, 0x3ffu)), hn::Set(du32, 0x7e00u));
  const auto finite = hn::IfThenElse(hn::RebindMask(du32, hn::Lt(axi, hn::Set(di32, 0x38800000))), sub, normal);
  const auto bits = hn::IfThenElse(hn::RebindMask(du32, hn::Gt(axi, hn::Set(di32, 0x7f800000))), nan_bits, finite);
  return hn::Or(sign, bits);
}
#endif

void NarrowF16(const float* HWY_RESTRICT x, std::uint16_t* HWY_RESTRICT y, index_t n) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<std::uint16_t, decltype(df)> du16;
  const auto N = static_cast<index_t>(hn::Lanes(df));
#if CT_CONVERT_F16C
  // vcvtps2ph with immediate nearest-even rounding: the reference's bits for every float.
  const hn::Rebind<hwy::float16_t, decltype(df)> df16;
  const auto narrow = [&](const float* HWY_RESTRICT p) { return hn::BitCast(du16, hn::DemoteTo(df16, hn::LoadU(df, p))); };
#else
  const hn::RebindToSigned<decltype(df)> di32;
  const auto narrow = [&](const float* HWY_RESTRICT p) {
    return hn::DemoteTo(du16, hn::BitCast(di32, F32ToF16Bits(df, hn::LoadU(df, p))));  // lanes below 2^16
  };
#endif
  ForEachBlock(x, y, n, 2 * N, [&](const float* HWY_RESTRICT xp, std::uint16_t* HWY_RESTRICT yp) {
    hn::StoreU(narrow(xp), du16, yp);
    hn::StoreU(narrow(xp + N), du16, yp + N);
  });
}

#undef CT_CONVERT_F16C

widen_fn ResolveWidenBf16() { return &WidenBf16; }
widen_fn ResolveWidenF16() { return &WidenF16; }
narrow_fn ResolveNarrowBf16() { return &NarrowBf16; }
narrow_fn ResolveNarrowF16() { return &NarrowF16; }

}  // namespace HWY_NAMESPACE
}  // namespace ct::detail::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ct::detail::kernels {

HWY_EXPORT(WidenBf16);
HWY_EXPORT(WidenF16);
HWY_EXPORT(NarrowBf16);
HWY_EXPORT(NarrowF16);
HWY_EXPORT(ResolveWidenBf16);
HWY_EXPORT(ResolveWidenF16);
HWY_EXPORT(ResolveNarrowBf16);
HWY_EXPORT(ResolveNarrowF16);

namespace {
bool is_simd(const settings& s) noexcept { return s.backend == backend::simd; }
}  // namespace

// The scalar backend: the reference conversions, one element at a time.
void widen_bf16(const std::uint16_t* x, float* y, index_t n, const settings& s) {
  if (is_simd(s)) return HWY_DYNAMIC_DISPATCH(WidenBf16)(x, y, n);
  for (index_t i = 0; i < n; ++i) y[i] = bf16_bits_to_float(x[i]);
}
void widen_f16(const std::uint16_t* x, float* y, index_t n, const settings& s) {
  if (is_simd(s)) return HWY_DYNAMIC_DISPATCH(WidenF16)(x, y, n);
  for (index_t i = 0; i < n; ++i) y[i] = f16_bits_to_float(x[i]);
}
void narrow_bf16(const float* x, std::uint16_t* y, index_t n, const settings& s) {
  if (is_simd(s)) return HWY_DYNAMIC_DISPATCH(NarrowBf16)(x, y, n);
  for (index_t i = 0; i < n; ++i) y[i] = float_to_bf16_bits(x[i]);
}
void narrow_f16(const float* x, std::uint16_t* y, index_t n, const settings& s) {
  if (is_simd(s)) return HWY_DYNAMIC_DISPATCH(NarrowF16)(x, y, n);
  for (index_t i = 0; i < n; ++i) y[i] = float_to_f16_bits(x[i]);
}

widen_fn resolve_widen_bf16(const settings& s) noexcept {
  return is_simd(s) ? HWY_DYNAMIC_DISPATCH(ResolveWidenBf16)() : nullptr;
}
widen_fn resolve_widen_f16(const settings& s) noexcept {
  return is_simd(s) ? HWY_DYNAMIC_DISPATCH(ResolveWidenF16)() : nullptr;
}
narrow_fn resolve_narrow_bf16(const settings& s) noexcept {
  return is_simd(s) ? HWY_DYNAMIC_DISPATCH(ResolveNarrowBf16)() : nullptr;
}
narrow_fn resolve_narrow_f16(const settings& s) noexcept {
  return is_simd(s) ? HWY_DYNAMIC_DISPATCH(ResolveNarrowF16)() : nullptr;
}

}  // namespace ct::detail::kernels
#endif  // HWY_ONCE
