// tests/kernels/test_targets.cpp — the simd backend on every Highway target this CPU can run
// (e.g. AVX3, AVX2, SSE4, SSSE3 and the portable fallback), not only the one dispatch picks:
// dispatch is pinned to each in turn and the target-sensitive properties are re-checked.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "../../src/kernels/target_control.hpp"
#include "accuracy_sweep.hpp"
#include "kernel_test_util.hpp"
#include "reduce_checks.hpp"
#include "pinned_target.hpp"

using namespace ct_test_kernels;

namespace {

using ct_test_kernels::pinned_target;
using ct_test_kernels::simd_settings;

template <class T>
void check_muladd_rounding() {
  const T eps = std::numeric_limits<T>::epsilon();
  std::vector<T> a(37, T(1) + eps), b(37, T(1) - eps), c(37, T(-1)), y(37);
  k::muladd(a.data(), false, b.data(), false, c.data(), false, y.data(), 37, simd_settings()[0]);
  for (T v : y) REQUIRE(same_bits(v, -eps * eps));  // fused, also where the target has no FMA unit
  k::muladd(a.data(), false, b.data(), false, c.data(), false, y.data(), 37, simd_settings()[1]);
  for (T v : y) REQUIRE(same_bits(v, T(0)));
}

template <class T>
void check_special_values() {
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  struct expect {
    unary_op op;
    T in, out;
  };
  const std::vector<expect> cases{
      {unary_op::exp, inf, inf},    {unary_op::exp, -inf, 0},      {unary_op::expm1, -inf, -1},
      {unary_op::log, 0, -inf},     {unary_op::log, -1, nan},      {unary_op::log, inf, inf},
      {unary_op::log1p, -1, -inf},  {unary_op::sin, inf, nan},     {unary_op::sin, -T(0), -T(0)},
      {unary_op::tanh, -inf, -1},   {unary_op::sigmoid, -inf, 0},  {unary_op::relu, nan, nan},
      {unary_op::gelu, -inf, -T(0)}, {unary_op::silu, -inf, -T(0)}, {unary_op::cos, 0, 1},
      // +inf through the float ops evaluated in double (the scalar target's conversion back to
      // float had saturated it to the largest float), and silu / sigmoid at +inf
      {unary_op::gelu, inf, inf},   {unary_op::silu, inf, inf},    {unary_op::sigmoid, inf, 1},
      {unary_op::exp, T(1000), inf}, {unary_op::square, inf, inf},
  };
  for (const auto& s : simd_settings()) {
    for (const auto& c : cases) {
      std::vector<T> x(21, T(0.25)), y(21);
      x[3] = x[20] = c.in;  // in a full vector and in the padded tail
      k::unary(c.op, x.data(), y.data(), 21, s);
      for (size_t i : {size_t(3), size_t(20)}) {
        INFO(describe(s) << " op " << int(c.op) << " in " << c.in << " got " << y[i]);
        CHECK((std::isnan(c.out) ? std::isnan(y[i]) : same_bits(y[i], c.out)));
      }
    }
    // NaN in, NaN out, for every op.
    for (int op = 0; op <= static_cast<int>(unary_op::reciprocal); ++op) {
      std::vector<T> x(5, nan), y(5);
      k::unary(static_cast<unary_op>(op), x.data(), y.data(), 5, s);
      INFO("op " << op);
      CHECK(std::isnan(y[4]));
    }
  }
}

void check_position_independence() {
  rng r(21);
  std::vector<double> xs(67);
  for (auto& v : xs) v = r.uniform(-30, 30);
  for (const auto& s : simd_settings())
    for (int op = 0; op <= static_cast<int>(unary_op::reciprocal); ++op) {
      std::vector<double> whole(xs.size());
      k::unary(static_cast<unary_op>(op), xs.data(), whole.data(), static_cast<index_t>(xs.size()), s);
      for (size_t i = 0; i < xs.size(); ++i) {
        double alone;
        k::unary(static_cast<unary_op>(op), &xs[i], &alone, 1, s);
        if (!same_bits(alone, whole[i]) && !(std::isnan(alone) && std::isnan(whole[i])))
          FAIL(describe(s) << " op " << op << " x=" << xs[i]);
      }
    }
}

}  // namespace

