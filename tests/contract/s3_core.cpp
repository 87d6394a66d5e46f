// CONTRACT.md §3, what the core does: it checks every range (and keeps no coverage map; a
// checking wrapper can), calls no executor for zero or one group, validates everything
// before scheduling, and runs callbacks with an empty executor binding and the caller's
// backend and FMA settings, restoring the thread's own bindings afterwards.
// Which sentence each case checks: README.md in this folder.
#include <algorithm>
#include <atomic>
#include <boost/asio/thread_pool.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "contract/helpers.hpp"
#include "ct/asio.hpp"
#include "ct/ct.hpp"
#include "matmul/helpers.hpp"
#include "matmul/reference.hpp"
#include "support/asio_options.hpp"
#include "support/executors.hpp"
#include "support/reference.hpp"

using ct::dims;
using ct::index_t;
using ct_test::fixed_ranges;
using mm_test::operand;
using namespace std::chrono_literals;

// ---- range checks; coverage is the executor's job

TEST_CASE("contract §2/§3: the core checks every range it receives", "[executor][contract]") {
  auto expect_bad = [](std::vector<std::pair<index_t, index_t>> ranges, const std::string& shown) {
    ct::executor_scope scope(fixed_ranges(ranges));
    std::atomic<int> ran{0};
    try {
      ct::parallel_for(10, [&](index_t, index_t) { ++ran; });
      FAIL("no executor_error for " << shown);
    } catch (const ct::executor_error& e) {
      std::string msg = e.what();
      CHECK(msg.find("parallel_for") != std::string::npos);
      CHECK(msg.find(shown) != std::string::npos);
      CHECK(msg.find("10") != std::string::npos);
    }
    CHECK(ran == 0);
  };
  expect_bad({{-1, 5}}, "[-1, 5)");   // start < 0
  expect_bad({{5, 11}}, "[5, 11)");   // end > count
  expect_bad({{6, 4}}, "[6, 4)");     // start > end
}

TEST_CASE("contract §3: a negative count is an executor_error and calls nothing", "[executor][contract]") {
  int calls = 0;
  ct::executor_scope scope([&](index_t n, ct::range_callback cb) { ++calls; cb(0, n); });
  CHECK_THROWS_AS(ct::parallel_for(-3, [](index_t, index_t) {}), ct::executor_error);
  CHECK(calls == 0);
}

TEST_CASE("contract §3: ct's own operations name themselves, the range and the count in range errors",
          "[executor][contract]") {
  // The executor hands out one range past the end: [0, count + 1).
  ct::executor_scope scope([](index_t n, ct::range_callback cb) { cb(0, n + 1); });
  auto expect = [](auto&& call, std::vector<std::string> fragments) {
    try {
      call();
      FAIL("no executor_error");
    } catch (const ct::executor_error& e) {
      const std::string msg = e.what();
      INFO(msg);
      for (const auto& f : fragments) CHECK(msg.find(f) != std::string::npos);
    }
  };
  auto a = ct::ones<float>({4, 3}), b = ct::ones<float>({3, 2});
  expect([&] { (void)ct::matmul(a, b); }, {"ct::matmul", "[0, 5)", "4"});
  auto x = ct::ones<float>({6, 10});
  expect([&] { (void)ct::eval(ct::sum(x, -1)); }, {"ct::eval", "[0, 7)", "6"});
}

TEST_CASE("contract §3: the core keeps no coverage map; §2: an executor's return value is ignored",
          "[executor][contract]") {
  // A count of 2^50 groups: checking ranges is O(1) per range, nothing is sized by count.
  const index_t huge = index_t{1} << 50;
  std::vector<std::pair<index_t, index_t>> seen;
  {
    ct::executor_scope scope([](index_t n, ct::range_callback cb) { cb(0, n); });
    ct::parallel_for(huge, [&](index_t s, index_t e) { seen.push_back({s, e}); });
  }
  REQUIRE(seen.size() == 1);
  CHECK(seen[0] == std::pair<index_t, index_t>{0, huge});
  // Coverage is the executor's job: a range skipped is not detected by the core.
  seen.clear();
  {
    ct::executor_scope scope([](index_t n, ct::range_callback cb) { cb(0, n / 2); });
    CHECK_NOTHROW(ct::parallel_for(10, [&](index_t s, index_t e) { seen.push_back({s, e}); }));
  }
  CHECK(seen == std::vector<std::pair<index_t, index_t>>{{0, 5}});
  // A callable that returns something is a valid executor; the value is dropped.
  int runs = 0;
  ct::executor returns_int = [](index_t n, ct::range_callback cb) -> int {
    cb(0, n);
    return 42;
  };
  ct::executor_scope scope(returns_int);
  ct::parallel_for(10, [&](index_t, index_t) { ++runs; });
  CHECK(runs == 1);
}

