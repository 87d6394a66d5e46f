// The Llama example's forward pass (examples/llama) against a naive double-precision
// reference written here from the architecture (decoded weights, plain loops), for several
// positions of a sequence run through the KV cache; and bitwise identical logits under every
// executor.
#include <boost/asio/thread_pool.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <unistd.h>
#include <vector>

#include "ct/ct.hpp"
#include "llama.hpp"
#include "ct/asio.hpp"
#include "support/allocation_guard.hpp"
#include "support/executor_zoo.hpp"
#include "support/reference.hpp"

using ct::index_t;

namespace {

/// A weight as doubles, row-major [rows, cols].
struct matrix {
  index_t rows = 0, cols = 0;
  std::vector<double> v;
  double operator()(index_t r, index_t c) const { return v[static_cast<std::size_t>(r * cols + c)]; }
};

matrix decoded(const llama::weight& w) {
  matrix m;
  m.rows = w.rows();
  m.cols = w.cols();
  if (const auto* d = std::get_if<ct::tensor<float>>(&w.w)) m.v = ct_test::values(*d);
  else m.v = ct_test::values(ct::decode(std::get<ct::encoded_tensor>(w.w)));
  return m;
}

using vec = std::vector<double>;

vec times_transpose(const matrix& w, const vec& x) {  // w [N, K] · x [K]
  vec y(static_cast<std::size_t>(w.rows), 0.0);
  for (index_t n = 0; n < w.rows; ++n)
    for (index_t k = 0; k < w.cols; ++k) y[static_cast<std::size_t>(n)] += w(n, k) * x[static_cast<std::size_t>(k)];
  return y;
}

vec rms(const vec& x, const vec& g, double eps) {
  double s = 0;
  for (double e : x) s += e * e;
  const double r = 1.0 / std::sqrt(s / static_cast<double>(x.size()) + eps);
  vec y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * r * g[i];
  return y;
}

void rope(vec& x, index_t heads, index_t hd, index_t pos, double base) {
  for (index_t h = 0; h < heads; ++h)
    for (index_t j = 0; j < hd / 2; ++j) {
      const double a = static_cast<double>(pos) * std::pow(base, -2.0 * static_cast<double>(j) / static_cast<double>(hd));
      double& e = x[static_cast<std::size_t>(h * hd + 2 * j)];
      double& o = x[static_cast<std::size_t>(h * hd + 2 * j + 1)];
      const double e0 = e, o0 = o;
      e = e0 * std::cos(a) - o0 * std::sin(a);
      o = e0 * std::sin(a) + o0 * std::cos(a);
    }
}

/// Logits of every position of `tokens`, from scratch, in double.
std::vector<vec> reference(const llama::model& m, const std::vector<std::int32_t>& tokens) {
  const llama::config& c = m.cfg;
  const index_t hd = c.head_dim(), n = static_cast<index_t>(tokens.size());
  const auto embd = decoded(m.token_embd), out = decoded(m.output);
  const vec out_norm = ct_test::values(m.output_norm);
  std::vector<vec> x;
  for (auto id : tokens) x.emplace_back(embd.v.begin() + id * c.embd, embd.v.begin() + (id + 1) * c.embd);
  for (const auto& w : m.layers) {
    const auto wq = decoded(w.q), wk = decoded(w.k), wv = decoded(w.v), wo = decoded(w.o);
    const auto wg = decoded(w.gate), wu = decoded(w.up), wd = decoded(w.down);
    const vec g1 = ct_test::values(w.attn_norm), g2 = ct_test::values(w.ffn_norm);
    std::vector<vec> q, k, v;
    for (index_t t = 0; t < n; ++t) {
      const vec h = rms(x[static_cast<std::size_t>(t)], g1, c.rms_eps);
      q.push_back(times_transpose(wq, h));
      k.push_back(times_transpose(wk, h));
      v.push_back(times_transpose(wv, h));
      rope(q.back(), c.heads, hd, t, c.rope_base);
      rope(k.back(), c.kv_heads, hd, t, c.rope_base);
    }
    for (index_t t = 0; t < n; ++t) {
      vec att(static_cast<std::size_t>(c.embd), 0.0);
      for (index_t head = 0; head < c.heads; ++head) {
        const index_t g = head / (c.heads / c.kv_heads);
        vec s(static_cast<std::size_t>(t + 1));
        double mx = -INFINITY;
        for (index_t u = 0; u <= t; ++u) {
          double d = 0;
          for (index_t j = 0; j < hd; ++j)
            d += q[static_cast<std::size_t>(t)][static_cast<std::size_t>(head * hd + j)] *
                 k[static_cast<std::size_t>(u)][static_cast<std::size_t>(g * hd + j)];
          s[static_cast<std::size_t>(u)] = d / std::sqrt(static_cast<double>(hd));
          mx = std::max(mx, s[static_cast<std::size_t>(u)]);
        }
        double z = 0;
        for (auto& e : s) z += (e = std::exp(e - mx));
        for (index_t u = 0; u <= t; ++u)
          for (index_t j = 0; j < hd; ++j)
            att[static_cast<std::size_t>(head * hd + j)] +=
                s[static_cast<std::size_t>(u)] / z * v[static_cast<std::size_t>(u)][static_cast<std::size_t>(g * hd + j)];
      }
      const vec o = times_transpose(wo, att);
      for (index_t i = 0; i < c.embd; ++i) x[static_cast<std::size_t>(t)][static_cast<std::size_t>(i)] += o[static_cast<std::size_t>(i)];
      const vec h2 = rms(x[static_cast<std::size_t>(t)], g2, c.rms_eps);
      vec gate = times_transpose(wg, h2);
      const vec up = times_transpose(wu, h2);
      for (std::size_t i = 0; i < gate.size(); ++i) gate[i] = gate[i] / (1.0 + std::exp(-gate[i])) * up[i];
      const vec d = times_transpose(wd, gate);
      for (index_t i = 0; i < c.embd; ++i) x[static_cast<std::size_t>(t)][static_cast<std::size_t>(i)] += d[static_cast<std::size_t>(i)];
    }
  }
  std::vector<vec> logits;
  for (const auto& row : x) logits.push_back(times_transpose(out, rms(row, out_norm, c.rms_eps)));
  return logits;
}

llama::config tiny(index_t embd, index_t ff, index_t heads, index_t kv_heads, index_t vocab, index_t layers) {
  llama::config c;
  c.vocab = vocab, c.embd = embd, c.layers = layers, c.heads = heads, c.kv_heads = kv_heads, c.ff = ff, c.context = 16;
  return c;
}

std::string temp_path(const std::string& stem) {
  return "/tmp/ct_test_llama_" + stem + "_" + std::to_string(::getpid()) + ".gguf";
}

/// The model's logits for tokens fed as chunks through the cache (3, 1, then the rest).
std::vector<vec> incremental(const llama::model& m, const std::vector<std::int32_t>& tokens) {
  llama::kv_cache cache(m.cfg);
  std::vector<vec> out;
  std::size_t at = 0;
  for (std::size_t chunk : {std::size_t{3}, std::size_t{1}, tokens.size() - 4}) {
    std::vector<std::int32_t> part(tokens.begin() + static_cast<std::ptrdiff_t>(at),
                                   tokens.begin() + static_cast<std::ptrdiff_t>(at + chunk));
    const auto logits = llama::forward(m, cache, part);
    const auto v = ct_test::values(logits);
    for (std::size_t r = 0; r < chunk; ++r)
      out.emplace_back(v.begin() + static_cast<std::ptrdiff_t>(r) * m.cfg.vocab,
                       v.begin() + static_cast<std::ptrdiff_t>(r + 1) * m.cfg.vocab);
    at += chunk;
  }
  CHECK(cache.length == static_cast<index_t>(tokens.size()));
  return out;
}

/// Largest |logit - reference| over every position, relative to the largest |reference logit|.
double worst_error(const std::vector<vec>& got, const std::vector<vec>& want) {
  double worst = 0, scale = 0;
  for (std::size_t t = 0; t < want.size(); ++t)
    for (std::size_t i = 0; i < want[t].size(); ++i) {
      worst = std::max(worst, std::fabs(got[t][i] - want[t][i]));
      scale = std::max(scale, std::fabs(want[t][i]));
    }
  return worst / scale;
}

}  // namespace