TEST_CASE("every available simd target meets the kernel contracts", "[kernels][targets]") {
  const auto targets = k::simd_available_targets();
  REQUIRE(!targets.empty());
  for (std::int64_t t : targets) {
    pinned_target pin(t);
    INFO("target " << k::simd_target_label(t));
    REQUIRE(std::string(k::simd_target_name()) == k::simd_target_label(t));
    check_lanes<float, false>();
    check_lanes<double, false>();
    check_lanes<float, true>();
    check_lanes<double, true>();
    check_extreme<float, true>();
    check_extreme<double, false>();
    if (std::string(k::simd_target_label(t)) != "SCALAR") {  // the one-lane target has no fused kernel
      CHECK(check_unary_sum<float>());
      CHECK(check_unary_sum<double>());
    }
    check_muladd_rounding<float>();
    check_muladd_rounding<double>();
    check_special_values<float>();
    check_special_values<double>();
    check_position_independence();
    check_accuracy<float>(4.0, 16411, simd_settings());
    check_accuracy<double>(4.0, 20000, simd_settings());
  }
}

// Targets with hardware FMA (AVX-512 and AVX2 here) run the same operations in the same order,
// so the exp family must agree bitwise between them — this also pins AVX-512's one-instruction
// scaling by 2^k (vscalef) to the portable path the other targets use, including overflow to
// inf, underflow into the subnormals and NaN.
TEST_CASE("the exp family is bitwise the same on every target with hardware FMA", "[kernels][targets]") {
  std::vector<std::int64_t> fma_targets;
  for (std::int64_t t : k::simd_available_targets()) {
    const std::string name = k::simd_target_label(t);
    if (name.rfind("AVX", 0) == 0) fma_targets.push_back(t);  // AVX2, AVX3, AVX3_DL
  }
  if (fma_targets.size() < 2) {
    WARN("fewer than two FMA targets on this CPU: nothing to compare");
    return;
  }
  rng r(77);
  const index_t n = 40000;
  std::vector<float> xf(static_cast<size_t>(n));
  std::vector<double> xd(static_cast<size_t>(n));
  for (index_t i = 0; i < n; ++i) {
    const double lo = i % 3 == 0 ? -110.0 : -760.0, hi = i % 3 == 0 ? 100.0 : 720.0;
    xd[static_cast<size_t>(i)] = r.uniform(lo, hi);
    xf[static_cast<size_t>(i)] = static_cast<float>(r.uniform(i % 2 ? -1.0 : -110.0, i % 2 ? 1.0 : 100.0));
    // every seventh: far out, where the functions skip exp's underflowing lanes (AVX-512 masks
    // them, the other targets zero them or cap the argument), which must not change the bits
    if (i % 7 == 6) {
      xd[static_cast<size_t>(i)] = r.uniform(-3000.0, 3000.0);
      xf[static_cast<size_t>(i)] = static_cast<float>(r.uniform(-400.0, 400.0));
    }
  }
  xf[0] = std::numeric_limits<float>::quiet_NaN();
  xf[1] = -103.5f;  // deep in the subnormal results
  xf[2] = 88.7f;    // next to overflow
  for (const auto& s : simd_settings())
    for (unary_op op : {unary_op::exp, unary_op::expm1, unary_op::sigmoid, unary_op::tanh, unary_op::silu, unary_op::gelu,
                        unary_op::erf, unary_op::erfc}) {
      std::vector<float> ref_f(static_cast<size_t>(n)), yf(static_cast<size_t>(n));
      std::vector<double> ref_d(static_cast<size_t>(n)), yd(static_cast<size_t>(n));
      {
        pinned_target pin(fma_targets[0]);
        k::unary(op, xf.data(), ref_f.data(), n, s);
        k::unary(op, xd.data(), ref_d.data(), n, s);
      }
      for (std::size_t t = 1; t < fma_targets.size(); ++t) {
        pinned_target pin(fma_targets[t]);
        k::unary(op, xf.data(), yf.data(), n, s);
        k::unary(op, xd.data(), yd.data(), n, s);
        INFO(describe(s) << " op " << static_cast<int>(op) << ": " << k::simd_target_label(fma_targets[0]) << " vs "
                         << k::simd_target_label(fma_targets[t]));
        for (index_t i = 0; i < n; ++i) {
          REQUIRE(same_bits(yf[static_cast<size_t>(i)], ref_f[static_cast<size_t>(i)]));
          REQUIRE(same_bits(yd[static_cast<size_t>(i)], ref_d[static_cast<size_t>(i)]));
        }
      }
    }
}

