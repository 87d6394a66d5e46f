/// \file
/// An executor that shares each call's ranges between the calling thread and helper jobs it
/// hands to any thread pool through a `post` function: ct::sharing_executor.
///
/// This is the machinery behind ct::asio_executor (ct/asio.hpp), compiled into libct so that it
/// needs no pool type: an adapter for another pool is one line that says how to post a job.
#pragma once
#include <chrono>
#include <functional>

#include "ct/exec/executor.hpp"

namespace ct {

/// Tuning of a sharing executor (ct::asio_executor, ct::sharing_executor).
struct asio_options {
  /// Calls with fewer groups than this run entirely on the calling thread.
  index_t serial_threshold = 2;
  /// The smallest range handed out (groups).
  index_t min_chunk = 1;
  /// Sets the smallest chunk, count / (workers * chunks_per_worker) groups: the size the
  /// chunks shrink to at the end of a call (earlier ones are larger). Finer ends balance
  /// uneven groups and late-starting helpers. 16 measured better than 4 on cache-resident
  /// softmax/layer norm with no loss on large ones (docs/executor.md).
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
  /// than this run on the caller alone: nothing is posted, and the rest runs as one range.
  /// (Not applied to a callback with a grain above one, range_callback::grain: every range of
  /// it is costly, so the call is long.) On top of it the executor measures how long its
  /// helpers take to start after being invited (the pool's wake-up, ~25 µs on the benchmark
  /// VM; within a microsecond for a lingering helper) and also keeps calls shorter than twice
  /// that on the caller: a later helper cannot take a fair share and the invitation still
  /// costs the caller (a futex wake, 1–4 µs). Softmax 4x16 cost 3.4 µs more per call through a
  /// two-worker pool without this, 0.2–0.3 µs with it; Llama-100M q4_0 generation with two
  /// workers went from 1.3–1.6x one worker's time per token to 0.95–0.99x (docs/executor.md).
  /// Zero: always share (and measure nothing).
  std::chrono::nanoseconds solo_below{8000};
};

/// A job handed to a pool: run it once, on any of the pool's threads, or never (if post throws,
/// the call goes on without that helper).
using pool_job = std::function<void()>;

/// An executor running ranges on `workers` participants: the calling thread plus up to
/// workers - 1 helper jobs given to `post`. Participants claim chunks dynamically, each a
/// (2 x participants)-th of the groups not yet claimed, but at least the chunk size: count
/// over options.chunks_per_worker per participant, larger (but leaving at least one chunk
/// each) when that would be smaller than the callback's grain (range_callback::grain). So
/// chunks shrink to that size as the work runs out; the partition depends only on count, the
/// grain and the options. The caller runs a quarter of the
/// first chunk before posting (and pieces twice as large while that one was too short to
/// judge, under 2 µs); when the rest, estimated from it, is shorter than options.solo_below or
/// than twice the measured start-up of its helpers, the call runs on the caller alone (nothing
/// is posted). The call returns after every callback that started has finished, then rethrows
/// the first error. It never waits for a posted job that has not started, so calling it from
/// one of the pool's own threads (even a one-thread pool) cannot deadlock: the caller then
/// does the work itself.
/// With options.linger, helpers lingering from an earlier call of this executor (or a copy of
/// it) take the call first and only the missing helpers are posted.
/// post must stay callable while the executor (or a copy) exists; a job may run after the
/// call that posted it returned (it then finds nothing left to do and returns at once).
/// ct::error for workers < 1 or invalid options.
executor sharing_executor(int workers, std::function<void(pool_job)> post, asio_options options = {});

}  // namespace ct
