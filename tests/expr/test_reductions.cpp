// Reductions and fused expressions with reducers, against naive double-precision loops.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "ct/ct.hpp"
#include "support/executor_zoo.hpp"
#include "support/reference.hpp"

using ct::dims;
using ct::index_t;

namespace {
double ref_sum(const double* v, index_t n) {
  double s = 0;
  for (index_t i = 0; i < n; ++i) s += v[i];
  return s;
}
double ref_max(const double* v, index_t n) {
  double m = v[0];
  for (index_t i = 1; i < n; ++i) m = std::max(m, v[i]);
  return m;
}
}  // namespace

TEST_CASE("reduce: sum, prod, mean, max, min over the last axis", "[reduce]") {
  for (index_t cols : {index_t{1}, index_t{7}, index_t{33}, index_t{1025}, index_t{3000}}) {
    auto x = ct::random_uniform<float>({5, cols}, static_cast<std::uint64_t>(cols), 0.5f, 1.5f);
    auto v = ct_test::values(x);
    INFO("cols " << cols);
    CHECK(ct_test::max_rel_error(ct_test::values(ct::eval(ct::sum(x, -1))), ct_test::per_row(v, cols, ref_sum)) < 1e-6);
    CHECK(ct_test::max_rel_error(ct_test::values(ct::eval(ct::mean(x, 1))),
                                 ct_test::per_row(v, cols, [](const double* r, index_t n) { return ref_sum(r, n) / static_cast<double>(n); })) < 1e-6);
    CHECK(ct_test::values(ct::eval(ct::max(x, -1))) == ct_test::per_row(v, cols, ref_max));
    CHECK(ct_test::values(ct::eval(ct::min(x, -1))) ==
          ct_test::per_row(v, cols, [](const double* r, index_t n) { return *std::min_element(r, r + n); }));
    auto small = ct::random_uniform<double>({3, std::min<index_t>(cols, 40)}, 9, 0.9, 1.1);
    auto sv = ct_test::values(small);
    CHECK(ct_test::max_rel_error(ct_test::values(ct::eval(ct::prod(small, -1))),
                                 ct_test::per_row(sv, small.shape(1), [](const double* r, index_t n) {
                                   double p = 1;
                                   for (index_t i = 0; i < n; ++i) p *= r[i];
                                   return p;
                                 })) < 1e-14);
  }
}

TEST_CASE("reduce: axes, several axes, whole tensor, keepdims, negative axes", "[reduce]") {
  auto x = ct::random_uniform<double>({3, 4, 5}, 5, -1, 1);
  auto s0 = ct::eval(ct::sum(x, 0));
  auto s02 = ct::eval(ct::sum(x, {0, -1}));
  auto s1k = ct::eval(ct::sum(x, 1, true));
  auto all = ct::eval(ct::sum(x));
  REQUIRE(s0.shape() == dims{4, 5});
  REQUIRE(s02.shape() == dims{4});
  REQUIRE(s1k.shape() == dims{3, 1, 5});
  REQUIRE(all.shape() == dims{});
  double total = 0;
  for (index_t j = 0; j < 4; ++j) {
    double acc02 = 0;
    for (index_t k = 0; k < 5; ++k) {
      double acc0 = 0;
      for (index_t i = 0; i < 3; ++i) acc0 += x(i, j, k);
      CHECK(s0(j, k) == Approx(acc0).epsilon(1e-13));
      acc02 += acc0;
    }
    CHECK(s02(j) == Approx(acc02).epsilon(1e-13));
    total += acc02;
  }
  for (index_t i = 0; i < 3; ++i)
    for (index_t k = 0; k < 5; ++k) {
      double acc = 0;
      for (index_t j = 0; j < 4; ++j) acc += x(i, j, k);
      CHECK(s1k(i, 0, k) == Approx(acc).epsilon(1e-13));
    }
  CHECK(all.item() == Approx(total).epsilon(1e-13));
  CHECK_THROWS_AS(ct::sum(x, 3), ct::axis_error);
  CHECK_THROWS_AS(ct::sum(x, {1, -2}), ct::axis_error);  // repeated axis
  CHECK(ct::eval(ct::sum(ct::from_list<int>({{1, 2}, {3, 4}}), 0))(1) == 6);
  CHECK(ct::eval(ct::sum(ct::from_list<bool>({true, false, true}))).item() == 2);
}

