// src/exec/job_board.hpp — where helper threads that just finished a job wait briefly for the
// next one (ct::asio_options::linger).
//
// Waking a sleeping pool thread costs tens of microseconds on some machines (23–28 µs on the
// VM ct is benchmarked on), which caps the two-thread speed-up of calls lasting ~100 µs. A
// helper that instead polls this board for a while after its job can start the next call's
// job within a microsecond. Pool-type independent, like work_sharing.hpp.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>

#include "src/exec/wake_meter.hpp"
#include "src/exec/work_sharing.hpp"

namespace ct::detail {

class job_board {
 public:
  /// At most `max_waiting` helpers linger at a time (the executor's helper count), so
  /// lingering never holds more pool threads than one call would use.
  explicit job_board(int max_waiting) noexcept : max_waiting_(max_waiting) {}

  /// Helpers lingering right now (a hint: one may time out a moment later).
  int waiting() const noexcept { return waiting_.load(); }

  /// How long lingering helpers took to start on an offered job.
  wake_meter& wake() noexcept { return wake_; }

  /// Offers job to the lingering helpers, replacing any earlier offer.
  void offer(std::shared_ptr<shared_ranges> job) {
    std::shared_ptr<shared_ranges> old;  // released outside the lock
    const auto now = std::chrono::steady_clock::now();
    {
      spin_lock lock(busy_);
      old = std::exchange(job_, std::move(job));
      offered_at_ = now;
      generation_.fetch_add(1, std::memory_order_release);
    }
  }

  /// Withdraws job if it is still on offer (its call returned: nobody may join it now).
  void withdraw(const shared_ranges* job) {
    std::shared_ptr<shared_ranges> old;
    spin_lock lock(busy_);
    if (job_.get() == job) old = std::move(job_);
  }

  /// Run by a helper after its own job: helps with every job offered until `linger` passes
  /// without a new one. A job that is on offer already when it arrives counts as new (it
  /// may have been offered while this helper was finishing); joining a finished job is a
  /// no-op (shared_ranges::help).
  void linger(std::chrono::nanoseconds linger) {
    int w = waiting_.load();
    do {
      if (w >= max_waiting_) return;  // enough helpers wait already
    } while (!waiting_.compare_exchange_weak(w, w + 1));
    std::uint64_t seen = generation_.load(std::memory_order_acquire) - 1;  // check the offer once
    auto deadline = std::chrono::steady_clock::now() + linger;
    for (unsigned spin = 1;; ++spin) {
      if (generation_.load(std::memory_order_acquire) != seen) {
        std::shared_ptr<shared_ranges> job;
        std::chrono::steady_clock::time_point offered;
        {
          spin_lock lock(busy_);
          job = job_;
          offered = offered_at_;
          seen = generation_.load(std::memory_order_relaxed);
        }
        if (job) {
          wake_.note(std::chrono::steady_clock::now() - offered);
          waiting_.fetch_sub(1);
          job->help();
          waiting_.fetch_add(1);
          deadline = std::chrono::steady_clock::now() + linger;
        }
        continue;
      }
      shared_ranges::pause();
      if (spin % 64 == 0 && std::chrono::steady_clock::now() >= deadline) break;
    }
    waiting_.fetch_sub(1);
  }

 private:
  // Guards job_ for the few instructions of a shared_ptr copy. Not std::mutex: a caller that
  // found it taken would sleep in the kernel and pay the very wake-up lingering avoids.
  struct spin_lock {
    std::atomic<bool>& busy;
    explicit spin_lock(std::atomic<bool>& b) noexcept : busy(b) {
      while (busy.exchange(true, std::memory_order_acquire)) shared_ranges::pause();
    }
    ~spin_lock() { busy.store(false, std::memory_order_release); }
    spin_lock(const spin_lock&) = delete;
    spin_lock& operator=(const spin_lock&) = delete;
  };

  const int max_waiting_;
  std::atomic<int> waiting_{0};
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<bool> busy_{false};
  std::shared_ptr<shared_ranges> job_;
  std::chrono::steady_clock::time_point offered_at_;  // guarded by busy_, like job_
  wake_meter wake_;
};

}  // namespace ct::detail