TEST_CASE("llama: forward pass through the KV cache against a double-precision reference", "[llama]") {
  const std::vector<std::int32_t> tokens{1, 17, 5, 60, 33, 2, 47};
  // Exact mode: only float32 rounding separates ct from the reference; quantized mode adds the
  // int8 activation blocks' error (docs/encoded.md: |error| <= sum |w| |x| / 254 per product,
  // about 1% of a logit's scale here).
  struct format_case {
    const char* format;
    llama::config cfg;
    double exact_bound, quantized_bound;
  };
  const std::vector<format_case> cases{
      {"f32", tiny(64, 96, 4, 2, 64, 2), 4e-6, 4e-6},
      {"f16", tiny(64, 96, 4, 2, 64, 2), 4e-6, 4e-6},
      {"bf16", tiny(64, 96, 4, 2, 64, 2), 4e-6, 4e-6},
      {"q8_0", tiny(64, 96, 4, 2, 64, 2), 4e-6, 0.05},
      {"q4_0", tiny(64, 96, 4, 2, 64, 2), 4e-6, 0.05},
      {"q4_K", tiny(256, 512, 4, 1, 64, 1), 4e-6, 0.05},
      {"q6_K", tiny(256, 512, 4, 4, 64, 1), 4e-6, 0.05},
  };
  for (const auto& fc : cases) {
    const std::string path = temp_path(fc.format);
    llama::generator_options o;
    o.cfg = fc.cfg;
    o.weight_format = fc.format;
    o.seed = 7;
    llama::generate(o, path);
    auto m = llama::load(ct::gguf::file::open(path));
    std::remove(path.c_str());
    INFO(fc.format);
    CHECK(m.cfg.embd == fc.cfg.embd);
    CHECK(m.cfg.kv_heads == fc.cfg.kv_heads);
    CHECK(m.cfg.vocab == fc.cfg.vocab);
    const auto want = reference(m, tokens);
    m.mode = ct::encoded_mode::exact;
    const double exact = worst_error(incremental(m, tokens), want);
    m.mode = ct::encoded_mode::quantized;
    const double quantized = worst_error(incremental(m, tokens), want);
    INFO("exact " << exact << ", quantized " << quantized);
    CHECK(exact < fc.exact_bound);
    CHECK(quantized < fc.quantized_bound);
  }
}