TEST_CASE("reduce: argmax/argmin take the first index on ties and the first NaN", "[reduce]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto x = ct::from_list<float>({{1, 3, 3, 2}, {5, 5, 5, 5}, {0, nan, 7, nan}, {-1, -4, -4, 9}});
  CHECK(ct::equal(ct::eval(ct::argmax(x, 1)), ct::from_list<std::int64_t>({1, 0, 1, 3})));
  CHECK(ct::equal(ct::eval(ct::argmin(x, 1)), ct::from_list<std::int64_t>({0, 0, 1, 1})));
  auto mx = ct::eval(ct::max(x, -1));
  CHECK(std::isnan(mx(2)));  // NaN propagates through max and min
  CHECK(std::isnan(ct::eval(ct::min(x, -1))(2)));
  CHECK(ct::eval(ct::argmax(x)).item() == 9);  // whole tensor: flat index of the first NaN (row 2, column 1)
  auto i = ct::from_list<int>({{3, 9, 9}, {-2, -2, -5}});
  CHECK(ct::equal(ct::eval(ct::argmax(i, -1)), ct::from_list<std::int64_t>({1, 0})));
  CHECK(ct::equal(ct::eval(ct::argmin(i, 0)), ct::from_list<std::int64_t>({1, 1, 1})));
  // Long rows: the tie rule holds across tiles.
  auto big = ct::zeros<double>(dims{2, 5000});
  big(0, 4000) = 1.0;
  big(0, 4999) = 1.0;
  big(1, 1) = -1.0;
  big(1, 2048) = -1.0;
  CHECK(ct::equal(ct::eval(ct::argmax(big, 1)), ct::from_list<std::int64_t>({4000, 0})));
  CHECK(ct::equal(ct::eval(ct::argmin(big, 1)), ct::from_list<std::int64_t>({0, 1})));
  // Several axes: the position is row-major over the reduced axes (here axes 0 and 2 of a
  // 3x2x4 tensor, so position = i0 * 4 + i2), checked against a naive search.
  auto t = ct::random_uniform<float>({3, 2, 4}, 31, -1.0f, 1.0f);
  t(2, 1, 3) = t(1, 1, 0) = 5.0f;  // a tie in column 1: the earlier position (1*4+0) wins
  auto am = ct::eval(ct::argmax(t, dims{0, 2}));
  auto an = ct::eval(ct::argmin(t, dims{0, -1}, true));
  REQUIRE(am.shape() == dims{2});
  REQUIRE(an.shape() == dims{1, 2, 1});
  for (index_t j = 0; j < 2; ++j) {
    index_t best_hi = 0, best_lo = 0;
    for (index_t p = 1; p < 12; ++p) {
      if (t(p / 4, j, p % 4) > t(best_hi / 4, j, best_hi % 4)) best_hi = p;
      if (t(p / 4, j, p % 4) < t(best_lo / 4, j, best_lo % 4)) best_lo = p;
    }
    CHECK(am(j) == best_hi);
    CHECK(an(0, j, 0) == best_lo);
  }
  CHECK(am(1) == 4);
}

TEST_CASE("reduce: all and any", "[reduce]") {
  auto x = ct::from_list<float>({{1, 2, 3}, {-1, 2, 3}, {-1, -2, -3}});
  CHECK(ct::equal(ct::eval(ct::all(x > 0.0f, 1)), ct::from_list<bool>({true, false, false})));
  CHECK(ct::equal(ct::eval(ct::any(x > 0.0f, 1)), ct::from_list<bool>({true, true, false})));
  CHECK_FALSE(ct::eval(ct::all(x > 0.0f)).item());
  CHECK(ct::eval(ct::any(x > 2.5f)).item());
}

