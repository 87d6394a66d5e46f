// src/encoded/qdot.hpp — the dot products of quantized mode (internal): a weight row of q8_0
// or q4_0 blocks against an activation vector quantized to q8_0 (kept as K int8 quants and
// K/32 float scales, the widened float16 scales of its blocks).
//
// The order, fixed so that every backend and target gives the same bits: block b's integer
// dot product isum_b (exact: at most 32 * 128 * 127 in magnitude, exact in float too) goes to
// virtual lane b % qdot_lanes, lane = muladd(d_w[b] * d_x[b], float(isum_b), lane) from +0 in
// block order, and the lanes fold by the pairwise tree lane l += lane l + w for
// w = qdot_lanes / 2, ..., 1. muladd follows the FMA policy (fused or two roundings).
#pragma once
#include <cstdint>
#include <string_view>

#include "ct/core/index.hpp"
#include "ct/exec/settings.hpp"

namespace ct::detail::encoded {

inline constexpr index_t qdot_lanes = 16;

/// dot(weight row w of `blocks` blocks, activation (xq, xd)).
using qdot_fn = float (*)(const unsigned char* w, const std::int8_t* xq, const float* xd, index_t blocks);

/// The kernel for weights of this format ("q8_0" or "q4_0") under settings s: the simd
/// target's when it has one, else the portable one (the same bits); nullptr for other formats.
qdot_fn resolve_qdot(std::string_view format, const settings& s);

/// The portable kernels (the reference the simd ones match bit for bit).
qdot_fn portable_qdot(std::string_view format, bool fused);

// The simd entry (qdot_simd.cpp): the current target's kernel, or nullptr where it has none.
qdot_fn simd_qdot(bool q4, bool fused);

}  // namespace ct::detail::encoded
