// Conformance tests for ../shared/CONTRACT.md §1–§3 and §6, one test case per clause.
#include <algorithm>
#include <atomic>
#include <barrier>
#include <boost/asio/thread_pool.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <mutex>
#include <optional>
#include <cstdio>
#include <thread>
#include <vector>

#include "ct/asio.hpp"
#include "ct/ct.hpp"
#include "support/asio_options.hpp"
#include "support/executors.hpp"

using ct::index_t;
using namespace std::chrono_literals;

namespace {
// An executor that hands the callback exactly the ranges it was built with.
ct::executor fixed_ranges(std::vector<std::pair<index_t, index_t>> ranges) {
  return [ranges](index_t, ct::range_callback cb) {
    for (auto [s, e] : ranges) cb(s, e);
  };
}

// Marks which groups a body saw; fails the test on a group seen twice.
struct coverage {
  explicit coverage(index_t n) : hits(static_cast<std::size_t>(n)) {}
  std::vector<std::atomic<int>> hits;
  void mark(index_t s, index_t e) {
    for (index_t i = s; i < e; ++i) hits[static_cast<std::size_t>(i)]++;
  }
  bool exactly_once() const {
    for (auto& h : hits)
      if (h.load() != 1) return false;
    return true;
  }
};

}  // namespace

TEST_CASE("contract §1: executor_scope binds for this thread and restores the previous binding",
          "[executor][contract]") {
  REQUIRE_FALSE(ct::current_executor());
  int outer_calls = 0, inner_calls = 0;
  {
    ct::executor_scope outer([&](index_t n, ct::range_callback cb) { ++outer_calls; cb(0, n); });
    REQUIRE(ct::current_executor());
    ct::parallel_for(10, [](index_t, index_t) {});
    {
      ct::executor_scope inner([&](index_t n, ct::range_callback cb) { ++inner_calls; cb(0, n); });
      ct::parallel_for(10, [](index_t, index_t) {});
    }
    ct::parallel_for(10, [](index_t, index_t) {});
  }
  REQUIRE_FALSE(ct::current_executor());
  CHECK(outer_calls == 2);
  CHECK(inner_calls == 1);
}

TEST_CASE("contract §1: bindings are per thread, two application threads at once", "[executor][contract]") {
  // Each thread binds its own counting executor; if bindings leaked across threads, one
  // counter would see the other thread's calls.
  std::barrier sync(2);
  std::atomic<int> calls_a{0}, calls_b{0};
  auto app = [&](std::atomic<int>& mine) {
    ct::executor_scope scope([&mine](index_t n, ct::range_callback cb) {
      ++mine;
      cb(0, n / 2);
      cb(n / 2, n);
    });
    sync.arrive_and_wait();  // both bindings are in force now
    for (int i = 0; i < 200; ++i) ct::parallel_for(8, [](index_t, index_t) {});
    sync.arrive_and_wait();
  };
  std::thread ta([&] { app(calls_a); });
  std::thread tb([&] { app(calls_b); });
  ta.join();
  tb.join();
  CHECK(calls_a == 200);
  CHECK(calls_b == 200);
  CHECK_FALSE(ct::current_executor());  // the main thread never saw either binding
}

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

TEST_CASE("contract §2: empty ranges are allowed", "[executor][contract]") {
  coverage c(10);
  ct::executor_scope scope(fixed_ranges({{0, 0}, {0, 4}, {4, 4}, {4, 10}, {10, 10}}));
  ct::parallel_for(10, [&](index_t s, index_t e) { c.mark(s, e); });
  CHECK(c.exactly_once());
}

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

TEST_CASE("contract §3: a negative count is an executor_error and calls nothing", "[executor][contract]") {
  int calls = 0;
  ct::executor_scope scope([&](index_t n, ct::range_callback cb) { ++calls; cb(0, n); });
  CHECK_THROWS_AS(ct::parallel_for(-3, [](index_t, index_t) {}), ct::executor_error);
  CHECK(calls == 0);
}

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

