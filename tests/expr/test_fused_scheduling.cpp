// Reductions and fused expressions, kernel by kernel: streaming stores, the one-kernel forms
// (exp(x - max), (x * u) * w + c, a sum fed by its square), groups of one tile, and the
// backends agreeing on the norms. Their scheduling promises (CONTRACT.md §3–§5: groups,
// validation before scheduling, determinism, failure atomicity) are in tests/contract/.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <utility>

#include "ct/ct.hpp"
#include "support/executor_zoo.hpp"
#include "support/reference.hpp"

using ct::dims;
using ct::index_t;
using ct_test::executor_zoo;

// Results of 16 MiB and more with long rows are written with non-temporal stores; the values
// must be the ones a small evaluation gives, under any executor (the stores are fenced
// before a callback returns), into contiguous destinations and views.
TEST_CASE("large results (streaming stores) equal the same rows evaluated in small pieces", "[scheduling][fused]") {
  const index_t rows = 4096, cols = 1024;  // 16 MiB of float results: at the streaming threshold
  auto x = ct::random_uniform<float>({rows, cols}, 41, -20.0f, 20.0f);
  auto w = ct::random_uniform<float>({cols}, 42, 0.5f, 1.5f);
  auto expected_softmax = ct::zeros<float>({rows, cols});
  auto bias = ct::random_uniform<float>({cols}, 43, -1.0f, 1.0f);
  auto expected_norm = ct::zeros<float>({rows, cols}), expected_layer = ct::zeros<float>({rows, cols});
  auto expected_log = ct::zeros<float>({rows, cols});
  for (index_t r0 = 0; r0 < rows; r0 += 512) {  // 2 MiB pieces: ordinary stores
    auto part = x.slice(0, r0, r0 + 512);
    ct::eval(ct::softmax(part, -1), expected_softmax.slice(0, r0, r0 + 512));
    ct::eval(ct::rms_norm(part, -1, 1e-5f, w), expected_norm.slice(0, r0, r0 + 512));
    ct::eval(ct::layer_norm(part, -1, 1e-5f, w, bias), expected_layer.slice(0, r0, r0 + 512));
    ct::eval(ct::log_softmax(part, -1), expected_log.slice(0, r0, r0 + 512));
  }
  // Spot-check the pieces against the double reference too.
  for (index_t r : {index_t(0), index_t(1234), rows - 1}) {
    double m = -1e300, s = 0;
    for (index_t c = 0; c < cols; ++c) m = std::max(m, static_cast<double>(x(r, c)));
    for (index_t c = 0; c < cols; ++c) s += std::exp(static_cast<double>(x(r, c)) - m);
    for (index_t c = 0; c < cols; c += 97) {  // the bound of docs/expressions.md
      const double d = static_cast<double>(x(r, c)) - m, p = std::exp(d) / s;
      CHECK(std::abs(expected_softmax(r, c) - p) <= (std::abs(d) + 8) * std::ldexp(1.0, -24) * p + 1e-44);
    }
  }
  executor_zoo zoo;
  for (auto& [name, exec] : zoo.all()) {
    ct::executor_scope scope(exec);
    INFO("under " << name);
    auto got = ct::eval(ct::softmax(x, -1));
    CHECK(ct_test::bitwise_equal(got, expected_softmax));
    auto norm = ct::zeros<float>({rows, cols});
    ct::eval(ct::rms_norm(x, -1, 1e-5f, w), norm);
    CHECK(ct_test::bitwise_equal(norm, expected_norm));
  }
  // The output pass's last operation writing the destination itself (division in softmax,
  // multiply-add in layer norm with weight and bias, subtraction in log-softmax), for every
  // backend and FMA policy.
  for (const auto& s : {ct::settings{ct::backend::simd, ct::fma_policy::fused}, ct::settings{ct::backend::simd, ct::fma_policy::separate},
                        ct::settings{ct::backend::scalar, ct::fma_policy::fused}}) {
    ct::settings_scope scope(s);
    auto want_soft = ct::zeros<float>({rows, cols}), want_layer = ct::zeros<float>({rows, cols});
    auto want_log = ct::zeros<float>({rows, cols});
    for (index_t r0 = 0; r0 < rows; r0 += 512) {
      auto part = x.slice(0, r0, r0 + 512);
      ct::eval(ct::softmax(part, -1), want_soft.slice(0, r0, r0 + 512));
      ct::eval(ct::layer_norm(part, -1, 1e-5f, w, bias), want_layer.slice(0, r0, r0 + 512));
      ct::eval(ct::log_softmax(part, -1), want_log.slice(0, r0, r0 + 512));
    }
    CHECK(ct_test::bitwise_equal(ct::eval(ct::softmax(x, -1)), want_soft));
    CHECK(ct_test::bitwise_equal(ct::eval(ct::layer_norm(x, -1, 1e-5f, w, bias)), want_layer));
    CHECK(ct_test::bitwise_equal(ct::eval(ct::log_softmax(x, -1)), want_log));
  }
  CHECK(ct_test::bitwise_equal(ct::eval(ct::layer_norm(x, -1, 1e-5f, w, bias)), expected_layer));
  CHECK(ct_test::bitwise_equal(ct::eval(ct::log_softmax(x, -1)), expected_log));
  // A destination view that starts off a 64-byte boundary (head and tail of every row copied
  // with ordinary stores, the middle streamed).
  auto wide = ct::zeros<float>({rows, cols + 3});
  auto view = wide.slice(1, 3, cols + 3);
  ct::eval(ct::softmax(x, -1), view);
  CHECK(ct_test::bitwise_equal(view.contiguous(), expected_softmax));
  for (index_t r = 0; r < rows; r += 511)
    for (index_t c = 0; c < 3; ++c) CHECK(wide(r, c) == 0.0f);
}

