// tests/reliability/test_concurrency_soak.cpp — issue 20's concurrency soak: eight application
// threads, each with its own executor binding (some sharing one Asio pool, one with a pool of
// its own, one nesting scopes, one calling ct from inside ct::parallel_for callbacks that bind a
// second pool), evaluate a mix of operations for a bounded time; every result must be bitwise
// the serial one. CI runs it under ThreadSanitizer (tag [scheduling]); CT_SOAK_SECONDS (default
// 2) sets the time, e.g. CT_SOAK_SECONDS=600 for a long run by hand (docs/reliability.md).
#include <atomic>
#include <boost/asio/thread_pool.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "ct/asio.hpp"
#include "ct/ct.hpp"
#include "support/asio_options.hpp"
#include "support/executors.hpp"
#include "support/reference.hpp"

namespace {

using ct::index_t;

double soak_seconds() {
  const char* s = std::getenv("CT_SOAK_SECONDS");
  const double v = s != nullptr ? std::atof(s) : 0.0;
  return v > 0 ? v : 2.0;
}

// One operation: how to compute it, and its serial result (computed before the threads start).
struct operation {
  std::string name;
  std::function<ct::tensor<float>()> run;
  ct::tensor<float> serial;
};

std::vector<operation> operations() {
  const auto x = ct::random_uniform<float>({96, 200}, 1, -3.0f, 3.0f);
  const auto a = ct::random_uniform<float>({64, 80}, 2, -1.0f, 1.0f);
  const auto b = ct::random_uniform<float>({80, 72}, 3, -1.0f, 1.0f);
  const auto w = ct::encode(ct::random_uniform<float>({48, 256}, 4, -1.0f, 1.0f), ct::find_format("q8_0"));
  const auto v = ct::random_uniform<float>({3, 256}, 5, -1.0f, 1.0f);
  std::vector<operation> ops = {
      {"softmax", [x] { return ct::tensor<float>(ct::eval(ct::softmax(x, -1))); }, {}},
      {"layer norm", [x] { return ct::tensor<float>(ct::eval(ct::layer_norm(x, -1, 1e-5f))); }, {}},
      {"sum over axis 0", [x] { return ct::tensor<float>(ct::eval(ct::sum(x, 0))); }, {}},
      {"logsumexp", [x] { return ct::tensor<float>(ct::eval(ct::logsumexp(x, -1))); }, {}},
      {"nested reducers", [x] { return ct::tensor<float>(ct::eval(ct::exp(x - ct::max(x, -1, true)) / ct::sum(ct::exp(x - ct::max(x, -1, true)), -1, true))); }, {}},
      {"matmul", [a, b] { return ct::matmul(a, b); }, {}},
      {"q8_0 x w^T", [w, v] { return ct::matmul(v, w.transpose()); }, {}},
  };
  for (operation& op : ops) op.serial = op.run();
  return ops;
}

}  // namespace

TEST_CASE("concurrency soak: eight threads with their own bindings, results bitwise serial",
          "[scheduling][reliability][soak]") {
  const std::vector<operation> ops = operations();
  boost::asio::thread_pool shared(3), own(2), inner(2);
  const double seconds = soak_seconds();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::atomic<long> evaluations{0};
  std::atomic<int> mismatches{0};
  std::vector<std::string> failures(8);  // one per thread, written by that thread only

  // Evaluates the operations round-robin from `first` until the deadline (at least one round),
  // comparing bits. Catch2's assertions are not thread-safe: results go to the counters and to
  // `failure` (the thread's own slot), checked after join.
  const auto round_robin = [&](std::size_t first, std::string& failure) {
    long done = 0;
    for (std::size_t i = first; done < static_cast<long>(ops.size()) || std::chrono::steady_clock::now() < deadline;) {
      const operation& op = ops[i++ % ops.size()];
      if (!ct_test::bitwise_equal(op.run(), op.serial)) {
        ++mismatches;
        if (failure.empty()) failure = op.name;
      }
      ++done;
      ++evaluations;
    }
  };
  // Each thread: `bound` sets up its bindings and calls the body; an exception is a failure.
  const auto guarded = [&](std::string& failure, const std::function<void()>& body) {
    try {
      body();
    } catch (const std::exception& e) {
      failure = std::string("exception: ") + e.what();
      ++mismatches;
    }
  };
  const auto worker = [&](int id, std::function<void(const std::function<void()>&)> bound) {
    std::string& failure = failures[static_cast<std::size_t>(id)];
    guarded(failure, [&] { bound([&] { round_robin(static_cast<std::size_t>(id), failure); }); });
  };
  const auto with = [](ct::executor e) {
    return [e](const std::function<void()>& body) {
      ct::executor_scope scope(e);
      body();
    };
  };

  std::vector<std::thread> threads;
  // 0-2: the shared pool, with different worker counts and options.
  threads.emplace_back(worker, 0, with(ct::asio_executor(shared, 2)));
  threads.emplace_back(worker, 1, with(ct::asio_executor(shared, 3, ct_test::sharing())));
  threads.emplace_back(worker, 2, with(ct::asio_executor(shared, 7, ct_test::sharing())));
  // 3: a pool of its own.
  threads.emplace_back(worker, 3, with(ct::asio_executor(own, 2)));
  // 4: no executor at all (serial on its thread).
  threads.emplace_back(worker, 4, [](const std::function<void()>& body) { body(); });
  // 5: a random-partition executor under an outer shared-pool scope (the inner one wins).
  threads.emplace_back(worker, 5, [&](const std::function<void()>& body) {
    ct::executor_scope outer(ct::asio_executor(shared, 2));
    ct::executor_scope inner_scope(ct_test::random_partition_executor(5));
    body();
  });
  // 6: nested scopes that change per round: the shared pool, then serial ranges of 64 inside it,
  // then back — each operation still gives the serial bits.
  threads.emplace_back(worker, 6, [&](const std::function<void()>& body) {
    ct::executor_scope outer(ct::asio_executor(shared, 2, ct_test::sharing()));
    {
      ct::executor_scope nested(ct_test::serial_64_executor());
      body();
    }
  });
  // 7: ct::parallel_for over the shared pool; each callback (on a pool thread, where ct binds no
  // executor) binds a second pool and evaluates operations through it.
  // (The two callbacks may run at once: each reports into its own slot, merged after join.)
  std::string callback_failures[2];
  threads.emplace_back([&] {
    guarded(failures[7], [&] {
      ct::executor_scope scope(ct::asio_executor(shared, 2));
      ct::parallel_for(2, [&](index_t start, index_t end) {
        for (index_t g = start; g < end; ++g) {
          ct::executor_scope nested(ct::asio_executor(inner, 2));
          round_robin(static_cast<std::size_t>(g), callback_failures[g]);
        }
      });
    });
  });
  for (std::thread& t : threads) t.join();
  for (const std::string& f : callback_failures)
    if (failures[7].empty()) failures[7] = f;
  shared.join();
  own.join();
  inner.join();

  WARN("concurrency soak: " << evaluations.load() << " evaluations by 8 threads in " << seconds << " s");
  for (std::size_t t = 0; t < failures.size(); ++t) {
    INFO("thread " << t);
    CHECK(failures[t].empty());
  }
  CHECK(mismatches.load() == 0);
  CHECK(evaluations.load() >= static_cast<long>(8 * ops.size()));
}
