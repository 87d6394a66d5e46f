// ct demo: fused softmax and layer norm under a Boost.Asio pool, with the speedup measured.
#include <boost/asio/thread_pool.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <vector>
#include <cstdio>
#include <cstring>

#include "ct/asio.hpp"
#include "ct/ct.hpp"
#include "ct/ops/matmul.hpp"

namespace {

// Median wall time of `reps` runs of f, in milliseconds, after two untimed warm-up runs
// (first touch of the pool thread's caches and of the scratch memory).
template <class F>
double median_ms(F&& f, int reps = 31) {
  f();
  f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Same bits in every element (NaN payloads and the sign of zero included), not just ==.
bool same_bits(const ct::tensor<float>& a, const ct::tensor<float>& b) {
  if (a.shape() != b.shape()) return false;
  auto ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.data(), cb.data(), static_cast<std::size_t>(ca.size()) * sizeof(float)) == 0;
}

}  // namespace

int main() {
  std::printf("ct demo — SIMD target: %s\n\n", ct::simd_target_name());

  // 1. A tensor and a lazy expression: nothing runs until ct::eval.
  auto x = ct::random_normal<float>({512, 1024}, 42);
  auto logits = x * 4.0f;  // an expression, not yet computed
  auto shown = ct::eval(ct::softmax(ct::from_list<float>({{1, 2, 3}, {1, 1, 1}}), -1));
  std::printf("softmax([[1,2,3],[1,1,1]]) =\n");
  std::cout << shown << "\n\n";

  // 2. Fused softmax and layer norm: one kernel per row, nested reducers included.
  ct::tensor<float> probs(x.shape()), normed(x.shape());
  auto w = ct::random_uniform<float>({1024}, 1, 0.5f, 1.5f), b = ct::random_uniform<float>({1024}, 2, -0.1f, 0.1f);
  auto softmax = [&] { ct::eval(ct::softmax(logits, -1), probs); };
  auto layer_norm = [&] { ct::eval(ct::layer_norm(x, -1, 1e-5f, w, b), normed); };

  double t_softmax_1 = median_ms(softmax), t_ln_1 = median_ms(layer_norm);
  auto probs_1 = probs.clone(), normed_1 = normed.clone();

  // 3. The same expressions with an Asio pool bound for this thread: rows are spread over
  //    the caller and one pool thread. Results are bitwise identical. Then once more with
  //    the pool thread lingering between calls (asio_options::linger) instead of going back
  //    to sleep, which saves its wake-up on every call (docs/executor.md).
  boost::asio::thread_pool pool(1);
  ct::asio_options lingering;
  lingering.linger = std::chrono::microseconds(100);
  struct timing {
    double softmax, layer_norm;
    bool equal;
  };
  auto timed = [&](ct::executor exec) {
    ct::executor_scope scope(std::move(exec));
    timing t{median_ms(softmax), median_ms(layer_norm), false};
    t.equal = same_bits(probs, probs_1) && same_bits(normed, normed_1);
    return t;
  };
  const timing plain = timed(ct::asio_executor(pool, 2)), warm = timed(ct::asio_executor(pool, 2, lingering));
  pool.join();

  auto row_sum = ct::eval(ct::sum(probs, -1));
  auto stats_mean = ct::eval(ct::mean(normed, -1));
  std::printf("%-36s %10s %12s\n", "[512x1024] f32, time and speed-up", "softmax", "layer_norm");
  std::printf("%-36s %7.3f ms %9.3f ms\n", "1 thread", t_softmax_1, t_ln_1);
  for (auto [name, t] : {std::pair<const char*, timing>{"2 Asio workers", plain}, {"2 Asio workers, linger 100 us", warm}})
    std::printf("%-36s %7.3f ms %9.3f ms   -> %.2fx / %.2fx, bitwise equal to 1 thread: %s\n", name, t.softmax,
                t.layer_norm, t_softmax_1 / t.softmax, t_ln_1 / t.layer_norm, t.equal ? "yes" : "NO");
  std::printf("softmax rows sum to 1: row 0 %.7f, row 511 %.7f; layer-norm row means (with bias): %.4f, %.4f\n",
              row_sum(0), row_sum(511), stats_mean(0), stats_mean(511));

  // 4. Matmul through the same executor machinery.
  auto a = ct::random_normal<float>({256, 256}, 3), m = ct::random_normal<float>({256, 256}, 4);
  double t_mm = median_ms([&] { ct::matmul(a, m); });
  std::printf("matmul 256^3 f32: %.3f ms (%.1f GFLOP/s, 1 thread)\n\n", t_mm, 2.0 * 256 * 256 * 256 / t_mm / 1e6);

  // 5. Encoded (quantized) weights: a 4096x4096 matrix-vector product, the hot loop of token
  // generation, with q8_0 and q4_0 weights under an Asio pool (docs/encoded.md).
  const auto wf = ct::random_normal<float>({4096, 4096}, 5);
  const auto xv = ct::random_normal<float>({4096}, 6);
  const auto exact = ct::matmul(wf, xv);
  boost::asio::thread_pool qpool(1);
  std::printf("%-34s %9s %10s %10s %12s\n", "gemv 4096x4096, encoded weights", "bytes", "1 thread", "2 workers", "max rel err");
  for (const char* name : {"q8_0", "q4_0"}) {
    const auto w = ct::encode(wf, ct::find_format(name));
    auto y = ct::matmul(w, xv);
    const double t1 = median_ms([&] { ct::matmul(w, xv, y); });
    const auto y1 = y.clone();
    double t2;
    {
      ct::executor_scope scope(ct::asio_executor(qpool, 2));
      t2 = median_ms([&] { ct::matmul(w, xv, y); });
    }
    double err = 0, scale = 0;
    for (ct::index_t i = 0; i < 4096; ++i) {
      err = std::max(err, static_cast<double>(std::fabs(y(i) - exact(i))));
      scale = std::max(scale, static_cast<double>(std::fabs(exact(i))));
    }
    const double mb = static_cast<double>(w.size_bytes()) / 1e6;
    std::printf("%-34s %6.1f MB %7.3f ms %7.3f ms %12.2e   %.1f / %.1f GB/s, 2 workers bitwise equal: %s\n", name, mb, t1, t2,
                err / scale, mb / t1, mb / t2, same_bits(y, y1) ? "yes" : "NO");
  }
  qpool.join();
  return 0;
}