TEST_CASE("contract §2: an error reaches the caller only after every other callback returned",
          "[executor][contract]") {
  auto run = [](ct::executor exec, index_t count, index_t failing_group) {
    std::atomic<int> running{0}, finished{0};
    int running_at_catch = -1;
    ct::executor_scope scope(std::move(exec));
    try {
      ct::parallel_for(count, [&](index_t s, index_t e) {
        ++running;
        bool fail = s <= failing_group && failing_group < e;
        if (!fail) std::this_thread::sleep_for(20ms);  // others are still busy when the error happens
        --running;
        if (fail) throw std::runtime_error("group failed");
        ++finished;
      });
      FAIL("the error was swallowed");
    } catch (const std::runtime_error& e) {
      running_at_catch = running.load();
      CHECK(std::string(e.what()) == "group failed");
    }
    CHECK(running_at_catch == 0);
  };
  SECTION("three-worker pool, first/middle/last group fails") {
    for (index_t g : {index_t{0}, index_t{4}, index_t{8}}) run(ct_test::three_worker_executor(), 9, g);
    // The pool survived and is still usable.
    coverage c(99);
    ct::executor_scope scope(ct_test::three_worker_executor());
    ct::parallel_for(99, [&](index_t s, index_t e) { c.mark(s, e); });
    CHECK(c.exactly_once());
  }
  SECTION("asio adapter, 2 and 3 workers") {
    boost::asio::thread_pool pool(3);
    for (int w : {2, 3})
      for (index_t g : {index_t{0}, index_t{20}, index_t{39}}) run(ct::asio_executor(pool, w, ct_test::sharing()), 40, g);
    coverage c(1000);
    ct::executor_scope scope(ct::asio_executor(pool, 3, ct_test::sharing()));
    ct::parallel_for(1000, [&](index_t s, index_t e) { c.mark(s, e); });
    CHECK(c.exactly_once());
    pool.join();
  }
}

TEST_CASE("contract §6: pool_executor gives worker id the block [floor(count*id/w), floor(count*(id+1)/w))",
          "[executor][contract]") {
  for (index_t count : {index_t{2}, index_t{3}, index_t{10}, index_t{1000}}) {
    std::mutex m;
    std::vector<std::pair<index_t, index_t>> got;
    ct::executor_scope scope(ct_test::three_worker_executor());
    ct::parallel_for(count, [&](index_t s, index_t e) {
      std::lock_guard<std::mutex> lock(m);
      got.emplace_back(s, e);
    });
    std::vector<std::pair<index_t, index_t>> want;
    for (index_t id = 0; id < 3; ++id)
      if (count * id / 3 != count * (id + 1) / 3) want.emplace_back(count * id / 3, count * (id + 1) / 3);
    std::sort(got.begin(), got.end());
    CHECK(got == want);
  }
}

TEST_CASE("contract §6: pool_executor works with a pool type ct has never seen", "[executor][contract]") {
  struct inline_pool {
    int jobs = 0;
  } pool;
  auto run_pool = [](inline_pool& p, auto job) {
    for (int id = 0; id < 4; ++id) {
      ++p.jobs;
      job(id, 4);
    }
  };
  coverage c(10);
  ct::executor_scope scope(ct::pool_executor(pool, run_pool));
  ct::parallel_for(10, [&](index_t s, index_t e) { c.mark(s, e); });
  CHECK(c.exactly_once());
  CHECK(pool.jobs == 4);
}

TEST_CASE("contract §6: asio_executor covers every group exactly once", "[executor][contract]") {
  boost::asio::thread_pool pool(2);
  for (int w : {1, 2, 3, 7})
    for (index_t count : {index_t{2}, index_t{3}, index_t{17}, index_t{64}, index_t{1001}}) {
      coverage c(count);
      ct::executor_scope scope(ct::checked_executor(ct::asio_executor(pool, w, ct_test::sharing())));
      ct::parallel_for(count, [&](index_t s, index_t e) { c.mark(s, e); });
      INFO("workers " << w << " count " << count);
      CHECK(c.exactly_once());
    }
  pool.join();
}

TEST_CASE("contract §6: asio_executor called from the pool's own threads does not deadlock",
          "[executor][contract]") {
  for (int threads : {1, 3}) {
    boost::asio::thread_pool pool(static_cast<std::size_t>(threads));
    std::vector<std::future<bool>> results;
    // Every pool thread is busy running a ct call that itself wants the same pool.
    for (int j = 0; j < threads; ++j) {
      auto done = std::make_shared<std::promise<bool>>();
      results.push_back(done->get_future());
      boost::asio::post(pool, [&pool, threads, done] {
        try {
          coverage c(500);
          ct::executor_scope scope(ct::asio_executor(pool, threads + 1, ct_test::sharing()));
          ct::parallel_for(500, [&](index_t s, index_t e) { c.mark(s, e); });
          done->set_value(c.exactly_once());
        } catch (...) {
          done->set_exception(std::current_exception());
        }
      });
    }
    for (auto& r : results) {
      INFO("pool of " << threads << " threads");
      REQUIRE(r.wait_for(30s) == std::future_status::ready);
      CHECK(r.get());
    }
    pool.join();
  }
}