TEST_CASE("contract §3: checked_executor reports overlap, gaps and out-of-range ranges", "[executor][contract]") {
  auto run = [](std::vector<std::pair<index_t, index_t>> ranges) {
    ct::executor_scope scope(ct::checked_executor(fixed_ranges(ranges)));
    ct::parallel_for(10, [](index_t, index_t) {});
  };
  CHECK_NOTHROW(run({{0, 3}, {3, 3}, {3, 10}}));
  CHECK_THROWS_WITH(run({{0, 6}, {5, 10}}), Catch::Contains("overlaps") && Catch::Contains("group 5"));
  CHECK_THROWS_WITH(run({{0, 4}, {6, 10}}), Catch::Contains("[4, 6)") && Catch::Contains("never"));
  CHECK_THROWS_WITH(run({{0, 11}}), Catch::Contains("out of bounds"));
  CHECK_THROWS_AS(ct::checked_executor(ct::executor{}), ct::error);
}

// ---- zero groups, one group

TEST_CASE("contract §3: zero groups and one group never call the executor", "[executor][contract]") {
  int calls = 0;
  ct::executor_scope scope([&](index_t n, ct::range_callback cb) { ++calls; cb(0, n); });
  int bodies = 0;
  ct::parallel_for(0, [&](index_t, index_t) { ++bodies; });
  CHECK(bodies == 0);
  std::pair<index_t, index_t> got{-1, -1};
  ct::parallel_for(1, [&](index_t s, index_t e) { got = {s, e}; ++bodies; });
  CHECK(bodies == 1);
  CHECK(got == std::pair<index_t, index_t>{0, 1});
  CHECK(calls == 0);
  ct::parallel_for(2, [&](index_t, index_t) {});
  CHECK(calls == 1);
}

TEST_CASE("contract §3: reductions over zero groups do not call the executor", "[executor][contract]") {
  int calls = 0;
  ct::executor_scope scope([&](index_t n, ct::range_callback cb) { ++calls; cb(0, n); });
  auto empty_rows = ct::zeros<float>({0, 5});
  CHECK(ct::eval(ct::sum(empty_rows, -1)).shape() == ct::dims{0});
  CHECK(ct::eval(ct::softmax(empty_rows, -1)).shape() == ct::dims{0, 5});
  CHECK(ct::eval(ct::argmax(empty_rows, -1)).shape() == ct::dims{0});
  CHECK(calls == 0);
}

TEST_CASE("contract §3: matmul scheduling: one-group products never call the executor", "[matmul][scheduling]") {
  int calls = 0;
  ct::executor_scope bind([&calls](index_t n, ct::range_callback cb) {
    ++calls;
    cb(0, n);
  });
  auto row = operand<float>({1, 257}, 50), m = operand<float>({257, 33}, 51), v = operand<float>({257}, 52);
  const auto r1 = ct::matmul(row, m);                          // one output row
  const auto r2 = ct::matmul(row.unsqueeze(0), m);             // batch 1, one row
  const auto r3 = ct::matmul(row, v);                          // matrix x vector with one row
  const auto r4 = ct::matmul(v, m.slice(1, 0, 1));             // vector x matrix with one column
  const auto r5 = ct::matmul(v, v);                            // vector x vector
  const float d = ct::dot(v, v);
  CHECK(calls == 0);
  // And they are right.
  CHECK(mm_test::count_bad(r1, mm_test::naive_matmul(row, m)) == 0);
  CHECK(mm_test::count_bad(r2, mm_test::naive_matmul(row.unsqueeze(0), m)) == 0);
  CHECK(mm_test::count_bad(r3, mm_test::naive_matmul(row, v)) == 0);
  CHECK(mm_test::count_bad(r4, mm_test::naive_matmul(v, m.slice(1, 0, 1))) == 0);
  CHECK(r5.item() == d);
  ct::matmul(operand<float>({2, 257}, 53), m);  // two rows: now the executor is used
  CHECK(calls == 1);
}

