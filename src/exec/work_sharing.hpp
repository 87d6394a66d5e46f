// src/exec/work_sharing.hpp — dynamic chunking shared by a caller and helper threads (private).
//
// The machinery behind ct::asio_executor, kept free of any pool type so that other pool
// adapters can reuse it. The caller always works too, so the job completes even when no
// helper ever runs (e.g. when the caller is itself the pool's only thread).
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <utility>

#include "ct/exec/range_callback.hpp"

namespace ct::detail {

class shared_ranges {
 public:
  /// Groups [start, count) are handed out in chunks of at least `chunk` groups, larger while
  /// much is left (claim_size; the caller ran [0, start) before anybody was invited);
  /// max_helpers: how many helpers may join over the job's life (besides the caller).
  shared_ranges(index_t start, index_t count, index_t chunk, range_callback callback, index_t max_helpers) noexcept
      : count_(count), chunk_(chunk), shares_(2 * (max_helpers + 1)), callback_(callback), next_(start), seats_(max_helpers) {}

  /// Run by a helper: joins unless the caller already closed the job or every helper seat is
  /// taken, then claims chunks.
  void help() {
    if (seats_.fetch_sub(1) <= 0) return;
    if (!enter()) return;
    work();
    leave();
  }

  /// Run by the caller: claims chunks until none are left, waits for every helper that
  /// joined, then rethrows the first error any callback raised.
  void run_and_wait() {
    work();
    std::uint64_t g = gate_.fetch_or(closed_bit) | closed_bit;
    // Helpers still inside are usually finishing their last chunk: spin briefly before
    // sleeping, because a futex wake-up costs more (measured ~16 us on a VM) than the tail.
    for (int spin = 0; spin < spin_limit && g != closed_bit; ++spin) {
      pause();
      g = gate_.load();
    }
    while (g != closed_bit) {
      gate_.wait(g);
      g = gate_.load();
    }
    // Take the error out of the shared state: a helper may still be releasing its reference
    // to this state, and must not be the one that destroys the exception the caller handles.
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

  /// The CPU's spin-wait hint.
  static void pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

 private:
  /// The size of the chunk that starts at `start`: a share of what is left (shares_ per job,
  /// two per participant), never below chunk_ nor past count_. It depends on start alone, so
  /// the partition is the same whoever claims which chunk. Large chunks first, chunk_ at the
  /// end: every range costs its callback a fixed start (a fresh pass over its data: a product's
  /// rows from memory paid ~0.13 us a range, 30% of a 768 x 768 q4_0 product cut into 32), and
  /// the small last chunks still balance a helper that joins late.
  index_t claim_size(index_t start) const noexcept {
    const index_t left = count_ - start;
    return std::min(left, std::max(chunk_, left / shares_));
  }

  static constexpr std::uint64_t closed_bit = 1, one_helper = 2;
  static constexpr int spin_limit = 20000;  // a few tens of microseconds

  bool enter() noexcept {
    std::uint64_t g = gate_.load();
    do {
      if (g & closed_bit) return false;
    } while (!gate_.compare_exchange_weak(g, g + one_helper));
    return true;
  }
  void leave() noexcept {
    if (gate_.fetch_sub(one_helper) - one_helper == closed_bit) gate_.notify_all();
  }
  void work() noexcept {
    index_t start = next_.load(std::memory_order_relaxed);
    while (!failed_.load(std::memory_order_relaxed)) {
      if (start >= count_) return;
      const index_t end = start + claim_size(start);
      if (!next_.compare_exchange_weak(start, end)) continue;  // start now holds the current value
      run(start, end);
      start = next_.load(std::memory_order_relaxed);
    }
  }
  void run(index_t start, index_t end) noexcept {
    try {
      callback_(start, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
      failed_.store(true);  // stop handing out chunks; the started ones finish
    }
  }

  const index_t count_, chunk_, shares_;
  const range_callback callback_;
  std::atomic<index_t> next_;
  std::atomic<index_t> seats_;  // helper seats left
  std::atomic<bool> failed_{false};
  std::atomic<std::uint64_t> gate_{0};  // helpers inside * 2, plus closed_bit
  std::mutex mutex_;
  std::exception_ptr error_;
};

}  // namespace ct::detail