TEST_CASE("contract §6: asio_executor options: serial threshold and minimum chunk", "[executor][contract]") {
  boost::asio::thread_pool pool(2);
  {
    ct::asio_options o;
    o.serial_threshold = 100;
    std::vector<std::pair<index_t, index_t>> got;
    ct::executor_scope scope(ct::asio_executor(pool, 3, o));
    ct::parallel_for(99, [&](index_t s, index_t e) { got.emplace_back(s, e); });  // serial: no lock needed
    CHECK(got == std::vector<std::pair<index_t, index_t>>{{0, 99}});
  }
  {
    ct::asio_options o;
    o.min_chunk = 10;
    std::mutex m;
    std::vector<std::pair<index_t, index_t>> got;
    ct::executor_scope scope(ct::asio_executor(pool, 3, o));
    ct::parallel_for(95, [&](index_t s, index_t e) {
      std::lock_guard<std::mutex> lock(m);
      got.emplace_back(s, e);
    });
    std::sort(got.begin(), got.end());
    REQUIRE(got.size() == 10);
    for (std::size_t i = 0; i + 1 < got.size(); ++i) CHECK(got[i].second - got[i].first == 10);
    CHECK(got.back() == std::pair<index_t, index_t>{90, 95});
  }
  CHECK_THROWS_AS(ct::asio_executor(pool, 0), ct::error);
  pool.join();
}

// asio_options::solo_below: a call whose remaining work, estimated from the caller's first
// quarter chunk, is shorter runs on the caller alone and posts nothing (a posted helper would
// start only after the pool's wake-up); a longer one is shared; zero always shares.
TEST_CASE("asio_executor: short calls run on the caller alone and long ones are shared", "[executor]") {
  boost::asio::thread_pool pool(2);
  auto others_in = [&](ct::asio_options o, index_t count, std::chrono::microseconds per_group) {
    std::atomic<int> others{0};
    const auto caller = std::this_thread::get_id();
    coverage c(count);
    {
      ct::executor_scope scope(ct::asio_executor(pool, 3, o));
      ct::parallel_for(count, [&](index_t s, index_t e) {
        c.mark(s, e);
        if (std::this_thread::get_id() != caller) others++;
        const auto until = std::chrono::steady_clock::now() + (e - s) * per_group;
        while (std::chrono::steady_clock::now() < until) {
        }
      });
    }
    CHECK(c.exactly_once());
    return others.load();
  };
  // What counts as short depends on the machine (sanitizers slow every callback down), so
  // the threshold is set far above this call's work to test the rule itself.
  CHECK(ct::asio_options{}.solo_below == 8us);
  ct::asio_options patient;
  patient.solo_below = 10s;
  for (int round = 0; round < 20; ++round) CHECK(others_in(patient, 48, 0us) == 0);
  CHECK(others_in(ct::asio_options{}, 96, 200us) > 0);  // ~19 ms: the helpers join
  int shared = 0;
  for (int round = 0; round < 20 && shared == 0; ++round) shared += others_in(ct_test::sharing(), 96, 1us) > 0;
  CHECK(shared > 0);
  ct::asio_options bad;
  bad.solo_below = std::chrono::nanoseconds(-1);
  CHECK_THROWS_AS(ct::asio_executor(pool, 2, bad), ct::error);
  pool.join();
}