// Below its clamp (-104 float, -746 double) exp gives +0 without computing e^x: computing it
// underflows, which costs a microcode assist on Intel cores (softmax rows masked with -inf ran
// 6x slower), so AVX-512 masks such lanes off the final scaling, the other targets zero them
// before it, and logsumexp's rescale factors skip them. That keeps exp's bits only if e^x is
// +0 from the clamp down: pinned here on every target, in vectors that mix such lanes with
// ordinary ones (whose bits must not depend on their neighbours), and just above the clamp.
TEST_CASE("exp from its lower clamp down is exactly +0 on every target", "[kernels][targets]") {
  const float finf = std::numeric_limits<float>::infinity();
  const double dinf = std::numeric_limits<double>::infinity();
  const std::vector<float> below_f{-104.0f, -104.5f, -1e4f, -3e38f, -finf};
  const std::vector<double> below_d{-746.0, -746.5, -1e5, -1e300, -dinf};
  const index_t n = 70;
  std::vector<float> xf(n), plain_f(n);
  std::vector<double> xd(n), plain_d(n);
  for (index_t i = 0; i < n; ++i) {
    const auto at = static_cast<std::size_t>(i);
    plain_f[at] = -90.0f + 2.7f * static_cast<float>(i);  // subnormal to large results
    plain_d[at] = -700.0 + 20.3 * static_cast<double>(i);
    xf[at] = i % 3 == 1 ? below_f[at % below_f.size()] : plain_f[at];
    xd[at] = i % 3 == 1 ? below_d[at % below_d.size()] : plain_d[at];
  }
  for (std::int64_t t : k::simd_available_targets()) {
    pinned_target pin(t);
    for (const auto& s : simd_settings()) {
      INFO(k::simd_target_label(t) << " " << describe(s));
      std::vector<float> yf(n, 1.0f), want_f(n);
      std::vector<double> yd(n, 1.0), want_d(n);
      k::unary(unary_op::exp, xf.data(), yf.data(), n, s);
      k::unary(unary_op::exp, xd.data(), yd.data(), n, s);
      k::unary(unary_op::exp, plain_f.data(), want_f.data(), n, s);
      k::unary(unary_op::exp, plain_d.data(), want_d.data(), n, s);
      for (index_t i = 0; i < n; ++i) {
        const auto at = static_cast<std::size_t>(i);
        INFO("element " << i);
        CHECK(same_bits(yf[at], i % 3 == 1 ? 0.0f : want_f[at]));
        CHECK(same_bits(yd[at], i % 3 == 1 ? 0.0 : want_d[at]));
      }
      // just above the clamp e^x is below half the smallest subnormal too, or a subnormal
      float above_f = -103.9f;
      double above_d = -745.0;
      k::unary(unary_op::exp, &above_f, &above_f, 1, s);
      k::unary(unary_op::exp, &above_d, &above_d, 1, s);
      CHECK(above_f >= 0.0f);
      CHECK(above_f < std::numeric_limits<float>::min());
      CHECK(above_d > 0.0);
      CHECK(above_d < std::numeric_limits<double>::min());
    }
  }
}

