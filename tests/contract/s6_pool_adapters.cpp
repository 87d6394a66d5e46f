// CONTRACT.md §2 and §6 for the optional pool adapters: ct::tbb_executor (<ct/tbb.hpp>) and
// ct::openmp_executor (<ct/openmp.hpp>). Each adapter is checked for what the contract asks of
// every executor — every group exactly once (through ct::checked_executor), the call returns
// only after every callback finished, a callback's error comes back after every other callback
// stopped — for the bindings inside its callbacks, and for nested use: calls from the library's
// own threads and calls nested in a callback, which must neither deadlock nor multiply threads.
//
// Each half is compiled only when tests/meson.build found the library (CT_TEST_HAVE_TBB,
// CT_TEST_HAVE_OPENMP). Under ThreadSanitizer only the OpenMP half, and only with clang (LLVM's
// runtime loads Archer, which tells TSan about OpenMP's synchronization); Debian's libtbb is
// not built with TSan, which then reports races on TBB's own task objects. tests/meson.build
// has the details.
// Which sentence each case checks: README.md in this folder.
#if defined(CT_TEST_HAVE_TBB) || defined(CT_TEST_HAVE_OPENMP)
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "contract/helpers.hpp"
#include "ct/ct.hpp"
#include "support/reference.hpp"

#ifdef CT_TEST_HAVE_TBB
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task.h>
#include <oneapi/tbb/task_arena.h>

#include "ct/tbb.hpp"
#endif
#ifdef CT_TEST_HAVE_OPENMP
#include <omp.h>

#include "ct/openmp.hpp"
#endif

using ct::index_t;
using ct_test::coverage;
using namespace std::chrono_literals;

namespace {

/// Runs fn() on a thread of its own and returns its result. A deadlock cannot be reported and
/// then cleaned up (the stuck thread cannot be joined), so after a minute without a result the
/// test process ends with a message instead of hanging until the suite's timeout.
template <class F>
auto finishes_in_time(const char* what, F fn) {
  using result = decltype(fn());
  auto done = std::make_shared<std::promise<result>>();
  auto future = done->get_future();
  std::thread([fn = std::move(fn), done]() mutable {
    try {
      done->set_value(fn());
    } catch (...) {
      done->set_exception(std::current_exception());
    }
  }).detach();
  if (future.wait_for(60s) != std::future_status::ready) {
    std::fprintf(stderr, "%s: no result after 60 s (deadlock?)\n", what);
    std::fflush(stderr);
    std::_Exit(3);
  }
  return future.get();
}

/// The §2 error check of s2_obligations.cpp for one executor: every range but the failing one
/// sleeps, so others are running when the error happens; none may still run when it arrives.
void error_after_every_callback(ct::executor exec, index_t count, index_t failing_group) {
  std::atomic<int> running{0}, started{0}, returned{0};
  int running_at_catch = -1, started_at_catch = -2, returned_at_catch = -3;
  ct::executor_scope scope(std::move(exec));
  try {
    ct::parallel_for(count, [&](index_t s, index_t e) {
      ++started;
      ++running;
      const bool fail = s <= failing_group && failing_group < e;
      if (!fail) std::this_thread::sleep_for(5ms);
      --running;
      ++returned;
      if (fail) throw std::runtime_error("group " + std::to_string(failing_group) + " failed");
    });
    FAIL("the error was swallowed");
  } catch (const std::runtime_error& e) {
    running_at_catch = running.load();
    started_at_catch = started.load();
    returned_at_catch = returned.load();
    CHECK(std::string(e.what()) == "group " + std::to_string(failing_group) + " failed");
  }
  INFO("failing group " << failing_group << " of " << count);
  CHECK(running_at_catch == 0);
  CHECK(started_at_catch == returned_at_catch);
  // Nothing starts after the error reached the caller either.
  std::this_thread::sleep_for(10ms);
  CHECK(started.load() == started_at_catch);
}

/// Inside every callback: no executor bound and the caller's settings (CONTRACT §3), whatever
/// thread of the adapter runs it. Returns how many callbacks saw something else.
int callbacks_with_wrong_bindings(const ct::executor& exec, index_t count) {
  const ct::settings caller{ct::backend::scalar, ct::fma_policy::separate};
  ct::settings_scope s(caller);
  ct::executor_scope scope(exec);
  std::atomic<int> wrong{0};
  ct::parallel_for(count, [&](index_t, index_t) {
    if (ct::current_executor() || ct::current_settings() != caller) ++wrong;
    std::this_thread::sleep_for(50us);
  });
  if (!ct::current_executor() || ct::current_settings() != caller) ++wrong;  // the caller's own
  return wrong.load();
}

/// Records the ranges of every callback and the threads that ran them.
struct range_log {
  std::mutex mutex;
  std::vector<std::pair<index_t, index_t>> ranges;
  std::vector<std::thread::id> threads;
  void add(index_t s, index_t e) {
    std::lock_guard<std::mutex> lock(mutex);
    ranges.emplace_back(s, e);
    if (std::find(threads.begin(), threads.end(), std::this_thread::get_id()) == threads.end())
      threads.push_back(std::this_thread::get_id());
  }
};

/// A softmax and a matmul under exec, compared bitwise with the results without an executor.
bool same_results_as_serial(const ct::executor& exec) {
  auto x = ct::random_normal<float>({97, 64}, 11);
  auto w = ct::random_normal<float>({64, 33}, 12);
  auto softmax_ref = ct::eval(ct::softmax(x, -1));
  auto matmul_ref = ct::matmul(x, w);
  ct::executor_scope scope(exec);
  return ct_test::bitwise_equal(ct::eval(ct::softmax(x, -1)), softmax_ref) &&
         ct_test::bitwise_equal(ct::matmul(x, w), matmul_ref);
}

}  // namespace

