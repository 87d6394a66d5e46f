// Elementwise expressions: every operation against a double reference, broadcasting, scalars,
// strided and foreign operands and destinations, and the errors raised before any work.
#include <catch2/catch.hpp>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "ct/ct.hpp"
#include "support/executor_zoo.hpp"
#include "support/reference.hpp"

using ct::dims;
using ct::index_t;

namespace {

// Checks a unary function against a double reference on values in [lo, hi].
template <class T, class Expr, class Ref>
void check_unary(Expr expr, Ref ref, T lo, T hi, double tol, const char* name) {
  auto x = ct::random_uniform<T>({3, 37}, 11, lo, hi);
  for (ct::backend b : {ct::backend::scalar, ct::backend::simd}) {
    ct::backend_scope scope(b);
    auto y = ct::eval(expr(x));
    auto xv = ct_test::values(x), yv = ct_test::values(y);
    std::vector<double> want;
    for (double v : xv) want.push_back(ref(v));
    INFO(name << " backend " << (b == ct::backend::scalar ? "scalar" : "simd"));
    CHECK(ct_test::max_rel_error(yv, want, 1e-6) <= tol);
  }
}

}  // namespace

TEST_CASE("expr: nothing is computed until eval", "[expr]") {
  auto x = ct::from_list<float>({1, 2, 3});
  auto e = x * 2.0f + 1.0f;
  x(0) = 10.0f;  // the expression holds x by handle: it sees the change
  auto y = ct::eval(e);
  CHECK(y(0) == 21.0f);
  CHECK(y(2) == 7.0f);
  ct::tensor<float> z = e;  // conversion evaluates too
  CHECK(z(1) == 5.0f);
}

TEST_CASE("expr: arithmetic with broadcasting and scalars", "[expr]") {
  auto a = ct::random_uniform<double>({4, 1, 5}, 1, -2, 2);
  auto b = ct::random_uniform<double>({3, 1}, 2, 0.5, 2);
  auto y = ct::eval((a + b) * a - b / 2.0 + (-a));
  REQUIRE(y.shape() == dims{4, 3, 5});
  for (index_t i = 0; i < 4; ++i)
    for (index_t j = 0; j < 3; ++j)
      for (index_t k = 0; k < 5; ++k) {
        double av = a(i, 0, k), bv = b(j, 0);
        CHECK(y(i, j, k) == Approx((av + bv) * av - bv / 2.0 - av).epsilon(1e-12));
      }
  auto i32 = ct::from_list<int>({7, -7, 9});
  auto q = ct::eval(i32 / 2 + i32 * 3 - 1);
  CHECK(ct::equal(q, ct::from_list<int>({7 / 2 + 21 - 1, -7 / 2 - 21 - 1, 4 + 27 - 1})));
  CHECK_THROWS_AS(ct::eval(i32 / 0), ct::error);  // integer division by zero is an error, not UB
}