namespace {
// The small q8_0 model of the executor and fault-injection cases, generated into a temporary
// file and loaded (the file is removed; the model keeps its mapping).
llama::model tiny_model(const char* name) {
  const std::string path = temp_path(name);
  llama::generator_options o;
  o.cfg = tiny(64, 96, 4, 2, 64, 2);
  llama::generate(o, path);
  auto m = llama::load(ct::gguf::file::open(path));
  std::remove(path.c_str());
  return m;
}
}  // namespace

TEST_CASE("llama: logits are bitwise identical under every executor; token by token through the cache matches one pass",
          "[llama][executor]") {
  const auto m = tiny_model("zoo");
  const std::vector<std::int32_t> tokens{3, 9, 27, 81 % 64, 50, 12};
  llama::kv_cache c0(m.cfg);
  const auto want = llama::forward(m, c0, tokens);
  ct_test::executor_zoo zoo;
  for (auto& [name, exec] : zoo.all()) {
    ct::executor_scope scope(exec);
    llama::kv_cache cache(m.cfg);
    INFO(name);
    CHECK(ct_test::bitwise_equal(llama::forward(m, cache, tokens), want));
  }
  // One token at a time (generation's path: vector products) against the one pass (matrix
  // products): the same function up to float32 summation order.
  {
    llama::kv_cache cache(m.cfg);
    const auto all = ct_test::values(want);
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      const auto v = ct_test::values(llama::forward(m, cache, {tokens[i]}));
      for (std::size_t j = 0; j < v.size(); ++j) {
        const double ref = all[i * v.size() + j];
        worst = std::max(worst, std::fabs(v[j] - ref));
        scale = std::max(scale, std::fabs(ref));
      }
    }
    INFO("token by token vs one pass: " << worst / scale);
    CHECK(worst / scale < 1e-5);
    CHECK(cache.length == static_cast<index_t>(tokens.size()));
  }
  // Errors before any work: past the context, ids out of range.
  llama::kv_cache cache(m.cfg);
  CHECK_THROWS_AS(llama::forward(m, cache, std::vector<std::int32_t>(17, 1)), ct::error);
  CHECK_THROWS_AS(llama::forward(m, cache, {64}), ct::error);
  CHECK(cache.length == 0);
}

