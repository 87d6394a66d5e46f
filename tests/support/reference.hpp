// tests/support/reference.hpp — naive double-precision references for checking ct results.
#pragma once
#include <cmath>
#include <functional>
#include <vector>

#include "ct/ct.hpp"

namespace ct_test {

/// Elements in row-major order, as double.
template <class T>
std::vector<double> values(const ct::tensor<T>& t) {
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(t.size()));
  auto c = t.contiguous();
  for (ct::index_t i = 0; i < c.size(); ++i) out.push_back(static_cast<double>(c.data()[i]));
  return out;
}

/// For a row-major [rows, cols] view of values: f(row values) per row.
inline std::vector<double> per_row(const std::vector<double>& v, ct::index_t cols,
                                   const std::function<double(const double*, ct::index_t)>& f) {
  std::vector<double> out;
  for (std::size_t r = 0; r * static_cast<std::size_t>(cols) < v.size(); ++r) out.push_back(f(v.data() + r * static_cast<std::size_t>(cols), cols));
  return out;
}

/// Largest |a - b| / max(|b|, floor) over paired elements.
inline double max_rel_error(const std::vector<double>& a, const std::vector<double>& b, double floor = 1e-30) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]) / std::max(std::fabs(b[i]), floor));
  return m;
}

/// Bitwise equality of two tensors' elements (NaN payloads included).
template <class T>
bool bitwise_equal(const ct::tensor<T>& a, const ct::tensor<T>& b) {
  if (a.shape() != b.shape()) return false;
  auto x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.data(), y.data(), static_cast<std::size_t>(x.size()) * sizeof(T)) == 0;
}

}  // namespace ct_test
