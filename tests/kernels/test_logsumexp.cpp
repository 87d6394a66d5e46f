// logsumexp's online normalizer (kernels::lse_state): one read of the input, a reference per
// lane that moves only by more than lse_headroom, partial sums in T flushed every
// lse_block_rounds rounds. Checked against long-double references and for the promises the
// engine relies on: the cut of the stream into calls and the SIMD target do not change the
// bits, and ±inf / NaN give what a stable logsumexp gives.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ct/ct.hpp"
#include "kernel_test_util.hpp"
#include "pinned_target.hpp"
#include "../../src/kernels/target_control.hpp"
#include "support/executor_zoo.hpp"

namespace {

using ct::index_t;
namespace k = ct::detail::kernels;

template <class T>
double lse_of(const std::vector<T>& x, const ct::settings& s, const std::vector<index_t>& cuts = {}) {
  k::lse_state<T> st;
  k::lse_init(st);
  index_t at = 0;
  for (index_t c : cuts) {  // feed in pieces of these lengths, then the rest
    const index_t len = std::min<index_t>(c, static_cast<index_t>(x.size()) - at);
    k::lse_accumulate(st, x.data() + at, len, s);
    at += len;
  }
  k::lse_accumulate(st, x.data() + at, static_cast<index_t>(x.size()) - at, s);
  return k::lse_result(st, s);
}

template <class T>
long double reference(const std::vector<T>& x) {
  long double m = -INFINITY;
  for (T v : x) m = std::max<long double>(m, v);
  long double s = 0;
  for (T v : x) s += std::exp(static_cast<long double>(v) - m);
  return m + std::log(s);
}

/// Rows that move the lanes' references in every way the rules allow.
template <class T>
std::vector<std::pair<std::string, std::vector<T>>> hard_rows(index_t n, std::uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<std::pair<std::string, std::vector<T>>> rows;
  const auto make = [&](const std::string& name, auto f) {
    std::vector<T> x(static_cast<std::size_t>(n));
    for (index_t i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = static_cast<T>(f(i));
    rows.emplace_back(name, std::move(x));
  };
  make("uniform ±1", [&](index_t) { return u(g); });
  make("uniform ±80", [&](index_t) { return 80 * u(g); });
  make("increasing by 10 (every element moves its lane)", [&](index_t i) { return -2000.0 + 10.0 * static_cast<double>(i % 400); });
  make("increasing by 0.01", [&](index_t i) { return 0.01 * static_cast<double>(i); });
  make("decreasing by 3", [&](index_t i) { return 50.0 - 3.0 * static_cast<double>(i % 100); });
  make("constant 7", [&](index_t) { return 7.0; });
  make("one outlier at the end", [&](index_t i) { return i == n - 1 ? 1000.0 : u(g); });
  make("around 1e4, span 40", [&](index_t) { return 1e4 + 20 * u(g); });
  make("steps of 9 every 37", [&](index_t i) { return 9.0 * static_cast<double>(i / 37) + u(g); });
  // terms whose exp is subnormal in every other block of 256 (AVX-512's fast blocks change
  // how they scale there), and elements 85-89 below their lane's reference in between
  make("blocks alternating 90 below", [&](index_t i) { return (i / 256) % 2 == 1 && i % 32 != 0 ? -90 + u(g) : u(g); });
  make("87 below, give or take 2", [&](index_t i) { return i < 32 ? 0.0 : -87 + 2 * u(g); });
  // -inf and far-below elements: lanes that stay at -inf, and terms whose exp is skipped
  const double inf = std::numeric_limits<double>::infinity();
  make("first half -inf", [&](index_t i) { return i < n / 2 ? -inf : u(g); });
  make("lane 5 always -inf, every 7th -1e30", [&](index_t i) { return i % 32 == 5 ? -inf : i % 7 == 0 ? -1e30 : u(g); });
  return rows;
}

}  // namespace

TEST_CASE("logsumexp online normalizer: within the documented bound of a long-double reference", "[kernels][logsumexp]") {
  for (const ct::settings& s : ct_test_kernels::all_settings()) {
    for (index_t n : {index_t{1}, index_t{31}, index_t{33}, index_t{128}, index_t{129}, index_t{1000}, index_t{4097}}) {
      const auto check = [&](auto tag) {
        using T = decltype(tag);
        const double u = std::numeric_limits<T>::epsilon() / 2;
        for (const auto& [name, x] : hard_rows<T>(n, static_cast<std::uint32_t>(n))) {
          INFO(ct_test_kernels::describe(s) << " n " << n << " " << name << (sizeof(T) == 4 ? " float" : " double"));
          const long double want = reference(x);
          const double got = static_cast<double>(static_cast<T>(lse_of(x, s)));
          // docs/expressions.md: |error| <= u (|result| + 9 (1 + ln n))
          const double bound = u * (std::fabs(static_cast<double>(want)) + 9 * (1 + std::log(static_cast<double>(n))));
          CHECK(std::fabs(static_cast<long double>(got) - want) <= bound);
        }
      };
      check(float{});
      if constexpr (sizeof(long double) > sizeof(double)) check(double{});
    }
  }
}

TEST_CASE("logsumexp online normalizer: the cut into calls does not change the bits", "[kernels][logsumexp]") {
  for (const ct::settings& s : ct_test_kernels::all_settings()) {
    for (const auto& [name, x] : hard_rows<float>(1000, 7)) {
      INFO(ct_test_kernels::describe(s) << " " << name);
      const double whole = lse_of(x, s);
      // pieces that start and end inside rounds and blocks (a block is 32 x lse_block_rounds = 256
      // elements)
      for (const std::vector<index_t>& cuts :
           {std::vector<index_t>{1}, {5, 27, 3}, {31, 1, 96}, {128, 128}, {256, 300}, {100, 13, 200, 1}, {33, 33, 33, 33, 33}}) {
        const double cut = lse_of(x, s, cuts);
        CHECK(std::memcmp(&cut, &whole, sizeof cut) == 0);
      }
    }
  }
}

TEST_CASE("logsumexp online normalizer: the same bits on every simd target with hardware FMA", "[kernels][logsumexp][targets]") {
  for (const ct::settings& s : ct_test_kernels::simd_settings()) {
    const auto rows = hard_rows<float>(1000, 11);
    const auto drows = hard_rows<double>(333, 12);
    std::vector<double> native, dnative;
    for (const auto& r : rows) native.push_back(lse_of(r.second, s, {17}));
    for (const auto& r : drows) dnative.push_back(lse_of(r.second, s, {40}));
    for (const std::int64_t t : k::simd_available_targets()) {
      const std::string label = k::simd_target_label(t);
      if (label.rfind("AVX", 0) != 0) continue;  // FMA is emulated before AVX2: other exp bits
      const ct_test_kernels::pinned_target pin(t);
      INFO(label << " " << ct_test_kernels::describe(s));
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const double got = lse_of(rows[i].second, s, {17});
        CHECK(std::memcmp(&got, &native[i], sizeof got) == 0);
      }
      for (std::size_t i = 0; i < drows.size(); ++i) {
        const double got = lse_of(drows[i].second, s, {40});
        CHECK(std::memcmp(&got, &dnative[i], sizeof got) == 0);
      }
    }
  }
}

