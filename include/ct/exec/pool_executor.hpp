/// \file
/// Adapting any "run this job on all workers and wait" pool: ct::pool_executor.
#pragma once
#include <utility>

#include "ct/exec/executor.hpp"

namespace ct {

namespace detail {
/// floor(count * id / w) without overflowing: count = q*w + r gives q*id + floor(r*id / w).
constexpr index_t block_start(index_t count, index_t id, index_t w) noexcept {
  return count / w * id + count % w * id / w;
}
}  // namespace detail

/// An executor over a pool that ct knows nothing about. run_pool(pool, job) must run
/// job(worker_id, worker_count) once on each of the pool's workers, wait for all of them,
/// and propagate a worker's error only after every worker finished. Worker id of w gets the
/// static block [floor(count*id/w), floor(count*(id+1)/w)). The executor keeps a reference
/// to pool: the caller creates it, keeps it alive while the executor is used, and closes it.
template <class Pool, class RunPool>
executor pool_executor(Pool& pool, RunPool run_pool) {
  return [p = &pool, run = std::move(run_pool)](index_t count, range_callback callback) {
    run(*p, [count, callback](auto worker_id, auto worker_count) {
      const auto id = static_cast<index_t>(worker_id), w = static_cast<index_t>(worker_count);
      callback(detail::block_start(count, id, w), detail::block_start(count, id + 1, w));
    });
  };
}

}  // namespace ct