// ---- validation before scheduling
// (Two helpers of the same name, from the two files these cases came from: each case sees its own.)
namespace fused_validation {
using ct_test::counting_executor;  // one callback per call

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

}  // namespace fused_validation

namespace matmul_validation {
using mm_test::counting_executor;  // two callbacks per call

TEST_CASE("contract §3: matmul: shape errors name the shapes and come before any executor call", "[matmul]") {
  counting_executor ex;
  ct::executor_scope scope(ex.get());
  auto expect_error = [&](auto&& call, std::vector<std::string> fragments) {
    try {
      call();
      FAIL("no shape_error");
    } catch (const ct::shape_error& e) {
      const std::string msg = e.what();
      for (const auto& f : fragments) {
        INFO(msg);
        CHECK(msg.find(f) != std::string::npos);
      }
    }
  };
  auto a = ct::ones<float>({4, 3}), b = ct::ones<float>({5, 6});
  expect_error([&] { ct::matmul(a, b); }, {"ct::matmul", "[4, 3]", "[5, 6]"});
  expect_error([&] { ct::matmul(ct::ones<float>({3}), ct::ones<float>({4})); }, {"[3]", "[4]"});
  expect_error([&] { ct::matmul(ct::ones<float>({2, 4, 3}), ct::ones<float>({5, 3, 2})); },
               {"batch", "[2, 4, 3]", "[5, 3, 2]"});
  expect_error([&] { ct::matmul(ct::scalar<float>(1.0f), ct::ones<float>({3})); }, {"rank", "[]", "[3]"});
  // Destination shape (including a would-be broadcast destination) and repeated elements.
  auto good_a = ct::ones<float>({40, 3}), good_b = ct::ones<float>({3, 6});
  auto out = ct::full<float>({40, 5}, 2.0f);
  expect_error([&] { ct::matmul(good_a, good_b, out); }, {"destination", "[40, 5]", "[40, 6]"});
  expect_error([&] { ct::matmul(good_a, good_b, ct::zeros<float>({1, 40, 6})); }, {"[1, 40, 6]", "[40, 6]"});
  expect_error([&] { ct::matmul(good_a, good_b, ct::zeros<float>({40, 1}).broadcast_to({40, 6})); },
               {"destination", "stride"});
  // Overlapping strides: element (i, j) at i + j, so rows share memory.
  std::vector<float> mem(64, 7.0f);
  auto overlapping = ct::wrap(mem.data(), {4, 4}, {1, 1});
  expect_error([&] { ct::matmul(ct::ones<float>({4, 5}), ct::ones<float>({5, 4}), overlapping); },
               {"destination", "[4, 4]", "[1, 1]"});
  CHECK(std::all_of(mem.begin(), mem.end(), [](float v) { return v == 7.0f; }));
  expect_error([&] { ct::dot(ct::ones<float>({3}), ct::ones<float>({4})); }, {"ct::dot", "[3]", "[4]"});
  expect_error([&] { ct::dot(ct::ones<float>({3, 1}), ct::ones<float>({3})); }, {"ct::dot", "[3, 1]"});
  CHECK(ex.calls == 0);
  CHECK(ct::equal(out, ct::full<float>({40, 5}, 2.0f)));  // nothing was written
}

}  // namespace matmul_validation

// ---- bindings inside callbacks

