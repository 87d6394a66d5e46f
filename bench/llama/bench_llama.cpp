// bench/llama/bench_llama.cpp — the Llama example (examples/llama) on a generated ~100M-parameter
// model, beside the memory read bound of the bytes it must stream, in one run.
//
// prompt/<format>/128/<1t|2t>: llama::forward of a 128-token prompt into an empty KV cache.
// generate/<format>/<1t|2t>: llama::forward of one token at position 128 (the cache holds the
//   prompt; each iteration rewinds it to 128, so every iteration does the same work).
// bound/<format>/<1t|2t>: one pass reading exactly the weight bytes a generated token reads
//   (every 2-D weight of every layer, and the output matrix), with the same number of threads,
//   through ct::parallel_for: what no generation step can beat, since it must read them all.
// Counters: tokens/s; weight_MB (weight bytes a generated token reads); GB/s (those bytes per
// second). bench/llama/summarize.py divides generate's GB/s by bound's, thread count by thread
// count: the fraction of the read bound reached.
// "2t" is ct::asio_executor over a boost::asio::thread_pool (the caller plus one pool thread);
// generate/<format>/2t_linger the same with asio_options::linger = 100 us: a token is a few
// hundred short calls, and a helper posted afresh for each waits on the pool's wake-up.
// The models are written to the temporary directory at start-up and removed at exit.
#include <benchmark/benchmark.h>

#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

#include "ct/asio.hpp"
#include "ct/ct.hpp"
#include "../support/machine_context.hpp"
#include "../support/read_bound.hpp"
#include "llama.hpp"


