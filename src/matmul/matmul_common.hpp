// src/matmul/matmul_common.hpp — pieces shared by the scalar and SIMD matmul kernels.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>

#include "src/matmul/kernels.hpp"

namespace ct::detail::mm {

/// Hides a value from the optimiser so that a product computed before it cannot be
/// contracted with a following addition into an FMA, whatever -ffp-contract says.
/// This is what keeps fma_policy::separate honest with every compiler flag.
template <class T>
inline void opaque(T& v) noexcept {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  if constexpr (std::is_floating_point_v<T>) asm("" : "+x"(v));
#elif defined(__GNUC__)
  asm("" : "+g"(v));
#else
  (void)v;
#endif
}

/// c + a * b with one rounding (fused) or two (separate).
template <bool kFused, class T>
inline T muladd(T a, T b, T c) noexcept {
  if constexpr (kFused) {
    return std::fma(a, b, c);
  } else {
    T p = a * b;
    opaque(p);
    return c + p;
  }
}

/// The fixed pairwise tree that folds the virtual lanes of a dot product: lane l += lane
/// l + w for w = lanes/2, …, 1. Shared by both backends so they agree bitwise.
template <class T>
inline T lane_tree(T* lanes) noexcept {
  for (index_t w = dot_lanes<T> / 2; w >= 1; w /= 2)
    for (index_t l = 0; l < w; ++l) lanes[l] = lanes[l] + lanes[l + w];
  return lanes[0];
}

/// Per-call scratch, 64-byte aligned, owned by the kernel invocation that made it (hence by
/// one callback): nothing mutable is shared between callbacks.
template <class T>
class scratch {
 public:
  explicit scratch(index_t count)
      : p_(static_cast<T*>(::operator new(static_cast<std::size_t>(count > 0 ? count : 1) * sizeof(T),
                                          std::align_val_t{64}))) {}
  ~scratch() { ::operator delete(p_, std::align_val_t{64}); }
  scratch(const scratch&) = delete;
  scratch& operator=(const scratch&) = delete;
  T* get() const noexcept { return p_; }

 private:
  T* p_;
};

// The SIMD entry points (src/matmul/matmul_simd.cpp, vector_simd.cpp), dispatched at run time
// to the best Highway target of this CPU. Only float and double have SIMD kernels. The kernels that
// return bool return false, having done nothing, when the target cannot honour the FMA
// policy (fused requested on a target without FMA instructions): the caller then runs the
// scalar kernel, which gives the same bits.
index_t simd_packed_b_size_f32(index_t k, index_t n, index_t brs, index_t bcs, const mm_budgets& b);
index_t simd_packed_b_size_f64(index_t k, index_t n, index_t brs, index_t bcs, const mm_budgets& b);
/// The register tile and cache blocking gemm_rows uses under budgets b (ct::gemm_blocking_for).
void simd_gemm_blocking_f32(const mm_budgets& b, index_t& mr, index_t& nr, index_t& kc, index_t& mc, index_t& nc);
void simd_gemm_blocking_f64(const mm_budgets& b, index_t& mr, index_t& nr, index_t& kc, index_t& mc, index_t& nc);
// rows_budget: the bytes one block of B's rows may take while packing cuts it into every panel
// (the B-block budget: they are re-read from L2 once per panel). stream: gemm_pack_b's.
void simd_pack_b_f32(index_t k, index_t n, const float* b, index_t brs, index_t bcs, float* out, index_t rows_budget,
                     bool stream);
void simd_pack_b_f64(index_t k, index_t n, const double* b, index_t brs, index_t bcs, double* out, index_t rows_budget,
                     bool stream);
/// widen: the convert kernel for one contiguous row of n 16-bit values (src/kernels/convert.hpp).
void simd_pack_b_widened_f32(index_t k, index_t n, const std::uint16_t* b, bool bf16, index_t brs, index_t bcs,
                             void (*widen)(const std::uint16_t*, float*, index_t), float* out);
bool simd_gemm_rows_f32(const gemm_args<float>& g, const float* packed_b, index_t r0, index_t r1, bool fused,
                        const mm_budgets& b);
bool simd_gemm_rows_f64(const gemm_args<double>& g, const double* packed_b, index_t r0, index_t r1, bool fused,
                        const mm_budgets& b);
bool simd_gemv_rows_f32(index_t k, const float* a, index_t ars, index_t acs, const float* x, index_t xs, float* y,
                        index_t ys, index_t i0, index_t i1, bool fused, const mm_budgets& b);
bool simd_gemv_rows_f64(index_t k, const double* a, index_t ars, index_t acs, const double* x, index_t xs,
                        double* y, index_t ys, index_t i0, index_t i1, bool fused, const mm_budgets& b);
bool simd_gevm_cols_f32(index_t k, const float* x, index_t xs, const float* b, index_t brs, index_t bcs, float* y,
                        index_t ys, index_t j0, index_t j1, bool fused);
bool simd_gevm_cols_f64(index_t k, const double* x, index_t xs, const double* b, index_t brs, index_t bcs,
                        double* y, index_t ys, index_t j0, index_t j1, bool fused);

}  // namespace ct::detail::mm
