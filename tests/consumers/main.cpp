// The program every out-of-tree consumer (tests/consumers/{cmake,pkgconfig,meson}) builds
// against an installed ct: a fused softmax evaluated under a pool executor, checked against
// a naive double-precision loop and against the same expression run without an executor.
// Prints one line and exits 0 on success; any mismatch or error exits 1.
#include <ct/ct.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

static_assert(CT_VERSION_NUMBER == CT_VERSION_MAJOR * 10000 + CT_VERSION_MINOR * 100 + CT_VERSION_PATCH);
static_assert(ct::version.major == CT_VERSION_MAJOR && ct::version.minor == CT_VERSION_MINOR &&
              ct::version.patch == CT_VERSION_PATCH);

namespace {

// A minimal "pool": each job runs on `workers` fresh threads, and the first error thrown by
// any of them is rethrown after all have been joined (what ct::pool_executor asks for).
struct spawning_pool {
  int workers;
};

void run_on_all(spawning_pool& pool, const auto& job) {
  std::exception_ptr error;
  std::mutex error_mutex;
  std::vector<std::thread> threads;
  for (int id = 0; id < pool.workers; ++id)
    threads.emplace_back([&, id] {
      try {
        job(id, pool.workers);
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace

int main() {
  try {
    constexpr ct::index_t rows = 257, cols = 1000;
    const auto x = ct::random_normal<float>({rows, cols}, /*seed=*/18, 0.0f, 3.0f);

    spawning_pool pool{3};
    std::atomic<int> calls{0};
    ct::executor on_pool = ct::pool_executor(pool, [&calls](spawning_pool& p, const auto& job) {
      ++calls;
      run_on_all(p, job);
    });

    ct::tensor<float> y;
    {
      ct::executor_scope scope(on_pool);
      auto e = ct::exp(x - ct::max(x, -1));  // lazy: the whole softmax is one fused kernel per row
      y = e / ct::sum(e, -1);
    }
    if (calls.load() == 0) {
      std::printf("FAIL: the softmax never called the bound executor\n");
      return 1;
    }

    double worst = 0;
    for (ct::index_t i = 0; i < rows; ++i) {
      double m = x(i, 0);
      for (ct::index_t j = 1; j < cols; ++j) m = std::max(m, static_cast<double>(x(i, j)));
      double s = 0;
      for (ct::index_t j = 0; j < cols; ++j) s += std::exp(static_cast<double>(x(i, j)) - m);
      for (ct::index_t j = 0; j < cols; ++j) {
        const double want = std::exp(static_cast<double>(x(i, j)) - m) / s;
        const double err = std::abs(static_cast<double>(y(i, j)) - want) / std::max(want, 1e-30);
        if (!(err <= 1e-4)) {  // also catches NaN
          std::printf("FAIL: softmax(%ld, %ld) = %.9g, the double loop gives %.9g\n", static_cast<long>(i),
                      static_cast<long>(j), static_cast<double>(y(i, j)), want);
          return 1;
        }
        worst = std::max(worst, err);
      }
    }

    const ct::tensor<float> serial = ct::softmax(x, -1);  // no executor bound: this thread only
    if (!ct::equal(serial, y)) {
      std::printf("FAIL: the pool's softmax differs from the serial one\n");
      return 1;
    }

    std::printf("ct %s: softmax [%ldx%ld] on %d pool workers matches the double loop (max rel. error %.1e) "
                "and the serial run bit for bit\n",
                ct::version.string, static_cast<long>(rows), static_cast<long>(cols), pool.workers, worst);
    return 0;
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
}