namespace {

using ct::index_t;

struct span {
  const unsigned char* data;
  std::size_t bytes;
};

// The weight bytes one generated token reads: the matmuls' weights (the embedding lookup
// reads one row, left out; the norms' vectors are a few KB).
std::vector<span> weight_spans(const llama::model& m) {
  std::vector<span> out;
  auto add = [&](const llama::weight& w) {
    if (const auto* d = std::get_if<ct::tensor<float>>(&w.w))
      out.push_back({reinterpret_cast<const unsigned char*>(d->data()), static_cast<std::size_t>(d->size()) * sizeof(float)});
    else {
      const auto& e = std::get<ct::encoded_tensor>(w.w);
      out.push_back({e.data(), e.size_bytes()});
    }
  };
  for (const auto& l : m.layers)
    for (const auto* w : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) add(*w);
  add(m.output);
  return out;
}

std::size_t total_bytes(const std::vector<span>& s) {
  std::size_t b = 0;
  for (const auto& x : s) b += x.bytes;
  return b;
}

struct loaded {
  std::string path;
  std::unique_ptr<llama::model> model;
  std::vector<span> spans;
};

// One model per format, generated once (seconds) and removed at exit.
struct models {
  std::map<std::string, loaded> by_format;
  ~models() {
    for (auto& [f, l] : by_format) {
      l.model.reset();
      std::error_code ec;
      std::filesystem::remove(l.path, ec);
    }
  }
  const loaded& get(const std::string& format) {
    auto it = by_format.find(format);
    if (it != by_format.end()) return it->second;
    llama::generator_options o;
    o.cfg = llama::sized_config(100);
    o.weight_format = format;
    const auto path = (std::filesystem::temp_directory_path() /
                       ("ct-bench-llama-100M-" + format + "-" + std::to_string(::getpid()) + ".gguf"))
                          .string();
    llama::generate(o, path);
    loaded l;
    l.path = path;
    l.model = std::make_unique<llama::model>(llama::load(ct::gguf::file::open(path)));
    l.spans = weight_spans(*l.model);
    return by_format.emplace(format, std::move(l)).first->second;
  }
};

models& all_models() {
  static models m;
  return m;
}

boost::asio::thread_pool& helper_pool() {
  static boost::asio::thread_pool pool(1);
  return pool;
}

// linger: the helper polls for the next call for 100 us (the 2t_linger variant).
std::unique_ptr<ct::executor_scope> bind(int threads, bool linger = false) {
  if (threads != 2) return nullptr;
  ct::asio_options o;
  if (linger) o.linger = std::chrono::microseconds(100);
  return std::make_unique<ct::executor_scope>(ct::asio_executor(helper_pool(), 2, o));
}

std::vector<std::int32_t> prompt_tokens(index_t n, index_t vocab) {
  std::vector<std::int32_t> t(static_cast<std::size_t>(n));
  for (index_t i = 0; i < n; ++i) t[static_cast<std::size_t>(i)] = static_cast<std::int32_t>((i * 7919 + 1) % vocab);
  return t;
}

void set_counters(benchmark::State& state, const loaded& l, double tokens_per_iteration) {
  const double bytes = static_cast<double>(total_bytes(l.spans));
  state.counters["tokens/s"] = benchmark::Counter(tokens_per_iteration, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["weight_MB"] = bytes / 1e6;
}

void prompt(benchmark::State& state, std::string format, int threads) {
  const auto& l = all_models().get(format);
  const auto tokens = prompt_tokens(128, l.model->cfg.vocab);
  auto scope = bind(threads);
  for (auto _ : state) {
    llama::kv_cache cache(l.model->cfg);
    benchmark::DoNotOptimize(llama::forward(*l.model, cache, tokens).data());
  }
  set_counters(state, l, 128.0);
}

void generate(benchmark::State& state, std::string format, int threads, bool linger) {
  const auto& l = all_models().get(format);
  auto scope = bind(threads, linger);
  llama::kv_cache cache(l.model->cfg);
  llama::forward(*l.model, cache, prompt_tokens(128, l.model->cfg.vocab));
  const std::vector<std::int32_t> next{42};
  for (auto _ : state) {
    cache.length = 128;  // every iteration: the token at position 128
    benchmark::DoNotOptimize(llama::forward(*l.model, cache, next).data());
  }
  set_counters(state, l, 1.0);
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(total_bytes(l.spans)) / 1e9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

void bound(benchmark::State& state, std::string format, int threads) {
  const auto& l = all_models().get(format);
  // Pieces of about 256 KiB, so two threads split every weight evenly.
  constexpr std::size_t piece = 256 * 1024;
  std::vector<span> pieces;
  for (const auto& s : l.spans)
    for (std::size_t o = 0; o < s.bytes; o += piece) pieces.push_back({s.data + o, std::min(piece, s.bytes - o)});
  auto scope = bind(threads);
  std::vector<std::uint64_t> sink(pieces.size());
  for (auto _ : state) {
    ct::parallel_for(static_cast<index_t>(pieces.size()), [&](index_t b, index_t e) {
      for (index_t i = b; i < e; ++i)
        sink[static_cast<std::size_t>(i)] = ct_bench::read_all(pieces[static_cast<std::size_t>(i)].data, pieces[static_cast<std::size_t>(i)].bytes);
    });
    benchmark::DoNotOptimize(sink.data());
  }
  set_counters(state, l, 1.0);
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(total_bytes(l.spans)) / 1e9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

const bool registered = [] {
  for (const char* f : {"q8_0", "q4_0", "q4_K"})
    for (int t : {1, 2}) {
      const std::string suffix = std::string(f) + "/" + std::to_string(t) + "t";
      benchmark::RegisterBenchmark(("llama/prompt/" + std::string(f) + "/128/" + std::to_string(t) + "t").c_str(), prompt,
                                   std::string(f), t)
          ->UseRealTime()->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark(("llama/generate/" + suffix).c_str(), generate, std::string(f), t, false)
          ->UseRealTime()->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark(("llama/bound/" + suffix).c_str(), bound, std::string(f), t)
          ->UseRealTime()->Unit(benchmark::kMillisecond);
      if (t == 2)
        benchmark::RegisterBenchmark(("llama/generate/" + std::string(f) + "/2t_linger").c_str(), generate, std::string(f), 2, true)
            ->UseRealTime()->Unit(benchmark::kMillisecond);
    }
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