TEST_CASE("reduce: empty axes give identities or a clear error", "[reduce]") {
  auto e = ct::zeros<float>(dims{3, 0});
  CHECK(ct::equal(ct::eval(ct::sum(e, 1)), ct::zeros<float>(dims{3})));
  CHECK(ct::equal(ct::eval(ct::prod(e, 1)), ct::ones<float>(dims{3})));
  CHECK(ct::equal(ct::eval(ct::all(e > 0.0f, 1)), ct::full<bool>(dims{3}, true)));
  CHECK(ct::equal(ct::eval(ct::any(e > 0.0f, 1)), ct::full<bool>(dims{3}, false)));
  auto m = ct::eval(ct::mean(e, 1));
  CHECK(std::isnan(m(0)));  // mean of nothing is 0/0
  CHECK_THROWS_AS(ct::eval(ct::max(e, 1)), ct::empty_reduction_error);
  CHECK_THROWS_WITH(ct::eval(ct::argmin(e, 1)), Catch::Contains("empty") && Catch::Contains("[3, 0]"));
  CHECK(ct::eval(ct::sum(e, 0)).shape() == dims{0});  // zero groups: nothing to do
  // logsumexp contains a max: one value per row, so the same error. Softmax and log-softmax
  // over an empty axis have no elements to compute and return an empty result.
  CHECK_THROWS_AS(ct::eval(ct::logsumexp(e, 1)), ct::empty_reduction_error);
  CHECK(ct::eval(ct::softmax(e, 1)).shape() == dims{3, 0});
  CHECK(ct::eval(ct::log_softmax(e, -1)).shape() == dims{3, 0});
  CHECK(ct::eval(ct::layer_norm(e, 1, 1e-5f)).shape() == dims{3, 0});
  auto into = ct::zeros<float>(dims{3, 0});
  CHECK_NOTHROW(ct::eval(ct::softmax(e, 1), into));
}

// Found by reviewing the rule with fuzz/expr_fuzz's interpreter (docs/reliability.md): the
// error is for a max whose value is part of a result with elements. A result with no elements
// has nothing to report (NumPy agrees: numpy.zeros((0, 0)).max(axis=1) is an empty array), and
// a result that runs along a non-empty reduced axis still holds the max of an empty one.
TEST_CASE("regression (expr fuzzer): an empty max is an error exactly when the result has elements", "[reduce][regression]") {
  CHECK(ct::eval(ct::max(ct::zeros<float>(dims{0, 0}), 1)).shape() == dims{0});
  CHECK(ct::eval(ct::logsumexp(ct::zeros<float>(dims{0, 4, 0}), 2)).shape() == dims{0, 4});
  CHECK(ct::eval(ct::argmax(ct::zeros<float>(dims{0, 3}), 1)).shape() == dims{0});
  // [0, 3] reduced over both axes, plus a [3] operand: a [1, 3] result, each element the max of
  // nothing plus y — previously accepted and left unwritten.
  const auto x = ct::zeros<float>(dims{0, 3});
  const auto y = ct::ones<float>(dims{3});
  auto dest = ct::full<float>(dims{1, 3}, 5.0f);
  CHECK_THROWS_AS(ct::eval(ct::max(x, dims{0, 1}) + y, dest), ct::empty_reduction_error);
  CHECK(ct::equal(dest, ct::full<float>(dims{1, 3}, 5.0f)));
  // and with no elements in that result, no error
  auto none = ct::zeros<float>(dims{1, 0});
  CHECK_NOTHROW(ct::eval(ct::max(ct::zeros<float>(dims{0, 0}), dims{0, 1}) + ct::zeros<float>(dims{0}), none));
}