TEST_CASE("expr: unary functions match double references", "[expr]") {
  const double ft = 4e-6, dt = 1e-13;
  check_unary<float>([](auto& x) { return ct::exp(x); }, [](double v) { return std::exp(v); }, -80.0f, 80.0f, ft, "exp");
  check_unary<float>([](auto& x) { return ct::expm1(x); }, [](double v) { return std::expm1(v); }, -3.0f, 3.0f, ft, "expm1");
  check_unary<float>([](auto& x) { return ct::log(x); }, [](double v) { return std::log(v); }, 1e-3f, 1e3f, ft, "log");
  check_unary<float>([](auto& x) { return ct::log1p(x); }, [](double v) { return std::log1p(v); }, -0.5f, 10.0f, ft, "log1p");
  check_unary<float>([](auto& x) { return ct::sin(x); }, [](double v) { return std::sin(v); }, -6.0f, 6.0f, 2e-5, "sin");
  check_unary<float>([](auto& x) { return ct::cos(x); }, [](double v) { return std::cos(v); }, -6.0f, 6.0f, 2e-5, "cos");
  check_unary<float>([](auto& x) { return ct::tanh(x); }, [](double v) { return std::tanh(v); }, -9.0f, 9.0f, ft, "tanh");
  check_unary<float>([](auto& x) { return ct::sigmoid(x); }, [](double v) { return 1 / (1 + std::exp(-v)); }, -20.0f, 20.0f, ft, "sigmoid");
  check_unary<float>([](auto& x) { return ct::sqrt(x); }, [](double v) { return std::sqrt(v); }, 0.0f, 100.0f, ft, "sqrt");
  check_unary<float>([](auto& x) { return ct::rsqrt(x); }, [](double v) { return 1 / std::sqrt(v); }, 0.01f, 100.0f, ft, "rsqrt");
  check_unary<float>([](auto& x) { return ct::relu(x); }, [](double v) { return v > 0 ? v : 0.0; }, -3.0f, 3.0f, 0, "relu");
  check_unary<float>([](auto& x) { return ct::silu(x); }, [](double v) { return v / (1 + std::exp(-v)); }, -8.0f, 8.0f, ft, "silu");
  check_unary<float>(
      [](auto& x) { return ct::gelu(x); },
      [](double v) { return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))); }, -6.0f, 6.0f,
      ft, "gelu");
  check_unary<float>([](auto& x) { return ct::abs(x) + ct::square(x); }, [](double v) { return std::fabs(v) + v * v; },
                     -3.0f, 3.0f, 1e-7, "abs+square");
  check_unary<double>([](auto& x) { return ct::exp(x); }, [](double v) { return std::exp(v); }, -700.0, 700.0, dt, "exp");
  check_unary<double>([](auto& x) { return ct::log(x); }, [](double v) { return std::log(v); }, 1e-9, 1e9, dt, "log");
  check_unary<double>([](auto& x) { return ct::tanh(x); }, [](double v) { return std::tanh(v); }, -5.0, 5.0, dt, "tanh");
  check_unary<double>([](auto& x) { return ct::pow(x, 1.5); }, [](double v) { return std::pow(v, 1.5); }, 0.0, 10.0, dt, "pow");
}

TEST_CASE("expr: comparisons, logic, where, clamp, cast", "[expr]") {
  auto x = ct::from_list<float>({-2.0f, -0.5f, 0.0f, 0.5f, 2.0f});
  auto pos = ct::eval(x > 0.0f);
  CHECK(ct::equal(pos, ct::from_list<bool>({false, false, false, true, true})));
  CHECK(ct::equal(ct::eval(x == 0.0f || x <= -2.0f), ct::from_list<bool>({true, false, true, false, false})));
  CHECK(ct::equal(ct::eval(!(x != 0.5f) && x >= 0.0f), ct::from_list<bool>({false, false, false, true, false})));
  CHECK(ct::equal(ct::eval(ct::where(x < 0.0f, -x, x * 10.0f)), ct::from_list<float>({2.0f, 0.5f, 0.0f, 5.0f, 20.0f})));
  CHECK(ct::equal(ct::eval(ct::clamp(x, -1.0f, 1.0f)), ct::from_list<float>({-1.0f, -0.5f, 0.0f, 0.5f, 1.0f})));
  CHECK(ct::equal(ct::eval(ct::maximum(x, 0.0f) + ct::minimum(x, 0.0f)), x));
  auto f = ct::from_list<double>({-2.7, 2.7, 1e30, std::nan("")});
  CHECK(ct::equal(ct::eval(ct::cast<int>(f)), ct::from_list<int>({-2, 2, 2147483647, 0})));
  CHECK(ct::equal(ct::eval(ct::cast<bool>(ct::cast<int>(f))), ct::from_list<bool>({true, true, true, false})));
  CHECK(ct::equal(ct::eval(ct::cast<float>(ct::from_list<int>({3, -4}))), ct::from_list<float>({3.0f, -4.0f})));
  auto nan = ct::from_list<float>({std::nanf(""), 1.0f});
  auto m = ct::eval(ct::maximum(nan, 0.0f));
  CHECK(std::isnan(m(0)));  // NaN propagates through maximum
}

