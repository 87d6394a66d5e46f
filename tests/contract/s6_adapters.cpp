// CONTRACT.md §6, adapters: ct::pool_executor (static blocks, any pool type) and
// ct::asio_executor (every group once, no deadlock from the pool's own threads), and the
// Asio adapter's options beyond the contract (serial threshold, minimum chunk, solo_below,
// lingering helpers), each of which must keep the contract's promises.
// Which sentence each case checks: README.md in this folder.
#include <algorithm>
#include <atomic>
#include <boost/asio/thread_pool.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "contract/helpers.hpp"
#include "ct/asio.hpp"
#include "ct/ct.hpp"
#include "support/asio_options.hpp"
#include "support/executors.hpp"

using ct::index_t;
using ct_test::coverage;
using namespace std::chrono_literals;

// ---- ct::pool_executor

TEST_CASE("contract §6: pool_executor gives worker id the block [floor(count*id/w), floor(count*(id+1)/w))",
          "[executor][contract]") {
  for (index_t count : {index_t{2}, index_t{3}, index_t{10}, index_t{1000}}) {
    std::mutex m;
    std::vector<std::pair<index_t, index_t>> got;
    ct::executor_scope scope(ct_test::three_worker_executor());
    ct::parallel_for(count, [&](index_t s, index_t e) {
      std::lock_guard<std::mutex> lock(m);
      got.emplace_back(s, e);
    });
    std::vector<std::pair<index_t, index_t>> want;
    for (index_t id = 0; id < 3; ++id)
      if (count * id / 3 != count * (id + 1) / 3) want.emplace_back(count * id / 3, count * (id + 1) / 3);
    std::sort(got.begin(), got.end());
    CHECK(got == want);
  }
}

TEST_CASE("contract §6: pool_executor works with a pool type ct has never seen", "[executor][contract]") {
  struct inline_pool {
    int jobs = 0;
  } pool;
  auto run_pool = [](inline_pool& p, auto job) {
    for (int id = 0; id < 4; ++id) {
      ++p.jobs;
      job(id, 4);
    }
  };
  coverage c(10);
  ct::executor_scope scope(ct::pool_executor(pool, run_pool));
  ct::parallel_for(10, [&](index_t s, index_t e) { c.mark(s, e); });
  CHECK(c.exactly_once());
  CHECK(pool.jobs == 4);
}

// ---- ct::asio_executor

TEST_CASE("contract §6: asio_executor covers every group exactly once", "[executor][contract]") {
  boost::asio::thread_pool pool(2);
  for (int w : {1, 2, 3, 7})
    for (index_t count : {index_t{2}, index_t{3}, index_t{17}, index_t{64}, index_t{1001}}) {
      coverage c(count);
      ct::executor_scope scope(ct::checked_executor(ct::asio_executor(pool, w, ct_test::sharing())));
      ct::parallel_for(count, [&](index_t s, index_t e) { c.mark(s, e); });
      INFO("workers " << w << " count " << count);
      CHECK(c.exactly_once());
    }
  pool.join();
}

TEST_CASE("contract §6: asio_executor called from the pool's own threads does not deadlock",
          "[executor][contract]") {
  for (int threads : {1, 3}) {
    boost::asio::thread_pool pool(static_cast<std::size_t>(threads));
    std::vector<std::future<bool>> results;
    // Every pool thread is busy running a ct call that itself wants the same pool.
    for (int j = 0; j < threads; ++j) {
      auto done = std::make_shared<std::promise<bool>>();
      results.push_back(done->get_future());
      boost::asio::post(pool, [&pool, threads, done] {
        try {
          coverage c(500);
          ct::executor_scope scope(ct::asio_executor(pool, threads + 1, ct_test::sharing()));
          ct::parallel_for(500, [&](index_t s, index_t e) { c.mark(s, e); });
          done->set_value(c.exactly_once());
        } catch (...) {
          done->set_exception(std::current_exception());
        }
      });
    }
    for (auto& r : results) {
      INFO("pool of " << threads << " threads");
      REQUIRE(r.wait_for(30s) == std::future_status::ready);
      CHECK(r.get());
    }
    pool.join();
  }
}