// Layer and RMS norm use only exactly rounded operations and lane-wise sums, so the scalar
// and simd backends must agree bitwise — whichever path (direct tile function, one-value
// shortcut for a group's mean and 1/sqrt, general kernel) the evaluator takes.
TEST_CASE("layer_norm and rms_norm are bitwise the same under the scalar and simd backends", "[scheduling][fused]") {
  for (auto [rows, cols] : {std::pair<index_t, index_t>{3, 1}, {5, 17}, {64, 64}, {9, 1030}}) {
    auto x = ct::random_uniform<float>({rows, cols}, 91, -3.0f, 5.0f);
    auto w = ct::random_uniform<float>({cols}, 92, 0.5f, 1.5f), b = ct::random_uniform<float>({cols}, 93, -1.0f, 1.0f);
    auto xd = ct::random_uniform<double>({rows, cols}, 94, -3.0, 5.0);
    for (ct::fma_policy f : {ct::fma_policy::fused, ct::fma_policy::separate}) {
      auto run = [&](ct::backend be) {
        ct::settings_scope scope({be, f});
        return std::make_tuple(ct::eval(ct::layer_norm(x, -1, 1e-5f, w, b)), ct::eval(ct::rms_norm(x, -1, 1e-6f, w)),
                               ct::eval(ct::layer_norm(xd, -1, 1e-9)));
      };
      auto [ln_s, rms_s, lnd_s] = run(ct::backend::scalar);
      auto [ln_v, rms_v, lnd_v] = run(ct::backend::simd);
      INFO(rows << "x" << cols << (f == ct::fma_policy::fused ? " fused" : " separate"));
      CHECK(ct_test::bitwise_equal(ln_s, ln_v));
      CHECK(ct_test::bitwise_equal(rms_s, rms_v));
      CHECK(ct_test::bitwise_equal(lnd_s, lnd_v));
      // In place (the destination is x itself): the norm kernel's output pass reads x again
      // where the row's results go, so each row must be read before it is written.
      ct::settings_scope scope({ct::backend::simd, f});
      auto xi = x.clone();
      auto xdi = xd.clone();
      ct::eval(ct::layer_norm(xi, -1, 1e-5f, w, b), xi);
      ct::eval(ct::layer_norm(xdi, -1, 1e-9), xdi);
      CHECK(ct_test::bitwise_equal(xi, ln_s));
      CHECK(ct_test::bitwise_equal(xdi, lnd_s));
    }
  }
}

