// SIMD helpers of the column walk (Highway, runtime dispatch). Summing a reduced outer axis
// adds one contiguous stretch of the operand into per-group double accumulators per
// reduced position; this loop is the whole cost of e.g. sum over axis 0.
#include "src/kernels/fp_contract_off.hpp"  // must stay first
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/expr/column_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "src/expr/column_kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace ct::detail::column {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class T>
HWY_INLINE void AddColumns(double* HWY_RESTRICT acc, const T* HWY_RESTRICT x, index_t n) {
  const hn::ScalableTag<double> d;
  const hn::Rebind<T, decltype(d)> dt;
  const auto N = static_cast<index_t>(hn::Lanes(d));
  index_t j = 0;
  for (; j + N <= n; j += N) {
    auto v = [&] {
      if constexpr (sizeof(T) == sizeof(double)) return hn::LoadU(d, x + j);
      else return hn::PromoteTo(d, hn::LoadU(dt, x + j));
    }();
    hn::StoreU(hn::Add(hn::LoadU(d, acc + j), v), d, acc + j);
  }
  for (; j < n; ++j) acc[j] += static_cast<double>(x[j]);
}

/// acc[j] += x[0][j]; acc[j] += x[s][j]; … over `rows` rows of stride s, in that order for
/// every j: the same sums as `rows` calls of AddColumns, with one pass over acc per 8 rows
/// (sum over axis 0 of 4096x4096 f32: 3.2 ms with one pass per row, 2.3-2.5 ms with 8).
template <class T>
HWY_INLINE void AddRowsOfColumns(double* HWY_RESTRICT acc, const T* HWY_RESTRICT x, index_t stride, index_t rows,
                                 index_t n) {
  const hn::ScalableTag<double> d;
  const hn::Rebind<T, decltype(d)> dt;
  const auto N = static_cast<index_t>(hn::Lanes(d));
  const auto load = [&](const T* p) {
    if constexpr (sizeof(T) == sizeof(double)) return hn::LoadU(d, p);
    else return hn::PromoteTo(d, hn::LoadU(dt, p));
  };
  index_t r = 0;
  constexpr index_t R = 8;
  for (; r + R <= rows; r += R) {
    const T* x0 = x + r * stride;
    index_t j = 0;
    for (; j + N <= n; j += N) {
      // The rows after these, so that the next round finds them in cache: one line of each
      // per line read here. A burst of all their lines before the round mostly got dropped
      // (few miss buffers): sum over axis 0 of 4096x4096 f32 2.04-2.10 -> 1.87-2.07 ms (best
      // of 31, eight alternations); no software prefetch at all: 2.2-2.4 ms. With locality 1
      // (x86: prefetcht2, into L2 only; the lines are needed a whole round later, 8 rows
      // further, and would leave L1 by then): 2.05 -> 1.83 ms (medians of 7 runs' minimums,
      // AMD Zen 4); two rounds ahead 1.87, the current rows 0.5-4 KiB ahead 1.98-2.49.
      if (((j * static_cast<index_t>(sizeof(T))) & 63) == 0)
        for (index_t k = R; k < 2 * R; ++k) __builtin_prefetch(x0 + k * stride + j, 0, 1);
      auto a = hn::LoadU(d, acc + j);
      HWY_UNROLL(8)
      for (index_t k = 0; k < R; ++k) a = hn::Add(a, load(x0 + k * stride + j));
      hn::StoreU(a, d, acc + j);
    }
    for (; j < n; ++j) {
      double a = acc[j];
      for (index_t k = 0; k < R; ++k) a += static_cast<double>(x0[k * stride + j]);
      acc[j] = a;
    }
  }
  for (; r < rows; ++r) AddColumns(acc, x + r * stride, n);
}

void AddF32(double* acc, const float* x, index_t n) { AddColumns(acc, x, n); }
void AddRowsF32(double* acc, const float* x, index_t stride, index_t rows, index_t n) {
  AddRowsOfColumns(acc, x, stride, rows, n);
}
void AddRowsF64(double* acc, const double* x, index_t stride, index_t rows, index_t n) {
  AddRowsOfColumns(acc, x, stride, rows, n);
}
void AddF64(double* acc, const double* x, index_t n) { AddColumns(acc, x, n); }

}  // namespace HWY_NAMESPACE
}  // namespace ct::detail::column
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ct::detail::column {
HWY_EXPORT(AddF32);
HWY_EXPORT(AddF64);
HWY_EXPORT(AddRowsF32);
HWY_EXPORT(AddRowsF64);
void add_rows(double* acc, const float* x, index_t stride, index_t rows, index_t n) {
  HWY_DYNAMIC_DISPATCH(AddRowsF32)(acc, x, stride, rows, n);
}
void add_rows(double* acc, const double* x, index_t stride, index_t rows, index_t n) {
  HWY_DYNAMIC_DISPATCH(AddRowsF64)(acc, x, stride, rows, n);
}
void add(double* acc, const float* x, index_t n) { HWY_DYNAMIC_DISPATCH(AddF32)(acc, x, n); }
void add(double* acc, const double* x, index_t n) { HWY_DYNAMIC_DISPATCH(AddF64)(acc, x, n); }
}  // namespace ct::detail::column
#endif
