// CONTRACT.md §2, what an executor must do, seen from the caller: empty ranges are legal, and
// an error reaches the caller only after every started callback returned (the pool adapters
// under test). Disjoint, covering ranges: the adapters' cases (s6_adapters.cpp) and
// ct::checked_executor (s3_core.cpp); a return value being ignored: s3_core.cpp.
// Which sentence each case checks: README.md in this folder.
#include <atomic>
#include <boost/asio/thread_pool.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "contract/helpers.hpp"
#include "ct/asio.hpp"
#include "ct/ct.hpp"
#include "support/asio_options.hpp"
#include "support/executors.hpp"

using ct::index_t;
using ct_test::coverage;
using ct_test::fixed_ranges;
using namespace std::chrono_literals;

TEST_CASE("contract §2: empty ranges are allowed", "[executor][contract]") {
  coverage c(10);
  ct::executor_scope scope(fixed_ranges({{0, 0}, {0, 4}, {4, 4}, {4, 10}, {10, 10}}));
  ct::parallel_for(10, [&](index_t s, index_t e) { c.mark(s, e); });
  CHECK(c.exactly_once());
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