// Far from zero the activations and erfc give their limits (correctly rounded values, not
// ct's: sigmoid 1 or +0, silu and gelu x or -0, erfc 2 or +0) on every target, where they now
// skip the exp that underflowed there (capped arguments, unscaled lanes).
TEST_CASE("sigmoid, silu, gelu and erfc far from zero give their limits on every target", "[kernels][targets]") {
  struct limit_case {
    unary_op op;
    double x, want;
  };
  const double neg0 = -0.0;
  const std::vector<limit_case> float_cases{
      {unary_op::sigmoid, 90, 1},     {unary_op::sigmoid, 300, 1},   {unary_op::sigmoid, -120, 0},
      {unary_op::sigmoid, -300, 0},   {unary_op::silu, 90, 90},      {unary_op::silu, 300, 300},
      {unary_op::silu, -200, neg0},   {unary_op::silu, -3000, neg0}, {unary_op::gelu, 30, 30},
      {unary_op::gelu, 300, 300},     {unary_op::gelu, -30, neg0},   {unary_op::gelu, -300, neg0},
      {unary_op::erfc, -5, 2},        {unary_op::erfc, -12, 2},      {unary_op::erfc, -300, 2},
      {unary_op::erfc, 12, 0},
      // the bands where the unscaled lanes begin (silu from -120, float gelu from 2u = -700):
      // between there and exp's clamp the old code scaled a tiny exp and rounded to -0
      {unary_op::silu, -121, neg0},   {unary_op::silu, -150, neg0},  {unary_op::silu, -167, neg0},
      {unary_op::gelu, -21.5, neg0},  {unary_op::gelu, -22.5, neg0}};
  const std::vector<limit_case> double_cases{
      {unary_op::sigmoid, 720, 1},    {unary_op::sigmoid, 3000, 1},  {unary_op::sigmoid, -760, 0},
      {unary_op::sigmoid, -3000, 0},  {unary_op::silu, 720, 720},    {unary_op::silu, 3000, 3000},
      {unary_op::silu, -1000, neg0},  {unary_op::silu, -1e5, neg0},  {unary_op::gelu, 60, 60},
      {unary_op::gelu, 3000, 3000},   {unary_op::gelu, -60, neg0},   {unary_op::gelu, -3000, neg0},
      {unary_op::erfc, -7, 2},        {unary_op::erfc, -30, 2},      {unary_op::erfc, -3000, 2},
      {unary_op::erfc, 30, 0},        {unary_op::silu, -761, neg0},  {unary_op::silu, -870, neg0}};
  // each case in a vector of 33 with one ordinary lane beside it
  const auto check = [](const std::vector<limit_case>& cases, auto tag, const ct::settings& s, const std::string& where) {
    using T = decltype(tag);
    for (const limit_case& c : cases) {
      INFO(where << (sizeof(T) == 4 ? " float" : " double") << " op " << static_cast<int>(c.op) << " x " << c.x);
      std::vector<T> x(33, static_cast<T>(c.x)), y(33);
      x[5] = T(0.25);
      k::unary(c.op, x.data(), y.data(), 33, s);
      CHECK(same_bits(y[0], static_cast<T>(c.want)));
      CHECK(same_bits(y[32], static_cast<T>(c.want)));
    }
  };
  for (std::int64_t t : k::simd_available_targets()) {
    pinned_target pin(t);
    for (const auto& s : simd_settings()) {
      const std::string where = std::string(k::simd_target_label(t)) + " " + describe(s);
      check(float_cases, float{}, s, where);
      check(double_cases, double{}, s, where);
    }
  }
}
