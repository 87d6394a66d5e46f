// src/kernels/kernels.cpp — the public tile kernels: route each call to the scalar or simd half.
#include "src/kernels/fp_contract_off.hpp"  // must stay first
#include "detail.hpp"
#include "ct/core/tuning.hpp"

namespace ct::detail::kernels {

template <class T>
void unary(unary_op op, const T* x, T* y, index_t n, const settings& s) {
  if (n <= 0) return;
  if (s.backend == backend::simd)
    simd_unary(op, x, y, n, is_fused(s));
  else
    scalar_unary(op, x, y, n);
}

template <class T>
void binary(binary_op op, const T* a, bool a_uniform, const T* b, bool b_uniform, T* y, index_t n,
            const settings& s) {
  if (n <= 0) return;
  if (s.backend == backend::simd)
    simd_binary(op, a, a_uniform, b, b_uniform, y, n);
  else
    scalar_binary(op, a, a_uniform, b, b_uniform, y, n);
}

template <class T>
void muladd(const T* a, bool a_uniform, const T* b, bool b_uniform, const T* c, bool c_uniform, T* y,
            index_t n, const settings& s) {
  if (n <= 0) return;
  if (s.backend == backend::simd)
    simd_muladd(a, a_uniform, b, b_uniform, c, c_uniform, y, n, is_fused(s));
  else
    scalar_muladd(a, a_uniform, b, b_uniform, c, c_uniform, y, n, is_fused(s));
}

index_t stream_ahead(const settings& s) { return static_cast<index_t>(tuning_of(s).stream_ahead_bytes); }

template <class T>
void sum_accumulate(lane_accumulator& acc, const T* x, index_t n, const settings& s, index_t ahead) {
  if (n <= 0) return;
  if (s.backend == backend::simd)
    simd_sum(acc, x, n, ahead);
  else
    scalar_sum(acc, x, n);
}

template <class T>
sum_bulk_fn<T> resolve_sum(const settings& s) noexcept {
  sum_bulk_fn<T> f = nullptr;
  if (s.backend == backend::simd) simd_resolve_sum(f);
  return f;
}

template <class T>
void sum_with(sum_bulk_fn<T> bulk, lane_accumulator& acc, const T* x, index_t n, index_t ahead) {
  if (n <= 0) return;
  if (bulk == nullptr) {
    scalar_sum(acc, x, n);
    return;
  }
  by_lane_rounds(
      acc, n,
      [&](index_t at, index_t len) {
        if (len > 0) scalar_sum(acc, x + at, len);
      },
      [&](index_t at, index_t len, bool fresh) { bulk(acc.lane, x + at, len, fresh, ahead); });
}

template <class T>
void prod_accumulate(lane_accumulator& acc, const T* x, index_t n, const settings& s) {
  if (n <= 0) return;
  if (s.backend == backend::simd)
    simd_prod(acc, x, n);
  else
    scalar_prod(acc, x, n);
}

template <class T>
void lse_accumulate(lse_state<T>& st, const T* x, index_t n, const settings& s, index_t ahead) {
  if (n <= 0) return;
  if (s.backend == backend::simd)
    simd_lse(st, x, n, is_fused(s), ahead);
  else
    scalar_lse(st, x, n);
}

template <class T>
double lse_result(const lse_state<T>& st, const settings& s) noexcept {
  return lse_result(st, s.backend == backend::simd, is_fused(s));
}

template <class T>
void max_accumulate(extreme_state<T>& st, const T* x, index_t n, index_t first_index, const settings& s,
                    bool with_index, index_t ahead) {
  if (n <= 0) return;
  if (s.backend == backend::simd)
    simd_max(st, x, n, first_index, with_index, ahead);
  else
    scalar_max(st, x, n, first_index);
}

template <class T>
void min_accumulate(extreme_state<T>& st, const T* x, index_t n, index_t first_index, const settings& s,
                    bool with_index, index_t ahead) {
  if (n <= 0) return;
  if (s.backend == backend::simd)
    simd_min(st, x, n, first_index, with_index, ahead);
  else
    scalar_min(st, x, n, first_index);
}

template <class T>
unary_tile_fn<T> resolve_unary(unary_op op, const settings& s) noexcept {
  unary_tile_fn<T> f = nullptr;
  if (s.backend == backend::simd) simd_resolve(op, is_fused(s), f);
  return f;
}

template <class T>
binary_tile_fn<T> resolve_binary(binary_op op, bool a_uniform, bool b_uniform, const settings& s, bool stream) noexcept {
  binary_tile_fn<T> f = nullptr;
  if (s.backend == backend::simd) simd_resolve(op, a_uniform, b_uniform, stream, f);
  return f;
}

template <class T>
muladd_tile_fn<T> resolve_muladd(bool a_uniform, bool b_uniform, bool c_uniform, const settings& s, bool stream) noexcept {
  muladd_tile_fn<T> f = nullptr;
  if (s.backend == backend::simd) simd_resolve(a_uniform, b_uniform, c_uniform, is_fused(s), stream, f);
  return f;
}

template <class T>
unary_sum_tile_fn<T> resolve_unary_sum(unary_op op, bool store, const settings& s) noexcept {
  unary_sum_tile_fn<T> f = nullptr;
  if (s.backend == backend::simd) simd_resolve(op, is_fused(s), store, f);
  return f;
}

template <class T>
scale_then_tile_fn<T> resolve_scale_then(bool muladd, bool c_uniform, const settings& s, bool stream) noexcept {
  scale_then_tile_fn<T> f = nullptr;
  if (s.backend == backend::simd) simd_resolve_scale_then(muladd, c_uniform, is_fused(s), stream, f);
  return f;
}

template <class T>
norm_row_fn<T> resolve_norm_row(norm_output out, const settings& s, bool stream) noexcept {
  norm_row_fn<T> f = nullptr;
  if (s.backend == backend::simd) simd_resolve_norm_row(out, is_fused(s), stream, f);
  return f;
}

template <class T>
unary_prefetch_fn<T> resolve_unary_prefetch(unary_op op, const settings& s) noexcept {
  unary_prefetch_fn<T> f = nullptr;
  if (s.backend == backend::simd) simd_resolve_prefetch(op, is_fused(s), f);
  return f;
}

template <class T>
sub_unary_prefetch_fn<T> resolve_sub_unary_prefetch(unary_op op, const settings& s) noexcept {
  sub_unary_prefetch_fn<T> f = nullptr;
  if (s.backend == backend::simd) simd_resolve_sub_prefetch(op, is_fused(s), f);
  return f;
}

template <class T>
sub_keep_unary_fn<T> resolve_sub_keep_unary(unary_op op, bool prefetch, const settings& s) noexcept {
  sub_keep_unary_fn<T> f = nullptr;
  if (s.backend == backend::simd) simd_resolve_sub_keep(op, is_fused(s), prefetch, f);
  return f;
}

template <class T>
binary_tile_fn<T> resolve_sub_unary(unary_op op, const settings& s) noexcept {
  binary_tile_fn<T> f = nullptr;
  if (s.backend == backend::simd) simd_resolve_sub(op, is_fused(s), f);
  return f;
}

// The head (until the stream reaches lane 0) and the tail (less than one round) go through
// the plain tile function and the scalar lane sum, exactly as sum_accumulate splits a stream.
template <class T>
void unary_sum(unary_sum_tile_fn<T> fn, unary_tile_fn<T> plain, const T* x, T* y, index_t n, lane_accumulator& acc) {
  T buf[reduce_lanes];
  by_lane_rounds(
      acc, n,
      [&](index_t at, index_t len) {
        if (len <= 0) return;
        T* out = y != nullptr ? y + at : buf;
        plain(x + at, out, len);
        scalar_sum(acc, out, len);
      },
      [&](index_t at, index_t len, bool fresh) { fn(x + at, y != nullptr ? y + at : nullptr, len, acc.lane, fresh); });
}

template <class T>
sub_unary_sum_tile_fn<T> resolve_sub_unary_sum(unary_op op, const settings& s) noexcept {
  sub_unary_sum_tile_fn<T> f = nullptr;
  if (s.backend == backend::simd) simd_resolve_sub_sum(op, is_fused(s), f);
  return f;
}

// Split like unary_sum: head and tail through the plain functions and the scalar lane sum.
template <class T>
void sub_unary_sum(sub_unary_sum_tile_fn<T> fn, binary_tile_fn<T> sub, unary_tile_fn<T> plain, const T* x, const T* u,
                   T* d, index_t n, lane_accumulator& acc) {
  T buf[reduce_lanes];
  by_lane_rounds(
      acc, n,
      [&](index_t at, index_t len) {
        if (len <= 0) return;
        sub(x + at, u, d + at, len);
        plain(d + at, buf, len);
        scalar_sum(acc, buf, len);
      },
      [&](index_t at, index_t len, bool fresh) { fn(x + at, u, d + at, len, acc.lane, fresh); });
}

const char* simd_target_name() noexcept { return simd_target(); }

}  // namespace ct::detail::kernels