TEST_CASE("contract §6: asio_executor options: serial threshold and minimum chunk", "[executor][contract]") {
  boost::asio::thread_pool pool(2);
  {
    ct::asio_options o;
    o.serial_threshold = 100;
    std::vector<std::pair<index_t, index_t>> got;
    ct::executor_scope scope(ct::asio_executor(pool, 3, o));
    ct::parallel_for(99, [&](index_t s, index_t e) { got.emplace_back(s, e); });  // serial: no lock needed
    CHECK(got == std::vector<std::pair<index_t, index_t>>{{0, 99}});
  }
  {
    ct::asio_options o = ct_test::sharing();  // a call kept on the caller runs as two ranges
    o.min_chunk = 10;
    std::mutex m;
    std::vector<std::pair<index_t, index_t>> got;
    ct::executor_scope scope(ct::asio_executor(pool, 3, o));
    ct::parallel_for(95, [&](index_t s, index_t e) {
      std::lock_guard<std::mutex> lock(m);
      got.emplace_back(s, e);
    });
    std::sort(got.begin(), got.end());
    // Chunks of at least 10 (95 groups: 48 chunks of 2 would be smaller), three participants:
    // the caller's probe [0, 10), then a sixth of what is left while that is more than 10.
    const std::vector<std::pair<index_t, index_t>> want{{0, 10},  {10, 24}, {24, 35}, {35, 45}, {45, 55},
                                                        {55, 65}, {65, 75}, {75, 85}, {85, 95}};
    CHECK(got == want);
  }
  CHECK_THROWS_AS(ct::asio_executor(pool, 0), ct::error);
  pool.join();
}

// The sharing executor's documented partition: after the caller's probe [0, first), each chunk
// is a (2 x participants)-th of the groups left, but at least `chunk` (and at most what is left).
static std::vector<std::pair<index_t, index_t>> claimed_chunks(index_t count, index_t first, index_t chunk, index_t participants) {
  std::vector<std::pair<index_t, index_t>> r;
  if (first > 0) r.emplace_back(0, first);
  for (index_t s = first; s < count;) {
    const index_t left = count - s, size = std::min(left, std::max(chunk, left / (2 * participants)));
    r.emplace_back(s, s + size);
    s += size;
  }
  return r;
}

// range_callback::grain: the sharing executor's chunk size is count over chunks_per_worker
// chunks per participant, fewer when that would make them smaller than the grain, never fewer
// than one per participant; evenly sized. Chunks are claimed larger while much is left and
// shrink to that size. Without a grain the caller's probe (a quarter chunk) comes first; with
// one there is no probe (every range is costly: the call is long). The partition depends on
// nothing but count, grain and the options, whoever runs the chunks.
TEST_CASE("asio_executor: chunks of at least the callback's grain, at least one per worker", "[executor]") {
  boost::asio::thread_pool pool(2);
  struct shape {
    index_t count, grain, chunk;
  };
  // Two workers, 16 chunks each by default: 128 groups in chunks of 4 without a grain; a grain
  // of 48 leaves two chunks of 64 (one per worker, not 48 + 48 + 32); 1000 groups: 20 chunks;
  // 1024 groups: 20 chunks too (21 fit the grain, but an odd one would run alone).
  for (const shape c : {shape{128, 1, 4}, shape{128, 48, 64}, shape{1000, 48, 50}, shape{1024, 48, 52}, shape{60, 48, 30},
                        shape{4096, 48, 128}}) {
    std::mutex m;
    std::vector<std::pair<index_t, index_t>> got;
    auto f = [&](index_t s, index_t e) {
      std::lock_guard<std::mutex> lock(m);
      got.emplace_back(s, e);
    };
    ct::asio_options o;
    o.solo_below = std::chrono::nanoseconds(0);  // always share: the partition must not care
    ct::asio_executor(pool, 2, o)(c.count, ct::range_callback(f, c.grain));
    std::sort(got.begin(), got.end());
    CAPTURE(c.count, c.grain);
    const index_t first = c.grain == 1 ? std::max<index_t>(1, c.chunk / 4) : 0;
    CHECK(got == claimed_chunks(c.count, first, c.chunk, 2));
    if (c.count == 128 && c.grain == 1) {  // the rule worked out by hand once: 127 / 4 = 31, 96 / 4 = 24, ...
      const std::vector<std::pair<index_t, index_t>> by_hand{{0, 1},     {1, 32},    {32, 56},   {56, 74},  {74, 87},
                                                             {87, 97},   {97, 104},  {104, 110}, {110, 114}, {114, 118},
                                                             {118, 122}, {122, 126}, {126, 128}};
      CHECK(got == by_hand);
    }
  }
  pool.join();
}

