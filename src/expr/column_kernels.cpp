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

void AddF32(double* acc, const float* x, index_t n) { AddColumns(acc, x, n); }
void AddF64(double* acc, const double* x, index_t n) { AddColumns(acc, x, n); }

}  // namespace HWY_NAMESPACE
}  // namespace ct::detail::column
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ct::detail::column {
HWY_EXPORT(AddF32);
HWY_EXPORT(AddF64);
void add(double* acc, const float* x, index_t n) { HWY_DYNAMIC_DISPATCH(AddF32)(acc, x, n); }
void add(double* acc, const double* x, index_t n) { HWY_DYNAMIC_DISPATCH(AddF64)(acc, x, n); }
}  // namespace ct::detail::column
#endif