// asio_options::linger: helpers poll for the next call instead of returning their thread at
// once. The §6 promises hold unchanged: every group exactly once, at most `workers`
// participants per call, errors rethrown after the started callbacks, no deadlock from the
// pool's own threads — whether the next call comes at once (a lingering helper takes it),
// after the helpers gave up (posted again), or is short enough for the caller alone.
TEST_CASE("contract §6: asio_executor with lingering helpers keeps every promise", "[executor][contract]") {
  boost::asio::thread_pool pool(3);
  ct::asio_options o;
  o.linger = 300us;
  for (int w : {2, 3}) {
    ct::executor_scope scope(ct::checked_executor(ct::asio_executor(pool, w, o)));
    for (int call = 0; call < 300; ++call) {
      const index_t count = 1 + (call * 37) % 400;
      coverage c(count);
      std::mutex m;
      std::vector<std::thread::id> ids;
      const bool slow = call % 2 == 1;  // ~1 us per group: long enough to invite the helpers
      ct::parallel_for(count, [&](index_t s, index_t e) {
        c.mark(s, e);
        if (slow) {
          const auto until = std::chrono::steady_clock::now() + (e - s) * 1us;
          while (std::chrono::steady_clock::now() < until) {
          }
        }
        std::lock_guard<std::mutex> lock(m);
        if (std::find(ids.begin(), ids.end(), std::this_thread::get_id()) == ids.end())
          ids.push_back(std::this_thread::get_id());
      });
      INFO("workers " << w << " call " << call << " count " << count);
      REQUIRE(c.exactly_once());
      REQUIRE(ids.size() <= static_cast<std::size_t>(w));
      if (call % 50 == 49) std::this_thread::sleep_for(2ms);  // the helpers give up meanwhile
    }
    // A failing call in the middle of a stream of calls.
    std::atomic<int> running{0};
    CHECK_THROWS_WITH(ct::parallel_for(1000,
                                       [&](index_t s, index_t) {
                                         running++;
                                         std::this_thread::sleep_for(10us);
                                         running--;
                                         if (s >= 500) throw std::runtime_error("group failed");
                                       }),
                      "group failed");
    CHECK(running.load() == 0);
    coverage after(777);
    ct::parallel_for(777, [&](index_t s, index_t e) { after.mark(s, e); });
    CHECK(after.exactly_once());
  }
  {  // chunks larger than the call: one range, whatever the lingering logic does first
    ct::asio_options big = o;
    big.min_chunk = 100;
    ct::executor_scope scope(ct::checked_executor(ct::asio_executor(pool, 3, big)));
    for (index_t count : {index_t{2}, index_t{10}, index_t{150}, index_t{450}}) {
      coverage c(count);
      ct::parallel_for(count, [&](index_t s, index_t e) { c.mark(s, e); });
      CHECK(c.exactly_once());
    }
  }
  CHECK_THROWS_AS(ct::asio_executor(pool, 2, [] {
                    ct::asio_options bad;
                    bad.linger = -1us;
                    return bad;
                  }()),
                  ct::error);
  // Calls from the pool's own threads while helpers linger: no deadlock.
  std::vector<std::future<bool>> results;
  auto exec = ct::asio_executor(pool, 4, o);
  for (int j = 0; j < 3; ++j) {
    auto done = std::make_shared<std::promise<bool>>();
    results.push_back(done->get_future());
    boost::asio::post(pool, [exec, done] {
      try {
        bool ok = true;
        ct::executor_scope scope(exec);
        for (int k = 0; k < 20; ++k) {
          coverage c(300);
          ct::parallel_for(300, [&](index_t s, index_t e) { c.mark(s, e); });
          ok = ok && c.exactly_once();
        }
        done->set_value(ok);
      } catch (...) {
        done->set_exception(std::current_exception());
      }
    });
  }
  for (auto& r : results) {
    REQUIRE(r.wait_for(30s) == std::future_status::ready);
    CHECK(r.get());
  }
  pool.join();  // returns once the last helper stopped lingering
}

// The lingering path itself: the pool's only thread still polls after a call, so the next call
// is served by it even though a task posted to the pool in between has not started yet.
TEST_CASE("asio_executor: a lingering helper takes the next call without being posted", "[executor]") {
  boost::asio::thread_pool pool(1);
  ct::asio_options o;
  o.linger = 300ms;  // far longer than the test needs; join() waits it out
  ct::executor_scope scope(ct::asio_executor(pool, 2, o));
  auto helped = [] {
    std::atomic<int> others{0};
    const auto caller = std::this_thread::get_id();
    ct::parallel_for(64, [&](index_t, index_t) {
      if (std::this_thread::get_id() != caller) others++;
      std::this_thread::sleep_for(200us);
    });
    return others.load() > 0;
  };
  CHECK(helped());  // posted; the helper lingers afterwards
  std::atomic<bool> marker{false};
  boost::asio::post(pool, [&] { marker = true; });  // queued behind the lingering helper
  CHECK(helped());
  CHECK_FALSE(marker.load());  // the pool thread never went back to the pool in between
  pool.join();
  CHECK(marker.load());
}

