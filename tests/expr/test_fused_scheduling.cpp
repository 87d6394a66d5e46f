// CONTRACT.md §3–§5 for reductions and fused expressions: groups, validation before
// scheduling, bitwise determinism under every executor, failure atomicity, aliasing.
#include <boost/asio/thread_pool.hpp>
#include <catch2/catch.hpp>
#include <atomic>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <utility>

#include "ct/asio.hpp"
#include "ct/ct.hpp"
#include "support/asio_options.hpp"
#include "support/executors.hpp"
#include "support/reference.hpp"

using ct::dims;
using ct::index_t;

namespace {

// Every executor the determinism promise covers. The Asio pool outlives the returned list.
struct executor_zoo {
  boost::asio::thread_pool pool{3};
  static ct::asio_options lingering() {
    ct::asio_options o;
    o.linger = std::chrono::microseconds(200);
    return o;
  }
  std::vector<std::pair<std::string, ct::executor>> all() {
    return {{"none", ct::executor{}},
            {"serial 64", ct_test::serial_64_executor()},
            {"three-worker pool", ct_test::three_worker_executor()},
            {"asio 1", ct::asio_executor(pool, 1)},
            {"asio 2", ct::asio_executor(pool, 2, ct_test::sharing())},
            {"asio 2 default", ct::asio_executor(pool, 2)},
            {"asio 7", ct::asio_executor(pool, 7, ct_test::sharing())},
            {"asio 3 lingering", ct::asio_executor(pool, 3, lingering())},
            {"random partition a", ct_test::random_partition_executor(1)},
            {"random partition b", ct_test::random_partition_executor(2)}};
  }
  ~executor_zoo() { pool.join(); }
};

template <class T, class Make>
void expect_same_under_every_executor(Make make, const char* what) {
  executor_zoo zoo;
  for (ct::backend b : {ct::backend::scalar, ct::backend::simd})
    for (ct::fma_policy f : {ct::fma_policy::fused, ct::fma_policy::separate}) {
      ct::settings_scope s({b, f});
      auto reference = ct::eval(make());
      for (auto& [name, exec] : zoo.all()) {
        ct::executor_scope scope(exec);
        auto got = ct::eval(make());
        INFO(what << " under " << name);
        CHECK(ct_test::bitwise_equal(got, reference));
      }
    }
}

struct counting_executor {
  std::atomic<int> calls{0};
  ct::executor get() {
    return [this](index_t n, ct::range_callback cb) {
      ++calls;
      cb(0, n);
    };
  }
};

}  // namespace

TEST_CASE("contract §4: one group per retained coordinate; elementwise and whole reductions are serial",
          "[scheduling][fused]") {
  auto x = ct::random_uniform<float>({10, 3, 7}, 1);
  std::atomic<index_t> seen_count{-1};
  ct::executor_scope scope([&](index_t n, ct::range_callback cb) {
    seen_count = n;
    cb(0, n);
  });
  ct::eval(ct::sum(x, -1));
  CHECK(seen_count == 30);
  ct::eval(ct::softmax(x, 0));
  CHECK(seen_count == 21);
  ct::eval(ct::mean(x, {0, 2}));
  CHECK(seen_count == 3);
  seen_count = -1;
  ct::eval(ct::sum(x));           // whole tensor: one group
  ct::eval(ct::exp(x) + 1.0f);    // elementwise only
  ct::eval(ct::sum(x.slice(0, 0, 1).slice(1, 0, 1), -1));  // one retained coordinate
  CHECK(seen_count == -1);
}

TEST_CASE("contract §3: validation failures never call the executor and write nothing", "[scheduling][fused]") {
  counting_executor counter;
  ct::executor_scope scope(counter.get());
  auto x = ct::random_uniform<float>({4, 5}, 2);
  auto dest = ct::full<float>(dims{4}, 3.0f);
  auto before = dest.clone();
  CHECK_THROWS_AS(ct::eval(ct::sum(x, -1), ct::full<float>(dims{5}, 0.0f)), ct::shape_error);
  CHECK_THROWS_AS(ct::eval(ct::sum(x, 0) + ct::sum(x, 1), ct::zeros<float>(dims{4, 5})), ct::axis_error);
  CHECK_THROWS_AS(ct::eval(ct::argmax(x, -1), dest), ct::dtype_error);
  CHECK_THROWS_AS(ct::eval(ct::max(ct::zeros<float>(dims{4, 0}), -1), dest), ct::empty_reduction_error);
  // Destinations whose elements share memory: a broadcast view, overlapping strides.
  auto row = ct::zeros<float>(dims{5});
  CHECK_THROWS_AS(ct::eval(ct::softmax(x, -1), row.broadcast_to(dims{4, 5})), ct::shape_error);
  CHECK_THROWS_AS(ct::eval(ct::sum(x, -1, true) + x, row.broadcast_to(dims{4, 5})), ct::shape_error);
  CHECK(ct::equal(row, ct::zeros<float>(dims{5})));
  std::vector<float> mem(8, 4.0f);
  auto overlapping = ct::wrap(mem.data(), {4, 5}, {1, 1});  // (i, j) at i + j
  CHECK_THROWS_AS(ct::eval(ct::softmax(x, -1), overlapping), ct::shape_error);
  CHECK(mem == std::vector<float>(8, 4.0f));
  CHECK(counter.calls == 0);
  CHECK(ct_test::bitwise_equal(dest, before));
}

