// src/exec/sharing_executor.cpp — ct::sharing_executor: the caller and posted helpers share
// each call's chunks (work_sharing.hpp); helpers may linger for the next call (job_board.hpp).
#include "ct/exec/sharing_executor.hpp"

#include <algorithm>
#include <memory>
#include <string>

#include "ct/core/error.hpp"
#include "src/exec/job_board.hpp"
#include "src/exec/work_sharing.hpp"

namespace ct {

executor sharing_executor(int workers, std::function<void(pool_job)> post, asio_options options) {
  if (workers < 1) throw error("ct::sharing_executor (asio_executor): workers must be >= 1, got " + std::to_string(workers));
  if (options.min_chunk < 1 || options.chunks_per_worker < 1)
    throw error("ct::sharing_executor (asio_executor): min_chunk and chunks_per_worker must be >= 1");
  if (options.linger.count() < 0 || options.solo_below.count() < 0)
    throw error("ct::sharing_executor (asio_executor): linger and solo_below must be >= 0");
  // Shared by the executor's copies and its lingering helpers (which may outlive them).
  auto board = std::make_shared<detail::job_board>(workers - 1);
  return [post = std::move(post), workers, options, board](index_t count, range_callback callback) {
    if (count <= 0) return;
    if (workers == 1 || count < options.serial_threshold) {
      callback(0, count);
      return;
    }
    // chunks_per_worker ranges per participant, fewer when that would cut ranges below the
    // callback's grain — then a multiple of the participants (an odd chunk left over would
    // run on one of them alone), never fewer than one per participant, and evenly sized: the
    // grain is a fixed cost per range (a matrix product's pass over B), worth paying once per
    // worker rather than leaving a worker idle.
    const index_t most = static_cast<index_t>(workers) * options.chunks_per_worker;
    const index_t coarse = count / callback.grain();
    const index_t parts = coarse >= most ? most : std::max<index_t>(workers, coarse / workers * workers);
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
    //
    // Not for a callback with a grain: its operation declared that every range pays a fixed cost
    // (a matrix product's pass over a B that comes from memory), so the call is long, and the probe
    // would be one more such range on the caller's path before a helper is even invited: two
    // workers ran a 128-row prompt product 1.05-1.1x one worker with the probe.
    if (callback.grain() == 1) {
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
    }
    // A helper that cannot be posted (post throws, e.g. bad_alloc) is simply missing: the
    // caller and the helpers already posted claim the remaining chunks, so the call still
    // completes, and run_and_wait still waits for every helper that did start. Letting the
    // error out here would return while posted helpers run the callback.
    if (options.linger.count() == 0) {
      try {
        for (index_t i = 0; i < helpers; ++i) post([job] { job->help(); });
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
        post([job, board, linger]() mutable {
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