TEST_CASE("checked_executor reports overlap, gaps and out-of-range ranges", "[executor][contract]") {
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

TEST_CASE("contract §1: range_callback is a cheap non-owning reference", "[executor][contract]") {
  int sum = 0;
  auto f = [&](index_t s, index_t e) { sum += static_cast<int>(e - s); };
  ct::range_callback cb(f);
  ct::range_callback copy = cb;
  copy(0, 3);
  cb(3, 10);
  CHECK(sum == 10);
  STATIC_REQUIRE(sizeof(ct::range_callback) == 2 * sizeof(void*));
  STATIC_REQUIRE(std::is_trivially_copyable_v<ct::range_callback>);
}

// The number of threads of this process, from /proc (Linux).
static int thread_count() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  int n = -1;
  while (std::fgets(line, sizeof line, f) != nullptr)
    if (std::sscanf(line, "Threads: %d", &n) == 1) break;
  std::fclose(f);
  return n;
}

TEST_CASE("contract §1: the core creates no threads", "[executor][contract]") {
  auto a = ct::random_uniform<float>({200, 300}, 1), b = ct::random_uniform<float>({300, 100}, 2);
  const int before = thread_count();
  REQUIRE(before > 0);
  for (bool serial : {false, true}) {
    ct::executor_scope scope(serial ? ct_test::serial_64_executor() : ct::executor{});
    (void)ct::matmul(a, b);
    (void)ct::eval(ct::softmax(a, -1));
    (void)ct::eval(ct::sum(a, 0));
    (void)ct::matmul(a, ct::random_uniform<float>({300}, 3));
    CHECK(thread_count() == before);
  }
}

TEST_CASE("contract §1: an empty executor runs the whole range once on the calling thread", "[executor][contract]") {
  for (bool explicit_empty : {false, true}) {
    std::optional<ct::executor_scope> scope;
    if (explicit_empty) scope.emplace(ct::executor{});
    std::vector<std::pair<index_t, index_t>> calls;
    std::vector<std::thread::id> threads;
    ct::parallel_for(100, [&](index_t s, index_t e) {
      calls.push_back({s, e});
      threads.push_back(std::this_thread::get_id());
    });
    REQUIRE(calls.size() == 1);
    CHECK(calls[0] == std::pair<index_t, index_t>{0, 100});
    CHECK(threads[0] == std::this_thread::get_id());
  }
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

TEST_CASE("contract §3: reductions over zero groups do not call the executor", "[executor][contract]") {
  int calls = 0;
  ct::executor_scope scope([&](index_t n, ct::range_callback cb) { ++calls; cb(0, n); });
  auto empty_rows = ct::zeros<float>({0, 5});
  CHECK(ct::eval(ct::sum(empty_rows, -1)).shape() == ct::dims{0});
  CHECK(ct::eval(ct::softmax(empty_rows, -1)).shape() == ct::dims{0, 5});
  CHECK(ct::eval(ct::argmax(empty_rows, -1)).shape() == ct::dims{0});
  CHECK(calls == 0);
}

TEST_CASE("contract §4: the first-index tie rule holds under every partition", "[executor][contract]") {
  auto rows = ct::zeros<float>({64, 3000});  // every element ties
  auto cols = ct::zeros<float>({3000, 64});
  auto ones = ct::ones<double>({37, 1100});
  std::vector<ct::executor> executors = {ct_test::serial_64_executor(), ct_test::random_partition_executor(7),
                                         ct_test::three_worker_executor(), ct_test::reverse_singles_executor()};
  for (auto& exec : executors) {
    ct::executor_scope scope(exec);
    CHECK(ct::equal(ct::eval(ct::argmax(rows, -1)), ct::zeros<std::int64_t>({64})));
    CHECK(ct::equal(ct::eval(ct::argmin(rows, -1)), ct::zeros<std::int64_t>({64})));
    CHECK(ct::equal(ct::eval(ct::argmax(cols, 0)), ct::zeros<std::int64_t>({64})));
    CHECK(ct::equal(ct::eval(ct::argmin(ones * -1.0, -1)), ct::zeros<std::int64_t>({37})));
  }
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