TEST_CASE("contract §4: reductions are bitwise identical under every executor", "[scheduling][fused]") {
  // Shapes that are not multiples of the tile (1024) or any vector width.
  auto x = ct::random_uniform<float>({37, 1037}, 21, -3.0f, 3.0f);
  auto d = ct::random_uniform<double>({19, 2051}, 22, -3.0, 3.0);
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::sum(x, -1)); }, "sum f32");
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::sum(x, 0)); }, "sum axis 0");
  expect_same_under_every_executor<double>([&] { return ct::eval(ct::sum(d, -1)); }, "sum f64");
  expect_same_under_every_executor<double>([&] { return ct::eval(ct::prod(ct::exp(d / 2051.0), -1)); }, "prod");
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::mean(x, 1)); }, "mean");
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::max(x, -1)); }, "max");
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::min(x, -1)); }, "min");
  expect_same_under_every_executor<std::int64_t>([&] { return ct::eval(ct::argmax(x, -1)); }, "argmax");
  expect_same_under_every_executor<std::int64_t>([&] { return ct::eval(ct::argmin(d, -1)); }, "argmin");
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::logsumexp(x, -1)); }, "logsumexp");
  expect_same_under_every_executor<bool>([&] { return ct::eval(ct::any(x > 2.99f, -1)); }, "any");
  expect_same_under_every_executor<bool>([&] { return ct::eval(ct::all(x > -2.99f, -1)); }, "all");
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::softmax(x, -1)); }, "softmax");
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::softmax(x, 0)); }, "softmax axis 0");
  expect_same_under_every_executor<double>([&] { return ct::eval(ct::layer_norm(d, -1, 1e-5)); }, "layer_norm");
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::rms_norm(x, -1, 1e-6f)); }, "rms_norm");
  // Rows over 8 KiB: the exp(x - max) kernel prefetches the next group's row as it goes, and a
  // group whose row was fetched that way reads it without prefetching (where a range of groups
  // starts, the first group still fetches its own).
  auto xl = ct::random_uniform<float>({23, 3001}, 23, -3.0f, 3.0f);
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::softmax(xl, -1)); }, "softmax long rows");
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::logsumexp(xl, -1)); }, "logsumexp long rows");
  expect_same_under_every_executor<double>([&] { return ct::eval(ct::log_softmax(d, -1)); }, "log_softmax f64 long rows");
  // With such rows a callback's output pass also computes the next group's max (the first
  // group of each callback computes its own), so special values must give the same bits
  // either way: a NaN in a middle tile, a row of -inf, +inf in the last tile, a repeated max.
  auto xs = ct::random_uniform<float>({9, 3001}, 28, -3.0f, 3.0f);
  xs(2, 1500) = std::numeric_limits<float>::quiet_NaN();
  for (index_t c = 0; c < 3001; ++c) xs(4, c) = -std::numeric_limits<float>::infinity();
  xs(6, 3000) = std::numeric_limits<float>::infinity();
  xs(7, 10) = xs(7, 2900) = 5.0f;
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::softmax(xs, -1)); }, "softmax long rows, special values");
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::log_softmax(xs, -1)); }, "log_softmax long rows, special values");
  auto xm = ct::random_uniform<float>({9, 3001}, 29, -3.0f, 3.0f);  // a min in the first pass
  expect_same_under_every_executor<float>([&] { auto e = ct::exp(ct::min(xm, -1, true) - xm); return ct::eval(e / ct::sum(e, -1, true)); }, "softmax of -x via min");
  // Float layer norm with weight and bias ((x * u) * w + c in one kernel), a float product,
  // several reduced axes, reductions over axis 0 (column mode) and a transposed operand.
  auto w = ct::random_uniform<float>({1037}, 24, 0.5f, 1.5f), bias = ct::random_uniform<float>({1037}, 25, -1.0f, 1.0f);
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::layer_norm(x, -1, 1e-5f, w, bias)); }, "layer_norm w b f32");
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::prod(1.0f + x / 1037.0f, -1)); }, "prod f32");
  auto x3 = ct::random_uniform<float>({7, 33, 45}, 26, -3.0f, 3.0f);
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::mean(x3, dims{0, 2})); }, "mean axes 0 2");
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::max(x, 0)); }, "max axis 0");
  expect_same_under_every_executor<std::int64_t>([&] { return ct::eval(ct::argmax(x, 0)); }, "argmax axis 0");
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::logsumexp(x, 0)); }, "logsumexp axis 0");
  auto xt = ct::random_uniform<float>({301, 67}, 27, -3.0f, 3.0f).transpose();
  expect_same_under_every_executor<float>([&] { return ct::eval(ct::softmax(xt, -1)); }, "softmax transposed");
}

TEST_CASE("contract §5: a throwing functor leaves the destination unchanged", "[scheduling][fused]") {
  auto x = ct::random_uniform<float>({50, 33}, 4);
  executor_zoo zoo;
  for (index_t bad_row : {index_t{0}, index_t{25}, index_t{49}}) {
    for (auto& [name, exec] : zoo.all()) {
      auto dest = ct::full<float>(dims{50, 33}, -1.0f);
      auto before = dest.clone();
      // `inside` counts functor calls in flight: when the error reaches us, it must be 0.
      std::atomic<int> inside{0};
      auto thrower = [bad_row, &inside](float v, float row) {
        ++inside;
        if (static_cast<index_t>(row) == bad_row) {
          --inside;
          throw std::domain_error("bad row");
        }
        std::this_thread::yield();  // give other workers time to be mid-call
        --inside;
        return v;
      };
      auto rows = ct::cast<float>(ct::arange<int>(50).reshape({50, 1}));
      ct::executor_scope scope(exec);
      INFO("row " << bad_row << " under " << name);
      int in_flight_at_catch = -1;
      try {
        ct::eval(ct::softmax(ct::map(thrower, x, rows), -1), dest);
      } catch (const std::domain_error&) {
        in_flight_at_catch = inside.load();
      }
      CHECK(in_flight_at_catch == 0);
      CHECK(ct_test::bitwise_equal(dest, before));
    }
  }
}