TEST_CASE("expr: two-operand min/max, pow, reciprocal and muladd against references, with broadcasting", "[expr]") {
  auto a = ct::random_uniform<float>({6, 37}, 11, -3.0f, 3.0f);
  auto b = ct::random_uniform<float>({37}, 12, -3.0f, 3.0f);  // broadcast along rows
  a(1, 3) = b(3);                                             // a tie
  const auto mx = ct::eval(ct::maximum(a, b)), mn = ct::eval(ct::minimum(a, b));
  const auto mx2 = ct::eval(ct::max(a, b)), mn2 = ct::eval(ct::min(b, a));  // the two-operand overloads
  auto base = ct::random_uniform<float>({6, 37}, 13, 0.1f, 4.0f), expo = ct::random_uniform<float>({6, 37}, 14, -2.0f, 2.0f);
  const auto pw = ct::eval(ct::pow(base, expo)), pws = ct::eval(ct::pow(base, 0.5f)), rc = ct::eval(ct::reciprocal(base));
  const auto ma = ct::eval(ct::muladd(a, base, b));
  for (index_t i = 0; i < 6; ++i)
    for (index_t j = 0; j < 37; ++j) {
      const double x = a(i, j), y = b(j), p = base(i, j), e = expo(i, j);
      CHECK(mx(i, j) == std::max(x, y));
      CHECK(mn(i, j) == std::min(x, y));
      CHECK(mx2(i, j) == mx(i, j));
      CHECK(mn2(i, j) == mn(i, j));
      // 4 ulp (the kernels' promise) of the result; pow's ulp grows with |e·log p|.
      CHECK(std::fabs(pw(i, j) - std::pow(p, e)) <= (4 + std::fabs(e * std::log(p))) * std::ldexp(1.0, -23) * std::pow(p, e));
      CHECK(std::fabs(pws(i, j) - std::sqrt(p)) <= 4 * std::ldexp(1.0, -23) * std::sqrt(p));
      CHECK(std::fabs(rc(i, j) - 1 / p) <= std::ldexp(1.0, -24) / p);  // correctly rounded division
      CHECK(std::fabs(ma(i, j) - (x * p + y)) <= std::ldexp(1.0, -23) * (std::fabs(x * p) + std::fabs(y)));
    }
  // NaN propagates through both (NumPy's maximum/minimum), in either operand.
  auto n = ct::from_list<double>({std::nan(""), 1.0, 2.0});
  auto o = ct::from_list<double>({0.0, std::nan(""), 3.0});
  auto nx = ct::eval(ct::maximum(n, o)), nn = ct::eval(ct::minimum(n, o));
  CHECK((std::isnan(nx(0)) && std::isnan(nx(1)) && nx(2) == 3.0));
  CHECK((std::isnan(nn(0)) && std::isnan(nn(1)) && nn(2) == 2.0));
}

TEST_CASE("expr: a plain number adopts the tensor's element type", "[expr]") {
  auto x = ct::random_uniform<float>({50}, 15, -10.0f, 10.0f);
  auto by_double = ct::eval(x * 0.1);  // 0.1 becomes 0.1f: float arithmetic, float result
  static_assert(std::is_same_v<decltype(by_double), ct::tensor<float>>);
  CHECK(ct_test::bitwise_equal(by_double, ct::eval(x * 0.1f)));
  for (index_t i = 0; i < 50; ++i) CHECK(by_double(i) == x(i) * 0.1f);  // not the double product rounded
  auto by_int = ct::eval(2 - x);
  static_assert(std::is_same_v<decltype(by_int), ct::tensor<float>>);
  CHECK(ct_test::bitwise_equal(by_int, ct::eval(2.0f - x)));
  auto i = ct::from_list<std::int64_t>({1, 2, 3});
  auto shifted = ct::eval(i * 3 + 1);
  static_assert(std::is_same_v<decltype(shifted), ct::tensor<std::int64_t>>);
  CHECK(ct::equal(shifted, ct::from_list<std::int64_t>({4, 7, 10})));
}

TEST_CASE("expr: map runs user functors with broadcasting", "[expr]") {
  auto a = ct::from_list<float>({{1, 2, 3}, {4, 5, 6}});
  auto b = ct::from_list<int>({10, 20, 30});
  auto y = ct::eval(ct::map([](float u, int v) { return static_cast<double>(u) * v + 0.5; }, a, b));
  STATIC_REQUIRE(std::is_same_v<decltype(y), ct::tensor<double>>);
  CHECK(y(1, 2) == 180.5);
  CHECK(y(0, 0) == 10.5);
}