// The fused norm kernel takes rows two at a time, running both rows' first stage (the mean)
// before either's second (1/sqrt of the variance). Expressions of the same shape whose second
// stage or bias reads what the first stage computed must still get each row's own values:
// compare with the scalar backend's general evaluation, for even and odd row counts (the last
// row of an odd count goes alone).
TEST_CASE("norm-shaped expressions whose later stages read the mean keep every row's own values", "[scheduling][fused]") {
  for (auto [rows, cols] : {std::pair<index_t, index_t>{2, 64}, {7, 96}, {8, 1030}}) {
    auto x = ct::random_uniform<float>({rows, cols}, 81, -3.0f, 5.0f);
    auto w = ct::random_uniform<float>({cols}, 82, 0.5f, 1.5f), b = ct::random_uniform<float>({cols}, 83, -1.0f, 1.0f);
    const auto m = ct::mean(x, -1, true);
    const auto d = x - m;
    for (ct::fma_policy f : {ct::fma_policy::fused, ct::fma_policy::separate}) {
      auto run = [&](ct::backend be) {
        ct::settings_scope scope({be, f});
        return std::make_tuple(
            ct::eval(d * ct::rsqrt(ct::mean(ct::square(d), -1, true) + 1e-5f) * w + b),            // plain: pairs
            ct::eval(d * ct::rsqrt(ct::mean(ct::square(d), -1, true) + ct::abs(m)) * w + b),       // r reads m
            ct::eval(d * ct::rsqrt(ct::mean(ct::square(d), -1, true) + 1e-5f) * w + m),            // c is m
            ct::eval(d * ct::rsqrt(ct::mean(ct::square(d), -1, true) * ct::sum(x, -1, true))));  // r reads the sum
      };
      auto [a_s, b_s, c_s, d_s] = run(ct::backend::scalar);
      auto [a_v, b_v, c_v, d_v] = run(ct::backend::simd);
      INFO(rows << "x" << cols << (f == ct::fma_policy::fused ? " fused" : " separate"));
      CHECK(ct_test::bitwise_equal(a_s, a_v));
      CHECK(ct_test::bitwise_equal(b_s, b_v));
      CHECK(ct_test::bitwise_equal(c_s, c_v));
      CHECK(ct_test::bitwise_equal(d_s, d_v));
    }
  }
}

