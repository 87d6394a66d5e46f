// ct::matmul / ct::dot: semantics against a naive reference, shapes, views and types. What
// the executor contract promises about matmul (groups, determinism under every executor,
// overlapping destinations, errors before any executor call) is in tests/contract/.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "matmul/helpers.hpp"
#include "matmul/reference.hpp"
#include "support/allocation_guard.hpp"
#include "support/executors.hpp"

using ct::index_t;
using mm_test::count_bad;
using mm_test::counting_executor;
using mm_test::naive_matmul;
using mm_test::operand;
using mm_test::same_bits;
using mm_test::all_settings;
using mm_test::describe;

namespace {

template <class T>
void check_against_reference(const ct::tensor<T>& a, const ct::tensor<T>& b) {
  const mm_test::reference ref = naive_matmul(a, b);
  for (const ct::settings& s : all_settings) {
    ct::settings_scope scope(s);
    std::string first;
    const ct::tensor<T> got = ct::matmul(a, b);
    const index_t bad = count_bad(got, ref, &first);
    INFO(ct::dtype_name<T>() << " " << a.shape() << " @ " << b.shape() << " under " << describe(s) << ": " << first);
    CHECK(bad == 0);
  }
}

}  // namespace

TEST_CASE("matmul: 2-D products match the reference for sizes that are not tile multiples", "[matmul]") {
  const index_t sizes[] = {1, 7, 33, 257};
  std::uint64_t seed = 1;
  for (index_t m : sizes)
    for (index_t n : sizes)
      for (index_t k : sizes) {
        if (m * n * k > 257 * 257 * 33) continue;  // the 257^3 cube is covered in float below
        check_against_reference(operand<float>({m, k}, seed), operand<float>({k, n}, seed + 1));
        check_against_reference(operand<double>({m, k}, seed + 2), operand<double>({k, n}, seed + 3));
        seed += 4;
      }
  check_against_reference(operand<float>({257, 257}, 7), operand<float>({257, 257}, 8));
}

TEST_CASE("matmul: integer products are exact and wrap modulo 2^bits", "[matmul]") {
  for (index_t m : {1, 7, 33})
    for (index_t k : {1, 33})
      for (index_t n : {7, 33}) {
        check_against_reference(operand<std::int32_t>({m, k}, 11), operand<std::int32_t>({k, n}, 12));
        check_against_reference(operand<std::int64_t>({m, k}, 13), operand<std::int64_t>({k, n}, 14));
      }
  // 65536 * 65536 = 2^32 wraps to 0 in int32, plus 1*1.
  auto a = ct::from_vector<std::int32_t>({65536, 1}, {1, 2});
  auto b = ct::from_vector<std::int32_t>({65536, 1}, {2, 1});
  CHECK(ct::matmul(a, b).item() == 1);
  CHECK(ct::dot(ct::from_list<std::int64_t>({3, -4}), ct::from_list<std::int64_t>({5, 6})) == -9);
}

TEST_CASE("matmul: vector operands follow numpy's promotion rules", "[matmul]") {
  for (index_t k : {1, 7, 33, 257}) {
    for (index_t n : {1, 7, 33, 257}) {
      // vector x matrix -> [N], matrix x vector -> [N]
      check_against_reference(operand<float>({k}, 21), operand<float>({k, n}, 22));
      check_against_reference(operand<float>({n, k}, 23), operand<float>({k}, 24));
      check_against_reference(operand<double>({k}, 25), operand<double>({k, n}, 26));
      check_against_reference(operand<double>({n, k}, 27), operand<double>({k}, 28));
    }
    // vector x vector -> rank 0
    auto x = operand<float>({k}, 31), y = operand<float>({k}, 32);
    check_against_reference(x, y);
    CHECK(ct::matmul(x, y).rank() == 0);
  }
  // Shapes, explicitly.
  CHECK(ct::matmul(ct::ones<float>({3}), ct::ones<float>({3, 5})).shape() == ct::dims{5});
  CHECK(ct::matmul(ct::ones<float>({5, 3}), ct::ones<float>({3})).shape() == ct::dims{5});
  CHECK(ct::matmul(ct::ones<float>({2, 4, 3}), ct::ones<float>({3})).shape() == ct::dims{2, 4});
  CHECK(ct::matmul(ct::ones<float>({3}), ct::ones<float>({2, 3, 6})).shape() == ct::dims{2, 6});
}

