/// \file
/// The adapter for OpenMP: ct::openmp_executor, an executor that runs each call in an OpenMP
/// parallel region. The only ct header that includes `<omp.h>`. OpenMP is optional: libct is
/// built without it; a program that includes this header compiles and links with OpenMP
/// itself (-fopenmp; meson `dependency('openmp')`; clang needs the LLVM runtime, Debian
/// libomp-14-dev).
///
/// Why a parallel region and not ct::sharing_executor (which ct::asio_executor is built on):
/// sharing_executor needs a pool it can post a job to, and OpenMP has none — its threads exist
/// only as the team of a parallel construct opened on the calling thread, whose closing barrier
/// is exactly the contract's "returns after every callback finished". The calling thread is the
/// team's primary thread, so it always works too, and OpenMP keeps (and reuses) the team's
/// threads between calls.
#pragma once
#ifndef _OPENMP
#error "ct/openmp.hpp needs OpenMP: compile and link with -fopenmp (meson: dependency('openmp'))"
#endif
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <string>

#include "ct/core/error.hpp"
#include "ct/exec/executor.hpp"

namespace ct {

/// Tuning of ct::openmp_executor.
struct openmp_options {
  /// Threads of the team, the calling thread included. 0 (the default): omp_get_max_threads()
  /// at each call, i.e. OMP_NUM_THREADS or omp_set_num_threads() of the calling thread, else
  /// one per hardware thread. The OpenMP runtime may give fewer (OMP_THREAD_LIMIT, OMP_DYNAMIC);
  /// the call then still covers every group.
  int threads = 0;
  /// Calls with fewer groups than this run on the calling thread as one range, without
  /// opening a parallel region. (A call with one group never reaches an executor anyway.)
  index_t serial_threshold = 2;
  /// The smallest range handed out (groups).
  index_t min_chunk = 1;
  /// Ranges per thread, taken dynamically (schedule(dynamic)): more balance uneven groups and
  /// threads that start late, fewer cost less coordination. 16, as for ct::asio_options.
  index_t chunks_per_thread = 16;
};

namespace detail {

inline void check_openmp_options(const openmp_options& o) {
  if (o.threads < 0 || o.serial_threshold < 0 || o.min_chunk < 1 || o.chunks_per_thread < 1)
    throw error("ct::openmp_executor: threads and serial_threshold must be >= 0, min_chunk and "
                "chunks_per_thread >= 1");
}

/// Runs [0, count) on a team of `team` threads (team >= 2) in chunks of `chunk` groups and
/// returns the first error a callback raised (null if none). An exception must not leave a
/// parallel region (the program would terminate), so each chunk's callback is wrapped; once
/// one failed, chunks not yet started are skipped. The region's closing barrier means that no
/// callback is still running when this returns.
inline std::exception_ptr run_openmp_region(index_t count, range_callback callback, int team, index_t chunk) {
  const index_t chunks = (count + chunk - 1) / chunk;
  std::atomic<bool> failed{false};
  std::exception_ptr first_error;
#pragma omp parallel num_threads(team)
  {
#pragma omp for schedule(dynamic, 1)
    for (index_t c = 0; c < chunks; ++c) {
      if (failed.load(std::memory_order_relaxed)) continue;
      try {
        callback(c * chunk, std::min(count, (c + 1) * chunk));
      } catch (...) {
#pragma omp critical(ct_openmp_executor_error)
        {
          if (!first_error) first_error = std::current_exception();
        }
        failed.store(true, std::memory_order_relaxed);
      }
    }
  }
  return first_error;
}

}  // namespace detail

/// An executor running each call in an OpenMP parallel region: a team of options.threads
/// threads (the calling thread is its primary thread and works too) takes chunks of
/// ceil(count / (threads * chunks_per_thread)) groups (at least min_chunk) dynamically. The
/// call returns after every chunk that started has finished (the region's closing barrier);
/// a callback's exception is rethrown then (the first one, when several failed), and chunks
/// not yet started when a callback failed are skipped.
///
/// Nesting: called while an OpenMP parallel region is active on the calling thread
/// (omp_in_parallel() — from inside a user's `#pragma omp parallel`, or from a callback of
/// this executor with the executor bound again) it runs the whole call serially on the
/// calling thread, as one range [0, count), and opens no region: the enclosing team already
/// has the cores, and a nested team would multiply the thread count. A call from a thread of
/// another pool (or several application threads calling at once) opens its own team, as
/// OpenMP does for any parallel region started on such a thread.
/// ct::error for invalid options.
inline executor openmp_executor(openmp_options options = {}) {
  detail::check_openmp_options(options);
  return [options](index_t count, range_callback callback) {
    if (count <= 0) return;
    const int threads = options.threads > 0 ? options.threads : omp_get_max_threads();
    if (threads <= 1 || count < options.serial_threshold || omp_in_parallel()) {
      callback(0, count);
      return;
    }
    const index_t parts = static_cast<index_t>(threads) * options.chunks_per_thread;
    const index_t chunk = std::max(options.min_chunk, (count + parts - 1) / parts);
    const index_t chunks = (count + chunk - 1) / chunk;
    if (chunks == 1) {
      callback(0, count);
      return;
    }
    const int team = static_cast<int>(std::min<index_t>(threads, chunks));
    if (auto e = detail::run_openmp_region(count, callback, team, chunk)) std::rethrow_exception(e);
  };
}

}  // namespace ct
