// tests/matmul/helpers.hpp — what the matmul tests and the contract tests of matmul share: the
// products run under many executors or settings, and an executor that counts its calls.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ct/ct.hpp"
#include "matmul/reference.hpp"

namespace mm_test {

// One product to run under many executors: a @ b into a fresh tensor, or into a strided
// destination (every other column of a bigger tensor) when strided_out names its shape.
template <class T>
struct product {
  std::string name;
  ct::tensor<T> a, b;
  ct::dims strided_out{};
  ct::tensor<T> run() const {
    if (strided_out.empty()) return ct::matmul(a, b);
    ct::dims host_shape = strided_out;
    host_shape[host_shape.size() - 1] *= 2;
    auto host = ct::full<T>(host_shape, T(-7));
    auto out = host.slice(host_shape.size() - 1, 1, std::nullopt, 2);
    ct::matmul(a, b, out);
    return out;
  }
};

template <class T>
std::vector<product<T>> products() {
  std::vector<product<T>> p;
  // Rows beyond MC, depth beyond KC (partial sums carried between k blocks), N not a
  // multiple of the micro-tile.
  p.push_back({"[257,33]@[33,40]", operand<T>({257, 33}, 1), operand<T>({33, 40}, 2)});
  p.push_back({"[33,257]@[257,33]", operand<T>({33, 257}, 3), operand<T>({257, 33}, 4)});
  p.push_back({"[7,33]@[33,7] strided out", operand<T>({7, 33}, 5), operand<T>({33, 7}, 6), ct::dims{7, 7}});
  p.push_back({"transposed [40,257]^T@[40,33]", operand<T>({40, 257}, 7).transpose(), operand<T>({40, 33}, 8)});
  p.push_back({"batched [2,1,33,7]@[3,7,40]", operand<T>({2, 1, 33, 7}, 9), operand<T>({3, 7, 40}, 10)});
  p.push_back({"batched [5,33,7]@[7,9] strided out", operand<T>({5, 33, 7}, 11), operand<T>({7, 9}, 12), ct::dims{5, 33, 9}});
  p.push_back({"matvec [257,300]@[300]", operand<T>({257, 300}, 13), operand<T>({300}, 14)});
  p.push_back({"matvec transposed [300,33]^T@[300]", operand<T>({300, 33}, 15).transpose(), operand<T>({300}, 16)});
  p.push_back({"vecmat [300]@[300,257]", operand<T>({300}, 17), operand<T>({300, 257}, 18)});
  p.push_back({"vecmat [33]@[257,33]^T", operand<T>({33}, 19), operand<T>({257, 33}, 20).transpose()});
  p.push_back({"batched vecmat [33]@[3,33,7]", operand<T>({33}, 21), operand<T>({3, 33, 7}, 22)});
  p.push_back({"dot [1000]@[1000]", operand<T>({1000}, 23), operand<T>({1000}, 24)});
  return p;
}

// Counts executor calls (and runs the ranges serially).
struct counting_executor {
  int calls = 0;
  ct::executor get() {
    return [this](index_t n, ct::range_callback cb) {
      ++calls;
      cb(0, n / 2);
      cb(n / 2, n);
    };
  }
};

}  // namespace mm_test
