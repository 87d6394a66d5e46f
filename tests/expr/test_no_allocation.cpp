// CONTRACT §5: reductions and fused expressions leave the destination unchanged when they
// fail. Scratch memory is allocated before any group runs; this checks that the callbacks
// themselves allocate nothing, so no allocation can fail once some groups wrote results.
// The global operator new of this test binary throws while a callback of the executor below
// runs on this thread.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <new>

#include "ct/ct.hpp"
#include "support/reference.hpp"

namespace {
thread_local bool allocations_forbidden = false;

void* checked_alloc(std::size_t n, std::size_t align) {
  if (allocations_forbidden) throw std::bad_alloc();
  if (n == 0) n = 1;
  void* p = align <= alignof(std::max_align_t) ? std::malloc(n) : std::aligned_alloc(align, (n + align - 1) / align * align);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(std::size_t n) { return checked_alloc(n, alignof(std::max_align_t)); }
void* operator new[](std::size_t n) { return checked_alloc(n, alignof(std::max_align_t)); }
void* operator new(std::size_t n, std::align_val_t a) { return checked_alloc(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return checked_alloc(n, static_cast<std::size_t>(a)); }
// Every form is replaced, nothrow ones too, so that no allocation pairs a sanitizer's
// operator new with this file's operator delete.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return checked_alloc(n, alignof(std::max_align_t));
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  try {
    return checked_alloc(n, static_cast<std::size_t>(a));
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t& t) noexcept { return operator new(n, a, t); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

using ct::dims;
using ct::index_t;

TEST_CASE("contract §5: reduction callbacks allocate nothing", "[scheduling][fused]") {
  // Four ranges, run one after the other on this thread with allocation forbidden.
  ct::executor strict = [](index_t n, ct::range_callback cb) {
    for (index_t k = 0; k < 4; ++k) {
      allocations_forbidden = true;
      try {
        cb(n * k / 4, n * (k + 1) / 4);
      } catch (...) {
        allocations_forbidden = false;
        throw;
      }
      allocations_forbidden = false;
    }
  };
  // The check itself works: an allocation inside a callback throws.
  {
    ct::executor_scope scope(strict);
    // (A call of ::operator new itself: clang may elide a new-expression whose result is unused.)
    CHECK_THROWS_AS(ct::parallel_for(8, [](index_t, index_t) { ::operator delete(::operator new(16)); }), std::bad_alloc);
  }
  auto x = ct::random_uniform<float>({37, 1037}, 31, -3.0f, 3.0f);
  auto xs = ct::random_uniform<float>({64, 64}, 32, -3.0f, 3.0f);
  auto xl = ct::random_uniform<float>({9, 3001}, 33, -3.0f, 3.0f);
  auto d = ct::random_uniform<double>({12, 300}, 34, -3.0, 3.0);
  auto w = ct::random_uniform<float>({1037}, 35, 0.5f, 1.5f), b = ct::random_uniform<float>({1037}, 36, -1.0f, 1.0f);
  auto x3 = ct::random_uniform<float>({6, 20, 30}, 37, -3.0f, 3.0f);
  const auto same = [&](auto make, const char* what) {
    auto want = ct::eval(make());  // no executor: the reference
    ct::executor_scope scope(strict);
    INFO(what);
    auto out = want.clone();
    out.fill(0);
    CHECK_NOTHROW(ct::eval(make(), out));
    CHECK(ct_test::bitwise_equal(out, want));
  };
  same([&] { return ct::softmax(x, -1); }, "softmax (row runner)");
  same([&] { return ct::softmax(xl, -1); }, "softmax, long rows (next-row prefetch)");
  same([&] { return ct::log_softmax(xs, -1); }, "log_softmax");
  same([&] { return ct::layer_norm(x, -1, 1e-5f, w, b); }, "layer_norm with weight and bias");
  same([&] { return ct::sum(x, -1); }, "sum (plain reduction)");
  same([&] { return ct::argmax(x, -1); }, "argmax (plain reduction)");
  same([&] { return ct::sum(x, 0); }, "sum over axis 0 (column mode)");
  same([&] { return ct::softmax(x, 0); }, "softmax over axis 0 (column mode)");
  same([&] { return ct::mean(x3, dims{0, 2}); }, "mean over two axes (odometer walk)");
  same([&] { return ct::logsumexp(d, -1); }, "logsumexp f64");
  same([&] { return ct::sum(ct::cast<std::int64_t>(x3 > 0.0f), -1); }, "integer sum (general path)");
}