TEST_CASE("matmul: ct::dot returns the scalar product", "[matmul]") {
  for (index_t n : {0, 1, 7, 33, 257, 1000}) {
    auto x = operand<double>({n}, 41), y = operand<double>({n}, 42);
    const mm_test::reference ref = naive_matmul(x, y);
    for (const ct::settings& s : all_settings) {
      ct::settings_scope scope(s);
      const double got = ct::dot(x, y);
      INFO("n = " << n << " " << describe(s));
      CHECK(std::fabs(static_cast<long double>(got) - ref.value[0]) <=
            mm_test::error_bound<double>(n, ref.abs_sum[0]));
      // dot and the vector-vector matmul are the same computation.
      CHECK(ct::matmul(x, y).item() == got);
    }
  }
  CHECK(ct::dot(ct::from_list<float>({1, 2, 3}), ct::from_list<float>({4, 5, 6})) == 32.0f);
}

TEST_CASE("matmul: batch dimensions broadcast like numpy", "[matmul]") {
  struct shapes {
    ct::dims a, b, result;
  };
  const shapes cases[] = {
      {{5, 7, 33}, {5, 33, 9}, {5, 7, 9}},
      {{5, 7, 33}, {33, 9}, {5, 7, 9}},           // 2-D right operand broadcasts
      {{7, 33}, {4, 33, 9}, {4, 7, 9}},           // 2-D left operand broadcasts
      {{2, 1, 7, 33}, {3, 33, 9}, {2, 3, 7, 9}},  // both broadcast
      {{3, 1, 1, 7}, {1, 2, 7, 1}, {3, 2, 1, 1}},
      {{2, 3, 33}, {33}, {2, 3}},                 // batched matrix x vector
      {{33}, {2, 33, 5}, {2, 5}},                 // vector x batched matrix
      {{1, 7, 257}, {2, 257, 33}, {2, 7, 33}},
      {{0, 7, 33}, {33, 9}, {0, 7, 9}},           // empty batch
  };
  std::uint64_t seed = 50;
  for (const auto& c : cases) {
    INFO(c.a << " @ " << c.b);
    auto a = operand<float>(c.a, seed), b = operand<float>(c.b, seed + 1);
    CHECK(ct::matmul(a, b).shape() == c.result);
    check_against_reference(a, b);
    check_against_reference(operand<double>(c.a, seed + 2), operand<double>(c.b, seed + 3));
    check_against_reference(operand<std::int64_t>(c.a, seed + 4), operand<std::int64_t>(c.b, seed + 5));
    seed += 6;
  }
}

// A batch of small products whose B is read in place prefetches each next piece's A rows, B and
// C rows while the current piece runs (docs/matmul.md). Prefetches never change a value: the same
// bits with the prefetch (a tuning whose B-block budget holds two pieces) and without it (a budget
// below one piece), under executors that cut batches mid-matrix, with a B per batch, a broadcast
// B and a destination with a column stride (a transposed view), each against the naive reference.
TEMPLATE_TEST_CASE("matmul: batches read in place give the same bits with and without the next batch's prefetch",
                   "[matmul]", float, double) {
  using T = TestType;
  ct::tuning with = ct::current_tuning();
  with.gemm_b_block_bytes = std::size_t{1} << 20;  // two pieces here take 150 KiB at most
  with.gemm_direct_b_bytes = std::size_t{1} << 20;  // B read in place
  ct::tuning without = with;
  without.gemm_b_block_bytes = 64;
  const auto a = operand<T>({9, 37, 150}, 70), b = operand<T>({9, 150, 70}, 71), b2 = operand<T>({150, 70}, 72);
  const ct::executor executors[] = {ct_test::serial_64_executor(), ct_test::random_partition_executor(73),
                                    ct_test::reverse_singles_executor(), ct_test::three_worker_executor()};
  for (const auto* rhs : {&b, &b2}) {
    const mm_test::reference ref = naive_matmul(a, *rhs);
    ct::tensor<T> plain;
    {
      ct::tuning_scope tuned(without);
      plain = ct::matmul(a, *rhs);
    }
    CHECK(count_bad(plain, ref) == 0);
    ct::tuning_scope tuned(with);
    CHECK(same_bits(ct::matmul(a, *rhs), plain));
    for (const ct::executor& ex : executors) {
      ct::executor_scope scope(ex);
      CHECK(same_bits(ct::matmul(a, *rhs), plain));
      // A [9, 37, 70] destination whose columns are 37 elements apart (rows 1 apart).
      ct::tensor<T> t({9, 70, 37});
      ct::matmul(a, *rhs, t.permute({0, 2, 1}));
      CHECK(same_bits(ct::eval(t.permute({0, 2, 1})), plain));
    }
  }
}