// asio_options::solo_below: a call whose remaining work, estimated from the caller's first
// quarter chunk, is shorter runs on the caller alone and posts nothing (a posted helper would
// start only after the pool's wake-up), its rest as one range; a longer one is shared; zero
// always shares.
TEST_CASE("asio_executor: short calls run on the caller alone and long ones are shared", "[executor]") {
  boost::asio::thread_pool pool(2);
  auto others_in = [&](ct::asio_options o, index_t count, std::chrono::microseconds per_group) {
    std::atomic<int> others{0};
    const auto caller = std::this_thread::get_id();
    coverage c(count);
    {
      ct::executor_scope scope(ct::asio_executor(pool, 3, o));
      ct::parallel_for(count, [&](index_t s, index_t e) {
        c.mark(s, e);
        if (std::this_thread::get_id() != caller) others++;
        const auto until = std::chrono::steady_clock::now() + (e - s) * per_group;
        while (std::chrono::steady_clock::now() < until) {
        }
      });
    }
    CHECK(c.exactly_once());
    return others.load();
  };
  // What counts as short depends on the machine (sanitizers slow every callback down), so
  // the threshold is set far above this call's work to test the rule itself.
  CHECK(ct::asio_options{}.solo_below == 8us);
  ct::asio_options patient;
  patient.solo_below = 10s;
  for (int round = 0; round < 20; ++round) CHECK(others_in(patient, 48, 0us) == 0);
  {
    // 48 groups, 3 participants: chunks of 1, so the probe is one group, and the rest one range.
    std::vector<std::pair<index_t, index_t>> got;
    ct::executor_scope scope(ct::asio_executor(pool, 3, patient));
    ct::parallel_for(48, [&](index_t s, index_t e) { got.emplace_back(s, e); });  // one thread
    CHECK(got == std::vector<std::pair<index_t, index_t>>{{0, 1}, {1, 48}});
  }
  // ~19 ms: the helpers join. On a loaded machine a posted helper may not get a core within
  // one such call (the pool's threads wait for the scheduler), so a few calls may be needed.
  int joined = 0;
  for (int round = 0; round < 5 && joined == 0; ++round) joined += others_in(ct::asio_options{}, 96, 200us) > 0;
  CHECK(joined > 0);
  // (5 µs per group, up to 50 calls: under ThreadSanitizer on a loaded two-core machine, 20
  // calls of ~0.1 ms each once ended before a helper got a core.)
  int shared = 0;
  for (int round = 0; round < 50 && shared == 0; ++round) shared += others_in(ct_test::sharing(), 96, 5us) > 0;
  CHECK(shared > 0);
  ct::asio_options bad;
  bad.solo_below = std::chrono::nanoseconds(-1);
  CHECK_THROWS_AS(ct::asio_executor(pool, 2, bad), ct::error);
  pool.join();
}