TEST_CASE("contract §3: callbacks run with an empty executor binding and the caller's settings",
          "[executor][contract]") {
  const ct::settings caller{ct::backend::scalar, ct::fma_policy::separate};
  REQUIRE_FALSE(caller == ct::settings{});  // differs from what worker threads hold by default

  auto check_under = [&](ct::executor exec, bool expect_other_threads, std::chrono::microseconds work = 0us) {
    std::mutex m;
    std::vector<std::thread::id> threads;
    std::atomic<int> bad_binding{0}, bad_settings{0};
    ct::executor_scope scope(std::move(exec));
    ct::settings_scope s(caller);
    ct::parallel_for(300, [&](index_t, index_t) {
      std::this_thread::sleep_for(work);
      if (ct::current_executor()) ++bad_binding;
      if (!(ct::current_settings() == caller)) ++bad_settings;
      std::lock_guard<std::mutex> lock(m);
      threads.push_back(std::this_thread::get_id());
    });
    CHECK(bad_binding == 0);
    CHECK(bad_settings == 0);
    // The caller's own bindings are intact after the call.
    CHECK(ct::current_executor());
    CHECK(ct::current_settings() == caller);
    bool other = std::any_of(threads.begin(), threads.end(), [](auto id) { return id != std::this_thread::get_id(); });
    if (expect_other_threads) CHECK(other);
  };
  SECTION("serial executor on the calling thread") { check_under(ct_test::serial_64_executor(), false); }
  SECTION("three-worker pool threads") { check_under(ct_test::three_worker_executor(), true); }
  SECTION("asio pool threads") {
    boost::asio::thread_pool pool(3);
    // 1 ms per range: longer than a posted helper needs to start, so helpers do take ranges.
    check_under(ct::asio_executor(pool, 4, ct_test::sharing()), true, 1000us);
    pool.join();
  }
}

TEST_CASE("contract §3: worker threads get their own bindings back after a callback", "[executor][contract]") {
  // A worker thread with bindings of its own runs callbacks, then sees its bindings again.
  std::promise<void> go;
  std::shared_future<void> started = go.get_future().share();
  ct::executor worker_exec = [&](index_t n, ct::range_callback cb) {
    std::thread t([&] {
      ct::executor_scope own([](index_t m, ct::range_callback c) { c(0, m); });
      ct::settings_scope own_settings({ct::backend::simd, ct::fma_policy::fused});
      cb(0, n);
      CHECK(ct::current_executor());
      CHECK(ct::current_settings() == ct::settings{ct::backend::simd, ct::fma_policy::fused});
    });
    t.join();
  };
  ct::executor_scope scope(worker_exec);
  ct::settings_scope caller({ct::backend::scalar, ct::fma_policy::separate});
  bool saw_caller_settings = false;
  ct::parallel_for(5, [&](index_t, index_t) {
    saw_caller_settings = ct::current_settings() == ct::settings{ct::backend::scalar, ct::fma_policy::separate};
  });
  CHECK(saw_caller_settings);
}

TEST_CASE("contract §3: bindings come back on the caller's thread when its callback throws", "[executor][contract]") {
  ct::settings_scope outer({ct::backend::scalar, ct::fma_policy::separate});
  bool checked = false;
  auto inner_exec = [&](index_t n, ct::range_callback cb) {
    try {
      cb(0, n);
    } catch (const std::runtime_error&) {
      // Back on this (the caller's) thread after the throwing callback: its bindings again.
      checked = static_cast<bool>(ct::current_executor()) &&
                ct::current_settings().backend == ct::backend::scalar &&
                ct::current_settings().fma == ct::fma_policy::separate;
      throw;
    }
  };
  ct::executor_scope scope(inner_exec);
  CHECK_THROWS_AS(ct::parallel_for(10, [](index_t, index_t) { throw std::runtime_error("body"); }), std::runtime_error);
  CHECK(checked);
}

TEST_CASE("contract §3: backend and fma scopes nest and compose", "[executor][contract]") {
  CHECK(ct::current_settings() == ct::settings{});
  {
    ct::backend_scope b(ct::backend::scalar);
    CHECK(ct::current_backend() == ct::backend::scalar);
    CHECK(ct::current_fma() == ct::fma_policy::fused);
    {
      ct::fma_scope f(ct::fma_policy::separate);
      CHECK(ct::current_backend() == ct::backend::scalar);
      CHECK(ct::current_fma() == ct::fma_policy::separate);
    }
    CHECK(ct::current_fma() == ct::fma_policy::fused);
  }
  CHECK(ct::current_settings() == ct::settings{});
}
