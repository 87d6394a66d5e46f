// src/kernels/exp_table.hpp — the table of the simd float exp (simd_exp-inl.h).
#pragma once

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

}  // namespace ct::detail::kernels
