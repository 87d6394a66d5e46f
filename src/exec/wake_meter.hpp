// src/exec/wake_meter.hpp — how long helpers take to start on a call after being invited
// (private; ct::sharing_executor's measured threshold).
//
// A helper joins a call only after its invitation reaches it: a posted pool job waits for the
// pool's thread to wake up (23-28 µs on the VM ct is benchmarked on, a few µs on bare metal,
// longer on a busy pool), a lingering helper sees the job on the board within a microsecond.
// A call shorter than that delay cannot gain from the helper and still pays for inviting it,
// so the executor measures the delay as it goes instead of assuming a machine's figure.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace ct::detail {

class wake_meter {
 public:
  /// One helper started `delay` after it was invited. Helpers that find their call finished
  /// count too: they are the ones that show the call was too short for them.
  ///
  /// A delay below the estimate replaces it: the fast starts show what an idle pool costs.
  /// One above moves it an eighth of the way there (from zero for the first), and a sample
  /// counts at most cap_ns: one slow start — a fresh pool's first wake-up took 1 ms on the
  /// benchmark VM, against ~25 µs for the calls after it — must not keep calls of a few hundred
  /// µs from the helpers; a pool that is slow every time (busy with other work) raises it
  /// within a few calls. Helpers noting at once may lose a sample: harmless for an estimate.
  void note(std::chrono::nanoseconds delay) noexcept {
    const std::int64_t sample = std::clamp<std::int64_t>(delay.count(), 1, cap_ns);
    const std::int64_t old = ns_.load(std::memory_order_relaxed);
    ns_.store(sample <= old ? sample : old + std::max<std::int64_t>(1, (sample - old) / 8), std::memory_order_relaxed);
  }

  /// A call was kept from the helpers by this estimate alone. New samples come only from
  /// calls that invite helpers, so an estimate that is too high would otherwise stop all
  /// sharing for good: each such call lowers it by 1/256, until a call shares and measures.
  /// (A call near the threshold is then shared about once in six: the next sample puts the
  /// estimate back.)
  void decay() noexcept {
    const std::int64_t old = ns_.load(std::memory_order_relaxed);
    if (old > 1) ns_.store(old - old / 256 - 1, std::memory_order_relaxed);
  }

  /// The current estimate; zero until a helper has started.
  std::chrono::nanoseconds estimate() const noexcept { return std::chrono::nanoseconds(ns_.load(std::memory_order_relaxed)); }

  /// The largest sample: a helper that starts later than this after its invitation makes
  /// calls shorter than twice this stay on the caller (until decay lets one through).
  static constexpr std::int64_t cap_ns = 250'000;

 private:
  std::atomic<std::int64_t> ns_{0};
};

/// The posted helpers of one executor (and its copies): how long they take to start, and how
/// many were posted and have not started yet. A helper posted while an earlier one still
/// waits in the pool's queue waits for that one too; its delay says nothing about a wake-up,
/// so it is not noted.
struct posted_helpers {
  wake_meter wake;
  std::atomic<int> pending{0};
};

}  // namespace ct::detail
