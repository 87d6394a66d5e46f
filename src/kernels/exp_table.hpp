// src/kernels/exp_table.hpp — the tables of the simd exp (simd_exp-inl.h).
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace ct::detail::kernels {

/// 2^(j/32) for j = 0..31, each correctly rounded to float (checked against a 60-digit
/// reference when written; tests/kernels/test_accuracy.cpp compares every entry with
/// exp2l(j/32) rounded to float). Aligned for the AVX-512 two-register permute.
alignas(64) inline constexpr float exp2_table32[32] = {
    0x1.000000p+0f, 0x1.059b0ep+0f, 0x1.0b5586p+0f, 0x1.11301ep+0f, 0x1.172b84p+0f, 0x1.1d4874p+0f,
    0x1.2387a6p+0f, 0x1.29e9e0p+0f, 0x1.306fe0p+0f, 0x1.371a74p+0f, 0x1.3dea64p+0f, 0x1.44e086p+0f,
    0x1.4bfdaep+0f, 0x1.5342b6p+0f, 0x1.5ab07ep+0f, 0x1.6247ecp+0f, 0x1.6a09e6p+0f, 0x1.71f75ep+0f,
    0x1.7a1148p+0f, 0x1.82589ap+0f, 0x1.8ace54p+0f, 0x1.93737cp+0f, 0x1.9c4918p+0f, 0x1.a5503cp+0f,
    0x1.ae89fap+0f, 0x1.b7f770p+0f, 0x1.c199bep+0f, 0x1.cb720ep+0f, 0x1.d5818ep+0f, 0x1.dfc974p+0f,
    0x1.ea4afap+0f, 0x1.f50766p+0f};

/// 2^(j/16) for j = 0..15, each correctly rounded to double (the double exp; every entry lies
/// at least 0.02 ulp from a rounding tie, so exp2l settles each in the test).
alignas(64) inline constexpr double exp2_table16[16] = {
    0x1.0000000000000p+0, 0x1.0b5586cf9890fp+0, 0x1.172b83c7d517bp+0, 0x1.2387a6e756238p+0,
    0x1.306fe0a31b715p+0, 0x1.3dea64c123422p+0, 0x1.4bfdad5362a27p+0, 0x1.5ab07dd485429p+0,
    0x1.6a09e667f3bcdp+0, 0x1.7a11473eb0187p+0, 0x1.8ace5422aa0dbp+0, 0x1.9c49182a3f090p+0,
    0x1.ae89f995ad3adp+0, 0x1.c199bdd85529cp+0, 0x1.d5818dcfba487p+0, 0x1.ea4afa2a490dap+0};

/// A table of 2^bits entries whose entry j has j << (mantissa bits - bits) taken off its bit
/// pattern. Exp's shifted integer t carries 2^bits * m + j in its low mantissa bits; shifted left
/// by (mantissa bits - bits) it is m in the exponent field plus j below it, so adding it to this
/// entry's bits gives 2^m * 2^(j/2^bits) exactly for a normal result, one integer operation
/// fewer than masking j off first (ExpNormal, simd_exp-inl.h). The entries are only bit
/// patterns to add to; they are normal numbers, so loading them moves their bits unchanged.
template <class T, class U, std::size_t kSize>
constexpr std::array<T, kSize> exp2_table_offset(const T (&table)[kSize], int mantissa_bits) {
  std::array<T, kSize> out{};
  int bits = 0;
  while ((std::size_t{1} << bits) < kSize) ++bits;
  for (std::size_t j = 0; j < kSize; ++j)
    out[j] = std::bit_cast<T>(static_cast<U>(std::bit_cast<U>(table[j]) - (static_cast<U>(j) << (mantissa_bits - bits))));
  return out;
}
alignas(64) inline constexpr std::array<float, 32> exp2_table32_offset =
    exp2_table_offset<float, std::uint32_t>(exp2_table32, 23);
alignas(64) inline constexpr std::array<double, 16> exp2_table16_offset =
    exp2_table_offset<double, std::uint64_t>(exp2_table16, 52);

}  // namespace ct::detail::kernels