// The measured part of the rule: a call is shared only when its rest is also at least twice
// the time the executor's posted helpers have been taking to start. Here the "pool" starts
// each job 2 ms after it is posted, on a thread of its own (an extreme wake-up), and the
// executor counts the posts it makes.
TEST_CASE("sharing_executor: calls shorter than twice the measured helper start-up stay on the caller",
          "[executor]") {
  std::mutex m;
  std::vector<std::thread> threads;
  std::atomic<int> posts{0};
  auto post = [&](ct::pool_job job) {
    posts++;
    std::lock_guard<std::mutex> lock(m);
    threads.emplace_back([job = std::move(job)] {
      std::this_thread::sleep_for(2ms);
      job();
    });
  };
  const ct::executor exec = ct::sharing_executor(2, post);  // default options: solo_below 8 µs
  auto call = [&](index_t count, std::chrono::microseconds per_group) {
    coverage c(count);
    ct::executor_scope scope(exec);
    ct::parallel_for(count, [&](index_t s, index_t e) {
      c.mark(s, e);
      const auto until = std::chrono::steady_clock::now() + (e - s) * per_group;
      while (std::chrono::steady_clock::now() < until) {
      }
    });
    CHECK(c.exactly_once());
  };
  auto join_helpers = [&] {
    std::lock_guard<std::mutex> lock(m);
    for (auto& t : threads) t.join();
    threads.clear();
  };
  // Nothing measured yet: calls of ~3 ms are shared. Each one's helper starts 2 ms after its
  // post, which counts as wake_meter's cap of 250 µs, and the estimate climbs an eighth of the
  // way to it per call: after twenty, to about 233 µs. (Each helper is joined before the next
  // call, so that none is posted behind a queued one, which would not count.)
  for (int i = 0; i < 20; ++i) {
    call(64, 50us);
    join_helpers();
  }
  CHECK(posts.load() == 20);
  // A call of ~0.2 ms (far above solo_below; four groups of 50 µs, so that the estimate from
  // the first group is not thrown off by the callback's own cost under a sanitizer) is kept on
  // the caller now, and each such call lowers the estimate by only 1/256. (One of the five may
  // still be shared: a thread preempted during the first group makes the call look long.)
  for (int i = 0; i < 5; ++i) call(4, 50us);
  CHECK(posts.load() <= 21);
  // A long call still goes to the helpers.
  const int before = posts.load();
  call(64, 100us);
  CHECK(posts.load() == before + 1);
  join_helpers();
}