// ---- ct::tbb_executor
#ifdef CT_TEST_HAVE_TBB

TEST_CASE("contract §6: tbb_executor covers every group exactly once", "[executor][contract]") {
  // More threads than this machine may have cores, so that ranges really run concurrently.
  tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism, 4);
  tbb::task_arena arena2(2), arena4(4);
  std::vector<std::pair<std::string, ct::executor>> executors{
      {"default arena", ct::tbb_executor()},
      {"arena of 2", ct::tbb_executor(arena2)},
      {"arena of 4", ct::tbb_executor(arena4)},
      {"arena of 4, grain 7", ct::tbb_executor(arena4, {2, 7})},
      {"default arena, grain 100", ct::tbb_executor({2, 100})}};
  for (auto& [name, exec] : executors)
    for (index_t count : {index_t{2}, index_t{3}, index_t{17}, index_t{64}, index_t{1001}, index_t{20000}}) {
      coverage c(count);
      ct::executor_scope scope(ct::checked_executor(exec));
      ct::parallel_for(count, [&](index_t s, index_t e) { c.mark(s, e); });
      INFO(name << ", count " << count);
      CHECK(c.exactly_once());  // checked right after the call: it returned after every range
    }
}

TEST_CASE("contract §2: tbb_executor rethrows a callback's error only after every other callback returned",
          "[executor][contract]") {
  tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism, 4);
  tbb::task_arena arena(4);
  for (index_t g : {index_t{0}, index_t{20}, index_t{39}}) {
    error_after_every_callback(ct::tbb_executor(), 40, g);
    error_after_every_callback(ct::tbb_executor(arena), 40, g);
  }
  // The arena is still usable after failures.
  coverage c(1000);
  ct::executor_scope scope(ct::checked_executor(ct::tbb_executor(arena)));
  ct::parallel_for(1000, [&](index_t s, index_t e) { c.mark(s, e); });
  CHECK(c.exactly_once());
}

TEST_CASE("contract §3: tbb_executor callbacks run with an empty binding and the caller's settings",
          "[executor][contract]") {
  tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism, 4);
  tbb::task_arena arena(3);
  CHECK(callbacks_with_wrong_bindings(ct::tbb_executor(), 200) == 0);
  CHECK(callbacks_with_wrong_bindings(ct::tbb_executor(arena), 200) == 0);
  CHECK(same_results_as_serial(ct::tbb_executor()));
  CHECK(same_results_as_serial(ct::tbb_executor(arena, {2, 5})));
}

