// tests/matmul/reference.hpp — an independent, naive reference for ct::matmul and the
// documented error bound the fast kernels are held to.
//
// The reference follows numpy.matmul's rules written out directly (element access through
// broadcast views, nothing from ct's matmul code) and accumulates in long double (64-bit
// mantissa on x86), alongside sum_k |a_ik * b_kj|, which scales the bound.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "ct/ct.hpp"
#include "ct/ops/matmul.hpp"

namespace mm_test {

/// Both backends, both FMA policies.
inline const ct::settings all_settings[] = {{ct::backend::simd, ct::fma_policy::fused},
                                            {ct::backend::simd, ct::fma_policy::separate},
                                            {ct::backend::scalar, ct::fma_policy::fused},
                                            {ct::backend::scalar, ct::fma_policy::separate}};

inline std::string describe(const ct::settings& s) {
  return std::string(s.backend == ct::backend::simd ? "simd" : "scalar") + "/" +
         (s.fma == ct::fma_policy::fused ? "fused" : "separate");
}


using ct::index_t;

struct reference {
  ct::dims shape;                 // numpy.matmul result shape
  std::vector<long double> value;  // row-major
  std::vector<long double> abs_sum;  // sum_k |a_ik b_kj|, row-major
  index_t k = 0;
};

// Element of t at a row-major flat index of `shape` (t already broadcast to shape).
template <class T>
T at_flat(const ct::tensor<T>& t, index_t flat) {
  index_t off = 0;
  for (int i = t.rank() - 1; i >= 0; --i) {
    off += (flat % t.shape()[i]) * t.strides()[i];
    flat /= t.shape()[i];
  }
  return t.data()[off];
}

template <class T>
reference naive_matmul(ct::tensor<T> a, ct::tensor<T> b) {
  const bool a_vec = a.rank() == 1, b_vec = b.rank() == 1;
  if (a_vec) a = a.unsqueeze(0);   // [K] -> [1, K]
  if (b_vec) b = b.unsqueeze(-1);  // [K] -> [K, 1]
  const index_t m = a.shape(-2), k = a.shape(-1), n = b.shape(-1);
  ct::dims ab, bb;
  for (int i = 0; i + 2 < a.rank(); ++i) ab.push_back(a.shape()[i]);
  for (int i = 0; i + 2 < b.rank(); ++i) bb.push_back(b.shape()[i]);
  ct::dims batch = ct::broadcast_shapes(ab, bb);
  ct::dims af = batch, bf = batch;
  af.push_back(m);
  af.push_back(k);
  bf.push_back(k);
  bf.push_back(n);
  ct::tensor<T> A = a.broadcast_to(af), B = b.broadcast_to(bf);
  const index_t batches = ct::element_count(batch);
  reference r;
  r.k = k;
  r.shape = batch;
  if (!a_vec) r.shape.push_back(m);
  if (!b_vec) r.shape.push_back(n);
  r.value.resize(static_cast<std::size_t>(batches * m * n));
  r.abs_sum.resize(r.value.size());
  for (index_t t = 0; t < batches; ++t)
    for (index_t i = 0; i < m; ++i)
      for (index_t j = 0; j < n; ++j) {
        long double s = 0, sa = 0;
        for (index_t p = 0; p < k; ++p) {
          const long double x = static_cast<long double>(at_flat(A, (t * m + i) * k + p));
          const long double y = static_cast<long double>(at_flat(B, (t * k + p) * n + j));
          s += x * y;
          sa += std::fabs(x * y);
        }
        const auto idx = static_cast<std::size_t>((t * m + i) * n + j);
        r.value[idx] = s;
        r.abs_sum[idx] = sa;
      }
  return r;
}

/// The documented bound: |computed - exact| <= gamma_K * sum_k |a_ik b_kj| with
/// gamma_K = K u / (1 - K u), u = epsilon / 2 of T (Higham's bound for a K-term dot product,
/// valid for any summation order, fused or not). The reference's own error (long double)
/// is added so the check is not loosened by it.
template <class T>
long double error_bound(index_t k, long double abs_sum) {
  auto gamma = [k](long double u) { return k * u / (1 - k * u); };
  const long double uT = std::numeric_limits<T>::epsilon() / 2.0L;
  const long double uR = std::numeric_limits<long double>::epsilon() / 2.0L;
  return (gamma(uT) + gamma(uR)) * abs_sum;
}

/// Number of elements of got that violate the bound (integers: that differ at all).
template <class T>
index_t count_bad(const ct::tensor<T>& got, const reference& r, std::string* first = nullptr) {
  if (got.shape() != r.shape) {
    if (first) *first = "shape " + got.shape().str() + " != " + r.shape.str();
    return -1;
  }
  index_t bad = 0;
  for (index_t f = 0; f < got.size(); ++f) {
    const long double v = static_cast<long double>(at_flat(got, f));
    const long double want = r.value[static_cast<std::size_t>(f)];
    bool ok;
    if constexpr (std::is_integral_v<T>) ok = v == want;
    else ok = std::fabs(v - want) <= error_bound<T>(r.k, r.abs_sum[static_cast<std::size_t>(f)]);
    if (!ok) {
      if (bad == 0 && first)
        *first = "element " + std::to_string(f) + ": got " + std::to_string(static_cast<double>(v)) + ", want " +
                 std::to_string(static_cast<double>(want));
      ++bad;
    }
  }
  return bad;
}

/// Bitwise equality of two tensors of the same shape (distinguishes -0 from +0, compares NaN
/// payloads), which is what the determinism promise is about.
template <class T>
bool same_bits(const ct::tensor<T>& x, const ct::tensor<T>& y) {
  if (x.shape() != y.shape()) return false;
  for (index_t f = 0; f < x.size(); ++f) {
    const T u = at_flat(x, f), v = at_flat(y, f);
    if (std::memcmp(&u, &v, sizeof(T)) != 0) return false;
  }
  return true;
}

/// Random operands with a mix of signs, so that cancellation happens (the bound is relative
/// to sum |a b|, not to the result).
template <class T>
ct::tensor<T> operand(const ct::dims& shape, std::uint64_t seed) {
  if constexpr (std::is_integral_v<T>) return ct::random_uniform<T>(shape, seed, T(-50), T(50));
  else return ct::random_uniform<T>(shape, seed, T(-1), T(1));
}

}  // namespace mm_test
