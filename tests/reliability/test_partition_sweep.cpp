// tests/reliability/test_partition_sweep.cpp — issue 20's randomized partition sweep: for every
// operation family, 1000 random executors (random cut points, from none to one range per group;
// empty ranges; random order), each result bitwise equal to the serial one. The contract's
// determinism promise (CONTRACT §4) says nothing else can matter; this checks it beyond the
// executor zoo's fixed list.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "ct/ct.hpp"
#include "support/reference.hpp"

namespace {

using ct::index_t;

// Serial; [0, count) cut at a random number of random points (repeats make empty ranges), the
// ranges run in a random order.
ct::executor sweep_executor(std::uint64_t seed, long& calls) {
  return [seed, &calls](index_t count, ct::range_callback cb) {
    ++calls;
    std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ull + static_cast<std::uint64_t>(count));
    const std::uint64_t cuts_wanted = rng() % static_cast<std::uint64_t>(std::min<index_t>(count, 64) + 1);
    std::vector<index_t> cuts{0, count};
    for (std::uint64_t i = 0; i < cuts_wanted; ++i) cuts.push_back(static_cast<index_t>(rng() % static_cast<std::uint64_t>(count + 1)));
    std::sort(cuts.begin(), cuts.end());
    std::vector<std::pair<index_t, index_t>> ranges;
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i) ranges.emplace_back(cuts[i], cuts[i + 1]);
    std::shuffle(ranges.begin(), ranges.end(), rng);
    for (const auto& [s, e] : ranges) cb(s, e);
  };
}

// 1000 executors: each run of `op` bitwise equal to the serial run; the executor is called
// (the operation has more than one group) in every run.
template <class Op>
void sweep(const std::string& family, Op op) {
  INFO(family);
  const auto want = op();
  long calls = 0;
  bool all_equal = true;
  for (std::uint64_t seed = 1; seed <= 1000; ++seed) {
    ct::executor_scope scope(sweep_executor(seed, calls));
    const auto got = op();
    if (!ct_test::bitwise_equal(got, want)) {
      all_equal = false;
      INFO("seed " << seed);
      CHECK(ct_test::bitwise_equal(got, want));
      break;
    }
  }
  CHECK(all_equal);
  CHECK(calls == 1000);
}

}  // namespace

TEST_CASE("partition sweep: every reducer, over each axis kind, under 1000 random executors", "[scheduling][reliability]") {
  const auto x = ct::random_uniform<float>({37, 53}, 11, -3.0f, 3.0f);
  const auto xt = ct::random_uniform<float>({53, 37}, 12, -3.0f, 3.0f).permute({1, 0});  // strided rows
  for (int axis : {0, 1}) {
    const std::string a = " axis " + std::to_string(axis);
    sweep("sum" + a, [&] { return ct::eval(ct::sum(x, axis)); });
    sweep("sum, transposed input" + a, [&] { return ct::eval(ct::sum(xt, axis)); });
    sweep("prod" + a, [&] { return ct::eval(ct::prod(x * 0.5f + 1.0f, axis)); });
    sweep("mean" + a, [&] { return ct::eval(ct::mean(x, axis)); });
    sweep("max" + a, [&] { return ct::eval(ct::max(x, axis)); });
    sweep("min" + a, [&] { return ct::eval(ct::min(xt, axis)); });
    sweep("argmax" + a, [&] { return ct::eval(ct::argmax(x, axis)); });
    sweep("argmin" + a, [&] { return ct::eval(ct::argmin(xt, axis)); });
    sweep("logsumexp" + a, [&] { return ct::eval(ct::logsumexp(x, axis)); });
    sweep("any" + a, [&] { return ct::eval(ct::any(x > 2.9f, axis)); });
    sweep("all" + a, [&] { return ct::eval(ct::all(x > -2.9f, axis)); });
  }
  const auto d = ct::random_uniform<double>({41, 29}, 13, -3.0, 3.0);
  sweep("sum, double", [&] { return ct::eval(ct::sum(d, -1)); });
}

TEST_CASE("partition sweep: softmax, log_softmax, the norms and a fused expression under 1000 random executors",
          "[scheduling][reliability]") {
  const auto x = ct::random_uniform<float>({45, 61}, 21, -6.0f, 6.0f);
  const auto w = ct::random_uniform<float>({61}, 22, 0.5f, 1.5f);
  const auto b = ct::random_uniform<float>({61}, 23, -1.0f, 1.0f);
  sweep("softmax", [&] { return ct::eval(ct::softmax(x, -1)); });
  sweep("softmax over axis 0", [&] { return ct::eval(ct::softmax(x, 0)); });
  sweep("log_softmax", [&] { return ct::eval(ct::log_softmax(x, -1)); });
  sweep("layer_norm", [&] { return ct::eval(ct::layer_norm(x, -1, 1e-5f, w, b)); });
  sweep("rms_norm", [&] { return ct::eval(ct::rms_norm(x, -1, 1e-5f, w)); });
  sweep("nested reducers", [&] { return ct::eval(ct::sum(ct::exp(x - ct::max(x, -1)), -1) * 2.0f + ct::mean(x, -1)); });
}

TEST_CASE("partition sweep: matmul, batched, matrix-vector and encoded products under 1000 random executors",
          "[scheduling][reliability]") {
  const auto a = ct::random_uniform<float>({70, 45}, 31, -1.0f, 1.0f);
  const auto bm = ct::random_uniform<float>({45, 38}, 32, -1.0f, 1.0f);
  const auto v = ct::random_uniform<float>({45}, 33, -1.0f, 1.0f);
  const auto ab = ct::random_uniform<float>({5, 13, 45}, 34, -1.0f, 1.0f);
  sweep("matmul", [&] { return ct::matmul(a, bm); });
  sweep("matmul, transposed operands", [&] { return ct::matmul(bm.permute({1, 0}), a.permute({1, 0})); });
  sweep("batched matmul", [&] { return ct::matmul(ab, bm); });
  sweep("matrix-vector", [&] { return ct::matmul(a, v); });
  const auto wd = ct::random_uniform<double>({33, 17}, 35, -1.0, 1.0);
  sweep("matmul, double", [&] { return ct::matmul(wd, wd.permute({1, 0})); });
  const auto wf = ct::random_uniform<float>({40, 256}, 36, -1.0f, 1.0f);
  const auto x = ct::random_uniform<float>({256}, 37, -1.0f, 1.0f);
  const auto xs = ct::random_uniform<float>({9, 256}, 38, -1.0f, 1.0f);
  for (const char* name : {"q8_0", "q4_0", "q4_K", "q6_K", "bf16"}) {
    const auto w = ct::encode(wf, ct::find_format(name));
    sweep(std::string(name) + " matrix-vector", [&] { return ct::matmul(w, x); });
    sweep(std::string(name) + " x times w transposed", [&] { return ct::matmul(xs, w.transpose()); });
    sweep(std::string(name) + " exact mode", [&] { return ct::matmul(w, x, ct::encoded_mode::exact); });
  }
}
