// Every reducer over every kind of axis set against a naive loop; the documented accuracy
// bounds of logsumexp, log_softmax, softmax and the norms, in float and double; the errors
// for reducers that cannot share an expression; reducers and sub-expressions merged when
// written twice; empty axes for every reducer.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "ct/ct.hpp"
#include "support/reference.hpp"

using ct::dims;
using ct::index_t;

namespace {

// The elements of each group of `shape` reduced over `axes` (sorted, non-negative), the groups
// in row-major order of the retained coordinates and each group's elements in row-major order
// of the reduced coordinates (flat order visits them that way).
std::vector<std::vector<double>> groups_of(const std::vector<double>& v, const dims& shape, const std::vector<int>& axes) {
  const int rank = shape.size();
  std::vector<char> reduced(static_cast<std::size_t>(rank), 0);
  for (int a : axes) reduced[static_cast<std::size_t>(a)] = 1;
  index_t count = 1;
  for (int a = 0; a < rank; ++a)
    if (!reduced[static_cast<std::size_t>(a)]) count *= shape[a];
  std::vector<std::vector<double>> out(static_cast<std::size_t>(count));
  std::vector<index_t> coord(static_cast<std::size_t>(rank), 0);
  for (std::size_t flat = 0; flat < v.size(); ++flat) {
    index_t g = 0;
    for (int a = 0; a < rank; ++a)
      if (!reduced[static_cast<std::size_t>(a)]) g = g * shape[a] + coord[static_cast<std::size_t>(a)];
    out[static_cast<std::size_t>(g)].push_back(v[flat]);
    for (int a = rank - 1; a >= 0; --a) {  // next coordinate, row-major
      if (++coord[static_cast<std::size_t>(a)] < shape[a]) break;
      coord[static_cast<std::size_t>(a)] = 0;
    }
  }
  return out;
}

dims result_shape(const dims& shape, const std::vector<int>& axes, bool keepdims) {
  dims out;
  for (int a = 0; a < shape.size(); ++a) {
    const bool r = std::find(axes.begin(), axes.end(), a) != axes.end();
    if (!r) out.push_back(shape[a]);
    else if (keepdims) out.push_back(1);
  }
  return out;
}

double naive_sum(const std::vector<double>& g) {
  double s = 0;
  for (double x : g) s += x;
  return s;
}
double abs_sum(const std::vector<double>& g) {
  double s = 0;
  for (double x : g) s += std::fabs(x);
  return s;
}
long double naive_logsumexp(const std::vector<double>& g) {
  long double m = g[0];
  for (double x : g) m = std::max<long double>(m, x);
  long double s = 0;
  for (double x : g) s += std::exp(static_cast<long double>(x) - m);
  return m + std::log(s);
}

// One case: ct's result for (axes as written, keepdims) and the axes normalised.
struct axis_case {
  dims written;                  // as passed to ct (negative allowed; {} = every axis)
  std::vector<int> normalised;   // sorted, non-negative
};

template <class T>
void check_every_reducer(const ct::tensor<T>& x, const std::vector<axis_case>& cases, double u) {
  const auto v = ct_test::values(x);
  for (const axis_case& c : cases) {
    for (bool keep : {false, true}) {
      INFO("axes " << c.written.str() << " of " << x.shape().str() << (keep ? ", keepdims" : ""));
      const auto groups = groups_of(v, x.shape(), c.normalised);
      const dims want_shape = result_shape(x.shape(), c.normalised, keep);
      const auto sum = ct::eval(ct::sum(x, c.written, keep));
      const auto factors = ct::eval(x / T(8) + T(1));  // in [0.875, 1.125]
      const auto prod = ct::eval(ct::prod(factors, c.written, keep));
      const auto mean = ct::eval(ct::mean(x, c.written, keep));
      const auto mx = ct::eval(ct::max(x, c.written, keep));
      const auto mn = ct::eval(ct::min(x, c.written, keep));
      const auto amx = ct::eval(ct::argmax(x, c.written, keep));
      const auto amn = ct::eval(ct::argmin(x, c.written, keep));
      const auto lse = ct::eval(ct::logsumexp(x, c.written, keep));
      const auto all = ct::eval(ct::all(x > T(-0.9), c.written, keep));
      const auto any = ct::eval(ct::any(x > T(0.9), c.written, keep));
      for (const dims& s : {sum.shape(), prod.shape(), mean.shape(), mx.shape(), mn.shape(), amx.shape(), amn.shape(), lse.shape(),
                            all.shape(), any.shape()})
        REQUIRE(s == want_shape);
      const auto sv = ct_test::values(sum), pv = ct_test::values(prod), mv = ct_test::values(mean), xv = ct_test::values(mx),
                 nv = ct_test::values(mn), av = ct_test::values(amx), iv = ct_test::values(amn), lv = ct_test::values(lse),
                 allv = ct_test::values(all), anyv = ct_test::values(any);
      for (std::size_t gi = 0; gi < groups.size(); ++gi) {
        const auto& g = groups[gi];
        INFO("group " << gi << " of " << g.size() << " elements");
        const double n = static_cast<double>(g.size());
        // Sum and mean: the documented lane bound plus the final rounding(s).
        const double s = naive_sum(g), lane = (n / 32 + 5) * std::ldexp(1.0, -53) * abs_sum(g);
        CHECK(std::fabs(sv[gi] - s) <= lane + u * std::fabs(s));
        CHECK(std::fabs(mv[gi] - s / n) <= lane / n + 2 * u * std::fabs(s / n));
        // Product of the factors (as rounded in T): one rounding per factor in double, then one
        // to T.
        long double p = 1;
        for (double x_i : g) p *= static_cast<T>(static_cast<T>(x_i) / T(8) + T(1));
        CHECK(std::fabs(pv[gi] - p) <= (n * std::ldexp(1.0, -53) + u) * std::fabs(p));
        // max/min exactly; the first position of the extreme (row-major over the reduced axes).
        std::size_t hi = 0, lo = 0;
        for (std::size_t k = 1; k < g.size(); ++k) {
          if (g[k] > g[hi]) hi = k;
          if (g[k] < g[lo]) lo = k;
        }
        CHECK(xv[gi] == g[hi]);
        CHECK(nv[gi] == g[lo]);
        CHECK(av[gi] == static_cast<double>(hi));
        CHECK(iv[gi] == static_cast<double>(lo));
        // logsumexp: its documented bound (docs/expressions.md, Accuracy).
        const long double L = naive_logsumexp(g);
        CHECK(std::fabs(lv[gi] - L) <= u * (std::fabs(static_cast<double>(L)) + 9 * (1 + std::log(n))));
        bool a = true, y = false;
        for (double x_i : g) a = a && x_i > -0.9, y = y || x_i > 0.9;
        CHECK(allv[gi] == (a ? 1.0 : 0.0));
        CHECK(anyv[gi] == (y ? 1.0 : 0.0));
      }
    }
  }
}

}  // namespace

