// bench/support/both_halves.hpp — one piece of work split over the calling thread and a
// one-thread Asio pool, for the two-core bounds and machine checks (bench/expr, bench/encoded).
#pragma once
#include <atomic>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

namespace ct_bench {

/// Runs `other` on pool's thread while the caller runs `mine`; returns when both are done.
/// The caller spins for the pool's half instead of blocking, so no wake-up is timed with it.
template <class Mine, class Other>
void run_both_halves(boost::asio::thread_pool& pool, Mine&& mine, Other&& other) {
  std::atomic<bool> done{false};
  boost::asio::post(pool, [&] {
    other();
    done.store(true, std::memory_order_release);
  });
  mine();
  while (!done.load(std::memory_order_acquire)) {
  }
}

}  // namespace ct_bench