TEST_CASE("llama: sampling", "[llama]") {
  auto logits = ct::from_vector<float>({0.1f, 3.0f, 2.9f, -1.0f, 3.0f});
  llama::sampler greedy;
  CHECK(greedy.next(logits) == 1);  // the first of the largest
  llama::sampler s;
  s.temperature = 1.0f;
  s.top_k = 2;
  int counts[5] = {};
  for (int i = 0; i < 2000; ++i) ++counts[s.next(logits)];
  CHECK(counts[0] == 0);
  CHECK(counts[2] == 0);  // not among the top 2 (ties keep the lower index)
  CHECK(counts[3] == 0);
  CHECK(counts[1] > 850);
  CHECK(counts[4] > 850);
}

// Issue 20's fault injection, for the example's forward step: every allocation of a forward
// call fails in turn (under a pool executor, with q8_0 weights, so the encoded products and
// their per-call activation blocks are in it). Each failure is std::bad_alloc and loses nothing:
// the cache keeps its length (the positions of the failed call are not committed, and the next
// call overwrites them), and the call that finally succeeds gives the logits of a run without
// failures, bit for bit.
TEST_CASE("llama: a failed allocation anywhere in a forward step loses nothing", "[llama][allocation][reliability]") {
  if (!ct_test::allocation_hooks_active()) {  // (the [allocation] tag keeps it out of such builds)
    WARN("this build's operator new is the sanitizer's: no injection");
    return;
  }
  const auto m = tiny_model("faults");
  const std::vector<std::int32_t> first{5, 9}, second{40, 2, 17};
  boost::asio::thread_pool pool(2);
  // Only the calling thread's allocations are counted. Under the pool that thread runs a
  // varying share of the ranges, so the sweep ends at a different k each run (47 to 422 seen)
  // and may stop before the last allocations of the step; the serial executor runs every
  // range on the calling thread, so its sweep reaches all of them, every run (it found the
  // length committed before the logits' allocations).
  const auto executor = GENERATE(as<std::string>{}, "asio pool", "serial 64");
  INFO(executor);
  ct::executor_scope scope(executor == "serial 64" ? ct_test::serial_64_executor() : ct::asio_executor(pool, 3));
  llama::kv_cache clean(m.cfg);
  (void)llama::forward(m, clean, first);
  const auto want = llama::forward(m, clean, second);

  llama::kv_cache cache(m.cfg);
  (void)llama::forward(m, cache, first);
  long failures = 0;
  bool other_error = false, length_kept = true;
  ct::tensor<float> got;
  for (long k = 0; k < 100000; ++k) {
    ct_test::allocations_until_failure = k;
    bool failed = false;
    try {
      got = llama::forward(m, cache, second);
    } catch (const std::bad_alloc&) {
      failed = true;
    } catch (...) {
      other_error = true;
    }
    ct_test::allocations_until_failure = -1;
    if (other_error || !failed) break;
    ++failures;
    length_kept = length_kept && cache.length == static_cast<index_t>(first.size());
  }
  INFO(failures << " allocations failed in turn");
  CHECK_FALSE(other_error);
  CHECK(failures >= 10);
  CHECK(length_kept);
  CHECK(cache.length == static_cast<index_t>(first.size() + second.size()));
  CHECK(ct_test::bitwise_equal(got, want));
}