// (x * u) * w [+ c] with u one value per group runs as one kernel when nothing else reads
// x * u (the output pass of layer norm with weight and bias, RMS norm with weight). Its results
// must be those of the separate operations: compare with x * u materialised first, for the
// factors in either order, a bias that is one value, a weight read through a stride (its
// gathered tile sits between x * u and its user), x * u needed elsewhere too, and double.
TEST_CASE("(x * u) * w + c in one kernel equals the separate operations", "[scheduling][fused]") {
  for (auto [rows, cols] : {std::pair<index_t, index_t>{3, 1}, {5, 33}, {4, 1030}, {2, 5000}}) {
    auto x = ct::random_uniform<float>({rows, cols}, 71, -3.0f, 3.0f);
    auto w = ct::random_uniform<float>({cols}, 72, 0.5f, 1.5f), c = ct::random_uniform<float>({cols}, 73, -1.0f, 1.0f);
    auto wt = ct::random_uniform<float>({cols, 2}, 74, 0.5f, 1.5f).select(1, 0);  // stride 2
    auto xd = ct::random_uniform<double>({rows, cols}, 75, -3.0, 3.0);
    auto wd = ct::random_uniform<double>({cols}, 76, 0.5, 1.5), cd = ct::random_uniform<double>({cols}, 77, -1.0, 1.0);
    for (ct::fma_policy f : {ct::fma_policy::fused, ct::fma_policy::separate}) {
      ct::settings_scope scope({ct::backend::simd, f});
      INFO(rows << "x" << cols << (f == ct::fma_policy::fused ? " fused" : " separate"));
      auto r = ct::rsqrt(ct::mean(ct::square(x), -1, true) + 1e-5f);
      auto rd = ct::rsqrt(ct::mean(ct::square(xd), -1, true) + 1e-5);
      auto t = ct::eval(x * r);     // x * u materialised
      auto tt = ct::eval(r * x);
      auto td = ct::eval(xd * rd);
      CHECK(ct_test::bitwise_equal(ct::eval(x * r * w + c), ct::eval(t * w + c)));
      CHECK(ct_test::bitwise_equal(ct::eval(w * (r * x) + c), ct::eval(w * tt + c)));
      CHECK(ct_test::bitwise_equal(ct::eval(x * r * w + 0.25f), ct::eval(t * w + 0.25f)));
      CHECK(ct_test::bitwise_equal(ct::eval(x * r * w), ct::eval(t * w)));
      CHECK(ct_test::bitwise_equal(ct::eval(x * r * wt + c), ct::eval(t * wt + c)));
      // x computed into a tile slot that the gathered weight could take over.
      auto x1 = ct::eval(x + 1.0f);
      auto r1 = ct::rsqrt(ct::mean(ct::square(x1), -1, true) + 1e-5f);
      auto t1 = ct::eval(x1 * r1);
      CHECK(ct_test::bitwise_equal(ct::eval((x + 1.0f) * r1 * wt + c), ct::eval(t1 * wt + c)));
      CHECK(ct_test::bitwise_equal(ct::eval((x + 1.0f) * r1 * wt + ct::exp(x)), ct::eval(t1 * wt + ct::exp(x))));
      CHECK(ct_test::bitwise_equal(ct::eval(x * r * w + x * r), ct::eval(t * w + t)));
      CHECK(ct_test::bitwise_equal(ct::eval(xd * rd * wd + cd), ct::eval(td * wd + cd)));
      CHECK(ct_test::bitwise_equal(ct::eval(ct::layer_norm(x, -1, 1e-5f, w, c)),
                                   ct::eval(ct::eval((x - ct::mean(x, -1, true)) * ct::rsqrt(ct::mean(ct::square(x - ct::mean(x, -1, true)), -1, true) + 1e-5f)) * w + c)));
    }
  }
}

// exp(x - u) with u one value per group runs as one kernel when nothing else reads x - u
// (softmax's numerator, logsumexp's argument). Its results must be those of the subtraction
// and exp as separate passes: compare with the difference materialised first, for an operand
// read in place, an operand computed into a tile slot (x * 2), and strided rows.
TEST_CASE("exp(x - max) in one kernel equals the two steps", "[scheduling][fused]") {
  for (auto [rows, cols] : {std::pair<index_t, index_t>{3, 1}, {5, 33}, {4, 1030}, {2, 5000}}) {
    auto x = ct::random_uniform<float>({rows, cols}, 97, -90.0f, 90.0f);
    auto xt = ct::random_uniform<float>({cols, rows}, 98, -90.0f, 90.0f).permute({1, 0});
    for (ct::fma_policy f : {ct::fma_policy::fused, ct::fma_policy::separate}) {
      ct::settings_scope scope({ct::backend::simd, f});
      INFO(rows << "x" << cols);
      auto two_steps = [](const auto& v) {
        auto diff = ct::eval(v - ct::max(v, -1, true));
        return ct::eval(ct::exp(diff));
      };
      CHECK(ct_test::bitwise_equal(ct::eval(ct::exp(x - ct::max(x, -1, true))), two_steps(x)));
      CHECK(ct_test::bitwise_equal(ct::eval(ct::exp(x * 2.0f - ct::max(x * 2.0f, -1, true))), two_steps(ct::eval(x * 2.0f))));
      CHECK(ct_test::bitwise_equal(ct::eval(ct::exp(xt - ct::max(xt, -1, true))), two_steps(ct::eval(xt))));
      auto e = ct::eval(ct::exp(x - ct::max(x, -1, true)));
      auto s = ct::eval(ct::sum(e, -1, true));
      CHECK(ct_test::bitwise_equal(ct::eval(ct::softmax(x, -1)), ct::eval(e / s)));
    }
  }
}