// Found by fuzz/expr_fuzz: reducers over an empty axis next to a result that runs along the
// other reduced axes. sum over every axis of a [0, 4, 5] tensor, plus a [4, 5] one: a [1, 4, 5]
// result, y + 0 — ct's walk over the reduced positions was empty, so nothing was written.
TEST_CASE("regression (expr fuzzer): reductions over nothing next to a result along the other reduced axes",
          "[reduce][regression]") {
  const auto e = ct::zeros<float>(dims{0, 4, 5});
  const auto y = ct::random_uniform<float>({4, 5}, 3, -2.0f, 2.0f);
  ct_test::executor_zoo zoo;
  for (auto& [name, exec] : zoo.all()) {
    ct::executor_scope scope(exec);
    INFO(name);
    auto d = ct::full<float>(dims{1, 4, 5}, -7.0f);
    ct::eval(y + ct::sum(e), d);
    CHECK(ct::equal(d.reshape({4, 5}), y));
    ct::eval(y * ct::prod(e, dims{0, 1, 2}), d);
    CHECK(ct::equal(d.reshape({4, 5}), y));
    ct::eval(ct::minimum(y, ct::mean(e)), d);  // the mean of nothing is NaN, and minimum keeps it
    for (index_t i = 0; i < 20; ++i) CHECK(std::isnan(d.reshape({20})(i)));
    auto b = ct::full<bool>(dims{1, 4, 5}, false);
    ct::eval(ct::all(e > 0.0f) && (y > -3.0f), b);
    CHECK(ct::equal(b, ct::full<bool>(dims{1, 4, 5}, true)));
    // (a max of nothing is part of this result: an error, the destination unchanged)
    CHECK_THROWS_AS(ct::eval(y + ct::max(e), d), ct::empty_reduction_error);
    // The reducers' arguments are not computed: they have no elements to read (the fuzzer's
    // AddressSanitizer report on the first version of this fix).
    const auto e0 = ct::zeros<float>(dims{0});
    CHECK(ct::eval(ct::sum(ct::maximum(e0, e0) * 2.0f, -1, true)).item() == 0.0f);
    CHECK(ct::equal(ct::eval(ct::sum(ct::exp(e), dims{0, 2})), ct::zeros<float>(dims{4})));
  }
}

TEST_CASE("fused: softmax, log_softmax, logsumexp, layer_norm, rms_norm match references", "[reduce][fused]") {
  for (index_t cols : {index_t{1}, index_t{5}, index_t{100}, index_t{1030}}) {
    auto x = ct::random_uniform<float>({7, cols}, 3, -80.0f, 80.0f);  // large magnitudes
    auto v = ct_test::values(x);
    auto sm = ct_test::values(ct::eval(ct::softmax(x, -1)));
    auto lsm = ct_test::values(ct::eval(ct::log_softmax(x, -1)));
    auto lse = ct_test::values(ct::eval(ct::logsumexp(x, -1)));
    for (index_t r = 0; r < 7; ++r) {
      const double* row = v.data() + r * cols;
      double m = ref_max(row, cols), s = 0;
      for (index_t i = 0; i < cols; ++i) s += std::exp(row[i] - m);
      double rowsum = 0;
      for (index_t i = 0; i < cols; ++i) {
        double p = std::exp(row[i] - m) / s;
        rowsum += sm[static_cast<std::size_t>(r * cols + i)];
        // Bound (docs/expressions.md): x - max rounds in float by up to |x - max| * 2^-24,
        // which exp turns into that much relative error, plus a few ulp of exp and division.
        double rel = std::fabs(row[i] - m) * std::ldexp(1.0, -24) + 8 * std::ldexp(1.0, -24);
        CHECK(std::fabs(sm[static_cast<std::size_t>(r * cols + i)] - p) <= rel * p + 1e-44);
        CHECK(std::fabs(lsm[static_cast<std::size_t>(r * cols + i)] - (row[i] - m - std::log(s))) <= 2e-5 * (1 + std::fabs(row[i] - m - std::log(s))));
      }
      CHECK(std::fabs(rowsum - 1.0) <= 1e-6);
      CHECK(std::fabs(lse[static_cast<std::size_t>(r)] - (m + std::log(s))) <= 1e-6 * std::fabs(m + std::log(s)) + 1e-6);
    }
    auto w = ct::random_uniform<float>({cols}, 4, 0.5f, 1.5f), b = ct::random_uniform<float>({cols}, 5, -1.0f, 1.0f);
    auto xs = ct::eval(x / 40.0f);  // values ~±2
    auto ln = ct_test::values(ct::eval(ct::layer_norm(xs, -1, 1e-5f, w, b)));
    auto rms = ct_test::values(ct::eval(ct::rms_norm(xs, -1, 1e-5f, w)));
    auto xv = ct_test::values(xs);
    for (index_t r = 0; r < 7; ++r) {
      const double* row = xv.data() + r * cols;
      double mu = ref_sum(row, cols) / static_cast<double>(cols), var = 0, sq = 0;
      for (index_t i = 0; i < cols; ++i) {
        var += (row[i] - mu) * (row[i] - mu) / static_cast<double>(cols);
        sq += row[i] * row[i] / static_cast<double>(cols);
      }
      for (index_t i = 0; i < cols; ++i) {
        double want = (row[i] - mu) / std::sqrt(var + 1e-5) * w(i) + b(i);
        CHECK(std::fabs(ln[static_cast<std::size_t>(r * cols + i)] - want) <= 1e-4);
        CHECK(std::fabs(rms[static_cast<std::size_t>(r * cols + i)] - row[i] / std::sqrt(sq + 1e-5) * w(i)) <= 1e-5);
      }
    }
  }
  auto inf = std::numeric_limits<double>::infinity();
  auto edge = ct::from_list<double>({{-inf, -inf}, {inf, 1.0}});
  auto l = ct::eval(ct::logsumexp(edge, -1));
  CHECK(l(0) == -inf);
  CHECK(l(1) == inf);
}

