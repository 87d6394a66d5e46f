// src/kernels/scalar_elementwise.cpp — the scalar backend of unary, binary and muladd.
//
// Plain C++ over the C library. Composite functions (sigmoid, silu, gelu) use forms that do
// not cancel for large negative arguments; silu and gelu are evaluated in a wider type (gelu
// because exp() amplifies the relative error of its computed argument by |argument|).
#include "src/kernels/fp_contract_off.hpp"  // must stay first
#include <cmath>
#include <limits>

#include "detail.hpp"
#include "src/kernels/scalar_erf.hpp"

namespace ct::detail::kernels {
namespace {

template <class T>
struct wider;
template <>
struct wider<float> {
  using type = double;
};
template <>
struct wider<double> {
  using type = long double;
};

/// 1/(1+e^-x), computed from e^-|x| so that neither branch overflows or cancels.
template <class T>
T sigmoid(T x) {
  if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
  const T e = std::exp(x);  // NaN lands here too and propagates
  return e / (T(1) + e);
}

/// x * sigmoid(x), in a wider type: for large negative x, e^x is subnormal (few significant
/// bits) while x * e^x is still normal.
template <class T>
T silu(T x) {
  using W = typename wider<T>::type;
  if (std::isinf(x)) return x > 0 ? x : -T(0);  // the limit; x*0 would be NaN
  const W w = x;
  if (x >= T(0)) return static_cast<T>(w / (W(1) + std::exp(-w)));
  const W e = std::exp(w);  // NaN lands here too and propagates
  return static_cast<T>(w * e / (W(1) + e));
}

/// 0.5x(1+tanh(u)) = x*sigmoid(2u), u = sqrt(2/pi)(x + 0.044715x^3), evaluated in a wider type.
template <class T>
T gelu(T x) {
  using W = typename wider<T>::type;
  if (std::isinf(x)) return x > 0 ? x : -T(0);
  const W w = x;
  const W two_u = W(2) * W(0.79788456080286535587989211986876373695171726232987L) *
                  (w + W(0.044715L) * w * w * w);
  if (two_u >= W(0)) return static_cast<T>(w / (W(1) + std::exp(-two_u)));
  const W e = std::exp(two_u);
  return static_cast<T>(w * e / (W(1) + e));
}

template <class T>
T relu(T x) {
  if (std::isnan(x)) return x;
  return x > T(0) ? x : T(0);
}

template <class T, class F>
void map(const T* x, T* y, index_t n, F f) {
  for (index_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

}  // namespace

template <class T>
void scalar_unary(unary_op op, const T* x, T* y, index_t n) {
  switch (op) {
    case unary_op::neg: return map(x, y, n, [](T v) { return -v; });
    case unary_op::abs: return map(x, y, n, [](T v) { return std::fabs(v); });
    case unary_op::sqrt: return map(x, y, n, [](T v) { return std::sqrt(v); });
    case unary_op::rsqrt: return map(x, y, n, [](T v) { return T(1) / std::sqrt(v); });
    case unary_op::exp: return map(x, y, n, [](T v) { return std::exp(v); });
    case unary_op::expm1: return map(x, y, n, [](T v) { return std::expm1(v); });
    case unary_op::log: return map(x, y, n, [](T v) { return std::log(v); });
    case unary_op::log1p: return map(x, y, n, [](T v) { return std::log1p(v); });
    case unary_op::sin: return map(x, y, n, [](T v) { return std::sin(v); });
    case unary_op::cos: return map(x, y, n, [](T v) { return std::cos(v); });
    case unary_op::tanh: return map(x, y, n, [](T v) { return std::tanh(v); });
    case unary_op::sigmoid: return map(x, y, n, [](T v) { return sigmoid(v); });
    case unary_op::relu: return map(x, y, n, [](T v) { return relu(v); });
    case unary_op::gelu: return map(x, y, n, [](T v) { return gelu(v); });
    case unary_op::silu: return map(x, y, n, [](T v) { return silu(v); });
    case unary_op::square: return map(x, y, n, [](T v) { return v * v; });
    case unary_op::reciprocal: return map(x, y, n, [](T v) { return T(1) / v; });
    case unary_op::erf: return map(x, y, n, [](T v) { return scalar_erf(v); });
    case unary_op::erfc: return map(x, y, n, [](T v) { return scalar_erfc(v); });
  }
}

namespace {

/// NaN-propagating min/max: a NaN operand wins (a's first); otherwise ties keep a.
template <class T>
T nan_min(T a, T b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  return b < a ? b : a;
}
template <class T>
T nan_max(T a, T b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  return b > a ? b : a;
}

template <class T, class F>
void zip(const T* a, bool a_uniform, const T* b, bool b_uniform, T* y, index_t n, F f) {
  const index_t sa = a_uniform ? 0 : 1, sb = b_uniform ? 0 : 1;
  for (index_t i = 0; i < n; ++i) y[i] = f(a[i * sa], b[i * sb]);
}

}  // namespace

template <class T>
void scalar_binary(binary_op op, const T* a, bool au, const T* b, bool bu, T* y, index_t n) {
  switch (op) {
    case binary_op::add: return zip(a, au, b, bu, y, n, [](T p, T q) { return p + q; });
    case binary_op::sub: return zip(a, au, b, bu, y, n, [](T p, T q) { return p - q; });
    case binary_op::mul: return zip(a, au, b, bu, y, n, [](T p, T q) { return p * q; });
    case binary_op::div: return zip(a, au, b, bu, y, n, [](T p, T q) { return p / q; });
    case binary_op::min: return zip(a, au, b, bu, y, n, [](T p, T q) { return nan_min(p, q); });
    case binary_op::max: return zip(a, au, b, bu, y, n, [](T p, T q) { return nan_max(p, q); });
    case binary_op::pow: return zip(a, au, b, bu, y, n, [](T p, T q) { return std::pow(p, q); });
  }
}

template <class T>
void scalar_muladd(const T* a, bool au, const T* b, bool bu, const T* c, bool cu, T* y, index_t n,
                   bool fused) {
  const index_t sa = au ? 0 : 1, sb = bu ? 0 : 1, sc = cu ? 0 : 1;
  if (fused) {
    for (index_t i = 0; i < n; ++i) y[i] = std::fma(a[i * sa], b[i * sb], c[i * sc]);
  } else {
    for (index_t i = 0; i < n; ++i) {
      const T p = a[i * sa] * b[i * sb];  // rounded on its own (the build never contracts)
      y[i] = p + c[i * sc];
    }
  }
}

#define CT_INSTANTIATE(T)                                                                            \
  template void scalar_unary<T>(unary_op, const T*, T*, index_t);                                   \
  template void scalar_binary<T>(binary_op, const T*, bool, const T*, bool, T*, index_t);           \
  template void scalar_muladd<T>(const T*, bool, const T*, bool, const T*, bool, T*, index_t, bool);
CT_INSTANTIATE(float)
CT_INSTANTIATE(double)
#undef CT_INSTANTIATE

}  // namespace ct::detail::kernels
