// bench/encoded/bench_encoded.cpp — matrix-vector products with encoded weights beside the
// read bound of the same bytes, in one run.
//
// bound/<format>/<N>x<K>: one pass reading the encoded weight bytes (256-bit loads, four
// independent XOR chains): what no product reading those bytes from memory can beat.
// gemv/<format>/<N>x<K>/<1t|2t>: ct::matmul(w, x) into a preallocated y, the default mode
// (quantized activations for q8_0, q4_0, q4_K, q6_K; decoded rows for bf16 / f16); "2t" is
// ct::asio_executor over a boost::asio::thread_pool (the caller plus one pool thread).
// Counter GB/s: encoded weight bytes per second. Each repetition reads the weights once; in
// these the same bytes every time, which a host's last-level cache may hold in part (a 9 MiB
// q4_0 4096² fits a Zen 5 CCD's 32 MiB L3 even when the guest reports no L3).
// bound_dram/… and gemv_dram/…: the same, but each repetition reads the next of several copies
// of the weights (encoded views over one buffer of at least 512 MiB), so every byte comes
// from DRAM — the case of a model far larger than the caches, which the issue's "DRAM read
// bound" names. bound_dram/…/2t: that read split in halves over two threads (the caller and the
// pool's thread), the bound of gemv_dram/…/2t.
// prompt/<format>/128x4096x4096: ct::matmul(x, w.transpose()) for 128 activation rows (a
// prompt), beside prompt/sgemm/…: ct's float32 matmul of the same shape (x [128, 4096] times a
// float [4096, 4096] weight transposed). Counter MAC/s: multiply-accumulates per second.
#include <benchmark/benchmark.h>

#include <boost/asio/thread_pool.hpp>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ct/asio.hpp"
#include "ct/ct.hpp"
#include "../support/both_halves.hpp"
#include "../support/machine_context.hpp"
#include "../support/read_bound.hpp"


namespace {

using ct::index_t;

std::string key_of(const std::string& format, index_t n, index_t k) {
  return format + "/" + std::to_string(n) + "x" + std::to_string(k);
}

const ct::encoded_tensor& weights(const std::string& format, index_t n, index_t k) {
  static std::map<std::string, ct::encoded_tensor> cache;
  const std::string key = key_of(format, n, k);
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache.emplace(key, ct::encode(ct::random_uniform<float>({n, k}, 11, -1.0f, 1.0f), ct::find_format(format))).first;
  return it->second;
}

// Copies of the weights, 4 KiB apart, filling at least 512 MiB (far past any last-level cache
// a single core allocates into), as views: the DRAM variants cycle through them.
struct weight_copies {
  std::unique_ptr<unsigned char[]> buffer;
  std::vector<ct::encoded_tensor> views;
};

const weight_copies& copies(const std::string& format, index_t n, index_t k) {
  static std::map<std::string, weight_copies> cache;
  const std::string key = key_of(format, n, k);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const auto& w = weights(format, n, k);
  const std::size_t stride = (w.size_bytes() + 4095) / 4096 * 4096;
  const std::size_t count = std::max<std::size_t>(2, ((std::size_t{512} << 20) + stride - 1) / stride);
  weight_copies c;
  c.buffer.reset(new unsigned char[stride * count + 64]);
  unsigned char* base = c.buffer.get() + (64 - reinterpret_cast<std::uintptr_t>(c.buffer.get()) % 64) % 64;
  for (std::size_t i = 0; i < count; ++i) {
    std::memcpy(base + i * stride, w.data(), w.size_bytes());
    c.views.push_back(ct::encoded_tensor::view(w.fmt(), w.shape(), base + i * stride, w.size_bytes()));
  }
  return cache.emplace(key, std::move(c)).first->second;
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

void bound_dram(benchmark::State& state, std::string format, index_t n, index_t k) {
  const auto& c = copies(format, n, k);
  std::size_t i = 0;
  for (auto _ : state) {
    const auto& w = c.views[i++ % c.views.size()];
    benchmark::DoNotOptimize(ct_bench::read_all(w.data(), w.size_bytes()));
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(c.views[0].size_bytes()));
}

// bound_dram split in halves over the caller and the helper pool's thread: what two cores can
// read, the bound of gemv_dram/…/2t. (On a machine where one core nearly fills the memory
// system, two workers cannot be twice one, and this says by how much.)
void bound_dram_2t(benchmark::State& state, std::string format, index_t n, index_t k) {
  const auto& c = copies(format, n, k);
  std::size_t i = 0;
  for (auto _ : state) {
    const auto& w = c.views[i++ % c.views.size()];
    const std::size_t half = w.size_bytes() / 2 / 64 * 64;
    std::uint64_t mine = 0, other = 0;
    ct_bench::run_both_halves(
        helper_pool(), [&] { mine = ct_bench::read_all(w.data(), half); },
        [&] { other = ct_bench::read_all(w.data() + half, w.size_bytes() - half); });
    benchmark::DoNotOptimize(mine);
    benchmark::DoNotOptimize(other);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(c.views[0].size_bytes()));
}

void gemv_dram(benchmark::State& state, std::string format, index_t n, index_t k, int threads) {
  const auto& c = copies(format, n, k);
  const auto x = ct::random_uniform<float>({k}, 12, -1.0f, 1.0f);
  auto y = ct::matmul(c.views[0], x);
  std::unique_ptr<ct::executor_scope> scope;
  if (threads == 2) scope = std::make_unique<ct::executor_scope>(ct::asio_executor(helper_pool(), 2));
  std::size_t i = 0;
  for (auto _ : state) {
    ct::matmul(c.views[i++ % c.views.size()], x, y);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(c.views[0].size_bytes()));
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
  for (const char* f : {"sgemm", "q8_0", "q4_0", "q4_K", "q6_K"})
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
      benchmark::RegisterBenchmark(("bound_dram/" + std::string(f) + "/" + shape).c_str(), bound_dram, std::string(f), n, k)
          ->UseRealTime()->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark(("bound_dram/" + std::string(f) + "/" + shape + "/2t").c_str(), bound_dram_2t, std::string(f),
                                   n, k)
          ->UseRealTime()->Unit(benchmark::kMillisecond);
      for (int t : {1, 2})
        benchmark::RegisterBenchmark(("gemv_dram/" + std::string(f) + "/" + shape + "/" + std::to_string(t) + "t").c_str(),
                                     gemv_dram, std::string(f), n, k, t)
            ->UseRealTime()->Unit(benchmark::kMillisecond);
    }
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