TEST_CASE("fused: a reducer inside an expression broadcasts back (keep-dims)", "[reduce][fused]") {
  auto x = ct::random_uniform<double>({4, 6}, 8, -1, 1);
  auto centered = ct::eval(x - ct::mean(x, -1));
  for (index_t r = 0; r < 4; ++r) {
    double s = 0;
    for (index_t c = 0; c < 6; ++c) s += centered(r, c);
    CHECK(std::fabs(s) < 1e-14);
  }
  // Reducers of different axes cannot share one expression.
  CHECK_THROWS_AS(ct::eval(ct::sum(x, 0) + ct::sum(x, 1)), ct::axis_error);
  // A scalar-valued expression of reducers has the reduced shape.
  auto r = ct::eval(ct::max(x, -1) - ct::min(x, -1));
  CHECK(r.shape() == dims{4, 1});
  for (index_t i = 0; i < 4; ++i) {
    double hi = -1e9, lo = 1e9;
    for (index_t c = 0; c < 6; ++c) hi = std::max(hi, x(i, c)), lo = std::min(lo, x(i, c));
    CHECK(r(i, 0) == hi - lo);
  }
}

TEST_CASE("accuracy: float sums of 1e6-element rows stay within the documented bound", "[reduce][accuracy]") {
  // Documented bound (docs/expressions.md): lane-wise double accumulation, 32 lanes, so
  // |sum - exact| <= (n/32 + 5) * 2^-53 * sum|x| before the final rounding to float (2^-24).
  const index_t n = 1000000;
  auto x = ct::random_uniform<float>({2, n}, 77, -1.0f, 100.0f);
  auto s = ct::eval(ct::sum(x, -1));
  auto v = ct_test::values(x);
  for (index_t r = 0; r < 2; ++r) {
    long double exact = 0, mag = 0;
    for (index_t i = 0; i < n; ++i) {
      exact += v[static_cast<std::size_t>(r * n + i)];
      mag += std::fabs(v[static_cast<std::size_t>(r * n + i)]);
    }
    double bound = (static_cast<double>(n) / 32 + 5) * std::ldexp(1.0, -53) * static_cast<double>(mag) +
                   std::ldexp(1.0, -24) * std::fabs(static_cast<double>(exact));
    CHECK(std::fabs(static_cast<double>(s(r)) - static_cast<double>(exact)) <= bound);
  }
}

// The exact row sum, compensated (Neumaier) in long double: far below the bounds checked.
static long double exact_sum(const std::vector<double>& v, std::size_t from, std::size_t n, long double* magnitude) {
  long double s = 0, c = 0, mag = 0;
  for (std::size_t i = from; i < from + n; ++i) {
    const long double x = v[i], t = s + x;
    c += std::fabs(s) >= std::fabs(x) ? (s - t) + x : (x - t) + s;
    s = t;
    mag += std::fabs(x);
  }
  *magnitude = mag;
  return s + c;
}