TEST_CASE("reduce: every reducer over one axis, several, negative and all axes matches a naive loop, keepdims or not", "[reduce]") {
  SECTION("double, 3x4x5") {
    auto x = ct::random_uniform<double>({3, 4, 5}, 41, -1.0, 1.0);
    x(1, 2, 3) = x(1, 0, 3);  // a tie in the groups that contain both
    check_every_reducer(x,
                        {{{0}, {0}}, {{1}, {1}}, {{-1}, {2}}, {{0, 2}, {0, 2}}, {{-3, -2}, {0, 1}}, {{2, 1}, {1, 2}},
                         {{0, 1, 2}, {0, 1, 2}}, {{}, {0, 1, 2}}},
                        std::ldexp(1.0, -53));
  }
  SECTION("float, 5x6x70 (rows of several vectors, retained axes contiguous over axis 0)") {
    auto x = ct::random_uniform<float>({5, 6, 70}, 42, -1.0f, 1.0f);
    check_every_reducer(x, {{{0}, {0}}, {{1}, {1}}, {{2}, {2}}, {{0, 2}, {0, 2}}, {{-1, -2}, {1, 2}}, {{}, {0, 1, 2}}},
                        std::ldexp(1.0, -24));
  }
  SECTION("float, a transposed view") {
    auto x = ct::random_uniform<float>({40, 3, 9}, 43, -1.0f, 1.0f).transpose();  // 9x3x40, strided
    check_every_reducer(x, {{{0}, {0}}, {{-1}, {2}}, {{0, 1}, {0, 1}}, {{}, {0, 1, 2}}}, std::ldexp(1.0, -24));
  }
  // The whole-tensor overloads without an axis argument are the same as dims{}.
  auto x = ct::random_uniform<float>({4, 9}, 44, -1.0f, 1.0f);
  CHECK(ct_test::bitwise_equal(ct::eval(ct::sum(x)), ct::eval(ct::sum(x, dims{}))));
  CHECK(ct_test::bitwise_equal(ct::eval(ct::logsumexp(x)), ct::eval(ct::logsumexp(x, dims{0, 1}))));
  CHECK(ct::eval(ct::argmin(x)).shape() == dims{});
  CHECK(ct::eval(ct::mean(x, dims{}, true)).shape() == dims{1, 1});
}

