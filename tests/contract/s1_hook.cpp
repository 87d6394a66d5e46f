// CONTRACT.md §1, the hook: executor_scope and current_executor (one binding per thread,
// scopes nest), range_callback, the empty executor, and a core that creates no threads.
// Which sentence each case checks: README.md in this folder.
#include <atomic>
#include <barrier>
#include <catch2/catch.hpp>
#include <cstdio>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "ct/ct.hpp"
#include "support/executors.hpp"

using ct::index_t;

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

TEST_CASE("contract §1: range_callback is a cheap non-owning reference", "[executor][contract]") {
  int sum = 0;
  auto f = [&](index_t s, index_t e) { sum += static_cast<int>(e - s); };
  ct::range_callback cb(f);
  ct::range_callback copy = cb;
  copy(0, 3);
  cb(3, 10);
  CHECK(sum == 10);
  // The referenced object, the call thunk and the grain hint: three words, copied freely.
  STATIC_REQUIRE(sizeof(ct::range_callback) <= 3 * sizeof(void*));
  STATIC_REQUIRE(std::is_trivially_copyable_v<ct::range_callback>);
}

TEST_CASE("range_callback carries a grain hint that checked_executor and schedule pass on", "[executor]") {
  auto f = [](index_t, index_t) {};
  CHECK(ct::range_callback(f).grain() == 1);
  CHECK(ct::range_callback(f, 48).grain() == 48);
  CHECK(ct::range_callback(f, 0).grain() == 1);  // no hint below one group
  CHECK(ct::range_callback(f, -5).grain() == 1);
  std::vector<index_t> seen;
  const ct::executor recording = [&](index_t count, ct::range_callback cb) {
    seen.push_back(cb.grain());
    cb(0, count);
  };
  {
    ct::executor_scope scope(ct::checked_executor(recording));
    ct::detail::schedule("test", 10, [](index_t, index_t) {}, 7);
    ct::parallel_for(10, [](index_t, index_t) {});
  }
  CHECK(seen == std::vector<index_t>{7, 1});
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