TEST_CASE("matmul: zero-size dimensions", "[matmul]") {
  counting_executor ex;
  ct::executor_scope scope(ex.get());
  // K = 0: every element is an empty sum, 0 — also overwriting what the destination held.
  auto out = ct::full<float>({3, 4}, 7.0f);
  ct::matmul(ct::zeros<float>({3, 0}), ct::zeros<float>({0, 4}), out);
  CHECK(ct::equal(out, ct::zeros<float>({3, 4})));
  auto v = ct::full<double>({5}, 2.0);
  ct::matmul(ct::zeros<double>({5, 0}), ct::zeros<double>({0}), v);
  CHECK(ct::equal(v, ct::zeros<double>({5})));
  CHECK(ct::dot(ct::zeros<double>({0}), ct::zeros<double>({0})) == 0.0);
  // M = 0 or N = 0: nothing to compute, the executor is not needed.
  const int before = ex.calls;
  CHECK(ct::matmul(ct::zeros<float>({0, 3}), ct::zeros<float>({3, 4})).shape() == ct::dims{0, 4});
  CHECK(ct::matmul(ct::zeros<float>({2, 3}), ct::zeros<float>({3, 0})).shape() == ct::dims{2, 0});
  CHECK(ex.calls == before);
}

TEST_CASE("matmul: transposed, strided, reversed and foreign operands need no copies by the caller",
          "[matmul]") {
  auto big = operand<float>({70, 80}, 60);
  auto big_d = operand<double>({70, 80}, 61);
  SECTION("transposed views") {
    auto at = operand<float>({33, 7}, 62).transpose();   // [7, 33], column-major
    auto bt = operand<float>({9, 33}, 63).transpose();   // [33, 9], column-major
    check_against_reference(at, bt);
    check_against_reference(at, operand<float>({33, 9}, 64));
    check_against_reference(operand<float>({7, 33}, 65), bt);
    // Large enough that the SIMD kernel packs B instead of reading it in place.
    check_against_reference(operand<float>({257, 33}, 66).transpose(), operand<float>({300, 257}, 67).transpose());
    check_against_reference(operand<double>({33, 7}, 68).transpose(), operand<double>({9, 33}, 69).transpose());
    // transposed matrix x vector and vector x transposed matrix
    check_against_reference(operand<float>({33, 40}, 70).transpose(), operand<float>({33}, 71));
    check_against_reference(operand<float>({33}, 72), operand<float>({40, 33}, 73).transpose());
  }
  SECTION("sliced with steps, including negative ones") {
    auto a = big.slice({ct::range{1, 70, 2}, ct::range{0, 66, 2}});     // [35, 33], both strides > 1
    auto b = big.slice({ct::range{65, std::nullopt, -2}, ct::range{3, 12}});  // [33, 9], reversed rows
    check_against_reference(a, b);
    check_against_reference(b.transpose(), a.transpose());
    auto ad = big_d.slice({ct::range{1, 70, 2}, ct::range{0, 66, 2}});
    auto bd = big_d.slice({ct::range{65, std::nullopt, -2}, ct::range{3, 12}});
    check_against_reference(ad, bd);
    // strided vectors
    check_against_reference(big.select(1, 5).slice(0, 0, 33), a.transpose().slice(1, 0, 9));
    check_against_reference(a, big.select(0, 3).slice(0, 0, 66, 2));
  }
  SECTION("wrapped caller memory with custom strides") {
    std::vector<double> mem(2000);
    for (std::size_t i = 0; i < mem.size(); ++i) mem[i] = std::sin(static_cast<double>(i));
    auto a = ct::wrap(mem.data(), {7, 33}, {40, 1});      // row stride with padding
    auto b = ct::wrap(mem.data() + 300, {33, 9}, {1, 35});  // column-major with padding
    check_against_reference(a, b);
    auto batched = ct::wrap(mem.data(), {3, 7, 33}, {300, 40, 1});
    check_against_reference(batched, b);
  }
}