// Copies of one ct::map node (softmax uses its argument four times) are one call per element,
// as identical sub-expressions are computed once; separate ct::map calls are not merged.
TEST_CASE("expr: a map node used several times runs once per element", "[expr]") {
  auto x = ct::random_uniform<float>({4, 10}, 12, -2.0f, 2.0f);
  std::atomic<int> calls{0};
  auto counted = [&calls](float v) {
    ++calls;
    return v * 0.5f;
  };
  auto m = ct::map(counted, x);
  auto got = ct::eval(ct::softmax(m, -1));
  CHECK(calls == 40);
  auto want = ct::eval(ct::softmax(x * 0.5f, -1));
  CHECK(ct_test::bitwise_equal(got, want));

  calls = 0;
  auto twice = ct::eval(ct::max(m, -1) + ct::max(m, -1));
  CHECK(calls == 40);
  for (index_t r = 0; r < 4; ++r) {
    float mx = -INFINITY;
    for (index_t c = 0; c < 10; ++c) mx = std::max(mx, x(r, c) * 0.5f);
    CHECK(twice(r, 0) == 2 * mx);  // inside an expression a reducer keeps its axis: [4, 1]
  }

  // One value per row ([4, 1] operand): once per group.
  calls = 0;
  auto rscale = ct::random_uniform<float>({4, 1}, 13, 0.5f, 1.5f);
  ct::eval(ct::softmax(x * ct::map(counted, rscale), -1));
  CHECK(calls == 4);

  // Two ct::map calls are two functors, even with equal arguments.
  calls = 0;
  ct::eval(ct::map(counted, x) + ct::map(counted, x));
  CHECK(calls == 80);
}

// Identical constants are merged, by bit pattern: -0.0 is not +0.0.
TEST_CASE("expr: the constants -0 and +0 stay distinct", "[expr]") {
  auto x = ct::full<float>(dims{40}, 1.0f);
  for (ct::fma_policy f : {ct::fma_policy::fused, ct::fma_policy::separate}) {
    ct::fma_scope scope(f);
    auto a = ct::eval(x * 0.0f + 1.0f / (x * -0.0f));
    CHECK(a(0) == -INFINITY);
    CHECK(a(39) == -INFINITY);
    auto b = ct::eval(1.0f / (x * 0.0f) + 1.0f / (x * -0.0f));  // +inf + -inf
    CHECK(std::isnan(b(0)));
    auto c = ct::eval(ct::where(x < 0.0f, x * 0.0f, -0.0f));  // the second branch: -0
    CHECK(c(0) == 0.0f);
    CHECK(std::signbit(c(0)));
  }
}

TEST_CASE("expr: strided, transposed, broadcast and foreign operands and destinations", "[expr]") {
  auto m = ct::random_uniform<float>({6, 8}, 3, -1, 1);
  auto t = m.transpose();                     // [8, 6], non-contiguous
  auto s = m.slice({{1, {}, 2}, {{}, {}, -3}});  // [3, 3], negative step
  std::vector<float> mem(8 * 6 * 2, -7.0f);
  auto dest = ct::wrap(mem.data(), {8, 6}, {12, 2});  // foreign, every other float
  ct::eval(t * 2.0f + ct::from_list<float>({1, 2, 3, 4, 5, 6}), dest);
  for (index_t i = 0; i < 8; ++i)
    for (index_t j = 0; j < 6; ++j) CHECK(dest(i, j) == m(j, i) * 2.0f + static_cast<float>(j + 1));
  CHECK(mem[1] == -7.0f);  // the gaps are untouched
  auto y = ct::eval(s - s.transpose());
  for (index_t i = 0; i < 3; ++i)
    for (index_t j = 0; j < 3; ++j) CHECK(y(i, j) == s(i, j) - s(j, i));
}

