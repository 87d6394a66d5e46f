// src/expr/column_kernels.hpp — SIMD helpers of the evaluator's column walk (internal).
#pragma once
#include "ct/core/index.hpp"

namespace ct::detail::column {

/// acc[j] += x[j] for j in [0, n), in double. Pure elementwise, so the result of each j is
/// the same whatever the vector width or n.
void add(double* acc, const float* x, index_t n);
void add(double* acc, const double* x, index_t n);

/// add(acc, x + r*stride, n) for r = 0, 1, …, rows-1, in that order (so bitwise the same
/// sums), reading acc once per eight rows instead of once per row.
void add_rows(double* acc, const float* x, index_t stride, index_t rows, index_t n);
void add_rows(double* acc, const double* x, index_t stride, index_t rows, index_t n);

}  // namespace ct::detail::column
