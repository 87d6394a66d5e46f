// tests/support/executor_zoo.hpp — every kind of executor the determinism and failure
// promises cover, for tests that run one operation under each of them.
#pragma once
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "ct/asio.hpp"
#include "ct/ct.hpp"
#include "support/asio_options.hpp"
#include "support/executors.hpp"
#include "support/reference.hpp"
// The optional adapters join the zoo when tests/meson.build found their library (not every
// build has them: see tests/meson.build for ThreadSanitizer).
#ifdef CT_TEST_HAVE_TBB
#include <oneapi/tbb/task_arena.h>

#include "ct/tbb.hpp"
#endif
#ifdef CT_TEST_HAVE_OPENMP
#include "ct/openmp.hpp"
#endif

namespace ct_test {

// Every executor the determinism promise covers. The Asio pool (and the TBB arena) outlive
// the returned list.
struct executor_zoo {
  boost::asio::thread_pool pool{3};
#ifdef CT_TEST_HAVE_TBB
  tbb::task_arena arena{2};
#endif
  static ct::asio_options lingering() {
    ct::asio_options o;
    o.linger = std::chrono::microseconds(200);
    return o;
  }
  std::vector<std::pair<std::string, ct::executor>> all() {
    std::vector<std::pair<std::string, ct::executor>> list{
        {"none", ct::executor{}},
        {"serial 64", ct_test::serial_64_executor()},
        {"three-worker pool", ct_test::three_worker_executor()},
        {"asio 1", ct::asio_executor(pool, 1)},
        {"asio 2", ct::asio_executor(pool, 2, ct_test::sharing())},
        {"asio 2 default", ct::asio_executor(pool, 2)},
        {"asio 7", ct::asio_executor(pool, 7, ct_test::sharing())},
        {"asio 3 lingering", ct::asio_executor(pool, 3, lingering())},
        {"random partition a", ct_test::random_partition_executor(1)},
        {"random partition b", ct_test::random_partition_executor(2)}};
#ifdef CT_TEST_HAVE_TBB
    list.emplace_back("tbb default arena", ct::tbb_executor());
    list.emplace_back("tbb arena of 2, grain 3", ct::tbb_executor(arena, {2, 3}));
#endif
#ifdef CT_TEST_HAVE_OPENMP
    list.emplace_back("openmp default", ct::openmp_executor());
    ct::openmp_options three;
    three.threads = 3;
    list.emplace_back("openmp 3 threads", ct::openmp_executor(three));
#endif
    return list;
  }
  ~executor_zoo() { pool.join(); }
};

/// Evaluates make() (an expression) under both backends and FMA policies, and under each of
/// them with every executor of the zoo: the results must be bitwise those without one.
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

}  // namespace ct_test