// exp(x - u) whose x - u is needed besides runs as one kernel writing both: log-softmax (x - max
// kept in the row cache for the output), and x - u used again in the same pass (kept in a tile
// slot). Compare with the difference materialised first, for an operand read in place, one
// computed into a tile slot (x * 2), strided rows, and double.
TEST_CASE("exp(x - max) with x - max kept equals the separate steps", "[scheduling][fused]") {
  for (auto [rows, cols] : {std::pair<index_t, index_t>{3, 1}, {5, 33}, {4, 1030}, {2, 5000}}) {
    auto x = ct::random_uniform<float>({rows, cols}, 91, -90.0f, 90.0f);
    auto xt = ct::random_uniform<float>({cols, rows}, 92, -90.0f, 90.0f).permute({1, 0});
    auto xd = ct::random_uniform<double>({rows, cols}, 93, -700.0, 700.0);
    for (ct::fma_policy f : {ct::fma_policy::fused, ct::fma_policy::separate}) {
      ct::settings_scope scope({ct::backend::simd, f});
      INFO(rows << "x" << cols);
      auto steps = [](const auto& v) {
        auto diff = ct::eval(v - ct::max(v, -1, true));
        auto e = ct::eval(ct::exp(diff));
        return std::make_pair(diff, e);
      };
      for (const auto& v : {ct::eval(x), ct::eval(x * 2.0f), ct::eval(xt)}) {
        auto [diff, e] = steps(v);
        auto lse = ct::eval(ct::log(ct::sum(e, -1, true)));
        CHECK(ct_test::bitwise_equal(ct::eval(ct::log_softmax(v, -1)), ct::eval(diff - lse)));
        CHECK(ct_test::bitwise_equal(ct::eval(ct::exp(v - ct::max(v, -1, true)) * (v - ct::max(v, -1, true))),
                                     ct::eval(e * diff)));
      }
      CHECK(ct_test::bitwise_equal(ct::eval(ct::log_softmax(x * 2.0f, -1)), ct::eval(ct::log_softmax(ct::eval(x * 2.0f), -1))));
      auto [dd, ed] = steps(xd);
      CHECK(ct_test::bitwise_equal(ct::eval(ct::log_softmax(xd, -1)), ct::eval(dd - ct::log(ct::sum(ed, -1, true)))));
      CHECK(ct_test::bitwise_equal(ct::eval(ct::exp(xd - ct::max(xd, -1, true)) * (xd - ct::max(xd, -1, true))),
                                   ct::eval(ed * dd)));
    }
  }
}

