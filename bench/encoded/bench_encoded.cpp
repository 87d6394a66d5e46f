// bench/encoded/bench_encoded.cpp — matrix-vector products with encoded weights beside the
// read bound of the same bytes, in one run.
//
// bound/<format>/<N>x<K>: one pass reading the encoded weight bytes (256-bit loads, four
// independent XOR chains): what no product reading those bytes from memory can beat.
// gemv/<format>/<N>x<K>/<1t|2t>: ct::matmul(w, x) into a preallocated y, the default mode
// (quantized activations for q8_0, q4_0, q4_K, q6_K; decoded rows for bf16 / f16); "2t" is
// ct::asio_executor over a boost::asio::thread_pool (the caller plus one pool thread).
// Counter GB/s: encoded weight bytes per second. The weights (N x K x bytes per value) are far
// larger than the caches, and each repetition reads them once.
// prompt/<format>/128x4096x4096: ct::matmul(x, w.transpose()) for 128 activation rows (a
// prompt), beside prompt/sgemm/…: ct's float32 matmul of the same shape (x [128, 4096] times a
// float [4096, 4096] weight transposed). Counter MAC/s: multiply-accumulates per second.
#include <benchmark/benchmark.h>

#include <boost/asio/thread_pool.hpp>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ct/asio.hpp"
#include "ct/ct.hpp"
#include "../support/machine_context.hpp"
#include "../support/read_bound.hpp"


namespace {

using ct::index_t;

const ct::encoded_tensor& weights(const std::string& format, index_t n, index_t k) {
  static std::map<std::string, ct::encoded_tensor> cache;
  const std::string key = format + "/" + std::to_string(n) + "x" + std::to_string(k);
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache.emplace(key, ct::encode(ct::random_uniform<float>({n, k}, 11, -1.0f, 1.0f), ct::find_format(format))).first;
  return it->second;
}

boost::asio::thread_pool& helper_pool() {
  static boost::asio::thread_pool pool(1);
  return pool;
}

void bound(benchmark::State& state, std::string format, index_t n, index_t k) {
  const auto& w = weights(format, n, k);
  for (auto _ : state) benchmark::DoNotOptimize(ct_bench::read_all(w.data(), w.size_bytes()));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(w.size_bytes()));
}

void gemv(benchmark::State& state, std::string format, index_t n, index_t k, int threads) {
  const auto& w = weights(format, n, k);
  const auto x = ct::random_uniform<float>({k}, 12, -1.0f, 1.0f);
  auto y = ct::matmul(w, x);
  std::unique_ptr<ct::executor_scope> scope;
  if (threads == 2) scope = std::make_unique<ct::executor_scope>(ct::asio_executor(helper_pool(), 2));
  for (auto _ : state) {
    ct::matmul(w, x, y);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(w.size_bytes()));
}

void prompt(benchmark::State& state, std::string format, int threads) {
  const index_t m = 128, n = 4096, k = 4096;
  const auto x = ct::random_uniform<float>({m, k}, 13, -1.0f, 1.0f);
  std::unique_ptr<ct::executor_scope> scope;
  if (threads == 2) scope = std::make_unique<ct::executor_scope>(ct::asio_executor(helper_pool(), 2));
  auto y = ct::zeros<float>({m, n});
  if (format == "sgemm") {
    const auto w = ct::random_uniform<float>({n, k}, 11, -1.0f, 1.0f);
    for (auto _ : state) {
      ct::matmul(x, w.transpose(), y);
      benchmark::DoNotOptimize(y.data());
      benchmark::ClobberMemory();
    }
  } else {
    const auto& w = weights(format, n, k);
    for (auto _ : state) {
      ct::matmul(x, w.transpose(), y);
      benchmark::DoNotOptimize(y.data());
      benchmark::ClobberMemory();
    }
  }
  state.counters["MAC/s"] = benchmark::Counter(static_cast<double>(m * n * k), benchmark::Counter::kIsIterationInvariantRate);
}

const bool registered = [] {
  for (const char* f : {"sgemm", "q8_0", "q4_0", "q4_K"})
    for (int t : {1, 2})
      benchmark::RegisterBenchmark(("prompt/" + std::string(f) + "/128x4096x4096/" + std::to_string(t) + "t").c_str(), prompt,
                                   std::string(f), t)
          ->UseRealTime()->Unit(benchmark::kMillisecond);
  for (const char* f : {"q8_0", "q4_0", "q4_K", "q6_K", "bf16", "f16"})
    for (const auto& [n, k] : {std::pair<index_t, index_t>{4096, 4096}, std::pair<index_t, index_t>{11008, 4096}}) {
      const std::string shape = std::to_string(n) + "x" + std::to_string(k);
      benchmark::RegisterBenchmark(("bound/" + std::string(f) + "/" + shape).c_str(), bound, std::string(f), n, k)
          ->UseRealTime()->Unit(benchmark::kMillisecond);
      for (int t : {1, 2})
        benchmark::RegisterBenchmark(("gemv/" + std::string(f) + "/" + shape + "/" + std::to_string(t) + "t").c_str(), gemv,
                                     std::string(f), n, k, t)
            ->UseRealTime()->Unit(benchmark::kMillisecond);
    }
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