TEST_CASE("matmul: strided destinations receive exactly their elements", "[matmul]") {
  auto a = operand<float>({33, 7}, 80), b = operand<float>({7, 9}, 81);
  for (const ct::settings& s : all_settings) {
    ct::settings_scope scope(s);
    INFO(describe(s));
    {
      // Every other row and column of a sentinel-filled matrix.
      auto host = ct::full<float>({66, 18}, -99.0f);
      auto dst = host.slice({ct::range{0, 66, 2}, ct::range{1, 18, 2}});
      ct::matmul(a, b, dst);
      CHECK(same_bits(dst, ct::matmul(a, b)));
      // Sentinels untouched.
      index_t sentinels = 0;
      for (index_t i = 0; i < 66; ++i)
        for (index_t j = 0; j < 18; ++j) sentinels += host(i, j) == -99.0f;
      CHECK(sentinels == 66 * 18 - 33 * 9);
      // A transposed destination.
      auto t = ct::zeros<float>({9, 33});
      ct::matmul(a, b, t.transpose());
      CHECK(same_bits(t.transpose(), ct::matmul(a, b)));
      // A strided vector destination.
      auto vhost = ct::full<float>({99}, -1.0f);
      ct::matmul(a, operand<float>({7}, 82), vhost.slice(0, 0, 99, 3));
      CHECK(same_bits(vhost.slice(0, 0, 99, 3), ct::matmul(a, operand<float>({7}, 82))));
      CHECK(vhost(1) == -1.0f);
    }
  }
}

namespace {
template <class A, class B>
concept can_matmul = requires(A a, B b) { ct::matmul(a, b); };
template <class A, class B, class C>
concept can_matmul_into = requires(A a, B b, C c) { ct::matmul(a, b, c); };
template <class A, class B>
concept can_dot = requires(A a, B b) { ct::dot(a, b); };
}  // namespace

TEST_CASE("matmul: mixed element types: no allocating overload; into a destination, unsupported_operation", "[matmul]") {
  // The allocating forms take one element type (the result's); a product of other types can
  // only be written into a destination, whose type is the result type, and runs only through
  // an operation selector (ct/select/selector.hpp): without one it is an error at run time.
  using f = ct::tensor<float>;
  using d = ct::tensor<double>;
  using i = ct::tensor<std::int32_t>;
  STATIC_REQUIRE_FALSE(can_matmul<f, d>);
  STATIC_REQUIRE_FALSE(can_matmul<i, f>);
  STATIC_REQUIRE_FALSE(can_dot<f, d>);
  STATIC_REQUIRE(can_matmul<f, f>);
  STATIC_REQUIRE(can_matmul_into<d, d, d>);
  STATIC_REQUIRE(can_matmul_into<f, f, d>);
  STATIC_REQUIRE(can_dot<i, i>);
  f a({2, 3}), b({3, 2});
  d out({2, 2});
  CHECK_THROWS_AS(ct::matmul(a, b, out), ct::unsupported_operation);
  CHECK_THROWS_AS(ct::matmul(ct::tensor<bool>({2, 2}), ct::tensor<bool>({2, 2})), ct::unsupported_operation);
  // Shapes are still checked first.
  CHECK_THROWS_AS(ct::matmul(a, a, out), ct::shape_error);
}