TEST_CASE("expr: invalid input raises before anything is written", "[expr]") {
  auto a = ct::zeros<float>(dims{3, 4});
  auto b = ct::zeros<float>(dims{5});
  CHECK_THROWS_WITH(a + b, Catch::Contains("operator+") && Catch::Contains("[3, 4]") && Catch::Contains("[5]"));
  CHECK_THROWS_AS(a + b, ct::shape_error);
  CHECK_THROWS_WITH(a < b, Catch::Contains("operator<") && Catch::Contains("[3, 4]") && Catch::Contains("[5]"));
  CHECK_THROWS_WITH(ct::maximum(a, b), Catch::Contains("maximum"));
  // The named operations check their axis under their own name, with the shape.
  CHECK_THROWS_WITH(ct::softmax(a, 5), Catch::Contains("ct::softmax") && Catch::Contains("[3, 4]"));
  CHECK_THROWS_WITH(ct::log_softmax(a, -3), Catch::Contains("ct::log_softmax") && Catch::Contains("[3, 4]"));
  CHECK_THROWS_WITH(ct::layer_norm(a, 2, 1e-5f), Catch::Contains("ct::layer_norm") && Catch::Contains("[3, 4]"));
  CHECK_THROWS_WITH(ct::rms_norm(a, 7, 1e-5f), Catch::Contains("ct::rms_norm") && Catch::Contains("[3, 4]"));
  CHECK_THROWS_WITH(ct::logsumexp(a, 2), Catch::Contains("ct::logsumexp") && Catch::Contains("[3, 4]"));
  CHECK_THROWS_WITH(ct::sum(a, -3), Catch::Contains("ct::sum") && Catch::Contains("[3, 4]"));
  CHECK_THROWS_AS(ct::softmax(a, 5), ct::axis_error);
  auto dest = ct::full<float>(dims{4, 3}, 9.0f);
  CHECK_THROWS_WITH(ct::eval(a + 1.0f, dest), Catch::Contains("[4, 3]") && Catch::Contains("[3, 4]"));
  auto wrong = ct::full<double>(dims{3, 4}, 9.0);
  CHECK_THROWS_AS(ct::eval(a + 1.0f, wrong), ct::dtype_error);
  CHECK(ct::equal(wrong, ct::full<double>(dims{3, 4}, 9.0)));
  auto bcast = ct::zeros<float>(dims{4}).broadcast_to({3, 4});
  CHECK_THROWS_WITH(ct::eval(a + 1.0f, bcast), Catch::Contains("broadcast view"));
  // A destination whose elements share memory through overlapping strides (element (i, j) at
  // i + j): groups would race on them; rejected before anything is written.
  std::vector<float> mem(64, 7.0f);
  auto overlapping = ct::wrap(mem.data(), {4, 4}, {1, 1});
  auto sq = ct::random_uniform<float>({4, 4}, 3);
  CHECK_THROWS_WITH(ct::eval(ct::softmax(sq, -1), overlapping), Catch::Contains("[4, 4]") && Catch::Contains("[1, 1]"));
  CHECK_THROWS_AS(ct::eval(sq + 1.0f, overlapping), ct::shape_error);
  CHECK(std::all_of(mem.begin(), mem.end(), [](float v) { return v == 7.0f; }));
}

TEST_CASE("expr: a*b+c follows the FMA policy", "[expr]") {
  // a*b exactly is 1 + 2^-11 + 2^-24 (not a float); c = -(1 + 2^-11). Fused keeps the 2^-24,
  // separate rounds the product to 1 + 2^-11 (ties to even) first and gets 0.
  const float a0 = 1.0f + std::ldexp(1.0f, -12), b0 = 1.0f + std::ldexp(1.0f, -12);
  auto a = ct::full<float>(dims{37}, a0), b = ct::full<float>(dims{37}, b0);
  auto c = ct::full<float>(dims{37}, -(1.0f + std::ldexp(1.0f, -11)));
  for (ct::backend be : {ct::backend::scalar, ct::backend::simd}) {
    ct::settings_scope s({be, ct::fma_policy::fused});
    auto fused = ct::eval(a * b + c);
    CHECK(fused(36) == std::ldexp(1.0f, -24));
    auto fused2 = ct::eval(c + a * b);  // either operand order
    CHECK(fused2(0) == std::ldexp(1.0f, -24));
    ct::fma_scope sep(ct::fma_policy::separate);
    auto separate = ct::eval(a * b + c);
    CHECK(separate(36) == 0.0f);
    CHECK(ct::eval(ct::muladd(a, b, c))(5) == 0.0f);
  }
}