TEST_CASE("contract §6: tbb_executor nested in its own callbacks and in TBB tasks neither deadlocks nor adds threads",
          "[executor][contract]") {
  SECTION("bound again inside a callback: nested loops share the arena's threads") {
    tbb::task_arena arena(2);
    auto exec = ct::tbb_executor(arena);
    const bool ok = finishes_in_time("nested tbb_executor", [&] {
      range_log log;
      std::vector<coverage> inner;
      for (int g = 0; g < 12; ++g) inner.emplace_back(300);
      coverage outer(12);
      ct::executor_scope scope(ct::checked_executor(exec));
      ct::parallel_for(12, [&](index_t s, index_t e) {
        outer.mark(s, e);
        for (index_t g = s; g < e; ++g) {
          ct::executor_scope again(exec);  // a callback's binding is empty; bind explicitly
          ct::parallel_for(300, [&](index_t a, index_t b) {
            inner[static_cast<std::size_t>(g)].mark(a, b);
            log.add(a, b);
          });
        }
      });
      bool all = outer.exactly_once();
      for (auto& c : inner) all = all && c.exactly_once();
      return all && log.threads.size() <= 2;  // the arena's two slots, nested or not
    });
    CHECK(ok);
  }
  SECTION("from the tasks of a user's parallel_for, in the same arena and from another one") {
    tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism, 4);
    tbb::task_arena small(2), other(3);
    for (tbb::task_arena* target : {&small, &other}) {
      auto exec = ct::tbb_executor(*target);
      const int bad = finishes_in_time("tbb_executor from TBB tasks", [&] {
        std::atomic<int> wrong{0};
        small.execute([&] {
          tbb::parallel_for(0, 16, [&](int) {
            coverage c(500);
            ct::executor_scope scope(exec);
            ct::parallel_for(500, [&](index_t s, index_t e) { c.mark(s, e); });
            if (!c.exactly_once()) ++wrong;
          });
        });
        return wrong.load();
      });
      CHECK(bad == 0);
    }
  }
  SECTION("from more application threads than the arena has slots") {
    tbb::task_arena arena(2);
    auto exec = ct::tbb_executor(arena);
    const int bad = finishes_in_time("tbb_executor from four threads", [&] {
      std::atomic<int> wrong{0};
      std::vector<std::thread> threads;
      for (int t = 0; t < 4; ++t)
        threads.emplace_back([&] {
          ct::executor_scope scope(exec);
          for (int call = 0; call < 40; ++call) {
            coverage c(100 + call);
            ct::parallel_for(100 + call, [&](index_t s, index_t e) { c.mark(s, e); });
            if (!c.exactly_once()) ++wrong;
          }
        });
      for (auto& t : threads) t.join();
      return wrong.load();
    });
    CHECK(bad == 0);
  }
}

// The adapter's loop runs in an isolated task_group_context: when a user's enclosing TBB loop
// is cancelled (one of its iterations threw), ct calls still running in its other iterations
// must not lose ranges — each call that returns normally covered every group. (Checked by
// hand: a plain tbb::parallel_for in place of the adapter's loop, bound to the enclosing
// context, left 20-odd of these calls incomplete. An inner arena.execute happens to shield its
// loop too; the arena-less executor relies on the isolated context alone.)
TEST_CASE("tbb_executor: cancelling an enclosing TBB loop does not skip ranges of a ct call", "[executor]") {
  tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism, 4);
  tbb::task_arena arena(3);
  for (bool in_arena : {false, true}) {
    auto exec = in_arena ? ct::tbb_executor(arena) : ct::tbb_executor();
    std::atomic<int> incomplete{0}, calls_after_throw{0}, others_started{0};
    std::atomic<bool> thrown{false};
    auto outer = [&] {
      tbb::parallel_for(0, 3, [&](int i) {
        if (i == 0) {
          const auto until = std::chrono::steady_clock::now() + 5s;
          while (others_started.load() == 0 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
          std::this_thread::sleep_for(2ms);
          thrown = true;
          throw std::runtime_error("outer iteration failed");
        }
        ++others_started;
        ct::executor_scope scope(exec);
        for (int call = 0; call < 200; ++call) {
          const bool after = thrown.load();
          coverage c(256);
          ct::parallel_for(256, [&](index_t s, index_t e) {
            c.mark(s, e);
            std::this_thread::sleep_for(10us);
          });
          if (!c.exactly_once()) ++incomplete;
          if (after && ++calls_after_throw > 20) break;
        }
      });
    };
    INFO((in_arena ? "tbb_executor(arena)" : "tbb_executor()"));
    CHECK_THROWS_WITH(arena.execute(outer), "outer iteration failed");
    // On a loaded machine the other iterations may not have started before the throw; then
    // there was nothing to check, and the case says so rather than failing.
    if (others_started.load() == 0) WARN("no ct call ran beside the failing iteration");
    INFO("ct calls made after the outer loop was cancelled: " << calls_after_throw.load());
    CHECK(incomplete.load() == 0);
  }
}

TEST_CASE("tbb_executor: a callback cancelling the loop is an executor_error, not a silent gap", "[executor]") {
  ct::executor_scope scope(ct::tbb_executor());
  CHECK_THROWS_AS(ct::parallel_for(1000,
                                   [](index_t s, index_t) {
                                     if (s == 0) tbb::task::current_context()->cancel_group_execution();
                                     std::this_thread::sleep_for(20us);
                                   }),
                  ct::executor_error);
}

