// src/kernels/detail.hpp — internal split of the tile kernels into a scalar and a simd half.
//
// kernels.cpp routes each public kernel (ct/expr/kernels.hpp) to one of these by
// settings::backend. The scalar half is also the reference the simd half must match bitwise
// where the header promises it (sum, prod, max, min, and the exactly rounded elementwise ops).
#pragma once
#include "src/kernels/kernels.hpp"

namespace ct::detail::kernels {

/// Whether polynomial/FMA sites use one rounding (fused) or two (separate).
inline bool is_fused(const settings& s) noexcept { return s.fma == fma_policy::fused; }

// ---- scalar half (plain C++; src/kernels/scalar_elementwise.cpp, scalar_reduce.cpp)
template <class T>
void scalar_unary(unary_op op, const T* x, T* y, index_t n);
template <class T>
void scalar_binary(binary_op op, const T* a, bool a_uniform, const T* b, bool b_uniform, T* y, index_t n);
template <class T>
void scalar_muladd(const T* a, bool a_uniform, const T* b, bool b_uniform, const T* c, bool c_uniform, T* y,
                   index_t n, bool fused);
template <class T>
void scalar_sum(lane_accumulator& acc, const T* x, index_t n);
template <class T>
void scalar_prod(lane_accumulator& acc, const T* x, index_t n);
template <class T>
void scalar_max(extreme_state<T>& st, const T* x, index_t n, index_t first_index);
template <class T>
void scalar_min(extreme_state<T>& st, const T* x, index_t n, index_t first_index);
template <class T>
void scalar_lse(lse_state<T>& st, const T* x, index_t n);
/// lse_result with the rescaling exps of the simd backend (simd) or the C library's.
template <class T>
double lse_result(const lse_state<T>& st, bool simd, bool fused) noexcept;

// ---- simd half (Highway, runtime dispatch; src/kernels/simd_elementwise.cpp, simd_fused.cpp, simd_reduce.cpp)
// Plain overloads rather than templates: each file defines them next to its dispatch tables.
// ahead: x comes from memory and is prefetched this far ahead of the reads (0: from the caches).
#define CT_KERNELS_DECLARE_SIMD(T)                                                                         \
  void simd_unary(unary_op op, const T* x, T* y, index_t n, bool fused);                                 \
  void simd_binary(binary_op op, const T* a, bool a_uniform, const T* b, bool b_uniform, T* y, index_t n); \
  void simd_muladd(const T* a, bool a_uniform, const T* b, bool b_uniform, const T* c, bool c_uniform,    \
                   T* y, index_t n, bool fused);                                                         \
  void simd_sum(lane_accumulator& acc, const T* x, index_t n, index_t ahead);                            \
  void simd_prod(lane_accumulator& acc, const T* x, index_t n);                                          \
  void simd_lse(lse_state<T>& st, const T* x, index_t n, bool fused, index_t ahead);                     \
  double simd_lse_combine(const T* max, const double* sum, const T* part, double* out, bool fused) noexcept; \
  void simd_max(extreme_state<T>& st, const T* x, index_t n, index_t first_index, bool with_index,       \
                index_t ahead);                                                                          \
  void simd_min(extreme_state<T>& st, const T* x, index_t n, index_t first_index, bool with_index,       \
                index_t ahead);                                                                          \
  void simd_resolve(unary_op op, bool fused, unary_tile_fn<T>& out) noexcept;                            \
  void simd_resolve(binary_op op, bool au, bool bu, bool stream, binary_tile_fn<T>& out) noexcept;       \
  void simd_resolve(bool au, bool bu, bool cu, bool fused, bool stream, muladd_tile_fn<T>& out) noexcept; \
  void simd_resolve(unary_op op, bool fused, bool store, unary_sum_tile_fn<T>& out) noexcept;              \
  void simd_resolve_scale_then(bool muladd, bool cu, bool fused, bool stream, scale_then_tile_fn<T>& out) noexcept; \
  void simd_resolve_sub(unary_op op, bool fused, binary_tile_fn<T>& out) noexcept;                        \
  void simd_resolve_sub_prefetch(unary_op op, bool fused, sub_unary_prefetch_fn<T>& out) noexcept;        \
  void simd_resolve_prefetch(unary_op op, bool fused, unary_prefetch_fn<T>& out) noexcept;                \
  void simd_resolve_sub_sum(unary_op op, bool fused, sub_unary_sum_tile_fn<T>& out) noexcept;           \
  void simd_resolve_sum(sum_bulk_fn<T>& out) noexcept;                                                \
  void simd_resolve_sub_keep(unary_op op, bool fused, bool prefetch, sub_keep_unary_fn<T>& out) noexcept; \
  void simd_resolve_norm_row(norm_output o, bool fused, bool stream, norm_row_fn<T>& out) noexcept;
CT_KERNELS_DECLARE_SIMD(float)
CT_KERNELS_DECLARE_SIMD(double)
#undef CT_KERNELS_DECLARE_SIMD
const char* simd_target() noexcept;  // src/kernels/simd_target.cpp

/// Splits a stream of n elements fed to acc (a lane_accumulator or lse_state) the way every
/// lane-wise kernel does: part(at, len) for the head (until the next element belongs to lane 0)
/// and the tail (less than a round), which must feed acc (advancing acc.count), and
/// bulk(at, len, fresh) for the whole 32-element rounds in between (acc.count still the count
/// before them); fresh: nothing was fed since the init.
template <class State, class Part, class Bulk>
void by_lane_rounds(State& acc, index_t n, Part part, Bulk bulk) {
  const index_t phase = acc.count % reduce_lanes;
  const index_t head = phase == 0 ? 0 : (n < reduce_lanes - phase ? n : reduce_lanes - phase);
  part(index_t{0}, head);
  const index_t rounds = (n - head) / reduce_lanes * reduce_lanes;
  if (rounds > 0) {
    bulk(head, rounds, acc.count == 0);
    acc.count += rounds;
  }
  part(head + rounds, n - head - rounds);
}

}  // namespace ct::detail::kernels
