// tests/encoded/helpers.hpp — small helpers shared by the encoded-format tests.
#pragma once
#include <vector>

#include "ct/ct.hpp"

namespace ct_test {

/// An encoded tensor's bytes, copied.
inline std::vector<unsigned char> bytes_of(const ct::encoded_tensor& e) {
  return std::vector<unsigned char>(e.data(), e.data() + e.size_bytes());
}

/// values as a [1, n] float tensor (one row to encode).
inline ct::tensor<float> row_of(const std::vector<float>& v) {
  return ct::from_vector<float>(v).reshape({1, static_cast<ct::index_t>(v.size())});
}

}  // namespace ct_test