TEST_CASE("tbb_executor: options: serial threshold and grain", "[executor]") {
  {
    std::vector<std::pair<index_t, index_t>> got;
    const auto caller = std::this_thread::get_id();
    bool on_caller = true;
    ct::executor_scope scope(ct::tbb_executor({100, 1}));
    ct::parallel_for(99, [&](index_t s, index_t e) {  // serial: no lock needed
      got.emplace_back(s, e);
      on_caller = on_caller && std::this_thread::get_id() == caller;
    });
    CHECK(got == std::vector<std::pair<index_t, index_t>>{{0, 99}});
    CHECK(on_caller);
  }
  tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism, 4);
  tbb::task_arena arena(3);
  for (index_t grain : {index_t{1}, index_t{10}, index_t{33}, index_t{5000}}) {
    range_log log;
    ct::executor_scope scope(ct::tbb_executor(arena, {2, grain}));
    ct::parallel_for(1000, [&](index_t s, index_t e) { log.add(s, e); });
    std::sort(log.ranges.begin(), log.ranges.end());
    INFO("grain " << grain);
    REQUIRE(!log.ranges.empty());
    CHECK(log.ranges.front().first == 0);
    CHECK(log.ranges.back().second == 1000);
    for (std::size_t i = 0; i < log.ranges.size(); ++i) {
      CHECK(log.ranges[i].second - log.ranges[i].first >= std::min<index_t>(1000, (grain + 1) / 2));
      if (i > 0) CHECK(log.ranges[i].first == log.ranges[i - 1].second);
    }
  }
  CHECK_THROWS_AS(ct::tbb_executor({2, 0}), ct::error);
  CHECK_THROWS_AS(ct::tbb_executor(arena, {-1, 1}), ct::error);
}

#endif  // CT_TEST_HAVE_TBB

// ---- ct::openmp_executor
#ifdef CT_TEST_HAVE_OPENMP

TEST_CASE("contract §6: openmp_executor covers every group exactly once", "[executor][contract]") {
  for (int threads : {0, 2, 3, 5})
    for (index_t count : {index_t{2}, index_t{3}, index_t{17}, index_t{64}, index_t{1001}, index_t{20000}}) {
      ct::openmp_options o;
      o.threads = threads;
      coverage c(count);
      ct::executor_scope scope(ct::checked_executor(ct::openmp_executor(o)));
      ct::parallel_for(count, [&](index_t s, index_t e) { c.mark(s, e); });
      INFO("threads " << threads << ", count " << count);
      CHECK(c.exactly_once());  // checked right after the call: it returned after every range
    }
}

TEST_CASE("contract §2: openmp_executor rethrows a callback's error only after every other callback returned",
          "[executor][contract]") {
  for (int threads : {2, 4})
    for (index_t g : {index_t{0}, index_t{20}, index_t{39}}) {
      ct::openmp_options o;
      o.threads = threads;
      error_after_every_callback(ct::openmp_executor(o), 40, g);
    }
  // Several callbacks failing at once: one of their errors comes back, the program goes on.
  ct::openmp_options o;
  o.threads = 3;
  ct::executor_scope scope(ct::openmp_executor(o));
  CHECK_THROWS_AS(ct::parallel_for(300, [](index_t, index_t) { throw std::logic_error("every range fails"); }),
                  std::logic_error);
  coverage c(1000);
  ct::parallel_for(1000, [&](index_t s, index_t e) { c.mark(s, e); });
  CHECK(c.exactly_once());
}

TEST_CASE("contract §3: openmp_executor callbacks run with an empty binding and the caller's settings",
          "[executor][contract]") {
  ct::openmp_options o;
  o.threads = 3;
  CHECK(callbacks_with_wrong_bindings(ct::openmp_executor(o), 200) == 0);
  CHECK(callbacks_with_wrong_bindings(ct::openmp_executor(), 200) == 0);
  CHECK(same_results_as_serial(ct::openmp_executor(o)));
}