TEST_CASE("logsumexp online normalizer: infinities and NaN wherever they fall", "[kernels][logsumexp]") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const ct::settings& s : ct_test_kernels::all_settings()) {
    for (index_t n : {index_t{1}, index_t{40}, index_t{300}}) {
      for (index_t at : {index_t{0}, n / 2, n - 1}) {
        INFO(ct_test_kernels::describe(s) << " n " << n << " at " << at);
        std::vector<float> x(static_cast<std::size_t>(n), -inf);
        CHECK(lse_of(x, s) == -static_cast<double>(inf));  // all -inf
        x[static_cast<std::size_t>(at)] = 2.5f;  // one finite element among -inf: that element
        CHECK(std::fabs(lse_of(x, s) - 2.5) <= 1e-7);
        std::mt19937 g(static_cast<std::uint32_t>(n + at));
        std::uniform_real_distribution<float> u(-5, 5);
        for (float& v : x) v = u(g);
        auto with = x;
        with[static_cast<std::size_t>(at)] = inf;
        CHECK(lse_of(with, s) == static_cast<double>(inf));
        with[static_cast<std::size_t>((at + 1) % n)] = inf;  // two +inf: still +inf, no inf - inf
        CHECK(lse_of(with, s) == static_cast<double>(inf));
        with = x;
        with[static_cast<std::size_t>(at)] = nan;
        CHECK(std::isnan(lse_of(with, s)));
        if (n > 1) {
          with[static_cast<std::size_t>((at + 1) % n)] = inf;  // NaN beats +inf
          CHECK(std::isnan(lse_of(with, s)));
        }
        with = x;
        with[static_cast<std::size_t>(at)] = -inf;  // -inf adds nothing
        auto without = x;
        without.erase(without.begin() + at);
        if (!without.empty()) CHECK(std::fabs(lse_of(with, s) - static_cast<double>(reference(without))) <= 1e-6);
      }
    }
  }
}