// The same promise with slow functor calls on other workers when one throws: ct::eval may only
// raise once they have all returned, and none starts afterwards. The bad call waits (up to
// 100 ms) until another call is in flight, so the error really meets a busy worker; whether
// one can be depends on the executor's chunking (the Asio caller runs its first chunk before
// inviting helpers), so each executor must show it for at least one bad row.
TEST_CASE("contract §5: through ct::eval, the error comes after every other functor call returned", "[scheduling][fused]") {
  using namespace std::chrono_literals;
  auto x = ct::random_uniform<float>({12, 40}, 8);
  auto rows = ct::cast<float>(ct::arange<int>(12).reshape({12, 1}));
  auto cols = ct::cast<float>(ct::arange<int>(40));
  boost::asio::thread_pool pool(3);
  const std::vector<std::pair<std::string, ct::executor>> executors{
      {"three-worker pool", ct_test::three_worker_executor()},
      {"asio 2", ct::asio_executor(pool, 2, ct_test::sharing())},
      {"asio 4", ct::asio_executor(pool, 4, ct_test::sharing())}};
  for (const auto& [name, exec] : executors) {
    bool met_a_busy_worker = false;
    for (index_t bad_row : {index_t{1}, index_t{6}, index_t{11}}) {
      for (int form = 0; form < 2; ++form) {  // a fused softmax, a plain row sum
        std::atomic<int> inside{0}, calls{0};
        std::atomic<bool> busy{false};
        // The row's first element is the slow call: 2 ms for good rows.
        auto slow = [bad_row, &inside, &calls, &busy](float v, float row, float col) {
          ++calls;
          ++inside;
          if (col == 0.0f) {
            if (static_cast<index_t>(row) == bad_row) {
              const auto give_up = std::chrono::steady_clock::now() + 100ms;
              while (inside.load() < 2 && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
              if (inside.load() >= 2) busy = true;
              --inside;
              throw std::domain_error("bad row");
            }
            std::this_thread::sleep_for(2ms);
          }
          --inside;
          return v;
        };
        auto m = ct::map(slow, x, rows, cols);
        auto dest = ct::full<float>(form == 0 ? dims{12, 40} : dims{12}, -1.0f);
        auto before = dest.clone();
        ct::executor_scope scope(exec);
        INFO(name << ", bad row " << bad_row << (form == 0 ? ", softmax" : ", sum"));
        int inside_at_catch = -1, calls_at_catch = -1;
        try {
          if (form == 0) ct::eval(ct::softmax(m, -1), dest);
          else ct::eval(ct::sum(m, -1), dest);
          FAIL("no error");
        } catch (const std::domain_error& e) {
          inside_at_catch = inside.load();
          calls_at_catch = calls.load();
          CHECK(std::string(e.what()) == "bad row");
        }
        CHECK(inside_at_catch == 0);
        std::this_thread::sleep_for(5ms);
        CHECK(calls.load() == calls_at_catch);  // nothing ran after the error was raised
        CHECK(ct_test::bitwise_equal(dest, before));
        met_a_busy_worker = met_a_busy_worker || busy;
      }
    }
    INFO(name);
    CHECK(met_a_busy_worker);
  }
  pool.join();
}

TEST_CASE("contract §5: a functor throwing in a pure elementwise expression changes nothing", "[scheduling][fused]") {
  auto x = ct::random_uniform<float>({64, 100}, 6);
  executor_zoo zoo;
  for (index_t bad : {index_t{0}, index_t{3250}, index_t{6399}}) {  // first, middle, last element
    for (auto& [name, exec] : zoo.all()) {
      auto dest = ct::full<float>(dims{64, 100}, -1.0f);
      auto before = dest.clone();
      auto at = ct::cast<float>(ct::arange<int>(6400).reshape({64, 100}));
      auto thrower = [bad](float v, float i) {
        if (static_cast<index_t>(i) == bad) throw std::domain_error("bad element");
        return v * 2.0f;
      };
      ct::executor_scope scope(exec);
      INFO("element " << bad << " under " << name);
      CHECK_THROWS_AS(ct::eval(ct::map(thrower, x, at) + 1.0f, dest), std::domain_error);
      CHECK(ct_test::bitwise_equal(dest, before));
    }
  }
}

// An integer division by zero throws while results are being written, like a functor: the
// results are staged, so the destination stays as it was (plain, fused and reduced results).
TEST_CASE("contract §5: integer division by zero leaves the destination unchanged", "[scheduling][fused]") {
  auto a = ct::full<int>(dims{64, 100}, 7);
  executor_zoo zoo;
  for (index_t bad_row : {index_t{0}, index_t{32}, index_t{63}}) {
    auto b = ct::full<int>(dims{64, 100}, 1);
    b(bad_row, 99) = 0;
    for (auto& [name, exec] : zoo.all()) {
      ct::executor_scope scope(exec);
      INFO("zero in row " << bad_row << " under " << name);
      auto dest = ct::full<int>(dims{64, 100}, -1);
      auto before = dest.clone();
      CHECK_THROWS_WITH(ct::eval(a / b, dest), Catch::Contains("integer division by zero") && Catch::Contains("[64, 100]"));
      CHECK(ct_test::bitwise_equal(dest, before));
      CHECK_THROWS_AS(ct::eval(a / b + ct::sum(a, -1, true), dest), ct::error);
      CHECK(ct_test::bitwise_equal(dest, before));
      CHECK_THROWS_AS(ct::eval(a / b - ct::max(a, -1, true), dest), ct::error);
      CHECK(ct_test::bitwise_equal(dest, before));
      auto sums = ct::full<int>(dims{64}, -1);
      auto sums_before = sums.clone();
      CHECK_THROWS_AS(ct::eval(ct::sum(a / b, -1), sums), ct::error);
      CHECK(ct_test::bitwise_equal(sums, sums_before));
    }
  }
  // Without a zero divisor the same expressions work (7 / 1 = 7; row sums 700).
  auto b = ct::full<int>(dims{64, 100}, 1);
  auto dest = ct::full<int>(dims{64, 100}, -1);
  ct::eval(a / b + ct::sum(a, -1, true), dest);
  CHECK(dest(5, 7) == 707);
  CHECK(dest(63, 99) == 707);
}

TEST_CASE("contract §5: failing scratch allocation leaves the destination unchanged", "[scheduling][fused]") {
  auto x = ct::random_uniform<float>({64, 100}, 5);
  auto dest = ct::full<float>(dims{64, 100}, 2.0f);
  auto before = dest.clone();
  counting_executor counter;
  ct::executor_scope scope(counter.get());
  // The plain path allocates once (scratch); the staged path, which a functor forces, twice
  // (staging buffer, then scratch): fail each of those allocations in turn.
  ct::detail::fail_next_scratch_allocations(1);
  CHECK_THROWS_AS(ct::eval(ct::softmax(x, -1), dest), std::bad_alloc);
  CHECK(ct_test::bitwise_equal(dest, before));
  for (int skip : {0, 1}) {
    INFO("staged, allocations let through first: " << skip);
    ct::detail::fail_next_scratch_allocations(1, skip);
    CHECK_THROWS_AS(ct::eval(ct::softmax(ct::map([](float v) { return v; }, x), -1), dest), std::bad_alloc);
    ct::detail::fail_next_scratch_allocations(0);
    CHECK(ct_test::bitwise_equal(dest, before));
  }
  CHECK(counter.calls == 0);  // scratch is allocated before scheduling
  // There are exactly those two: with both let through, nothing fails.
  auto staged_dest = dest.clone();
  ct::detail::fail_next_scratch_allocations(1, 2);
  CHECK_NOTHROW(ct::eval(ct::softmax(ct::map([](float v) { return v; }, x), -1), staged_dest));
  ct::detail::fail_next_scratch_allocations(0);
  CHECK(counter.calls == 1);
  counter.calls = 0;
  ct::eval(ct::softmax(x, -1), dest);  // and the next call works
  CHECK(counter.calls == 1);
}

TEST_CASE("contract §5: in-place and overlapping destinations give the right answer", "[scheduling][fused]") {
  executor_zoo zoo;
  for (auto& [name, exec] : zoo.all()) {
    ct::executor_scope scope(exec);
    INFO(name);
    auto x = ct::random_uniform<float>({20, 300}, 6, -5.0f, 5.0f);
    auto want = ct::eval(ct::softmax(x, -1));
    ct::eval(ct::softmax(x, -1), x);  // same layout: in place
    CHECK(ct_test::bitwise_equal(x, want));

    auto sq = ct::random_uniform<double>({40, 40}, 7);
    auto want_t = ct::eval(sq.transpose() - ct::mean(sq.transpose(), -1));
    ct::eval(sq.transpose() - ct::mean(sq.transpose(), -1), sq);  // overlaps in another layout
    CHECK(ct_test::bitwise_equal(sq, want_t));

    auto v = ct::arange<double>(100.0);
    auto want_shift = ct::eval(v.slice(0, 0, 99) * 2.0);
    ct::eval(v.slice(0, 0, 99) * 2.0, v.slice(0, 1, 100));  // shifted overlap, elementwise
    CHECK(ct_test::bitwise_equal(v.slice(0, 1, 100), want_shift));
  }
}

// Results of 16 MiB and more with long rows are written with non-temporal stores; the values
// must be the ones a small evaluation gives, under any executor (the stores are fenced
// before a callback returns), into contiguous destinations and views.
TEST_CASE("large results (streaming stores) equal the same rows evaluated in small pieces", "[scheduling][fused]") {
  const index_t rows = 4096, cols = 1024;  // 16 MiB of float results: at the streaming threshold
  auto x = ct::random_uniform<float>({rows, cols}, 41, -20.0f, 20.0f);
  auto w = ct::random_uniform<float>({cols}, 42, 0.5f, 1.5f);
  auto expected_softmax = ct::zeros<float>({rows, cols});
  auto bias = ct::random_uniform<float>({cols}, 43, -1.0f, 1.0f);
  auto expected_norm = ct::zeros<float>({rows, cols}), expected_layer = ct::zeros<float>({rows, cols});
  auto expected_log = ct::zeros<float>({rows, cols});
  for (index_t r0 = 0; r0 < rows; r0 += 512) {  // 2 MiB pieces: ordinary stores
    auto part = x.slice(0, r0, r0 + 512);
    ct::eval(ct::softmax(part, -1), expected_softmax.slice(0, r0, r0 + 512));
    ct::eval(ct::rms_norm(part, -1, 1e-5f, w), expected_norm.slice(0, r0, r0 + 512));
    ct::eval(ct::layer_norm(part, -1, 1e-5f, w, bias), expected_layer.slice(0, r0, r0 + 512));
    ct::eval(ct::log_softmax(part, -1), expected_log.slice(0, r0, r0 + 512));
  }
  // Spot-check the pieces against the double reference too.
  for (index_t r : {index_t(0), index_t(1234), rows - 1}) {
    double m = -1e300, s = 0;
    for (index_t c = 0; c < cols; ++c) m = std::max(m, static_cast<double>(x(r, c)));
    for (index_t c = 0; c < cols; ++c) s += std::exp(static_cast<double>(x(r, c)) - m);
    for (index_t c = 0; c < cols; c += 97) {  // the bound of docs/expressions.md
      const double d = static_cast<double>(x(r, c)) - m, p = std::exp(d) / s;
      CHECK(std::abs(expected_softmax(r, c) - p) <= (std::abs(d) + 8) * std::ldexp(1.0, -24) * p + 1e-44);
    }
  }
  executor_zoo zoo;
  for (auto& [name, exec] : zoo.all()) {
    ct::executor_scope scope(exec);
    INFO("under " << name);
    auto got = ct::eval(ct::softmax(x, -1));
    CHECK(ct_test::bitwise_equal(got, expected_softmax));
    auto norm = ct::zeros<float>({rows, cols});
    ct::eval(ct::rms_norm(x, -1, 1e-5f, w), norm);
    CHECK(ct_test::bitwise_equal(norm, expected_norm));
  }
  // The output pass's last operation writing the destination itself (division in softmax,
  // multiply-add in layer norm with weight and bias, subtraction in log-softmax), for every
  // backend and FMA policy.
  for (const auto& s : {ct::settings{ct::backend::simd, ct::fma_policy::fused}, ct::settings{ct::backend::simd, ct::fma_policy::separate},
                        ct::settings{ct::backend::scalar, ct::fma_policy::fused}}) {
    ct::settings_scope scope(s);
    auto want_soft = ct::zeros<float>({rows, cols}), want_layer = ct::zeros<float>({rows, cols});
    auto want_log = ct::zeros<float>({rows, cols});
    for (index_t r0 = 0; r0 < rows; r0 += 512) {
      auto part = x.slice(0, r0, r0 + 512);
      ct::eval(ct::softmax(part, -1), want_soft.slice(0, r0, r0 + 512));
      ct::eval(ct::layer_norm(part, -1, 1e-5f, w, bias), want_layer.slice(0, r0, r0 + 512));
      ct::eval(ct::log_softmax(part, -1), want_log.slice(0, r0, r0 + 512));
    }
    CHECK(ct_test::bitwise_equal(ct::eval(ct::softmax(x, -1)), want_soft));
    CHECK(ct_test::bitwise_equal(ct::eval(ct::layer_norm(x, -1, 1e-5f, w, bias)), want_layer));
    CHECK(ct_test::bitwise_equal(ct::eval(ct::log_softmax(x, -1)), want_log));
  }
  CHECK(ct_test::bitwise_equal(ct::eval(ct::layer_norm(x, -1, 1e-5f, w, bias)), expected_layer));
  CHECK(ct_test::bitwise_equal(ct::eval(ct::log_softmax(x, -1)), expected_log));
  // A destination view that starts off a 64-byte boundary (head and tail of every row copied
  // with ordinary stores, the middle streamed).
  auto wide = ct::zeros<float>({rows, cols + 3});
  auto view = wide.slice(1, 3, cols + 3);
  ct::eval(ct::softmax(x, -1), view);
  CHECK(ct_test::bitwise_equal(view.contiguous(), expected_softmax));
  for (index_t r = 0; r < rows; r += 511)
    for (index_t c = 0; c < 3; ++c) CHECK(wide(r, c) == 0.0f);
}

// Layer and RMS norm use only exactly rounded operations and lane-wise sums, so the scalar
// and simd backends must agree bitwise — whichever path (direct tile function, one-value
// shortcut for a group's mean and 1/sqrt, general kernel) the evaluator takes.
TEST_CASE("layer_norm and rms_norm are bitwise the same under the scalar and simd backends", "[scheduling][fused]") {
  for (auto [rows, cols] : {std::pair<index_t, index_t>{3, 1}, {5, 17}, {64, 64}, {9, 1030}}) {
    auto x = ct::random_uniform<float>({rows, cols}, 91, -3.0f, 5.0f);
    auto w = ct::random_uniform<float>({cols}, 92, 0.5f, 1.5f), b = ct::random_uniform<float>({cols}, 93, -1.0f, 1.0f);
    auto xd = ct::random_uniform<double>({rows, cols}, 94, -3.0, 5.0);
    for (ct::fma_policy f : {ct::fma_policy::fused, ct::fma_policy::separate}) {
      auto run = [&](ct::backend be) {
        ct::settings_scope scope({be, f});
        return std::make_tuple(ct::eval(ct::layer_norm(x, -1, 1e-5f, w, b)), ct::eval(ct::rms_norm(x, -1, 1e-6f, w)),
                               ct::eval(ct::layer_norm(xd, -1, 1e-9)));
      };
      auto [ln_s, rms_s, lnd_s] = run(ct::backend::scalar);
      auto [ln_v, rms_v, lnd_v] = run(ct::backend::simd);
      INFO(rows << "x" << cols << (f == ct::fma_policy::fused ? " fused" : " separate"));
      CHECK(ct_test::bitwise_equal(ln_s, ln_v));
      CHECK(ct_test::bitwise_equal(rms_s, rms_v));
      CHECK(ct_test::bitwise_equal(lnd_s, lnd_v));
    }
  }
}

// (x * u) * w [+ c] with u one value per group runs as one kernel when nothing else reads
// x * u (the output pass of layer norm with weight and bias, RMS norm with weight). Its results
// must be those of the separate operations: compare with x * u materialised first, for the
// factors in either order, a bias that is one value, a weight read through a stride (its
// gathered tile sits between x * u and its user), x * u needed elsewhere too, and double.
TEST_CASE("(x * u) * w + c in one kernel equals the separate operations", "[scheduling][fused]") {
  for (auto [rows, cols] : {std::pair<index_t, index_t>{3, 1}, {5, 33}, {4, 1030}, {2, 5000}}) {
    auto x = ct::random_uniform<float>({rows, cols}, 71, -3.0f, 3.0f);
    auto w = ct::random_uniform<float>({cols}, 72, 0.5f, 1.5f), c = ct::random_uniform<float>({cols}, 73, -1.0f, 1.0f);
    auto wt = ct::random_uniform<float>({cols, 2}, 74, 0.5f, 1.5f).select(1, 0);  // stride 2
    auto xd = ct::random_uniform<double>({rows, cols}, 75, -3.0, 3.0);
    auto wd = ct::random_uniform<double>({cols}, 76, 0.5, 1.5), cd = ct::random_uniform<double>({cols}, 77, -1.0, 1.0);
    for (ct::fma_policy f : {ct::fma_policy::fused, ct::fma_policy::separate}) {
      ct::settings_scope scope({ct::backend::simd, f});
      INFO(rows << "x" << cols << (f == ct::fma_policy::fused ? " fused" : " separate"));
      auto r = ct::rsqrt(ct::mean(ct::square(x), -1, true) + 1e-5f);
      auto rd = ct::rsqrt(ct::mean(ct::square(xd), -1, true) + 1e-5);
      auto t = ct::eval(x * r);     // x * u materialised
      auto tt = ct::eval(r * x);
      auto td = ct::eval(xd * rd);
      CHECK(ct_test::bitwise_equal(ct::eval(x * r * w + c), ct::eval(t * w + c)));
      CHECK(ct_test::bitwise_equal(ct::eval(w * (r * x) + c), ct::eval(w * tt + c)));
      CHECK(ct_test::bitwise_equal(ct::eval(x * r * w + 0.25f), ct::eval(t * w + 0.25f)));
      CHECK(ct_test::bitwise_equal(ct::eval(x * r * w), ct::eval(t * w)));
      CHECK(ct_test::bitwise_equal(ct::eval(x * r * wt + c), ct::eval(t * wt + c)));
      // x computed into a tile slot that the gathered weight could take over.
      auto x1 = ct::eval(x + 1.0f);
      auto r1 = ct::rsqrt(ct::mean(ct::square(x1), -1, true) + 1e-5f);
      auto t1 = ct::eval(x1 * r1);
      CHECK(ct_test::bitwise_equal(ct::eval((x + 1.0f) * r1 * wt + c), ct::eval(t1 * wt + c)));
      CHECK(ct_test::bitwise_equal(ct::eval((x + 1.0f) * r1 * wt + ct::exp(x)), ct::eval(t1 * wt + ct::exp(x))));
      CHECK(ct_test::bitwise_equal(ct::eval(x * r * w + x * r), ct::eval(t * w + t)));
      CHECK(ct_test::bitwise_equal(ct::eval(xd * rd * wd + cd), ct::eval(td * wd + cd)));
      CHECK(ct_test::bitwise_equal(ct::eval(ct::layer_norm(x, -1, 1e-5f, w, c)),
                                   ct::eval(ct::eval((x - ct::mean(x, -1, true)) * ct::rsqrt(ct::mean(ct::square(x - ct::mean(x, -1, true)), -1, true) + 1e-5f)) * w + c)));
    }
  }
}

// exp(x - u) with u one value per group runs as one kernel when nothing else reads x - u
// (softmax's numerator, logsumexp's argument). Its results must be those of the subtraction
// and exp as separate passes: compare with the difference materialised first, for an operand
// read in place, an operand computed into a tile slot (x * 2), and strided rows.
TEST_CASE("exp(x - max) in one kernel equals the two steps", "[scheduling][fused]") {
  for (auto [rows, cols] : {std::pair<index_t, index_t>{3, 1}, {5, 33}, {4, 1030}, {2, 5000}}) {
    auto x = ct::random_uniform<float>({rows, cols}, 97, -90.0f, 90.0f);
    auto xt = ct::random_uniform<float>({cols, rows}, 98, -90.0f, 90.0f).permute({1, 0});
    for (ct::fma_policy f : {ct::fma_policy::fused, ct::fma_policy::separate}) {
      ct::settings_scope scope({ct::backend::simd, f});
      INFO(rows << "x" << cols);
      auto two_steps = [](const auto& v) {
        auto diff = ct::eval(v - ct::max(v, -1, true));
        return ct::eval(ct::exp(diff));
      };
      CHECK(ct_test::bitwise_equal(ct::eval(ct::exp(x - ct::max(x, -1, true))), two_steps(x)));
      CHECK(ct_test::bitwise_equal(ct::eval(ct::exp(x * 2.0f - ct::max(x * 2.0f, -1, true))), two_steps(ct::eval(x * 2.0f))));
      CHECK(ct_test::bitwise_equal(ct::eval(ct::exp(xt - ct::max(xt, -1, true))), two_steps(ct::eval(xt))));
      auto e = ct::eval(ct::exp(x - ct::max(x, -1, true)));
      auto s = ct::eval(ct::sum(e, -1, true));
      CHECK(ct_test::bitwise_equal(ct::eval(ct::softmax(x, -1)), ct::eval(e / s)));
    }
  }
}

// exp(x - u) whose x - u is needed besides runs as one kernel writing both: log-softmax (x - max
// kept in the row cache for the output), and x - u used again in the same pass (kept in a tile
// slot). Compare with the difference materialised first, for an operand read in place, one
// computed into a tile slot (x * 2), strided rows, and double.
TEST_CASE("exp(x - max) with x - max kept equals the separate steps", "[scheduling][fused]") {
  for (auto [rows, cols] : {std::pair<index_t, index_t>{3, 1}, {5, 33}, {4, 1030}, {2, 5000}}) {
    auto x = ct::random_uniform<float>({rows, cols}, 91, -90.0f, 90.0f);
    auto xt = ct::random_uniform<float>({cols, rows}, 92, -90.0f, 90.0f).permute({1, 0});
    auto xd = ct::random_uniform<double>({rows, cols}, 93, -700.0, 700.0);
    for (ct::fma_policy f : {ct::fma_policy::fused, ct::fma_policy::separate}) {
      ct::settings_scope scope({ct::backend::simd, f});
      INFO(rows << "x" << cols);
      auto steps = [](const auto& v) {
        auto diff = ct::eval(v - ct::max(v, -1, true));
        auto e = ct::eval(ct::exp(diff));
        return std::make_pair(diff, e);
      };
      for (const auto& v : {ct::eval(x), ct::eval(x * 2.0f), ct::eval(xt)}) {
        auto [diff, e] = steps(v);
        auto lse = ct::eval(ct::log(ct::sum(e, -1, true)));
        CHECK(ct_test::bitwise_equal(ct::eval(ct::log_softmax(v, -1)), ct::eval(diff - lse)));
        CHECK(ct_test::bitwise_equal(ct::eval(ct::exp(v - ct::max(v, -1, true)) * (v - ct::max(v, -1, true))),
                                     ct::eval(e * diff)));
      }
      CHECK(ct_test::bitwise_equal(ct::eval(ct::log_softmax(x * 2.0f, -1)), ct::eval(ct::log_softmax(ct::eval(x * 2.0f), -1))));
      auto [dd, ed] = steps(xd);
      CHECK(ct_test::bitwise_equal(ct::eval(ct::log_softmax(xd, -1)), ct::eval(dd - ct::log(ct::sum(ed, -1, true)))));
      CHECK(ct_test::bitwise_equal(ct::eval(ct::exp(xd - ct::max(xd, -1, true)) * (xd - ct::max(xd, -1, true))),
                                   ct::eval(ed * dd)));
    }
  }
}

// The simd backend feeds a sum of squares from the square's own kernel (kernels::unary_sum),
// writing the squares only when something else needs them. Cover the cases where they are
// needed — by the output pass (kept in the row cache), by another reducer of the same pass,
// by a later elementwise use — against the scalar backend (which never fuses) and a double
// reference, for strided rows too.
TEST_CASE("a sum fed by its square's kernel: the squares stay available to other uses", "[scheduling][fused]") {
  for (auto [rows, cols] : {std::pair<index_t, index_t>{4, 1}, {6, 33}, {5, 1030}, {3, 2500}}) {
    auto x = ct::random_uniform<float>({rows, cols}, 95, -3.0f, 3.0f);
    auto xt = ct::random_uniform<float>({cols, rows}, 96, -3.0f, 3.0f).permute({1, 0});  // strided rows
    auto run = [&](ct::backend be) {
      ct::backend_scope scope(be);
      auto sq = ct::square(x);
      return std::make_tuple(ct::eval(sq / ct::sum(sq, -1, true)),                       // row cache
                             ct::eval(ct::sum(sq, -1) + ct::max(sq, -1)),                  // two reducers
                             ct::eval(ct::sum(ct::square(x - ct::mean(x, -1, true)), -1)),  // only summed
                             ct::eval(ct::sum(ct::square(xt), -1)));                        // strided operand
    };
    auto [a_s, b_s, c_s, d_s] = run(ct::backend::scalar);
    auto [a_v, b_v, c_v, d_v] = run(ct::backend::simd);
    INFO(rows << "x" << cols);
    CHECK(ct_test::bitwise_equal(a_s, a_v));
    CHECK(ct_test::bitwise_equal(b_s, b_v));
    CHECK(ct_test::bitwise_equal(c_s, c_v));
    CHECK(ct_test::bitwise_equal(d_s, d_v));
    for (index_t r = 0; r < rows; ++r) {
      double s = 0, m = 0, mu = 0, c = 0;
      for (index_t i = 0; i < cols; ++i) {
        const double v = x(r, i);
        s += v * v;
        m = std::max(m, v * v);
        mu += v / static_cast<double>(cols);
      }
      for (index_t i = 0; i < cols; ++i) c += (x(r, i) - mu) * (x(r, i) - mu);
      CHECK(std::abs(b_v(r, 0) - (s + m)) <= 1e-5 * (s + m));  // the reducers broadcast back: rows x 1
      CHECK(std::abs(c_v(r) - c) <= 1e-5 * c + 1e-6);
      for (index_t i = 0; i < cols; i += 7) {
        const double v = x(r, i);
        CHECK(std::abs(a_v(r, i) - v * v / s) <= 1e-6 * (v * v / s) + 1e-30);
      }
    }
  }
}

// CHECKs that every tensor of tuple a equals its counterpart in b bitwise, one CHECK each.
template <class Tuple>
void check_each_bitwise(const Tuple& a, const Tuple& b) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ([&] {
      INFO("result " << I);
      CHECK(ct_test::bitwise_equal(std::get<I>(a), std::get<I>(b)));
    }(), ...);
  }(std::make_index_sequence<std::tuple_size_v<Tuple>>{});
}