namespace {

// Documented bounds (docs/expressions.md, Accuracy); u = 2^-24 (float) or 2^-53 (double),
// references in long double.
template <class T>
void check_documented_bounds() {
  const double u = std::ldexp(1.0, -std::numeric_limits<T>::digits);
  const double floor = sizeof(T) == 4 ? 1e-44 : 1e-320;  // subnormal probabilities
  for (index_t n : {index_t{1}, index_t{2}, index_t{5}, index_t{100}, index_t{1030}, index_t{4100}}) {
    for (double scale : {1.0, 80.0}) {
      for (double offset : {0.0, 10.0, 1000.0}) {
        const index_t R = 3;
        auto x = ct::eval(ct::random_uniform<T>({R, n}, static_cast<std::uint64_t>(n) + 50, T(-scale), T(scale)) + T(offset));
        auto w = ct::random_uniform<T>({n}, 51, T(0.5), T(1.5)), b = ct::random_uniform<T>({n}, 52, T(-1), T(1));
        const auto lse = ct::eval(ct::logsumexp(x, -1));
        const auto lsm = ct::eval(ct::log_softmax(x, -1));
        const auto sm = ct::eval(ct::softmax(x, -1));
        const auto ln = ct::eval(ct::layer_norm(x, -1, T(1e-5), w, b));
        const auto ln0 = ct::eval(ct::layer_norm(x, -1, T(1e-5)));
        const auto rms = ct::eval(ct::rms_norm(x, -1, T(1e-5), w));
        INFO((sizeof(T) == 4 ? "float" : "double") << ", n " << n << ", values in " << offset << " ± " << scale);
        for (index_t r = 0; r < R; ++r) {
          long double m = x(r, 0), s = 0, mu = 0, mean_abs = 0, sq = 0, var = 0;
          for (index_t i = 1; i < n; ++i) m = std::max<long double>(m, x(r, i));
          for (index_t i = 0; i < n; ++i) {
            const long double xi = x(r, i);
            s += std::exp(xi - m);
            mu += xi;
            mean_abs += std::fabs(xi);
            sq += xi * xi;
          }
          mu /= static_cast<long double>(n);
          mean_abs /= static_cast<long double>(n);
          sq /= static_cast<long double>(n);
          for (index_t i = 0; i < n; ++i) var += (x(r, i) - mu) * (x(r, i) - mu);
          var /= static_cast<long double>(n);  // biased, like PyTorch
          const long double eps = T(1e-5);     // the T value ct adds
          const long double rv = 1 / std::sqrt(var + eps), rq = 1 / std::sqrt(sq + eps), L = m + std::log(s);
          const double c = 9 * (1 + std::log(static_cast<double>(n)));
          CHECK(static_cast<double>(std::fabs(lse(r) - L)) <= u * (static_cast<double>(std::fabs(L)) + c));
          for (index_t i = 0; i < n; ++i) {
            const long double d = x(r, i) - m, y = d - std::log(s), p = std::exp(d) / s;
            CHECK(static_cast<double>(std::fabs(lsm(r, i) - y)) <= u * static_cast<double>(std::fabs(y) + std::fabs(d) + c));
            CHECK(static_cast<double>(std::fabs(sm(r, i) - p)) <= u * static_cast<double>((std::fabs(d) + 8) * p) + floor);
            const long double z = (x(r, i) - mu) * rv, yw = z * w(i);
            const double mean_term = 4 * static_cast<double>(rv * mean_abs);
            CHECK(static_cast<double>(std::fabs(ln0(r, i) - z)) <= u * (16 * static_cast<double>(std::fabs(z)) + mean_term));
            CHECK(static_cast<double>(std::fabs(ln(r, i) - (yw + b(i)))) <=
                  u * (16 * static_cast<double>(std::fabs(yw)) + std::fabs(static_cast<double>(b(i))) + mean_term * static_cast<double>(w(i))));
            const long double yr = x(r, i) * rq * w(i);
            CHECK(static_cast<double>(std::fabs(rms(r, i) - yr)) <= 16 * u * static_cast<double>(std::fabs(yr)));
          }
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("accuracy: logsumexp, log_softmax, softmax, layer_norm and rms_norm stay within their documented bounds",
          "[reduce][accuracy]") {
  for (auto b : {ct::backend::simd, ct::backend::scalar}) {
    for (auto f : {ct::fma_policy::fused, ct::fma_policy::separate}) {
      ct::backend_scope bs(b);
      ct::fma_scope fs(f);
      INFO((b == ct::backend::simd ? "simd" : "scalar") << ", " << (f == ct::fma_policy::fused ? "fused" : "separate"));
      check_documented_bounds<float>();
      // The references are long double: only an independent check of double where it is wider.
      if constexpr (std::numeric_limits<long double>::digits > std::numeric_limits<double>::digits)
        check_documented_bounds<double>();
    }
  }
}

TEST_CASE("reduce: reducers over different axes, nested or side by side, are rejected by name", "[reduce][fused]") {
  auto x = ct::random_uniform<float>({3, 4}, 45);
  // (A composed Catch matcher refers to its parts: it cannot be kept in a variable.)
#define SAME_AXES Catch::Contains("must reduce the same axes") && Catch::Contains("[0] and [1]") && Catch::Contains("[3, 4]")
  CHECK_THROWS_AS(ct::eval(ct::sum(x - ct::max(x, 0), 1)), ct::axis_error);
  CHECK_THROWS_WITH(ct::eval(ct::sum(x - ct::max(x, 0), 1)), SAME_AXES);
  CHECK_THROWS_WITH(ct::eval(ct::sum(x - ct::max(x, 0, true), 1)), SAME_AXES);
  CHECK_THROWS_WITH(ct::eval(ct::sum(ct::exp(x - ct::max(x, 0)), 1)), SAME_AXES);
  CHECK_THROWS_WITH(ct::eval(ct::sum(x, 0) + ct::sum(x, 1)), SAME_AXES);
#undef SAME_AXES
  // A reduced axis that meets another extent of the same axis: the message says what to do.
  auto y = ct::random_uniform<float>({3, 5}, 46);
  auto dest = ct::full<float>(dims{3, 5}, 7.0f);
  CHECK_THROWS_AS(ct::eval(ct::sum(x, 1) + y, dest), ct::shape_error);
  CHECK_THROWS_WITH(ct::eval(ct::sum(x, 1) + y), Catch::Contains("evaluate the reduction first") && Catch::Contains("[3, 4]") &&
                                                     Catch::Contains("[3, 5]"));
  CHECK(ct::equal(dest, ct::full<float>(dims{3, 5}, 7.0f)));
  // Evaluating the reduction first is the documented way out, and gives NumPy's result.
  auto s = ct::eval(ct::sum(x, 1, true));
  auto r = ct::eval(s + y);
  for (index_t i = 0; i < 3; ++i)
    for (index_t j = 0; j < 5; ++j) CHECK(r(i, j) == s(i, 0) + y(i, j));
}

namespace {
// The instructions an expression lowers to (what ct::eval plans and runs).
template <class E>
ct::detail::program lowered(const E& e) {
  auto node = ct::detail::to_node(e);
  ct::detail::program p(node.full_shape(), false);
  node.lower(p);
  return p;
}
template <class E>
int count_of(const E& e, ct::detail::opcode op) {
  const auto p = lowered(e);
  return static_cast<int>(std::count_if(p.code().begin(), p.code().end(), [op](const ct::detail::instruction& in) { return in.op == op; }));
}
}  // namespace

TEST_CASE("fused: a reducer or sub-expression written twice is computed once", "[reduce][fused]") {
  using ct::detail::opcode;
  auto x = ct::random_uniform<float>({4, 9}, 47);
  // Two separately built but identical max reducers: one reduce instruction.
  CHECK(count_of(ct::max(x, -1) + ct::max(x, -1), opcode::reduce) == 1);
  CHECK(count_of(ct::max(x, -1) + ct::min(x, -1), opcode::reduce) == 2);
  // softmax written out by hand with exp(x - max) twice: one max, one exp, one sum.
  auto hand = ct::exp(x - ct::max(x, -1)) / ct::sum(ct::exp(x - ct::max(x, -1)), -1);
  CHECK(count_of(hand, opcode::reduce) == 2);
  CHECK(count_of(hand, opcode::unary) == 1);
  // The same tensor read twice is one load; constants merge by bit pattern only.
  CHECK(count_of(x * x + x, opcode::load) == 1);
  CHECK(count_of(x + 0.0f + (x + 0.0f), opcode::constant) == 1);
  CHECK(count_of((x + 0.0f) * (x + -0.0f), opcode::constant) == 2);
  // layer_norm: one mean of x, one mean of the squares, each used twice.
  CHECK(count_of(ct::layer_norm(x, -1, 1e-5f), opcode::reduce) == 2);
  // And the merged program gives the same values as the expression with one reducer.
  auto m = ct::eval(ct::max(x, -1, true));
  auto twice = ct::eval(ct::max(x, -1) + ct::max(x, -1));
  for (index_t i = 0; i < 4; ++i) CHECK(twice(i, 0) == 2 * m(i, 0));
}

TEST_CASE("reduce: empty axes for every reducer, and whole-tensor reductions of empty tensors", "[reduce]") {
  for (const dims& shape : {dims{0}, dims{2, 0}, dims{0, 3}}) {
    auto e = ct::zeros<float>(shape);
    INFO("shape " << shape.str());
    CHECK(ct::eval(ct::sum(e)).item() == 0.0f);
    CHECK(ct::eval(ct::prod(e)).item() == 1.0f);
    CHECK(std::isnan(ct::eval(ct::mean(e)).item()));
    CHECK(ct::eval(ct::all(e > 0.0f)).item());
    CHECK_FALSE(ct::eval(ct::any(e > 0.0f)).item());
    dims ones;
    for (int a = 0; a < shape.size(); ++a) ones.push_back(1);
    CHECK(ct::eval(ct::sum(ct::cast<std::int32_t>(e), dims{}, true)).shape() == ones);
    CHECK_THROWS_WITH(ct::eval(ct::max(e)), Catch::Contains("ct::eval: max over axes") && Catch::Contains(shape.str()) &&
                                                Catch::Contains("has no value"));
    CHECK_THROWS_WITH(ct::eval(ct::min(e)), Catch::Contains("min over axes"));
    CHECK_THROWS_WITH(ct::eval(ct::argmax(e)), Catch::Contains("argmax over axes"));
    CHECK_THROWS_WITH(ct::eval(ct::argmin(e)), Catch::Contains("argmin over axes"));
    CHECK_THROWS_AS(ct::eval(ct::logsumexp(e)), ct::empty_reduction_error);
  }
  // Over one empty axis of a non-empty retained shape: one value per group, the same rules.
  auto e = ct::zeros<float>(dims{2, 0});
  CHECK_THROWS_WITH(ct::eval(ct::min(e, -1)), Catch::Contains("min over axes [1] of shape [2, 0] has no value: the reduction is empty"));
  CHECK_THROWS_AS(ct::eval(ct::argmax(e, 1)), ct::empty_reduction_error);
  CHECK(ct::equal(ct::eval(ct::prod(e, 1, true)), ct::ones<float>(dims{2, 1})));
  // The destination is untouched by the rejected call.
  auto dest = ct::full<std::int64_t>(dims{2}, 5);
  CHECK_THROWS_AS(ct::eval(ct::argmax(e, 1), dest), ct::empty_reduction_error);
  CHECK(ct::equal(dest, ct::full<std::int64_t>(dims{2}, 5)));
}