// erf and erfc (the exact form of GELU) through the expression engine: within the 4 ulp the
// kernels document (docs/kernels.md), on both backends and FMA policies, float and double,
// against the C library's long double functions.
TEST_CASE("expr: erf and erfc within 4 ulp on every backend", "[expr]") {
  auto check = [](auto tag) {
    using T = decltype(tag);
    std::vector<T> xs;
    for (int i = -4000; i <= 4000; ++i) xs.push_back(static_cast<T>(i) / T(400));  // [-10, 10]
    for (T v : {T(0), T(-0.0), T(1e-30), T(-1e-30), T(26), T(-26), std::numeric_limits<T>::infinity(),
                -std::numeric_limits<T>::infinity()})
      xs.push_back(v);
    auto x = ct::from_vector<T>(xs);
    for (ct::backend b : {ct::backend::scalar, ct::backend::simd})
      for (ct::fma_policy f : {ct::fma_policy::fused, ct::fma_policy::separate}) {
        ct::settings_scope s({b, f});
        const auto e = ct::eval(ct::erf(x)), c = ct::eval(ct::erfc(x));
        for (std::size_t i = 0; i < xs.size(); ++i) {
          const long double v = xs[i];
          const long double re = std::erf(v), rc = std::erfc(v);
          // One ulp of the reference's magnitude (the smallest normal spacing below it).
          auto ulp = [](long double r) {
            const T m = std::max(static_cast<T>(std::fabs(r)), std::numeric_limits<T>::min());
            return static_cast<long double>(std::nextafter(m, std::numeric_limits<T>::infinity()) - m);
          };
          INFO("x = " << xs[i] << (b == ct::backend::simd ? " simd" : " scalar") << (f == ct::fma_policy::fused ? " fused" : " separate"));
          CHECK(std::fabs(static_cast<long double>(e(static_cast<index_t>(i))) - re) <= 4 * ulp(re));
          CHECK(std::fabs(static_cast<long double>(c(static_cast<index_t>(i))) - rc) <= 4 * ulp(rc));
        }
        CHECK(std::signbit(e(static_cast<index_t>(xs.size() - 7))));  // erf(-0) = -0
      }
  };
  check(float{});
  check(double{});
}

// Found by fuzz/expr_fuzz (docs/reliability.md): when every operand of an expression is
// broadcast along the reduced axes (or, without reducers, along every axis), its value is one
// per group — and ct wrote that one value once per group, leaving the rest of a destination
// that runs along those axes untouched (ct::eval(broadcast scalar + 1) wrote one element of
// [4, 5]; softmax of a broadcast view one element per row).
TEST_CASE("regression (expr fuzzer): a value constant along the reduced axes is written at every position",
          "[expr][regression]") {
  ct::tensor<float> column({4, 1});
  for (index_t i = 0; i < 4; ++i) column(i, 0) = static_cast<float>(i) - 1.5f;
  const auto x = column.broadcast_to({4, 5});  // strides [1, 0]
  ct::tensor<float> one({1, 1});
  one(0, 0) = 2.0f;
  const auto s = one.broadcast_to({4, 5});  // strides [0, 0]
  ct::tensor<float> row({1, 5});
  for (index_t j = 0; j < 5; ++j) row(0, j) = static_cast<float>(j) * 0.5f;
  const auto y = row.broadcast_to({4, 5});  // strides [0, 1]
  ct_test::executor_zoo zoo;
  for (auto& [name, exec] : zoo.all()) {
    ct::executor_scope scope(exec);
    INFO(name);
    const auto check = [&](auto&& expr, auto want) {
      ct::tensor<float> d({4, 5});
      d.fill(-7.0f);
      ct::eval(expr, d);
      for (index_t i = 0; i < 4; ++i)
        for (index_t j = 0; j < 5; ++j) CHECK(d(i, j) == want(i, j));
      // and into a transposed view, a bfloat16 destination
      ct::tensor<float> t({5, 4});
      t.fill(-7.0f);
      ct::eval(expr, t.transpose());
      for (index_t i = 0; i < 4; ++i)
        for (index_t j = 0; j < 5; ++j) CHECK(t(j, i) == want(i, j));
      ct::tensor<ct::bfloat16> b({4, 5});
      ct::eval(ct::cast<ct::bfloat16>(expr), b);
      for (index_t i = 0; i < 4; ++i)
        for (index_t j = 0; j < 5; ++j) CHECK(static_cast<float>(b(i, j)) == static_cast<float>(ct::bfloat16(want(i, j))));
    };
    check(s + 1.0f, [](index_t, index_t) { return 3.0f; });                 // no reducers
    check(ct::softmax(x, -1), [](index_t, index_t) { return 0.2f; });        // row mode
    check(x - ct::mean(x, -1) + x, [&](index_t i, index_t) { return column(i, 0); });
    check(ct::softmax(y, 0), [](index_t, index_t) { return 0.25f; });  // column mode (axis 0)
    check(y - ct::mean(y, 0) + y, [&](index_t, index_t j) { return row(0, j); });
    check(x - ct::max(s, 0), [&](index_t i, index_t) { return column(i, 0) - 2.0f; });
    // A functor stages the results (ct::map): the staged copy has every position too.
    check(ct::map([](float v) { return v * 2.0f; }, s), [](index_t, index_t) { return 4.0f; });
    check(ct::softmax(ct::map([](float v) { return v; }, x), -1), [](index_t, index_t) { return 0.2f; });
  }
}
