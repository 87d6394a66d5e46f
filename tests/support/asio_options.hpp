// tests/support/asio_options.hpp — asio_options the concurrency tests share.
#pragma once
#include <chrono>

#include "ct/asio.hpp"

namespace ct_test {

/// Options that always share a call with the helpers (solo_below = 0). Test callbacks are far
/// shorter than the default solo_below, so without this the calls would run on the caller
/// alone, and these tests are about the multi-participant path.
inline ct::asio_options sharing() {
  ct::asio_options o;
  o.solo_below = std::chrono::nanoseconds(0);
  return o;
}

}  // namespace ct_test