TEST_CASE("accuracy: double sums and float means of 1e6-element rows stay within the documented bound", "[reduce][accuracy]") {
  const index_t n = 1000000;
  const double lane_bound = (static_cast<double>(n) / 32 + 5) * std::ldexp(1.0, -53);
  // Double: the same lane-wise bound, then the result is a double (2^-53 relative).
  auto d = ct::random_uniform<double>({2, n}, 78, -1.0, 100.0);
  auto ds = ct::eval(ct::sum(d, -1));
  auto dv = ct_test::values(d);
  for (index_t r = 0; r < 2; ++r) {
    long double mag = 0;
    const long double exact = exact_sum(dv, static_cast<std::size_t>(r * n), static_cast<std::size_t>(n), &mag);
    const double bound = lane_bound * static_cast<double>(mag) + std::ldexp(1.0, -53) * std::fabs(static_cast<double>(exact));
    CHECK(std::fabs(static_cast<double>(static_cast<long double>(ds(r)) - exact)) <= bound);
    CHECK(bound < 1e-8 * static_cast<double>(std::fabs(exact)));  // the bound says something
  }
  // Float mean = float(sum) / n: the sum's bound over n, plus two float roundings (the sum's
  // and the division's).
  auto x = ct::random_uniform<float>({2, n}, 79, -1.0f, 100.0f);
  auto m = ct::eval(ct::mean(x, -1));
  auto xv = ct_test::values(x);
  for (index_t r = 0; r < 2; ++r) {
    long double mag = 0;
    const long double exact = exact_sum(xv, static_cast<std::size_t>(r * n), static_cast<std::size_t>(n), &mag) / n;
    const double bound = lane_bound * static_cast<double>(mag) / static_cast<double>(n) +
                         std::ldexp(1.0, -23) * std::fabs(static_cast<double>(exact));
    CHECK(std::fabs(static_cast<double>(static_cast<long double>(m(r)) - exact)) <= bound);
  }
}

TEST_CASE("reduce: reductions over a strided outer axis (column walk) match references", "[reduce][fused]") {
  // Reducing axis 0 of a row-major matrix walks the retained axis contiguously.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto x = ct::random_uniform<float>({300, 1500}, 12, -4.0f, 4.0f);
  x(7, 3) = nan;
  x(9, 3) = 100.0f;
  x(5, 4) = 100.0f;
  x(6, 4) = 100.0f;
  auto w = ct::random_uniform<float>({1500}, 13, 0.5f, 2.0f);
  auto sm = ct::eval(ct::softmax(x * w, 0));
  auto am = ct::eval(ct::argmax(x, 0));
  auto mn = ct::eval(ct::min(x, 0, true));
  auto sum = ct::eval(ct::sum(x, 0));
  for (index_t c = 0; c < 1500; ++c) {
    double m = -1e30, s = 0, lo = 1e30, total = 0;
    index_t arg = 0;
    bool has_nan = false;
    for (index_t r = 0; r < 300; ++r) {
      double v = x(r, c);
      if (std::isnan(v)) { if (!has_nan) arg = r; has_nan = true; continue; }
      if (!has_nan && v > m) { m = v; arg = r; }
      lo = std::min(lo, v);
      total += v;
    }
    CHECK(am(c) == arg);
    if (has_nan) {
      CHECK(std::isnan(mn(0, c)));
      continue;
    }
    CHECK(mn(0, c) == static_cast<float>(lo));
    CHECK(std::fabs(sum(c) - total) <= 1e-6 * 300 * 4);
    double mm = -1e30;
    for (index_t r = 0; r < 300; ++r) mm = std::max(mm, static_cast<double>(x(r, c) * w(c)));
    for (index_t r = 0; r < 300; ++r) s += std::exp(static_cast<double>(x(r, c) * w(c)) - mm);
    for (index_t r = 0; r < 300; r += 37) {
      double p = std::exp(static_cast<double>(x(r, c) * w(c)) - mm) / s;
      CHECK(std::fabs(sm(r, c) - p) <= ((static_cast<double>(x(r, c) * w(c)) - mm) * -1 + 8) * std::ldexp(1.0, -24) * p + 1e-44);
    }
  }
  CHECK(am(4) == 5);  // first index on ties
}

