/// \file
/// The adapter for oneTBB: ct::tbb_executor (tbb::parallel_for in a task arena).
/// The only ct header that includes oneTBB. oneTBB is optional: libct neither includes nor links
/// it; a program that includes this header links oneTBB itself (pkg-config / meson `tbb`).
///
/// Why tbb::parallel_for and not ct::sharing_executor (which ct::asio_executor is built on):
/// sharing_executor exists to give a pool that can only "post a job" what the contract needs —
/// the caller working too, dynamic chunks, waiting only for helpers that started. TBB's own
/// scheduler already does all of that, and better for nested use: a thread that waits in
/// parallel_for runs the loop's pending pieces instead of blocking, whether it is an application
/// thread or one of the arena's workers, so a call made from inside a TBB task (or from a ct
/// callback on a TBB worker) cannot deadlock and adds no threads. Posting helpers with
/// task_arena::enqueue would instead put them behind the arena's other work.
#pragma once
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <atomic>
#include <exception>
#include <mutex>
#include <string>

#include "ct/core/error.hpp"
#include "ct/exec/executor.hpp"

namespace ct {

/// Tuning of ct::tbb_executor.
struct tbb_options {
  /// Calls with fewer groups than this run on the calling thread as one range, without
  /// entering TBB. (A call with one group never reaches an executor anyway.)
  index_t serial_threshold = 2;
  /// The tbb::blocked_range grain size: TBB splits a range only while it holds more than
  /// `grain` groups, so no callback gets fewer than ceil(grain / 2) groups unless the whole
  /// call has fewer. 1 (the default) leaves the chunking entirely to tbb::auto_partitioner,
  /// which makes a few ranges per thread and splits further only when a thread steals work.
  index_t grain = 1;
};

namespace detail {

/// Runs [0, count) through tbb::parallel_for in the current arena and returns the first
/// error a callback raised (null if none), after every range that started has finished.
///  - Each body catches its callback's exception itself, so TBB never sees one; once a range
///    failed, ranges not yet started are skipped. parallel_for returns only when every task
///    of the loop has finished, so no callback runs after this function returns.
///  - The loop runs in an isolated task_group_context: a cancellation of an enclosing TBB
///    algorithm (a user's outer loop that failed) cannot silently skip ranges of this call.
///    If the loop is cancelled anyway (a callback cancelling its current context), this
///    reports a ct::executor_error instead of returning with groups that never ran.
///  - this_task_arena::isolate: while this thread waits for the loop, it runs only this
///    loop's pieces, never an unrelated task of an enclosing algorithm — so a ct call made
///    inside a TBB task does not have other tasks interleaved on its stack.
inline std::exception_ptr run_tbb_loop(index_t count, range_callback callback, index_t grain) {
  std::atomic<bool> failed{false};
  std::mutex mutex;
  std::exception_ptr first_error;
  tbb::task_group_context context(tbb::task_group_context::isolated);
  tbb::this_task_arena::isolate([&] {
    tbb::parallel_for(
        tbb::blocked_range<index_t>(0, count, static_cast<std::size_t>(grain)),
        [&](const tbb::blocked_range<index_t>& r) {
          if (failed.load(std::memory_order_relaxed)) return;
          try {
            callback(r.begin(), r.end());
          } catch (...) {
            std::lock_guard<std::mutex> lock(mutex);
            if (!first_error) first_error = std::current_exception();
            failed.store(true, std::memory_order_relaxed);
          }
        },
        tbb::auto_partitioner(), context);
  });
  if (!first_error && context.is_group_execution_cancelled())
    first_error = std::make_exception_ptr(executor_error(
        "ct::tbb_executor: the TBB loop of a call with " + std::to_string(count) +
        " groups was cancelled (a callback cancelled its TBB context): groups may not have run"));
  return first_error;
}

inline void check_tbb_options(const tbb_options& options) {
  if (options.serial_threshold < 0 || options.grain < 1)
    throw error("ct::tbb_executor: serial_threshold must be >= 0 and grain >= 1, got " +
                std::to_string(options.serial_threshold) + " and " + std::to_string(options.grain));
}

}  // namespace detail

/// An executor running each call's ranges with tbb::parallel_for in the task arena of the
/// calling thread (the process's default arena unless the caller is inside
/// task_arena::execute): the calling thread works too, and up to that arena's
/// max_concurrency() threads share the call (all hardware threads by default; limited by
/// tbb::global_control::max_allowed_parallelism). Ranges are tbb::blocked_range pieces of
/// at least options.grain groups (see tbb_options). The call returns after every range that
/// started has finished; a callback's exception is rethrown then (the first one, when several
/// failed), and ranges not yet started when a callback failed are skipped. Safe to call from
/// inside TBB tasks and nested in its own callbacks: the waiting thread takes part in the
/// loop instead of blocking. ct::error for invalid options.
inline executor tbb_executor(tbb_options options = {}) {
  detail::check_tbb_options(options);
  return [options](index_t count, range_callback callback) {
    if (count <= 0) return;
    if (count < options.serial_threshold) {
      callback(0, count);
      return;
    }
    if (auto e = detail::run_tbb_loop(count, callback, options.grain)) std::rethrow_exception(e);
  };
}

/// Like tbb_executor(options), but each call runs inside arena.execute(…): at most
/// arena.max_concurrency() threads share it (the calling thread among them when it can take
/// a slot of the arena; otherwise it waits while the arena's threads run the call — TBB's
/// rule for task_arena::execute). A call from a thread already in `arena` runs in place. The
/// executor keeps a reference to arena: the caller creates it (initializing it or not),
/// keeps it alive while the executor or a copy is in use, and destroys it.
inline executor tbb_executor(tbb::task_arena& arena, tbb_options options = {}) {
  detail::check_tbb_options(options);
  return [a = &arena, options](index_t count, range_callback callback) {
    if (count <= 0) return;
    if (count < options.serial_threshold) {
      callback(0, count);
      return;
    }
    std::exception_ptr e;
    a->execute([&] { e = detail::run_tbb_loop(count, callback, options.grain); });
    if (e) std::rethrow_exception(e);
  };
}

}  // namespace ct