// The simd backend feeds a sum of squares from the square's own kernel (kernels::unary_sum),
// writing the squares only when something else needs them. Cover the cases where they are
// needed — by the output pass (kept in the row cache), by another reducer of the same pass,
// by a later elementwise use — against the scalar backend (which never fuses) and a double
// reference, for strided rows too.
TEST_CASE("a sum fed by its square's kernel: the squares stay available to other uses", "[scheduling][fused]") {
  for (auto [rows, cols] : {std::pair<index_t, index_t>{4, 1}, {6, 33}, {5, 1030}, {3, 2500}}) {
    auto x = ct::random_uniform<float>({rows, cols}, 95, -3.0f, 3.0f);
    auto xt = ct::random_uniform<float>({cols, rows}, 96, -3.0f, 3.0f).permute({1, 0});  // strided rows
    auto run = [&](ct::backend be) {
      ct::backend_scope scope(be);
      auto sq = ct::square(x);
      return std::make_tuple(ct::eval(sq / ct::sum(sq, -1, true)),                       // row cache
                             ct::eval(ct::sum(sq, -1) + ct::max(sq, -1)),                  // two reducers
                             ct::eval(ct::sum(ct::square(x - ct::mean(x, -1, true)), -1)),  // only summed
                             ct::eval(ct::sum(ct::square(xt), -1)));                        // strided operand
    };
    auto [a_s, b_s, c_s, d_s] = run(ct::backend::scalar);
    auto [a_v, b_v, c_v, d_v] = run(ct::backend::simd);
    INFO(rows << "x" << cols);
    CHECK(ct_test::bitwise_equal(a_s, a_v));
    CHECK(ct_test::bitwise_equal(b_s, b_v));
    CHECK(ct_test::bitwise_equal(c_s, c_v));
    CHECK(ct_test::bitwise_equal(d_s, d_v));
    for (index_t r = 0; r < rows; ++r) {
      double s = 0, m = 0, mu = 0, c = 0;
      for (index_t i = 0; i < cols; ++i) {
        const double v = x(r, i);
        s += v * v;
        m = std::max(m, v * v);
        mu += v / static_cast<double>(cols);
      }
      for (index_t i = 0; i < cols; ++i) c += (x(r, i) - mu) * (x(r, i) - mu);
      CHECK(std::abs(b_v(r, 0) - (s + m)) <= 1e-5 * (s + m));  // the reducers broadcast back: rows x 1
      CHECK(std::abs(c_v(r) - c) <= 1e-5 * c + 1e-6);
      for (index_t i = 0; i < cols; i += 7) {
        const double v = x(r, i);
        CHECK(std::abs(a_v(r, i) - v * v / s) <= 1e-6 * (v * v / s) + 1e-30);
      }
    }
  }
}

// CHECKs that every tensor of tuple a equals its counterpart in b bitwise, one CHECK each.
template <class Tuple>
void check_each_bitwise(const Tuple& a, const Tuple& b) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ([&] {
      INFO("result " << I);
      CHECK(ct_test::bitwise_equal(std::get<I>(a), std::get<I>(b)));
    }(), ...);
  }(std::make_index_sequence<std::tuple_size_v<Tuple>>{});
}