TEST_CASE("contract §6: openmp_executor nested in a parallel region runs serially and never deadlocks",
          "[executor][contract]") {
  ct::openmp_options o;
  o.threads = 3;
  const auto exec = ct::openmp_executor(o);
  SECTION("bound again inside its own callbacks: the inner calls run on the callback's thread") {
    const bool ok = finishes_in_time("nested openmp_executor", [&] {
      range_log log;
      std::vector<coverage> inner;
      for (int g = 0; g < 12; ++g) inner.emplace_back(300);
      std::atomic<int> inner_ranges{0}, inner_calls{0}, off_thread{0};
      ct::executor_scope scope(ct::checked_executor(exec));
      ct::parallel_for(12, [&](index_t s, index_t e) {
        for (index_t g = s; g < e; ++g) {
          ++inner_calls;
          const auto me = std::this_thread::get_id();
          ct::executor_scope again(exec);  // a callback's binding is empty; bind explicitly
          ct::parallel_for(300, [&](index_t a, index_t b) {
            inner[static_cast<std::size_t>(g)].mark(a, b);
            ++inner_ranges;
            if (std::this_thread::get_id() != me) ++off_thread;
            log.add(a, b);
          });
        }
      });
      bool all = true;
      for (auto& c : inner) all = all && c.exactly_once();
      // One range per inner call, on the thread that made it; no more threads than the team.
      return all && inner_ranges.load() == inner_calls.load() && off_thread.load() == 0 && log.threads.size() <= 3;
    });
    CHECK(ok);
  }
  SECTION("from inside a user's parallel region") {
    const int bad = finishes_in_time("openmp_executor inside #pragma omp parallel", [&] {
      std::atomic<int> wrong{0};
#pragma omp parallel num_threads(3)
      {
        const bool active = omp_in_parallel() != 0;  // false only if the runtime gave one thread
        ct::executor_scope scope(exec);
        for (int call = 0; call < 20; ++call) {
          coverage c(200);
          std::atomic<int> ranges{0}, elsewhere{0};
          const auto me = std::this_thread::get_id();
          ct::parallel_for(200, [&](index_t s, index_t e) {
            c.mark(s, e);
            ++ranges;
            if (std::this_thread::get_id() != me) ++elsewhere;
          });
          if (!c.exactly_once() || (active && (ranges.load() != 1 || elsewhere.load() != 0))) ++wrong;
        }
      }
      return wrong.load();
    });
    CHECK(bad == 0);
  }
  SECTION("from several application threads at once: each opens its own team") {
    const int bad = finishes_in_time("openmp_executor from three threads", [&] {
      std::atomic<int> wrong{0};
      std::vector<std::thread> threads;
      for (int t = 0; t < 3; ++t)
        threads.emplace_back([&] {
          ct::executor_scope scope(exec);
          for (int call = 0; call < 40; ++call) {
            coverage c(100 + call);
            ct::parallel_for(100 + call, [&](index_t s, index_t e) { c.mark(s, e); });
            if (!c.exactly_once()) ++wrong;
          }
        });
      for (auto& t : threads) t.join();
      return wrong.load();
    });
    CHECK(bad == 0);
  }
}

TEST_CASE("openmp_executor: options: threads, serial threshold and minimum chunk", "[executor]") {
  {
    ct::openmp_options o;
    o.threads = 3;
    o.serial_threshold = 100;
    std::vector<std::pair<index_t, index_t>> got;
    ct::executor_scope scope(ct::openmp_executor(o));
    ct::parallel_for(99, [&](index_t s, index_t e) { got.emplace_back(s, e); });  // serial: no lock needed
    CHECK(got == std::vector<std::pair<index_t, index_t>>{{0, 99}});
  }
  {
    ct::openmp_options o;
    o.threads = 3;
    o.min_chunk = 10;
    range_log log;
    ct::executor_scope scope(ct::openmp_executor(o));
    ct::parallel_for(95, [&](index_t s, index_t e) {
      log.add(s, e);
      std::this_thread::sleep_for(200us);
    });
    std::sort(log.ranges.begin(), log.ranges.end());
    REQUIRE(log.ranges.size() == 10);
    for (std::size_t i = 0; i + 1 < log.ranges.size(); ++i) CHECK(log.ranges[i].second - log.ranges[i].first == 10);
    CHECK(log.ranges.back() == std::pair<index_t, index_t>{90, 95});
    CHECK(log.threads.size() <= 3);
  }
  {  // one thread: serial on the caller
    ct::openmp_options o;
    o.threads = 1;
    std::vector<std::pair<index_t, index_t>> got;
    ct::executor_scope scope(ct::openmp_executor(o));
    ct::parallel_for(50, [&](index_t s, index_t e) { got.emplace_back(s, e); });
    CHECK(got == std::vector<std::pair<index_t, index_t>>{{0, 50}});
  }
  ct::openmp_options bad;
  bad.threads = -1;
  CHECK_THROWS_AS(ct::openmp_executor(bad), ct::error);
  bad = {};
  bad.min_chunk = 0;
  CHECK_THROWS_AS(ct::openmp_executor(bad), ct::error);
  bad = {};
  bad.chunks_per_thread = 0;
  CHECK_THROWS_AS(ct::openmp_executor(bad), ct::error);
}

#endif  // CT_TEST_HAVE_OPENMP
#endif  // CT_TEST_HAVE_TBB || CT_TEST_HAVE_OPENMP
