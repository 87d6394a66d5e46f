// tests/support/three_worker_pool.hpp — the reusable three-worker pool of the contract tests.
//
// run(job) runs job(id, 3) once on each of three persistent threads and waits for all three;
// if any job threw, the first error is rethrown, only after all three finished. The same pool
// serves many runs, including runs after failures. Not re-entrant from its own workers.
#pragma once
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ct_test {

class three_worker_pool {
 public:
  static constexpr int worker_count = 3;

  three_worker_pool() {
    for (int id = 0; id < worker_count; ++id) threads_.emplace_back([this, id] { loop(id); });
  }
  ~three_worker_pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }
  three_worker_pool(const three_worker_pool&) = delete;
  three_worker_pool& operator=(const three_worker_pool&) = delete;

  void run(std::function<void(int, int)> job) {
    std::lock_guard<std::mutex> one_run_at_a_time(run_mutex_);
    std::unique_lock<std::mutex> lock(mutex_);
    job_ = std::move(job);
    error_ = nullptr;
    finished_ = 0;
    ++generation_;
    wake_.notify_all();
    done_.wait(lock, [this] { return finished_ == worker_count; });
    job_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

  /// How many run() calls completed (or failed) so far — lets tests check reuse.
  long runs() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return generation_;
  }

 private:
  void loop(int id) {
    long seen = 0;
    for (;;) {
      std::function<void(int, int)> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
        if (stopping_) return;
        seen = generation_;
        job = job_;
      }
      std::exception_ptr err;
      try {
        job(id, worker_count);
      } catch (...) {
        err = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mutex_);
      if (err && !error_) error_ = err;
      if (++finished_ == worker_count) done_.notify_all();
    }
  }

  std::vector<std::thread> threads_;
  mutable std::mutex mutex_;
  std::mutex run_mutex_;
  std::condition_variable wake_, done_;
  std::function<void(int, int)> job_;
  std::exception_ptr error_;
  int finished_ = 0;
  long generation_ = 0;
  bool stopping_ = false;
};

/// run_pool for ct::pool_executor.
inline void run_three_worker_pool(three_worker_pool& pool, std::function<void(int, int)> job) {
  pool.run(std::move(job));
}

/// The process-wide pool shared by all tests (reused across tests, also after failures).
inline three_worker_pool& shared_pool() {
  static three_worker_pool pool;
  return pool;
}

}  // namespace ct_test
