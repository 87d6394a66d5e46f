// src/exec/sharing_executor.cpp — ct::sharing_executor: the caller and posted helpers share
// each call's chunks (work_sharing.hpp); helpers may linger for the next call (job_board.hpp).
#include "ct/exec/sharing_executor.hpp"

#include <algorithm>
#include <memory>
#include <new>
#include <string>

#include "ct/core/error.hpp"
#include "src/exec/job_board.hpp"
#include "src/exec/wake_meter.hpp"
#include "src/exec/work_sharing.hpp"

namespace ct {
namespace {

// Posts n helpers running `help`, each noting how long it waited to start. A helper that
// cannot be posted (post throws, e.g. bad_alloc) is simply missing: the caller and the helpers
// already posted claim the remaining chunks, so the call still completes, and run_and_wait
// still waits for every helper that did start. Letting the error out would return while
// posted helpers run the callback.
template <class Help>
void post_helpers(const std::function<void(pool_job)>& post, const std::shared_ptr<detail::posted_helpers>& posted,
                  index_t n, Help help) {
  const bool queued_behind = posted->pending.load() > 0;  // see posted_helpers
  const auto invited = std::chrono::steady_clock::now();
  for (index_t i = 0; i < n; ++i) {
    posted->pending.fetch_add(1);
    try {
      post([posted, invited, queued_behind, help]() mutable {
        posted->pending.fetch_sub(1);
        if (!queued_behind) posted->wake.note(std::chrono::steady_clock::now() - invited);
        help();
      });
    } catch (...) {
      posted->pending.fetch_sub(1);
      return;
    }
  }
}

}  // namespace

executor sharing_executor(int workers, std::function<void(pool_job)> post, asio_options options) {
  if (workers < 1) throw error("ct::sharing_executor (asio_executor): workers must be >= 1, got " + std::to_string(workers));
  if (options.min_chunk < 1 || options.chunks_per_worker < 1)
    throw error("ct::sharing_executor (asio_executor): min_chunk and chunks_per_worker must be >= 1");
  if (options.linger.count() < 0 || options.solo_below.count() < 0)
    throw error("ct::sharing_executor (asio_executor): linger and solo_below must be >= 0");
  // Shared by the executor's copies and its lingering helpers (which may outlive them).
  auto board = std::make_shared<detail::job_board>(workers - 1);
  auto posted = std::make_shared<detail::posted_helpers>();
  return [post = std::move(post), workers, options, board, posted](index_t count, range_callback callback) {
    if (count <= 0) return;
    if (workers == 1 || count < options.serial_threshold) {
      callback(0, count);
      return;
    }
    // The chunk size: chunks_per_worker ranges per participant, fewer when that would cut
    // ranges below the callback's grain — then a multiple of the participants (an odd chunk
    // left over would run on one of them alone), never fewer than one per participant, and
    // evenly sized: the grain is a fixed cost per range (a matrix product's pass over B), worth
    // paying once per worker rather than leaving a worker idle. Shared calls claim larger
    // chunks while much is left and shrink to this size (shared_ranges::claim_size).
    const index_t most = static_cast<index_t>(workers) * options.chunks_per_worker;
    const index_t coarse = count / callback.grain();
    const index_t parts = coarse >= most ? most : std::max<index_t>(workers, coarse / workers * workers);
    const index_t chunk = std::max(options.min_chunk, (count + parts - 1) / parts);
    const index_t chunks = (count + chunk - 1) / chunk;
    const index_t helpers = std::min<index_t>(workers - 1, chunks - 1);
    if (helpers == 0) {
      callback(0, count);
      return;
    }
    // The caller runs a quarter chunk (at least min_chunk) first and invites helpers only when
    // the rest, estimated from it, looks long enough to share: at least solo_below, and at
    // least twice the time helpers have been taking to start (wake_meter.hpp; a posted helper
    // waits for the pool's wake-up, ~25 us on the benchmark VM, a lingering one sees the call
    // at once). Below that a helper would join too late to take a fair share, and inviting it
    // still costs the caller (the post's futex wake, 1-4 us; a lingering helper's start-up on
    // another core, 0.5-5 us). A call kept on the caller runs its rest as one range: its
    // operation keeps its widest kernel paths.
    //
    // A first piece from memory runs slower than the rest (the first misses, the prefetchers
    // ramping up): a q4_0 product of 256 x 768 took 70 ns per row in its first 2 rows and 22
    // in the rest. So when the estimate says "share" but the piece was short, the caller runs
    // a piece twice as large and estimates again, until a piece takes probe_ns or the
    // estimate is clearly long.
    //
    // Not for a callback with a grain: its operation declared that every range pays a fixed
    // cost (a matrix product's pass over a B that comes from memory), so the call is long, and
    // the probe would be one more such range on the caller's path before a helper is even
    // invited: two workers ran a 128-row prompt product 1.05-1.1x one worker with the probe.
    //
    // No helper has been invited during the probe, so its errors reach the caller directly.
    index_t done = 0;
    if (callback.grain() == 1) {
      const bool lingering = options.linger.count() > 0 && board->waiting() > 0;
      detail::wake_meter& meter = lingering ? board->wake() : posted->wake;
      const double wake = static_cast<double>(meter.estimate().count());
      const double solo = static_cast<double>(options.solo_below.count());
      const double threshold = solo == 0 ? 0 : std::max(solo, 2 * wake);
      constexpr double probe_ns = 2000;
      index_t piece = std::min(count, std::max(options.min_chunk, chunk / 4));  // min_chunk >= 1
      for (;;) {
        const auto t0 = std::chrono::steady_clock::now();
        callback(done, done + piece);
        const double piece_ns = static_cast<double>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
        done += piece;
        const index_t left = count - done;
        if (left == 0) return;
        const double rest_ns = piece_ns * static_cast<double>(left) / static_cast<double>(piece);
        if (rest_ns < threshold) {
          if (rest_ns >= solo) meter.decay();  // kept alone by the wake-up estimate alone
          callback(done, count);
          return;
        }
        if (threshold == 0 || piece_ns >= probe_ns || rest_ns >= 4 * threshold) break;
        piece = std::min(left, 2 * piece);
      }
    }
    // The probe may have written results already, so running out of memory here must not end
    // the call: without a job there are no helpers, and the caller runs the rest alone.
    std::shared_ptr<detail::shared_ranges> job;
    try {
      job = std::make_shared<detail::shared_ranges>(done, count, chunk, callback, helpers);
    } catch (const std::bad_alloc&) {
      callback(done, count);
      return;
    }
    if (options.linger.count() == 0) {
      post_helpers(post, posted, helpers, [job] { job->help(); });
      job->run_and_wait();
      return;
    }
    // Lingering helpers take the job from the board; only the missing ones are posted.
    const index_t waiting = std::min<index_t>(helpers, board->waiting());
    board->offer(job);
    const auto linger = std::chrono::duration_cast<std::chrono::nanoseconds>(options.linger);
    post_helpers(post, posted, helpers - waiting, [job, board, linger]() mutable {
      job->help();
      job.reset();  // finished with it; later jobs come from the board
      board->linger(linger);
    });
    struct withdraw {
      detail::job_board& board;
      const detail::shared_ranges* job;
      ~withdraw() { board.withdraw(job); }
    } withdrawn{*board, job.get()};
    job->run_and_wait();
  };
}

}  // namespace ct
