// src/matmul/simd_common-inl.h — per-target pieces the SIMD matmul kernels share
// (matmul_simd.cpp: GEMM; vector_simd.cpp: GEMV and GEVM): the register tile's geometry, the
// FMA-policy multiply-add, and whether this target can honour the fused policy. Included
// inside each file's per-target namespace pass (Highway's -inl idiom).
#if defined(CT_MATMUL_SIMD_COMMON_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CT_MATMUL_SIMD_COMMON_INL_H_
#undef CT_MATMUL_SIMD_COMMON_INL_H_
#else
#define CT_MATMUL_SIMD_COMMON_INL_H_
#endif

#include <hwy/highway.h>

#include "src/matmul/matmul_common.hpp"

HWY_BEFORE_NAMESPACE();
namespace ct::detail::mm {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// 32 vector registers: 24 accumulators + 2 B vectors + the A broadcast (+ a product
// temporary for the separate policy).
constexpr index_t kMR = 12;
#else
// 16 vector registers: 12 accumulators + 2 + 1.
constexpr index_t kMR = 6;
#endif

/// Lanes [0, count) of p and zeros after them, reading nothing past p + count (count <= the
/// lanes of d). Highway 1.0.3's MaskedLoad reads a whole vector on SSSE3, SSE4 and the scalar
/// target (a mask applied to an aligned Load): at an unaligned p that faults on SSSE3 / SSE4,
/// and at the end of a buffer it reads past it. AVX2 and AVX-512 have masked loads that touch
/// only the selected lanes; elsewhere the lanes go through a small zeroed buffer.
template <class D>
HWY_INLINE hn::Vec<D> LoadFirst(D d, const hn::TFromD<D>* HWY_RESTRICT p, size_t count) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  return hn::MaskedLoad(hn::FirstN(d, count), d, p);
#else
  alignas(64) hn::TFromD<D> lanes[hn::MaxLanes(D())] = {};
  for (size_t i = 0; i < count; ++i) lanes[i] = p[i];
  return hn::Load(d, lanes);
#endif
}

// Register and cache blocking of this target for element type T.
template <class T>
struct geom {
  using D = hn::ScalableTag<T>;
  static constexpr index_t L = static_cast<index_t>(hn::MaxLanes(D()));
  static constexpr index_t NR = 2 * L;
  static constexpr index_t MR = kMR;
  // Products at most this wide read a row-contiguous A in place instead of packing it.
  static constexpr index_t direct_a_max_n = 256;
};

// Keeps a product out of reach of FMA contraction (see opaque() in matmul_common.hpp).
template <class V>
HWY_INLINE void opaque_vec(V& v) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_SSSE3 && defined(__GNUC__)
  asm("" : "+v"(v.raw));
#else
  (void)v;
#endif
}

template <bool kFused, class V>
HWY_INLINE V madd(V a, V b, V c) {
  if constexpr (kFused) {
    return hn::MulAdd(a, b, c);
  } else {
    V p = hn::Mul(a, b);
    opaque_vec(p);
    return hn::Add(c, p);
  }
}

// Without FMA instructions hn::MulAdd is not fused: the fused policy is then left to the
// scalar kernels (return false).
constexpr bool kCanFuse = HWY_NATIVE_FMA != 0;

}  // namespace HWY_NAMESPACE
}  // namespace ct::detail::mm
HWY_AFTER_NAMESPACE();

#endif  // include guard
