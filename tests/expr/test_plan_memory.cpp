// plan_memory: the per-thread free lists behind the planner's vectors (src/expr/plan_memory.hpp).
// Reuse within a thread, blocks freed on another thread, the cap on kept blocks, and evals
// from several threads at once (each planning with its own lists).
#include <catch2/catch.hpp>
#include <cstring>
#include <thread>
#include <vector>

#include "../../src/expr/plan_memory.hpp"
#include "ct/ct.hpp"

namespace pm = ct::detail::plan_memory;

TEST_CASE("plan_memory hands a freed block back to the next request of its size class", "[plan_memory]") {
  void* a = pm::allocate(100);  // class 128
  pm::deallocate(a, 100);
  void* b = pm::allocate(120);  // same class: the block just freed
  CHECK(b == a);
  void* c = pm::allocate(100);  // the list is empty again: a different block
  CHECK(c != a);
  void* d = pm::allocate(200);  // class 256
  CHECK(d != a);
  pm::deallocate(b, 120);
  pm::deallocate(c, 100);
  pm::deallocate(d, 200);
  // Blocks beyond the largest class come from operator new and go straight back.
  void* big = pm::allocate(100000);
  pm::deallocate(big, 100000);
  pm::deallocate(nullptr, 16);  // a no-op
}

TEST_CASE("plan_memory keeps at most 64 free blocks per class and thread", "[plan_memory]") {
  std::thread([] {  // a fresh thread: empty lists
    std::vector<void*> blocks;
    for (int i = 0; i < 100; ++i) blocks.push_back(pm::allocate(64));
    for (void* p : blocks) pm::deallocate(p, 64);
    // The first 64 were kept (last in, first out); the other 36 went back to operator delete.
    for (int i = 63; i >= 0; --i) {
      void* p = pm::allocate(64);
      CHECK(p == blocks[static_cast<std::size_t>(i)]);
      blocks[static_cast<std::size_t>(i)] = p;
    }
    for (int i = 0; i < 64; ++i) pm::deallocate(blocks[static_cast<std::size_t>(i)], 64);
  }).join();  // its kept blocks are released at thread exit (only LeakSanitizer can tell)
}

TEST_CASE("plan_memory blocks freed on another thread join that thread's lists", "[plan_memory][scheduling]") {
  void* a = pm::allocate(48);
  void* reused = nullptr;
  std::thread([&] {
    pm::deallocate(a, 48);         // this thread has not allocated anything yet
    reused = pm::allocate(40);     // same class (64): the block it was given
    pm::deallocate(reused, 40);    // kept until the thread exits
  }).join();
  CHECK(reused == a);
}

// The lists are per thread, so nothing is shared here by design; this runs under
// ThreadSanitizer in CI ([scheduling]) to keep it that way.
TEST_CASE("evals planned concurrently on several threads give the one-thread results", "[plan_memory][scheduling]") {
  auto x = ct::random_uniform<float>({37, 29}, 11, -5.f, 5.f);
  ct::tensor<float> want_sm({37, 29}), want_ln({37, 29});
  ct::eval(ct::softmax(x, -1), want_sm);
  ct::eval(ct::layer_norm(x, -1, 1e-5f), want_ln);
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      ct::tensor<float> sm({37, 29}), ln({37, 29});
      for (int i = 0; i < 200; ++i) {
        ct::eval(ct::softmax(x, -1), sm);
        ct::eval(ct::layer_norm(x, -1, 1e-5f), ln);
        const std::size_t bytes = 37 * 29 * sizeof(float);
        mismatches[static_cast<std::size_t>(t)] += std::memcmp(sm.data(), want_sm.data(), bytes) != 0;
        mismatches[static_cast<std::size_t>(t)] += std::memcmp(ln.data(), want_ln.data(), bytes) != 0;
      }
    });
  for (auto& th : threads) th.join();
  for (int m : mismatches) CHECK(m == 0);
}
