// src/kernels/erf.hpp — erf and erfc over one tile (src/kernels/simd_erf.cpp): the entry point
// that the unary-op table and the expression functions call.
//
// Same contract as the other elementwise tile kernels: y[i] = f(x[i]) for i < n (y may equal
// x), honouring the settings' backend (scalar_erf.hpp or simd_erf-inl.h with Highway dynamic
// dispatch) and FMA policy (simd only; the scalar functions do not depend on it). Each value's
// result is independent of its position in the tile. Accuracy: docs/kernels.md.
#pragma once
#include "ct/core/index.hpp"
#include "ct/exec/settings.hpp"

namespace ct::detail::kernels {

template <class T>
void erf_tile(const T* x, T* y, index_t n, const settings& s);
template <class T>
void erfc_tile(const T* x, T* y, index_t n, const settings& s);

extern template void erf_tile<float>(const float*, float*, index_t, const settings&);
extern template void erf_tile<double>(const double*, double*, index_t, const settings&);
extern template void erfc_tile<float>(const float*, float*, index_t, const settings&);
extern template void erfc_tile<double>(const double*, double*, index_t, const settings&);

}  // namespace ct::detail::kernels