// A group whose reduced elements fit one tile runs each pass's steps once, without the walk
// (plan::one_tile_), and layer norm's shape is one kernel call per group (plan::norm_); a
// group walked over two unmerged axes runs the general runner. The same values in both
// layouts must give the same bits: every step sees the same elements in the same order.
TEST_CASE("groups of one tile give the walking runner's results", "[scheduling][fused]") {
  // a >= 2, so the strided layout really has two walk axes; a*b: whole rounds of 32 only,
  // a tail only, both, and one full tile
  for (auto shape : {std::pair<index_t, index_t>{2, 16}, {3, 7}, {3, 11}, {2, 50}, {8, 125}, {4, 256}}) {
    const index_t a = shape.first, b = shape.second;  // (clang 14 cannot capture structured bindings)
    const index_t rows = 6;
    auto wide = ct::random_uniform<float>({rows, a, b + 5}, 97, -30.0f, 30.0f);
    wide(1, a - 1, b - 1) = std::numeric_limits<float>::quiet_NaN();  // a NaN in the tail (or last round)
    wide(2, 0, 0) = std::numeric_limits<float>::infinity();
    wide(3, a / 2, b / 2) = -std::numeric_limits<float>::infinity();
    auto strided = wide.slice(2, 0, b);        // rows of a runs of b: two walk axes
    auto packed = strided.contiguous();        // the same values in one merged axis
    auto w = ct::random_uniform<float>({a, b}, 98, 0.5f, 1.5f), c = ct::random_uniform<float>({a, b}, 99, -1.0f, 1.0f);
    const ct::dims ax{1, 2};
    auto all = [&](const ct::tensor<float>& x) {
      auto d = x - ct::mean(x, ax, true);
      auto e = ct::exp(x - ct::max(x, ax, true));
      // written through the copy path: a destination strided along the (merged) reduced axes
      auto strided_dest = ct::zeros<float>({a, b, rows}).permute({2, 0, 1});
      ct::eval(e / ct::sum(e, ax, true), strided_dest);
      return std::make_tuple(ct::eval(d * ct::rsqrt(ct::mean(ct::square(d), ax, true) + 1e-5f) * w + c),
                             ct::eval(e / ct::sum(e, ax, true)), ct::eval(ct::sum(x, ax) + ct::max(x, ax)),
                             ct::eval(ct::argmax(ct::abs(x), ax)), strided_dest);
    };
    // layer norm's shape with each output the kernel has, in float and double
    // many rows: a last-bit slip in a lane (a contracted multiply-add) rarely survives the
    // tree, the division and 1/sqrt, so one row in a few hundred shows it
    auto wide_d = ct::random_uniform<double>({300, a, b + 5}, 100, -30.0, 30.0);
    wide_d(4, a - 1, b - 1) = std::numeric_limits<double>::quiet_NaN();
    auto strided_d = wide_d.slice(2, 0, b);
    auto packed_d = strided_d.contiguous();
    auto wd = ct::random_uniform<double>({a, b}, 103, 0.5, 1.5), cd = ct::random_uniform<double>({a, b}, 104, -1.0, 1.0);
    // one value per row read from a tensor: an epsilon and a bias (loads among the one values)
    auto eps = ct::random_uniform<float>({rows, 1, 1}, 101, 1e-6f, 1e-2f), row_bias = ct::random_uniform<float>({rows, 1, 1}, 102, -1.0f, 1.0f);
    auto norms = [&](const ct::tensor<float>& x, const ct::tensor<double>& xd) {
      auto d = x - ct::mean(x, ax, true);
      auto n = d * ct::rsqrt(ct::mean(ct::square(d), ax, true) + 1e-5f);
      auto dd = xd - ct::mean(xd, ax, true);
      return std::make_tuple(ct::eval(n), ct::eval(n * w), ct::eval(n * w + 0.25f), ct::eval(ct::rsqrt(ct::mean(ct::square(d), ax, true) + 1e-5f) * d),
                             ct::eval(dd * ct::rsqrt(ct::mean(ct::square(dd), ax, true) + 1e-9) * wd + cd),
                             ct::eval(dd * ct::rsqrt(ct::mean(ct::square(dd), ax, true) + 1e-9)),
                             ct::eval(dd * ct::rsqrt(ct::mean(ct::square(dd), ax, true) + 1e-9) * wd),
                             ct::eval(d * ct::rsqrt(ct::mean(ct::square(d), ax, true) + eps) * w + row_bias));
    };
    for (auto [be, f] : {std::pair{ct::backend::scalar, ct::fma_policy::fused}, {ct::backend::simd, ct::fma_policy::fused},
                         {ct::backend::simd, ct::fma_policy::separate}}) {
      ct::settings_scope scope({be, f});
      INFO(a << "x" << b << (be == ct::backend::simd ? " simd" : " scalar") << (f == ct::fma_policy::fused ? " fused" : " separate"));
      const auto walked = all(strided), one_tile = all(packed);
      check_each_bitwise(walked, one_tile);
      check_each_bitwise(norms(strided, strided_d), norms(packed, packed_d));
      const auto& s_o = std::get<2>(one_tile);
      // and against a double reference, so that both cannot be wrong the same way (the
      // reducers broadcast back inside the sum: rows x 1 x 1)
      for (index_t r = 0; r < rows; ++r) {
        if (r >= 1 && r <= 3) continue;  // the rows with a NaN or an infinity
        double s = 0, m = -1e300;
        for (index_t i = 0; i < a; ++i)
          for (index_t j = 0; j < b; ++j) s += packed(r, i, j), m = std::max(m, static_cast<double>(packed(r, i, j)));
        CHECK(std::abs(s_o(r, 0, 0) - (s + m)) <= 1e-5 * (std::abs(s) + std::abs(m)) + 1e-4);
      }
    }
  }
}
