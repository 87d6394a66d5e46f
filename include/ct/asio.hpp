// ct/asio.hpp — ct::asio_executor, the adapter for boost::asio::thread_pool.
// The only ct header that includes Boost.Asio.
#pragma once
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "ct/core/error.hpp"
#include "ct/exec/executor.hpp"
#include "ct/exec/job_board.hpp"
#include "ct/exec/work_sharing.hpp"

namespace ct {

/// Tuning of ct::asio_executor.
struct asio_options {
  /// Calls with fewer groups than this run entirely on the calling thread.
  index_t serial_threshold = 2;
  /// The smallest range handed out (groups).
  index_t min_chunk = 1;
  /// Ranges per participant: more balance uneven groups and late-starting helpers, fewer
  /// cost less coordination. 16 measured better than 4 on cache-resident softmax/layer norm
  /// with no loss on large ones (docs/executor.md).
  index_t chunks_per_worker = 16;
  /// How long a helper keeps its pool thread after finishing its part of a call, polling for
  /// the next call of the same executor (busy-waiting; at most workers - 1 threads linger).
  /// Zero (the default) returns the thread to the pool at once. Back-to-back short calls then
  /// skip the pool's wake-up (23–28 µs on the benchmark VM): with 100 µs, two workers ran
  /// softmax 256x1024 at 1.66–1.71x and layer norm 512x512 at 1.73–1.76x their one-thread
  /// speed, against 1.47x / 1.50–1.59x without (docs/executor.md). The cost: those threads spin instead of
  /// sleeping or running other pool tasks, for up to `linger` after each call.
  std::chrono::microseconds linger{0};
  /// Calls whose remaining work, estimated from the caller's first quarter chunk, is shorter
  /// than this run on the caller alone: nothing is posted. A posted helper starts only after
  /// the pool's wake-up (~25 µs on the benchmark VM), so a shorter call cannot gain from it
  /// and would pay for the post (1–4 µs, a futex wake) — softmax 4x16 cost 3.4 µs more per
  /// call through a two-worker pool without this, 0.2–0.3 µs with it. Zero: always share.
  std::chrono::nanoseconds solo_below{8000};
};

/// An executor running ranges on `workers` participants: the calling thread plus
/// workers - 1 jobs posted to pool. Participants claim chunks dynamically. The caller runs a
/// quarter of the first chunk before posting; when the rest, estimated from it, is shorter
/// than options.solo_below the call runs on the caller alone (nothing is posted). The call returns
/// after every callback that started has finished, then rethrows the first error. It never
/// waits for a posted job that has not started, so calling it from one of pool's own threads
/// (even a one-thread pool) cannot deadlock: the caller then does the work itself.
/// With options.linger, helpers lingering from an earlier call of this executor (or a copy of
/// it) take the call first and only the missing helpers are posted.
/// The caller creates and joins pool, and keeps it alive while the executor is in use (a
/// join waits for lingering helpers to give up: at most `linger` after the last call).
inline executor asio_executor(boost::asio::thread_pool& pool, int workers, asio_options options = {}) {
  if (workers < 1) throw error("ct::asio_executor: workers must be >= 1, got " + std::to_string(workers));
  if (options.min_chunk < 1 || options.chunks_per_worker < 1)
    throw error("ct::asio_executor: min_chunk and chunks_per_worker must be >= 1");
  if (options.linger.count() < 0 || options.solo_below.count() < 0)
    throw error("ct::asio_executor: linger and solo_below must be >= 0");
  // Shared by the executor's copies and its lingering helpers (which may outlive them).
  auto board = std::make_shared<detail::job_board>(workers - 1);
  return [p = &pool, workers, options, board](index_t count, range_callback callback) {
    if (count <= 0) return;
    if (workers == 1 || count < options.serial_threshold) {
      callback(0, count);
      return;
    }
    const index_t parts = static_cast<index_t>(workers) * options.chunks_per_worker;
    const index_t chunk = std::max(options.min_chunk, (count + parts - 1) / parts);
    const index_t chunks = (count + chunk - 1) / chunk;
    const index_t helpers = std::min<index_t>(workers - 1, chunks - 1);
    auto job = std::make_shared<detail::shared_ranges>(count, chunk, callback, helpers);
    if (helpers == 0) {
      job->run_and_wait();
      return;
    }
    // The caller runs a quarter chunk (at least min_chunk) first and invites helpers only when the rest, estimated
    // from it, looks long enough to share. A lingering helper joins within a microsecond, but
    // for a short call its own start-up (first touch of the call's data from another core)
    // costs more than it saves: softmax 4x16 (4 groups) took 3.2-7.5 us per call with the
    // helper joining, 2.8-2.9 us (one thread alone: 2.7) without. A posted helper starts only
    // after the pool's wake-up (~25 us on the benchmark VM), so a short call gains nothing from
    // it and pays for the post (1-4 us per call, the futex wake).
    const index_t first = std::min(count, std::max(options.min_chunk, chunk / 4));  // min_chunk >= 1
    const auto t0 = std::chrono::steady_clock::now();
    const index_t left = job->run_first(first);
    const double first_ns = static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                    std::chrono::steady_clock::now() - t0).count());
    if (left == 0 || first_ns * static_cast<double>(left) / static_cast<double>(first) <
                         static_cast<double>(options.solo_below.count())) {
      job->run_and_wait();
      return;
    }
    // A helper that cannot be posted (post throws, e.g. bad_alloc) is simply missing: the
    // caller and the helpers already posted claim the remaining chunks, so the call still
    // completes, and run_and_wait still waits for every helper that did start. Letting the
    // error out here would return while posted helpers run the callback.
    if (options.linger.count() == 0) {
      try {
        for (index_t i = 0; i < helpers; ++i) boost::asio::post(*p, [job] { job->help(); });
      } catch (...) {
      }
      job->run_and_wait();
      return;
    }
    // Lingering helpers take the job from the board; only the missing ones are posted.
    const index_t waiting = std::min<index_t>(helpers, board->waiting());
    board->offer(job);
    const auto linger = std::chrono::duration_cast<std::chrono::nanoseconds>(options.linger);
    try {
      for (index_t i = waiting; i < helpers; ++i)
        boost::asio::post(*p, [job, board, linger]() mutable {
          job->help();
          job.reset();  // finished with it; later jobs come from the board
          board->linger(linger);
        });
    } catch (...) {  // as above: fewer helpers
    }
    struct withdraw {
      detail::job_board& board;
      const detail::shared_ranges* job;
      ~withdraw() { board.withdraw(job); }
    } done{*board, job.get()};
    job->run_and_wait();
  };
}

}  // namespace ct