namespace ct {
const char* simd_target_name() noexcept { return detail::kernels::simd_target_name(); }
}  // namespace ct

namespace ct::detail::kernels {

#define CT_KERNELS_INSTANTIATE(T)                                                                        \
  template void unary<T>(unary_op, const T*, T*, index_t, const settings&);                             \
  template void binary<T>(binary_op, const T*, bool, const T*, bool, T*, index_t, const settings&);     \
  template void muladd<T>(const T*, bool, const T*, bool, const T*, bool, T*, index_t, const settings&); \
  template void sum_accumulate<T>(lane_accumulator&, const T*, index_t, const settings&, index_t);         \
  template void prod_accumulate<T>(lane_accumulator&, const T*, index_t, const settings&);              \
  template void lse_accumulate<T>(lse_state<T>&, const T*, index_t, const settings&, index_t);              \
  template double lse_result<T>(const lse_state<T>&, const settings&) noexcept;                          \
  template sum_bulk_fn<T> resolve_sum<T>(const settings&) noexcept;                                     \
  template void sum_with<T>(sum_bulk_fn<T>, lane_accumulator&, const T*, index_t, index_t);                      \
  template void max_accumulate<T>(extreme_state<T>&, const T*, index_t, index_t, const settings&, bool, index_t); \
  template void min_accumulate<T>(extreme_state<T>&, const T*, index_t, index_t, const settings&, bool, index_t); \
  template unary_tile_fn<T> resolve_unary<T>(unary_op, const settings&) noexcept;                      \
  template binary_tile_fn<T> resolve_binary<T>(binary_op, bool, bool, const settings&, bool) noexcept;  \
  template muladd_tile_fn<T> resolve_muladd<T>(bool, bool, bool, const settings&, bool) noexcept;       \
  template unary_sum_tile_fn<T> resolve_unary_sum<T>(unary_op, bool, const settings&) noexcept;         \
  template scale_then_tile_fn<T> resolve_scale_then<T>(bool, bool, const settings&, bool) noexcept;    \
  template norm_row_fn<T> resolve_norm_row<T>(norm_output, const settings&, bool) noexcept;            \
  template binary_tile_fn<T> resolve_sub_unary<T>(unary_op, const settings&) noexcept;                  \
  template sub_keep_unary_fn<T> resolve_sub_keep_unary<T>(unary_op, bool, const settings&) noexcept;   \
  template sub_unary_prefetch_fn<T> resolve_sub_unary_prefetch<T>(unary_op, const settings&) noexcept;  \
  template unary_prefetch_fn<T> resolve_unary_prefetch<T>(unary_op, const settings&) noexcept;          \
  template sub_unary_sum_tile_fn<T> resolve_sub_unary_sum<T>(unary_op, const settings&) noexcept;       \
  template void sub_unary_sum<T>(sub_unary_sum_tile_fn<T>, binary_tile_fn<T>, unary_tile_fn<T>, const T*, const T*, T*, \
                                 index_t, lane_accumulator&);                                            \
  template void unary_sum<T>(unary_sum_tile_fn<T>, unary_tile_fn<T>, const T*, T*, index_t, lane_accumulator&);
CT_KERNELS_INSTANTIATE(float)
CT_KERNELS_INSTANTIATE(double)
#undef CT_KERNELS_INSTANTIATE

}  // namespace ct::detail::kernels
