/// \file
/// The adapter for boost::asio::thread_pool: ct::asio_executor.
/// The only ct header that includes Boost.Asio.
#pragma once
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <utility>

#include "ct/exec/sharing_executor.hpp"

namespace ct {

/// ct::sharing_executor over an Asio pool: helper jobs are boost::asio::post-ed to pool.
/// The caller creates and joins pool, and keeps it alive while the executor is in use (a
/// join waits for lingering helpers to give up: at most `linger` after the last call).
inline executor asio_executor(boost::asio::thread_pool& pool, int workers, asio_options options = {}) {
  return sharing_executor(
      workers, [p = &pool](pool_job job) { boost::asio::post(*p, std::move(job)); }, options);
}

}  // namespace ct
