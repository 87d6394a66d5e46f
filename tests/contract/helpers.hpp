// tests/contract/helpers.hpp — small executors and checks the contract tests share.
#pragma once
#include <atomic>
#include <cstddef>
#include <utility>
#include <vector>

#include "ct/ct.hpp"

namespace ct_test {

/// An executor that hands the callback exactly the ranges it was built with.
inline ct::executor fixed_ranges(std::vector<std::pair<ct::index_t, ct::index_t>> ranges) {
  return [ranges](ct::index_t, ct::range_callback cb) {
    for (auto [s, e] : ranges) cb(s, e);
  };
}

/// Marks which groups a body saw; fails the test on a group seen twice.
struct coverage {
  explicit coverage(ct::index_t n) : hits(static_cast<std::size_t>(n)) {}
  std::vector<std::atomic<int>> hits;
  void mark(ct::index_t s, ct::index_t e) {
    for (ct::index_t i = s; i < e; ++i) hits[static_cast<std::size_t>(i)]++;
  }
  bool exactly_once() const {
    for (auto& h : hits)
      if (h.load() != 1) return false;
    return true;
  }
};

/// Counts its calls and runs the whole range as one callback on the calling thread.
struct counting_executor {
  std::atomic<int> calls{0};
  ct::executor get() {
    return [this](ct::index_t n, ct::range_callback cb) {
      ++calls;
      cb(0, n);
    };
  }
};

}  // namespace ct_test
