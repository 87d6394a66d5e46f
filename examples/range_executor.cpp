// The contract's runnable example: a serial range executor handing out ranges of 64,
// bound around ct work for the current thread.
#include <cstdio>

#include "ct/ct.hpp"

int main() {
  // Any callable (count, callback) is an executor. This one runs everything on the calling
  // thread, 64 groups at a time — handy for checking that results do not depend on how the
  // groups are partitioned.
  int ranges = 0;
  ct::executor serial_64 = [&ranges](ct::index_t count, ct::range_callback callback) {
    for (ct::index_t start = 0; start < count; start += 64) {
      ++ranges;
      callback(start, start + 64 < count ? start + 64 : count);
    }
  };

  auto x = ct::random_uniform<float>({1000, 256}, 1);
  auto row_sums = ct::zeros<double>({1000});
  {
    ct::executor_scope scope(serial_64);  // bound until the end of this block
    ct::parallel_for(x.shape(0), [&](ct::index_t start, ct::index_t end) {
      for (ct::index_t r = start; r < end; ++r) {
        double s = 0;
        for (ct::index_t c = 0; c < x.shape(1); ++c) s += x(r, c);
        row_sums(r) = s;
      }
    });
  }
  std::printf("parallel_for over %lld rows ran as %d ranges of at most 64\n",
              static_cast<long long>(x.shape(0)), ranges);
  std::printf("row 0 sum %.4f, row 999 sum %.4f\n", row_sums(0), row_sums(999));
  return 0;
}
