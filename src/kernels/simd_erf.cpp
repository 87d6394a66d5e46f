// src/kernels/simd_erf.cpp — erf_tile / erfc_tile (erf.hpp): the simd functions of
// simd_erf-inl.h with Highway dynamic dispatch, or the scalar ones of scalar_erf.hpp.
//
// As in simd_elementwise.cpp, the partial vector at the end of a tile goes through a padded
// buffer with the same vector code, so a value's result never depends on where it sits.
#include "src/kernels/fp_contract_off.hpp"  // must stay first
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/kernels/simd_erf.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "src/kernels/erf.hpp"
#include "src/kernels/scalar_erf.hpp"
#include "src/kernels/simd_erf-inl.h"

HWY_BEFORE_NAMESPACE();
namespace ct::detail::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <bool kComplement, bool kFused, class T>
HWY_NOINLINE void ErfLoop(const T* x, T* y, index_t n) {
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  const auto f = [&](V v) { return kComplement ? Erfc<kFused>(d, v) : Erf<kFused>(d, v); };
  const auto N = static_cast<index_t>(hn::Lanes(d));
  index_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(f(hn::LoadU(d, x + i)), d, y + i);
  if (i < n) {
    HWY_ALIGN T buf[HWY_MAX_BYTES / sizeof(T)] = {};
    const auto rest = static_cast<size_t>(n - i);
    for (size_t j = 0; j < rest; ++j) buf[j] = x[i + static_cast<index_t>(j)];
    hn::Store(f(hn::Load(d, buf)), d, buf);
    for (size_t j = 0; j < rest; ++j) y[i + static_cast<index_t>(j)] = buf[j];
  }
}

template <class T>
void ErfAny(const T* x, T* y, index_t n, bool complement, bool fused) {
  if (complement)
    fused ? ErfLoop<true, true>(x, y, n) : ErfLoop<true, false>(x, y, n);
  else
    fused ? ErfLoop<false, true>(x, y, n) : ErfLoop<false, false>(x, y, n);
}
void ErfF32(const float* x, float* y, index_t n, bool complement, bool fused) { ErfAny(x, y, n, complement, fused); }
void ErfF64(const double* x, double* y, index_t n, bool complement, bool fused) { ErfAny(x, y, n, complement, fused); }

}  // namespace HWY_NAMESPACE
}  // namespace ct::detail::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ct::detail::kernels {

HWY_EXPORT(ErfF32);
HWY_EXPORT(ErfF64);

namespace {

void simd_erf(const float* x, float* y, index_t n, bool complement, bool fused) {
  HWY_DYNAMIC_DISPATCH(ErfF32)(x, y, n, complement, fused);
}
void simd_erf(const double* x, double* y, index_t n, bool complement, bool fused) {
  HWY_DYNAMIC_DISPATCH(ErfF64)(x, y, n, complement, fused);
}

template <class T>
void erf_any(const T* x, T* y, index_t n, const settings& s, bool complement) {
  if (n <= 0) return;
  if (s.backend == backend::simd) return simd_erf(x, y, n, complement, s.fma == fma_policy::fused);
  if (complement)
    for (index_t i = 0; i < n; ++i) y[i] = scalar_erfc(x[i]);
  else
    for (index_t i = 0; i < n; ++i) y[i] = scalar_erf(x[i]);
}

}  // namespace

template <class T>
void erf_tile(const T* x, T* y, index_t n, const settings& s) {
  erf_any(x, y, n, s, false);
}
template <class T>
void erfc_tile(const T* x, T* y, index_t n, const settings& s) {
  erf_any(x, y, n, s, true);
}

template void erf_tile<float>(const float*, float*, index_t, const settings&);
template void erf_tile<double>(const double*, double*, index_t, const settings&);
template void erfc_tile<float>(const float*, float*, index_t, const settings&);
template void erfc_tile<double>(const double*, double*, index_t, const settings&);

}  // namespace ct::detail::kernels
#endif  // HWY_ONCE