// A sum over an outer axis adds each column sequentially in double (docs/expressions.md), so
// its result is known exactly; runs of reduced positions are summed several rows per pass.
TEMPLATE_TEST_CASE("reduce: sum over axis 0 is the sequential double sum of each column, bitwise", "[reduce]", float,
                   double) {
  for (auto [rows, cols] : {std::pair<index_t, index_t>{1, 5}, {7, 3}, {13, 37}, {300, 1500}, {64, 4100}}) {
    auto x = ct::random_uniform<TestType>({rows, cols}, 77, TestType(-1e3), TestType(1e3));
    auto got = ct::eval(ct::sum(x, 0));
    for (index_t c = 0; c < cols; ++c) {
      double acc = 0;
      for (index_t r = 0; r < rows; ++r) acc += static_cast<double>(x(r, c));
      INFO(rows << "x" << cols << " column " << c);
      CHECK(got(c) == static_cast<TestType>(acc));
    }
  }
}

// A plain reduction of one operand (sum, max, min, argmax, argmin of x) runs as one kernel call
// per row instead of through the row runner's steps. Its results must be the runner's: compare
// with the same reduction of x * 1 (exactly x, but a program the shortcut does not take), for
// rows shorter and longer than a tile, ties across tiles, NaNs, several retained axes, a
// strided destination, both backends and double.
TEMPLATE_TEST_CASE("reduce: plain row reductions equal the general row runner bitwise", "[reduce]", float, double) {
  using T = TestType;
  const T nan = std::numeric_limits<T>::quiet_NaN();
  for (index_t cols : {1, 7, 33, 1024, 1030, 5000}) {
    auto x = ct::random_uniform<T>({3, 4, cols}, 41 + static_cast<std::uint64_t>(cols), T(-100), T(100));
    if (cols > 1000) {
      x(0, 0, 1020) = x(0, 0, cols - 3) = T(500);  // a tie across tiles (cols 1024: the same tile)
      x(1, 2, 3) = nan;
      x(2, 3, cols - 1) = nan;
      x(2, 3, cols - 7) = T(-500);
      x(2, 1, 2) = x(2, 1, cols - 2) = T(-500);
    }
    for (ct::backend be : {ct::backend::simd, ct::backend::scalar}) {
      ct::backend_scope scope(be);
      INFO(cols << (be == ct::backend::simd ? " simd" : " scalar"));
      CHECK(ct_test::bitwise_equal(ct::eval(ct::sum(x, -1)), ct::eval(ct::sum(x * T(1), -1))));
      CHECK(ct_test::bitwise_equal(ct::eval(ct::max(x, -1)), ct::eval(ct::max(x * T(1), -1))));
      CHECK(ct_test::bitwise_equal(ct::eval(ct::min(x, -1)), ct::eval(ct::min(x * T(1), -1))));
      CHECK(ct::equal(ct::eval(ct::argmax(x, -1)), ct::eval(ct::argmax(x * T(1), -1))));
      CHECK(ct::equal(ct::eval(ct::argmin(x, -1)), ct::eval(ct::argmin(x * T(1), -1))));
      // Into a strided destination (a column of a wider tensor).
      auto wide = ct::zeros<T>(dims{3, 4, 2});
      auto col = wide.select(2, 1);
      ct::eval(ct::sum(x, -1), col);
      CHECK(ct_test::bitwise_equal(ct::eval(col * T(1)), ct::eval(ct::sum(x * T(1), -1))));
      auto widei = ct::zeros<std::int64_t>(dims{3, 4, 2});
      auto coli = widei.select(2, 0);
      ct::eval(ct::argmin(x, -1), coli);
      CHECK(ct::equal(ct::eval(coli * std::int64_t{1}), ct::eval(ct::argmin(x * T(1), -1))));
    }
    // Against a naive search: the first NaN, else the first maximum.
    auto am = ct::eval(ct::argmax(x, -1));
    for (index_t a = 0; a < 3; ++a)
      for (index_t b = 0; b < 4; ++b) {
        index_t best = 0;
        for (index_t i = 0; i < cols; ++i) {
          const T v = x(a, b, i), w = x(a, b, best);
          if (w != w) break;
          if (v != v || v > w) best = i;
          if (v != v) break;
        }
        CHECK(am(a, b) == best);
      }
  }
}
