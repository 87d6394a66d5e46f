// CONTRACT.md §5, memory and failure: matmul snapshots an input its destination overlaps;
// reductions and fused expressions stage their results, so a failure (a throwing functor,
// an integer division by zero, a failed scratch allocation) leaves every destination
// unchanged, and the error reaches the caller only when no functor call is running any
// more; callbacks allocate nothing; caller-owned memory stays the caller's.
// Which sentence each case checks: README.md in this folder.
#include <boost/asio/thread_pool.hpp>
#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "contract/helpers.hpp"
#include "ct/asio.hpp"
#include "ct/ct.hpp"
#include "matmul/reference.hpp"
#include "support/allocation_guard.hpp"
#include "support/asio_options.hpp"
#include "support/executor_zoo.hpp"
#include "support/executors.hpp"
#include "support/reference.hpp"

using ct::dims;
using ct::index_t;
using ct_test::allocations_forbidden;
using ct_test::counting_executor;
using ct_test::executor_zoo;
using mm_test::all_settings;
using mm_test::describe;
using mm_test::operand;
using mm_test::same_bits;

// ---- matmul: overlapping destinations

TEST_CASE("contract §5: matmul: an output overlapping an input gives the non-aliased result", "[matmul]") {
  for (const ct::settings& s : all_settings) {
    ct::settings_scope scope(s);
    INFO(describe(s));
    for (index_t n : {7, 33}) {
      const auto a0 = operand<double>({n, n}, 90), b0 = operand<double>({n, n}, 91);
      const auto want = ct::matmul(a0, b0);
      {  // out is a
        auto a = a0.clone();
        ct::matmul(a, b0, a);
        CHECK(same_bits(a, want));
      }
      {  // out is b
        auto b = b0.clone();
        ct::matmul(a0, b, b);
        CHECK(same_bits(b, want));
      }
      {  // out is a transposed view of a
        auto a = a0.clone();
        ct::matmul(a, b0, a.transpose());
        CHECK(same_bits(a.transpose(), want));
      }
      {  // a @ a into a
        auto a = a0.clone();
        ct::matmul(a, a, a);
        CHECK(same_bits(a, ct::matmul(a0, a0)));
      }
      {  // out is a sub-view of b; a is a view of the same storage
        auto host = operand<double>({2 * n, n}, 92);
        auto top = host.slice(0, 0, n), bottom = host.slice(0, n, 2 * n);
        const auto expect = ct::matmul(bottom.clone(), top.clone());
        ct::matmul(bottom, top, top);
        CHECK(same_bits(top, expect));
      }
      {  // matrix x vector where the output is the vector
        auto x = operand<double>({n}, 93);
        const auto expect = ct::matmul(a0, x);
        ct::matmul(a0, x, x);
        CHECK(same_bits(x, expect));
      }
      {  // vector x matrix where the output is a row of the matrix
        auto m = operand<double>({n, n}, 94);
        auto row = m.select(0, 2);
        const auto expect = ct::matmul(row.clone(), m.clone());
        ct::matmul(row, m, row);
        CHECK(same_bits(row, expect));
      }
    }
  }
}

// ---- reductions and fused expressions: staged results, failure atomicity

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

// Scratch memory is allocated before any group runs; this checks that the callbacks
// themselves allocate nothing, so no allocation can fail once some groups wrote results.
// The global operator new of this test binary (support/allocation_guard.cpp) throws while a
// callback of the executor below runs on this thread.
TEST_CASE("contract §5: reduction callbacks allocate nothing", "[scheduling][fused][allocation]") {
  // Four ranges, run one after the other on this thread with allocation forbidden.
  ct::executor strict = [](index_t n, ct::range_callback cb) {
    for (index_t k = 0; k < 4; ++k) {
      allocations_forbidden = true;
      try {
        cb(n * k / 4, n * (k + 1) / 4);
      } catch (...) {
        allocations_forbidden = false;
        throw;
      }
      allocations_forbidden = false;
    }
  };
  // The check itself works: an allocation inside a callback throws.
  {
    ct::executor_scope scope(strict);
    // (A call of ::operator new itself: clang may elide a new-expression whose result is unused.)
    CHECK_THROWS_AS(ct::parallel_for(8, [](index_t, index_t) { ::operator delete(::operator new(16)); }), std::bad_alloc);
  }
  auto x = ct::random_uniform<float>({37, 1037}, 31, -3.0f, 3.0f);
  auto xs = ct::random_uniform<float>({64, 64}, 32, -3.0f, 3.0f);
  auto xl = ct::random_uniform<float>({9, 3001}, 33, -3.0f, 3.0f);
  auto d = ct::random_uniform<double>({12, 300}, 34, -3.0, 3.0);
  auto w = ct::random_uniform<float>({1037}, 35, 0.5f, 1.5f), b = ct::random_uniform<float>({1037}, 36, -1.0f, 1.0f);
  auto x3 = ct::random_uniform<float>({6, 20, 30}, 37, -3.0f, 3.0f);
  const auto same = [&](auto make, const char* what) {
    auto want = ct::eval(make());  // no executor: the reference
    ct::executor_scope scope(strict);
    INFO(what);
    auto out = want.clone();
    out.fill(0);
    CHECK_NOTHROW(ct::eval(make(), out));
    CHECK(ct_test::bitwise_equal(out, want));
  };
  same([&] { return ct::softmax(x, -1); }, "softmax (row runner)");
  same([&] { return ct::softmax(xl, -1); }, "softmax, long rows (next-row prefetch)");
  same([&] { return ct::log_softmax(xs, -1); }, "log_softmax");
  same([&] { return ct::layer_norm(x, -1, 1e-5f, w, b); }, "layer_norm with weight and bias");
  same([&] { return ct::sum(x, -1); }, "sum (plain reduction)");
  same([&] { return ct::argmax(x, -1); }, "argmax (plain reduction)");
  same([&] { return ct::sum(x, 0); }, "sum over axis 0 (column mode)");
  same([&] { return ct::softmax(x, 0); }, "softmax over axis 0 (column mode)");
  same([&] { return ct::mean(x3, dims{0, 2}); }, "mean over two axes (odometer walk)");
  same([&] { return ct::logsumexp(d, -1); }, "logsumexp f64");
  same([&] { return ct::sum(ct::cast<std::int64_t>(x3 > 0.0f), -1); }, "integer sum (general path)");
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

// ---- foreign memory

TEST_CASE("contract §5: tensor: wrap views caller memory without copying or owning it", "[tensor]") {
  std::vector<float> mem(12, 0.0f);
  {
    auto t = ct::wrap(mem.data(), {3, 4});
    CHECK_FALSE(t.owns_storage());
    CHECK(t.data() == mem.data());
    t(2, 1) = 5.0f;
    auto col = ct::wrap(mem.data() + 1, {3}, {4});  // column 1 via explicit strides
    CHECK(col(2) == 5.0f);
  }
  CHECK(mem[9] == 5.0f);  // the caller's memory outlives the tensor and holds the write
  CHECK_THROWS_AS(ct::wrap(mem.data(), {3, 4}, {4}), ct::shape_error);
}
