// tests/support/executors.hpp — the executors the tests run operations under.
#pragma once
#include <algorithm>
#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "ct/ct.hpp"
#include "three_worker_pool.hpp"

namespace ct_test {

/// The contract's runnable example: serial, ranges of 64.
inline ct::executor serial_64_executor() {
  return [](ct::index_t count, ct::range_callback cb) {
    for (ct::index_t start = 0; start < count; start += 64) cb(start, std::min(count, start + 64));
  };
}

/// Serial, but cutting [0, count) at random points (including empty ranges) and running the
/// pieces in a shuffled order: a legal executor that no kernel can have been tuned for.
inline ct::executor random_partition_executor(std::uint64_t seed) {
  return [seed](ct::index_t count, ct::range_callback cb) {
    std::mt19937_64 rng(seed ^ static_cast<std::uint64_t>(count));
    std::vector<ct::index_t> cuts{0, count};
    for (int i = 0; i < 6; ++i) cuts.push_back(static_cast<ct::index_t>(rng() % static_cast<std::uint64_t>(count + 1)));
    std::sort(cuts.begin(), cuts.end());
    std::vector<std::pair<ct::index_t, ct::index_t>> ranges;
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i) ranges.emplace_back(cuts[i], cuts[i + 1]);
    std::shuffle(ranges.begin(), ranges.end(), rng);
    for (auto [s, e] : ranges) cb(s, e);
  };
}

/// Serial, one group per range, last group first.
inline ct::executor reverse_singles_executor() {
  return [](ct::index_t count, ct::range_callback cb) {
    for (ct::index_t g = count - 1; g >= 0; --g) cb(g, g + 1);
  };
}

/// ct::pool_executor over the shared three-worker test pool.
inline ct::executor three_worker_executor() { return ct::pool_executor(shared_pool(), run_three_worker_pool); }

/// Keeps the group count of every call (thread-safe) and runs [0, count) as one range.
struct count_recorder {
  std::mutex m;
  std::vector<ct::index_t> counts;
  ct::executor get() {
    return [this](ct::index_t n, ct::range_callback cb) {
      {
        std::lock_guard<std::mutex> lock(m);
        counts.push_back(n);
      }
      cb(0, n);
    };
  }
};

/// Records every range it was given (thread-safe), running them serially in order.
struct recording_executor {
  std::mutex mutex;
  std::vector<std::pair<ct::index_t, ct::index_t>> ranges;
  int calls = 0;
  ct::executor get(ct::index_t chunk = 64) {
    return [this, chunk](ct::index_t count, ct::range_callback cb) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        ++calls;
      }
      for (ct::index_t s = 0; s < count; s += chunk) {
        {
          std::lock_guard<std::mutex> lock(mutex);
          ranges.emplace_back(s, std::min(count, s + chunk));
        }
        cb(s, std::min(count, s + chunk));
      }
    };
  }
};

}  // namespace ct_test
