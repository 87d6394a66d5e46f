// tests/kernels/test_reduce.cpp — the lane-wise sum/product and the max/min with index:
// documented semantics (checked against a naive re-statement), independence from how the
// stream is cut into calls, and bitwise agreement of the scalar and simd backends.
#include <catch2/catch.hpp>
#include <cmath>

#include "kernel_test_util.hpp"
#include "reduce_checks.hpp"

using namespace ct_test_kernels;


TEST_CASE("sum_accumulate: lane semantics, any cut, both backends bitwise", "[kernels]") {
  check_lanes<float, false>();
  check_lanes<double, false>();
}

TEST_CASE("prod_accumulate: lane semantics, any cut, both backends bitwise", "[kernels]") {
  check_lanes<float, true>();
  check_lanes<double, true>();
}

TEST_CASE("sum and prod: init and empty results, special values", "[kernels]") {
  k::lane_accumulator acc;
  k::sum_init(acc);
  CHECK(acc.count == 0);
  CHECK(same_bits(k::sum_result(acc), 0.0));
  k::prod_init(acc);
  CHECK(k::prod_result(acc) == 1.0);
  const float inf = std::numeric_limits<float>::infinity();
  for (const auto& s : all_settings()) {
    std::vector<float> x(100, 1.0f);
    x[57] = inf;
    k::sum_init(acc);
    k::sum_accumulate(acc, x.data(), 100, s);
    CHECK(k::sum_result(acc) == INFINITY);
    x[3] = -inf;
    k::sum_init(acc);
    k::sum_accumulate(acc, x.data(), 100, s);
    CHECK(std::isnan(k::sum_result(acc)));
    // Float values beyond float range are still fine in the double lanes.
    std::vector<float> big(64, 3e38f);
    k::sum_init(acc);
    k::sum_accumulate(acc, big.data(), 64, s);
    CHECK(k::sum_result(acc) == 64 * double(3e38f));
  }
}

TEST_CASE("sum of 1e6 floats stays within the documented bound of the exact sum", "[kernels]") {
  const index_t n = 1000000;
  rng r(99);
  std::vector<float> x(static_cast<size_t>(n));
  long double exact = 0, abs_sum = 0;  // long double: exact enough to judge a double result
  for (auto& v : x) {
    v = static_cast<float>(r.uniform(-1, 1) * std::exp(r.uniform(-5, 5)));
    exact += v;
    abs_sum += std::fabs(static_cast<long double>(v));
  }
  // Each lane adds n/32 terms in double; the tree adds 5 more levels (docs/kernels.md).
  const long double bound = (static_cast<long double>(n) / 32 + 5) * 0x1p-53L * abs_sum;
  for (const auto& s : all_settings()) {
    k::lane_accumulator acc;
    k::sum_init(acc);
    k::sum_accumulate(acc, x.data(), n, s);
    const double got = k::sum_result(acc);
    INFO(describe(s) << " got " << got << " exact " << static_cast<double>(exact));
    CHECK(std::fabs(static_cast<long double>(got) - exact) <= bound);
    // Rounded to float, the result is within one float rounding of that.
    const float gotf = static_cast<float>(got);
    CHECK(std::fabs(static_cast<long double>(gotf) - exact) <=
          bound + std::fabs(exact) * 0x1p-24L);
  }
}


TEST_CASE("max_accumulate: first NaN wins, ties keep the first index, any cut, both backends", "[kernels]") {
  check_extreme<float, true>();
  check_extreme<double, true>();
}

TEST_CASE("min_accumulate: first NaN wins, ties keep the first index, any cut, both backends", "[kernels]") {
  check_extreme<float, false>();
  check_extreme<double, false>();
}

TEST_CASE("unary_sum / sub_unary_sum: (x - u and) a square feeding its sum equal the separate calls bitwise", "[kernels]") {
  // true: some fused kernel was found and checked. The scalar Highway target (a CPU without
  // SSSE3, or CT_SIMD_TARGET=SCALAR) has none: the separate calls run there.
  const bool has_fused = std::string(k::simd_target()) != "SCALAR";
  INFO("target " << k::simd_target());
  CHECK(check_unary_sum<float>() == has_fused);
  CHECK(check_unary_sum<double>() == has_fused);
}

TEST_CASE("max/min: hand-checked cases", "[kernels]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const auto& s : all_settings()) {
    k::extreme_state<float> st;
    k::extreme_init(st);
    CHECK(st.index == -1);
    const float a[5] = {-0.0f, 3.0f, 0.0f, 3.0f, 1.0f};
    k::max_accumulate(st, a, 5, 10, s);
    CHECK((st.value == 3.0f && st.index == 11));
    k::extreme_init(st);
    k::min_accumulate(st, a, 5, 10, s);
    CHECK((same_bits(st.value, -0.0f) && st.index == 10));  // -0 first; +0 ties
    const float b[3] = {5.0f, nan, 7.0f};
    k::max_accumulate(st, b, 3, 15, s);
    CHECK((std::isnan(st.value) && st.index == 16));
    const float c[2] = {nan, -100.0f};
    k::min_accumulate(st, c, 2, 18, s);  // an earlier NaN stays
    CHECK(st.index == 16);
  }
}