TEST_CASE("logsumexp in expressions: one pass in every layout, the same bits on every path to the kernel", "[reduce][logsumexp][executor]") {
  const auto x = ct::random_uniform<float>({9, 1030}, 21, -30.0f, 30.0f);
  const auto plain = ct::eval(ct::logsumexp(x, -1));  // a plain row reduction
  // x * 1 is x, fed to the reducer through the general row walk in tiles
  CHECK(ct_test::bitwise_equal(ct::eval(ct::logsumexp(x * 1.0f, -1)), plain));
  // the same values inside a larger expression (log-softmax written by hand), and along axis 0
  // (the column layout, which keeps one lane per output in double)
  const auto ls = ct::eval(x - ct::logsumexp(x, -1, true));
  const auto xt = ct::eval(x.transpose() * 1.0f);  // contiguous [1030, 9]
  const auto col = ct::eval(ct::logsumexp(xt, 0));
  for (index_t r = 0; r < 9; ++r) {
    std::vector<float> row(1030);
    for (index_t c = 0; c < 1030; ++c) row[static_cast<std::size_t>(c)] = x(r, c);
    const long double want = reference(row);
    const double bound = std::numeric_limits<float>::epsilon() / 2 * (std::fabs(static_cast<double>(want)) + 9 * (1 + std::log(1030.0)));
    CHECK(std::fabs(plain(r) - want) <= bound);
    CHECK(std::fabs(col(r) - want) <= bound);
    for (index_t c = 0; c < 1030; c += 101) CHECK(ls(r, c) == x(r, c) - plain(r));
  }
  // executors: the same bits under every one (the result does not depend on the groups' cut)
  ct_test::expect_same_under_every_executor<float>([&] { return ct::logsumexp(x, -1); }, "logsumexp rows");
  ct_test::expect_same_under_every_executor<float>([&] { return ct::logsumexp(xt, 0); }, "logsumexp columns");
  ct_test::expect_same_under_every_executor<float>([&] { return x - ct::logsumexp(x * 1.0f, -1, true); }, "log-softmax by hand");
}

TEST_CASE("logsumexp in expressions: infinities and NaN along rows and along columns", "[reduce][logsumexp]") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  // columns: all -inf; finite with one +inf; finite with a NaN; finite with -inf; finite
  auto c = ct::from_list<float>({{-inf, 1.0f, 1.0f, -inf, 0.5f},
                                 {-inf, inf, nan, 2.0f, -0.5f},
                                 {-inf, 3.0f, 4.0f, 3.0f, 1.5f},
                                 {-inf, -2.0f, 0.0f, -inf, 2.5f}});
  const auto rows = ct::eval(c.transpose() * 1.0f);  // the same data as contiguous rows
  for (ct::backend b : {ct::backend::scalar, ct::backend::simd}) {
    ct::settings_scope scope({b, ct::fma_policy::fused});
    for (const auto& got : {ct::eval(ct::logsumexp(c, 0)), ct::eval(ct::logsumexp(rows, 1))}) {
      INFO((b == ct::backend::scalar ? "scalar" : "simd"));
      CHECK(got(0) == -inf);
      CHECK(got(1) == inf);
      CHECK(std::isnan(got(2)));
      const double want3 = std::log(std::exp(2.0) + std::exp(3.0));  // -inf adds nothing
      CHECK(std::fabs(got(3) - want3) <= 1e-6);
      const double want4 = std::log(std::exp(0.5) + std::exp(-0.5) + std::exp(1.5) + std::exp(2.5));
      CHECK(std::fabs(got(4) - want4) <= 1e-6);
    }
  }
}
