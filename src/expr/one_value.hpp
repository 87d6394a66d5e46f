// src/expr/one_value.hpp — values of one element: a group's mean, 1/sqrt(var + eps), … (internal).
#pragma once
#include <cstdlib>
#include <cmath>

#include "ct/exec/settings.hpp"
#include "src/kernels/kernels.hpp"
#include "ct/expr/program.hpp"

namespace ct::detail {
namespace [[gnu::visibility("hidden")]] evaluator {  // see plan.hpp

// One value is computed by the scalar kernels when the operation is exactly rounded, because
// the two backends then agree bitwise and a plain call is far cheaper than a dispatched SIMD
// call on a one-element tile. Transcendentals keep the caller's backend (their SIMD and
// scalar versions differ).
inline bool exactly_rounded(kernels::unary_op op) { return ieee_exact(op); }  // the op table's trait
inline settings scalar_settings(settings s) {
  s.backend = backend::scalar;
  return s;
}

// The value of a direct_op::one_value instruction (one IEEE operation), computed inline:
// exactly what kernels::unary/binary compute.
template <class T>
inline T one_value(const instruction& in, const T* a, const T* b) {
  if (in.op == opcode::binary) {
    switch (static_cast<kernels::binary_op>(in.sub)) {
      case kernels::binary_op::add: return *a + *b;
      case kernels::binary_op::sub: return *a - *b;
      case kernels::binary_op::mul: return *a * *b;
      case kernels::binary_op::div: return *a / *b;
      case kernels::binary_op::min: case kernels::binary_op::max: case kernels::binary_op::pow:
        break;  // resolve_direct admits only + - * / as one values
    }
    std::abort();
  }
  switch (static_cast<kernels::unary_op>(in.sub)) {
    case kernels::unary_op::neg: return -*a;
    case kernels::unary_op::abs: return std::fabs(*a);
    case kernels::unary_op::relu: return *a != *a ? *a : *a > T(0) ? *a : T(0);  // NaN kept
    case kernels::unary_op::sqrt: return std::sqrt(*a);
    case kernels::unary_op::rsqrt: return T(1) / std::sqrt(*a);
    case kernels::unary_op::square: return *a * *a;
    case kernels::unary_op::reciprocal: return T(1) / *a;
    default:
      break;  // not ieee_exact (ops.hpp): resolve_direct never makes them one values
  }
  std::abort();  // an ieee_exact row of ops.hpp without its one-value form above
}

}  // namespace evaluator
}  // namespace ct::detail
