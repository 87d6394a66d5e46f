// src/kernels/scalar_reduce.cpp — the scalar backend of sum, prod, max and min, and the
// lane accumulator's init/result. This is the definition the simd backend reproduces bitwise.
#include "src/kernels/fp_contract_off.hpp"  // must stay first
#include <algorithm>
#include <cmath>
#include <limits>

#include "detail.hpp"

namespace ct::detail::kernels {

// Unrolled stores: as a plain loop g++ made this `rep stos`, which cost ~40 cycles per call
// and was 10% of a layer norm over rows of 64.
void sum_init(lane_accumulator& acc) noexcept {
#pragma GCC unroll 32
  for (int i = 0; i < reduce_lanes; ++i) acc.lane[i] = 0.0;
  acc.count = 0;
}

void prod_init(lane_accumulator& acc) noexcept {
#pragma GCC unroll 32
  for (int i = 0; i < reduce_lanes; ++i) acc.lane[i] = 1.0;
  acc.count = 0;
}

namespace {
/// Pairwise tree over the lanes: each level combines neighbours (0,1), (2,3), …
/// Fully unrolled so the 31 operations run from registers (the looped version with its
/// local copy took about 65 cycles per call, which showed in rows of a few dozen elements).
template <class Combine>
inline double tree(const lane_accumulator& acc, Combine combine) noexcept {
  static_assert(reduce_lanes == 32, "the unrolled tree below has five levels");
  const double* l = acc.lane;
  double a[16], b[8], c[4];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) a[i] = combine(l[2 * i], l[2 * i + 1]);
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) b[i] = combine(a[2 * i], a[2 * i + 1]);
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) c[i] = combine(b[2 * i], b[2 * i + 1]);
  return combine(combine(c[0], c[1]), combine(c[2], c[3]));
}
}  // namespace

double sum_result(const lane_accumulator& acc) noexcept {
  return tree(acc, [](double a, double b) { return a + b; });
}
double prod_result(const lane_accumulator& acc) noexcept {
  return tree(acc, [](double a, double b) { return a * b; });
}

namespace {
/// Element k of the stream (counting from acc.count) meets lane k % 32. Walked as runs of
/// consecutive lanes (up to lane 31, then from 0 again) so the inner loop has no modulo and
/// vectorises; each lane still sees its elements in stream order.
template <class T, class Combine>
void lane_runs(lane_accumulator& acc, const T* x, index_t n, Combine combine) {
  index_t lane = acc.count % reduce_lanes;
  for (index_t i = 0; i < n;) {
    const index_t len = std::min<index_t>(n - i, reduce_lanes - lane);
    for (index_t j = 0; j < len; ++j) acc.lane[lane + j] = combine(acc.lane[lane + j], static_cast<double>(x[i + j]));
    i += len;
    lane = 0;
  }
  acc.count += n;
}
}  // namespace

template <class T>
void scalar_sum(lane_accumulator& acc, const T* x, index_t n) {
  lane_runs(acc, x, n, [](double a, double v) { return a + v; });
}

template <class T>
void scalar_prod(lane_accumulator& acc, const T* x, index_t n) {
  lane_runs(acc, x, n, [](double a, double v) { return a * v; });
}

namespace {
/// One step of the extreme rule: the first NaN is final; else a strictly better value wins.
template <class T, class Better>
void extreme_step(extreme_state<T>& st, T v, index_t i, Better better) {
  if (st.index >= 0 && std::isnan(st.value)) return;
  if (st.index < 0 || std::isnan(v) || better(v, st.value)) {
    st.value = v;
    st.index = i;
  }
}
}  // namespace

template <class T>
void scalar_max(extreme_state<T>& st, const T* x, index_t n, index_t first_index) {
  for (index_t i = 0; i < n; ++i) extreme_step(st, x[i], first_index + i, [](T v, T m) { return v > m; });
}

template <class T>
void scalar_min(extreme_state<T>& st, const T* x, index_t n, index_t first_index) {
  for (index_t i = 0; i < n; ++i) extreme_step(st, x[i], first_index + i, [](T v, T m) { return v < m; });
}

// ---- logsumexp (the online normalizer; the rules are lse_state's in kernels.hpp) ----

template <class T>
void lse_init(lse_state<T>& st) noexcept {
#pragma GCC unroll 32
  for (int i = 0; i < reduce_lanes; ++i) {
    st.max[i] = -std::numeric_limits<T>::infinity();
    st.part[i] = T(0);
    st.sum[i] = 0.0;
  }
  st.count = 0;
}

template <class T>
void scalar_lse(lse_state<T>& st, const T* x, index_t n) {
  index_t lane = st.count % reduce_lanes;
  for (index_t i = 0; i < n; ++i) {
    const T m = st.max[lane], v = x[i];
    const T mn = (m != m || v != v) ? m + v : (v > m + T(lse_headroom) ? v : m);
    if (mn != m) {
      st.sum[lane] = (st.sum[lane] + static_cast<double>(st.part[lane])) *
                     std::exp(static_cast<double>(m) - static_cast<double>(mn));
      st.part[lane] = T(0);
    }
    st.part[lane] += v == mn ? T(1) : std::exp(v - mn);
    st.max[lane] = mn;
    if (++lane == reduce_lanes) {
      lane = 0;
      if ((st.count + i + 1) % (reduce_lanes * lse_block_rounds) == 0) lse_flush(st);
    }
  }
  st.count += n;
}

template <class T>
double lse_result(const lse_state<T>& st, bool simd, bool fused) noexcept {
  // The lanes rescaled to the common reference top and added by the lane sums' fixed tree. A
  // lane at -inf (nothing or only -inf fed) contributes s * 0 = 0.
  lane_accumulator rescaled;
  if (simd) {
    const double top = simd_lse_combine(st.max, st.sum, st.part, rescaled.lane, fused);
    if (!std::isfinite(top)) return top;  // NaN; -inf: every element was -inf; +inf: one was +inf
    return top + std::log(sum_result(rescaled));
  }
  double top = -std::numeric_limits<double>::infinity();
  for (int i = 0; i < reduce_lanes; ++i) {
    const double m = static_cast<double>(st.max[i]);
    if (m != m || st.sum[i] != st.sum[i] || st.part[i] != st.part[i]) return std::numeric_limits<double>::quiet_NaN();
    top = std::max(top, m);
  }
  if (std::isinf(top)) return top;
  for (int i = 0; i < reduce_lanes; ++i)
    rescaled.lane[i] = (st.sum[i] + static_cast<double>(st.part[i])) * std::exp(static_cast<double>(st.max[i]) - top);
  return top + std::log(sum_result(rescaled));
}

#define CT_INSTANTIATE(T)                                                                 \
  template void scalar_sum<T>(lane_accumulator&, const T*, index_t);                     \
  template void scalar_prod<T>(lane_accumulator&, const T*, index_t);                    \
  template void scalar_max<T>(extreme_state<T>&, const T*, index_t, index_t);            \
  template void scalar_min<T>(extreme_state<T>&, const T*, index_t, index_t);            \
  template void lse_init<T>(lse_state<T>&) noexcept;                                      \
  template void scalar_lse<T>(lse_state<T>&, const T*, index_t);                          \
  template double lse_result<T>(const lse_state<T>&, bool, bool) noexcept;
CT_INSTANTIATE(float)
CT_INSTANTIATE(double)
#undef CT_INSTANTIATE

}  // namespace ct::detail::kernels