// A group whose reduced elements fit one tile runs each pass's steps once, without the walk
// (plan::one_tile_), and layer norm's shape is one kernel call per group (plan::norm_); a
// group walked over two unmerged axes runs the general runner. The same values in both
// layouts must give the same bits: every step sees the same elements in the same order.
TEST_CASE("groups of one tile give the walking runner's results", "[scheduling][fused]") {
  // a >= 2, so the strided layout really has two walk axes; a*b: whole rounds of 32 only,
  // a tail only, both, and one full tile
  for (auto shape : {std::pair<index_t, index_t>{2, 16}, {3, 7}, {3, 11}, {2, 50}, {8, 125}, {4, 256}}) {
    const index_t a = shape.first, b = shape.second;  // (clang 14 cannot capture structured bindings)
    const index_t rows = 6;
    auto wide = ct::random_uniform<float>({rows, a, b + 5}, 97, -30.0f, 30.0f);
    wide(1, a - 1, b - 1) = std::numeric_limits<float>::quiet_NaN();  // a NaN in the tail (or last round)
    wide(2, 0, 0) = std::numeric_limits<float>::infinity();
    wide(3, a / 2, b / 2) = -std::numeric_limits<float>::infinity();
    auto strided = wide.slice(2, 0, b);        // rows of a runs of b: two walk axes
    auto packed = strided.contiguous();        // the same values in one merged axis
    auto w = ct::random_uniform<float>({a, b}, 98, 0.5f, 1.5f), c = ct::random_uniform<float>({a, b}, 99, -1.0f, 1.0f);
    const ct::dims ax{1, 2};
    auto all = [&](const ct::tensor<float>& x) {
      auto d = x - ct::mean(x, ax, true);
      auto e = ct::exp(x - ct::max(x, ax, true));
      // written through the copy path: a destination strided along the (merged) reduced axes
      auto strided_dest = ct::zeros<float>({a, b, rows}).permute({2, 0, 1});
      ct::eval(e / ct::sum(e, ax, true), strided_dest);
      return std::make_tuple(ct::eval(d * ct::rsqrt(ct::mean(ct::square(d), ax, true) + 1e-5f) * w + c),
                             ct::eval(e / ct::sum(e, ax, true)), ct::eval(ct::sum(x, ax) + ct::max(x, ax)),
                             ct::eval(ct::argmax(ct::abs(x), ax)), strided_dest);
    };
    // layer norm's shape with each output the kernel has, in float and double
    // many rows: a last-bit slip in a lane (a contracted multiply-add) rarely survives the
    // tree, the division and 1/sqrt, so one row in a few hundred shows it
    auto wide_d = ct::random_uniform<double>({300, a, b + 5}, 100, -30.0, 30.0);
    wide_d(4, a - 1, b - 1) = std::numeric_limits<double>::quiet_NaN();
    auto strided_d = wide_d.slice(2, 0, b);
    auto packed_d = strided_d.contiguous();
    auto wd = ct::random_uniform<double>({a, b}, 103, 0.5, 1.5), cd = ct::random_uniform<double>({a, b}, 104, -1.0, 1.0);
    // one value per row read from a tensor: an epsilon and a bias (loads among the one values)
    auto eps = ct::random_uniform<float>({rows, 1, 1}, 101, 1e-6f, 1e-2f), row_bias = ct::random_uniform<float>({rows, 1, 1}, 102, -1.0f, 1.0f);
    auto norms = [&](const ct::tensor<float>& x, const ct::tensor<double>& xd) {
      auto d = x - ct::mean(x, ax, true);
      auto n = d * ct::rsqrt(ct::mean(ct::square(d), ax, true) + 1e-5f);
      auto dd = xd - ct::mean(xd, ax, true);
      return std::make_tuple(ct::eval(n), ct::eval(n * w), ct::eval(n * w + 0.25f), ct::eval(ct::rsqrt(ct::mean(ct::square(d), ax, true) + 1e-5f) * d),
                             ct::eval(dd * ct::rsqrt(ct::mean(ct::square(dd), ax, true) + 1e-9) * wd + cd),
                             ct::eval(dd * ct::rsqrt(ct::mean(ct::square(dd), ax, true) + 1e-9)),
                             ct::eval(dd * ct::rsqrt(ct::mean(ct::square(dd), ax, true) + 1e-9) * wd),
                             ct::eval(d * ct::rsqrt(ct::mean(ct::square(d), ax, true) + eps) * w + row_bias));
    };
    for (auto [be, f] : {std::pair{ct::backend::scalar, ct::fma_policy::fused}, {ct::backend::simd, ct::fma_policy::fused},
                         {ct::backend::simd, ct::fma_policy::separate}}) {
      ct::settings_scope scope({be, f});
      INFO(a << "x" << b << (be == ct::backend::simd ? " simd" : " scalar") << (f == ct::fma_policy::fused ? " fused" : " separate"));
      const auto walked = all(strided), one_tile = all(packed);
      check_each_bitwise(walked, one_tile);
      check_each_bitwise(norms(strided, strided_d), norms(packed, packed_d));
      const auto& s_o = std::get<2>(one_tile);
      // and against a double reference, so that both cannot be wrong the same way (the
      // reducers broadcast back inside the sum: rows x 1 x 1)
      for (index_t r = 0; r < rows; ++r) {
        if (r >= 1 && r <= 3) continue;  // the rows with a NaN or an infinity
        double s = 0, m = -1e300;
        for (index_t i = 0; i < a; ++i)
          for (index_t j = 0; j < b; ++j) s += packed(r, i, j), m = std::max(m, static_cast<double>(packed(r, i, j)));
        CHECK(std::abs(s_o(r, 0, 0) - (s + m)) <= 1e-5 * (std::abs(s) + std::abs(m)) + 1e-4);
      }
    }
  }
}