// asio_options::linger: helpers poll for the next call instead of returning their thread at
// once. The §6 promises hold unchanged: every group exactly once, at most `workers`
// participants per call, errors rethrown after the started callbacks, no deadlock from the
// pool's own threads — whether the next call comes at once (a lingering helper takes it),
// after the helpers gave up (posted again), or is short enough for the caller alone.
TEST_CASE("contract §6: asio_executor with lingering helpers keeps every promise", "[executor][contract]") {
  boost::asio::thread_pool pool(3);
  ct::asio_options o;
  o.linger = 300us;
  for (int w : {2, 3}) {
    ct::executor_scope scope(ct::checked_executor(ct::asio_executor(pool, w, o)));
    for (int call = 0; call < 300; ++call) {
      const index_t count = 1 + (call * 37) % 400;
      coverage c(count);
      std::mutex m;
      std::vector<std::thread::id> ids;
      const bool slow = call % 2 == 1;  // ~1 us per group: long enough to invite the helpers
      ct::parallel_for(count, [&](index_t s, index_t e) {
        c.mark(s, e);
        if (slow) {
          const auto until = std::chrono::steady_clock::now() + (e - s) * 1us;
          while (std::chrono::steady_clock::now() < until) {
          }
        }
        std::lock_guard<std::mutex> lock(m);
        if (std::find(ids.begin(), ids.end(), std::this_thread::get_id()) == ids.end())
          ids.push_back(std::this_thread::get_id());
      });
      INFO("workers " << w << " call " << call << " count " << count);
      REQUIRE(c.exactly_once());
      REQUIRE(ids.size() <= static_cast<std::size_t>(w));
      if (call % 50 == 49) std::this_thread::sleep_for(2ms);  // the helpers give up meanwhile
    }
    // A failing call in the middle of a stream of calls.
    std::atomic<int> running{0};
    CHECK_THROWS_WITH(ct::parallel_for(1000,
                                       [&](index_t s, index_t) {
                                         running++;
                                         std::this_thread::sleep_for(10us);
                                         running--;
                                         if (s >= 500) throw std::runtime_error("group failed");
                                       }),
                      "group failed");
    CHECK(running.load() == 0);
    coverage after(777);
    ct::parallel_for(777, [&](index_t s, index_t e) { after.mark(s, e); });
    CHECK(after.exactly_once());
  }
  {  // chunks larger than the call: one range, whatever the lingering logic does first
    ct::asio_options big = o;
    big.min_chunk = 100;
    ct::executor_scope scope(ct::checked_executor(ct::asio_executor(pool, 3, big)));
    for (index_t count : {index_t{2}, index_t{10}, index_t{150}, index_t{450}}) {
      coverage c(count);
      ct::parallel_for(count, [&](index_t s, index_t e) { c.mark(s, e); });
      CHECK(c.exactly_once());
    }
  }
  CHECK_THROWS_AS(ct::asio_executor(pool, 2, [] {
                    ct::asio_options bad;
                    bad.linger = -1us;
                    return bad;
                  }()),
                  ct::error);
  // Calls from the pool's own threads while helpers linger: no deadlock.
  std::vector<std::future<bool>> results;
  auto exec = ct::asio_executor(pool, 4, o);
  for (int j = 0; j < 3; ++j) {
    auto done = std::make_shared<std::promise<bool>>();
    results.push_back(done->get_future());
    boost::asio::post(pool, [exec, done] {
      try {
        bool ok = true;
        ct::executor_scope scope(exec);
        for (int k = 0; k < 20; ++k) {
          coverage c(300);
          ct::parallel_for(300, [&](index_t s, index_t e) { c.mark(s, e); });
          ok = ok && c.exactly_once();
        }
        done->set_value(ok);
      } catch (...) {
        done->set_exception(std::current_exception());
      }
    });
  }
  for (auto& r : results) {
    REQUIRE(r.wait_for(30s) == std::future_status::ready);
    CHECK(r.get());
  }
  pool.join();  // returns once the last helper stopped lingering
}

// The lingering path itself: the pool's only thread still polls after a call, so the next call
// is served by it even though a task posted to the pool in between has not started yet.
TEST_CASE("asio_executor: a lingering helper takes the next call without being posted", "[executor]") {
  boost::asio::thread_pool pool(1);
  ct::asio_options o;
  o.linger = 300ms;  // far longer than the test needs; join() waits it out
  ct::executor_scope scope(ct::asio_executor(pool, 2, o));
  auto helped = [] {
    std::atomic<int> others{0};
    const auto caller = std::this_thread::get_id();
    ct::parallel_for(64, [&](index_t, index_t) {
      if (std::this_thread::get_id() != caller) others++;
      std::this_thread::sleep_for(200us);
    });
    return others.load() > 0;
  };
  // Posted: the helper lingers afterwards. A posted helper can start after the call's 13 ms
  // of work are done when both cores are busy (CI runs two test processes at once, under
  // TSan): it then finds nothing left and lingers, and helps with a later call.
  bool posted_helped = false;
  for (int call = 0; call < 100 && !posted_helped; ++call) posted_helped = helped();
  REQUIRE(posted_helped);
  std::atomic<bool> marker{false};
  boost::asio::post(pool, [&] { marker = true; });  // queued behind the lingering helper
  // The lingering helper takes the next calls without going back to the pool. Descheduled
  // through a whole call it would miss that one (and keep lingering): a few are allowed, and
  // the marker shows that the pool thread did not return to the pool in between.
  bool lingering_helped = false;
  for (int call = 0; call < 5 && !lingering_helped; ++call) lingering_helped = helped();
  CHECK(lingering_helped);
  CHECK_FALSE(marker.load());  // the pool thread never went back to the pool in between
  pool.join();
  CHECK(marker.load());
}