TEST_CASE("matmul accuracy: k chunks keep a long product's error well below one float chain's",
          "[matmul][accuracy]") {
  // k = 8192: one sequential float chain of FMAs (ct's order before k chunks) has about 8x the
  // error of 128-value chunks added in order (a chain of 128 + 64). Measured on these inputs:
  // see the INFO below; docs/performance.md has sgemm 4096^3 against OpenBLAS.
  const index_t m = 6, n = 40, k = 8192;
  const auto a = ct::random_uniform<float>({m, k}, 91, -1.0f, 1.0f);
  const auto b = ct::random_uniform<float>({k, n}, 92, -1.0f, 1.0f);
  for (const ct::settings& s : mm_test::all_settings) {
    ct::settings_scope scope(s);
    INFO(mm_test::describe(s));
    const auto c = ct::matmul(a, b);
    double max_ref = 0, err_ct = 0, err_chain = 0;
    for (index_t i = 0; i < m; ++i)
      for (index_t j = 0; j < n; ++j) {
        double ref = 0;
        float chain = 0;
        for (index_t p = 0; p < k; ++p) {
          ref += static_cast<double>(a(i, p)) * static_cast<double>(b(p, j));
          chain = std::fma(a(i, p), b(p, j), chain);
        }
        max_ref = std::max(max_ref, std::fabs(ref));
        err_ct = std::max(err_ct, std::fabs(static_cast<double>(c(i, j)) - ref));
        err_chain = std::max(err_chain, std::fabs(static_cast<double>(chain) - ref));
      }
    INFO("max|err| / max|ref|: ct " << err_ct / max_ref << ", one chain " << err_chain / max_ref);
    CHECK(err_ct <= 0.5 * err_chain);
    CHECK(err_ct / max_ref < 1e-6);
  }
}

TEST_CASE("packed operands reuse the block a thread released last, up to the kept limit", "[matmul][allocation]") {
  // Each thread keeps the last large block it released (src/core/big_buffer.hpp): a product of
  // the same shape then packs B into it without allocating; a request under half its size, or
  // a block over 32 MiB, allocates afresh. Seen through the test binary's operator new; run on
  // a fresh thread so no earlier test's block is kept. The tuning is pinned to a 512 KiB L2:
  // with a larger L2 (2 MiB on Xeon 6) a 1 MiB B is read in place, not packed, and there is
  // nothing to keep.
  if (!ct_test::allocation_hooks_active()) {
    WARN("operator new is not replaced in this build (TSan): nothing to observe");
    return;
  }
  std::thread([] {
    ct::tuning_scope tuned(ct::tuning::for_caches(ct::cache_sizes{32 * 1024, 512 * 1024, 8 << 20}));
    REQUIRE(ct::current_tuning().gemm_direct_b_bytes < 512 * 512 * sizeof(float));
    constexpr std::size_t MiB = std::size_t{1} << 20;
    const auto a = ct::random_uniform<float>({64, 512}, 1, -1.0f, 1.0f);
    const auto b1 = ct::random_uniform<float>({512, 512}, 2, -1.0f, 1.0f);  // packed B: 1 MiB
    const auto b2 = ct::random_uniform<float>({512, 512}, 3, -1.0f, 1.0f);
    const auto b_half = ct::random_uniform<float>({512, 288}, 4, -1.0f, 1.0f);   // 576 KiB
    const auto b_small = ct::random_uniform<float>({512, 160}, 5, -1.0f, 1.0f);  // 320 KiB
    // The largest allocation of one product (its 64-row result is at most 128 KiB).
    const auto largest_in_product = [&](const ct::tensor<float>& b) {
      ct_test::largest_allocation = 0;
      const ct::tensor<float> c = ct::matmul(a, b);
      const std::size_t largest = ct_test::largest_allocation;
      CHECK(mm_test::count_bad(c, mm_test::naive_matmul(a, b)) == 0);  // no stale packing
      return largest;
    };
    CHECK(largest_in_product(b1) >= 1 * MiB);
    CHECK(largest_in_product(b2) <= 128 * 1024);      // same shape, other values: the kept block, repacked
    CHECK(largest_in_product(b_half) <= 128 * 1024);  // more than half the kept block: reused
    CHECK(largest_in_product(b_small) >= 320 * 1024);  // under half of it: a block of its own
    // Over the limit (a 2 x 4224 x 2048 product packs 33 MiB of B): never kept.
    const auto a_thin = ct::random_uniform<float>({2, 4224}, 6, -1.0f, 1.0f);
    const auto b_big = ct::random_uniform<float>({4224, 2048}, 7, -1.0f, 1.0f);
    for (int round = 0; round < 2; ++round) {
      ct_test::largest_allocation = 0;
      const ct::tensor<float> c = ct::matmul(a_thin, b_big);
      CHECK(ct_test::largest_allocation >= 33 * MiB);
      CHECK(mm_test::count_bad(c, mm_test::naive_matmul(a_thin, b_big)) == 0);
    }
  }).join();
}
