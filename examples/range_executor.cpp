// The contract's runnable example: a serial range executor handing out ranges of 64, bound
// for the current thread around a matmul and a reduction.
#include <algorithm>
#include <cstdio>

#include "ct/ct.hpp"
#include "ct/ops/matmul.hpp"

int main() {
  // Any callable (count, callback) is an executor. This one runs everything on the calling
  // thread, 64 groups at a time, and counts the ranges it hands out.
  int ranges = 0;
  ct::executor serial_64 = [&ranges](ct::index_t count, ct::range_callback callback) {
    for (ct::index_t start = 0; start < count; start += 64) {
      ++ranges;
      callback(start, std::min(count, start + 64));
    }
  };

  auto weights = ct::random_normal<float>({300, 128}, 1);
  auto input = ct::random_normal<float>({128, 16}, 2);
  auto activations = ct::random_uniform<float>({1000, 256}, 3);

  ct::tensor<float> projected, row_sums;
  {
    ct::executor_scope scope(serial_64);  // bound until the end of this block
    projected = ct::matmul(weights, input);                     // 300 groups: one per output row
    int after_matmul = ranges;
    row_sums = ct::eval(ct::sum(activations, -1));              // 1000 groups: one per row
    std::printf("matmul [300x128]x[128x16]: %d ranges; sum over rows of [1000x256]: %d ranges\n", after_matmul,
                ranges - after_matmul);
  }

  // Without a binding the same calls run serially on this thread — with bitwise the same results.
  auto again = ct::eval(ct::sum(activations, -1));
  std::printf("row 0 sum %.4f, row 999 sum %.4f, identical without the executor: %s\n", row_sums(0), row_sums(999),
              ct::equal(again, row_sums) && ct::equal(ct::matmul(weights, input), projected) ? "yes" : "no");
  return 0;
}
