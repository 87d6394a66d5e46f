// tests/kernels/test_accuracy.cpp — accuracy of the transcendental kernels in ulp against long
// double references (sweeps in accuracy_sweep.hpp), exp at softmax-sized arguments, sin/cos
// next to multiples of pi/2, and the reach of the FMA policy. Set CT_KERNELS_REPORT=1 to
// print the measured maxima (docs/kernels.md quotes them).
#include <catch2/catch.hpp>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "accuracy_sweep.hpp"
#include "kernel_test_util.hpp"
#include "../../src/kernels/exp_table.hpp"

using namespace ct_test_kernels;
using k::unary_op;


TEST_CASE("float transcendentals are within 4 ulp over their domains", "[kernels][accuracy]") {
  check_accuracy<float>(4.0, 1013, all_settings());
}

TEST_CASE("double transcendentals are within 4 ulp over their domains", "[kernels][accuracy]") {
  check_accuracy<double>(4.0, 400000, all_settings());
}

TEST_CASE("exp keeps full accuracy at +-80..100 (softmax inputs)", "[kernels][accuracy]") {
  // Near exp's overflow/underflow edges the reduction k*ln2 must stay exact.
  for (const auto& s : all_settings()) {
    std::vector<float> xf;
    std::vector<double> xd;
    for (double v = 80; v <= 100; v += 0.0137) {
      xf.push_back(static_cast<float>(v));
      xf.push_back(static_cast<float>(-v));
      xd.push_back(v);
      xd.push_back(-v);
    }
    std::vector<float> yf(xf.size());
    std::vector<double> yd(xd.size());
    k::unary(unary_op::exp, xf.data(), yf.data(), static_cast<index_t>(xf.size()), s);
    k::unary(unary_op::exp, xd.data(), yd.data(), static_cast<index_t>(xd.size()), s);
    for (size_t i = 0; i < xf.size(); ++i) {
      const ld want = std::exp(static_cast<ld>(xf[i]));
      INFO(describe(s) << " x=" << xf[i] << " got " << yf[i]);
      if (want > std::numeric_limits<float>::max())
        CHECK(std::isinf(yf[i]));
      else  // subnormal results too: one rounding, so within one spacing
        CHECK(ulp_error(yf[i], want) <= (want < std::numeric_limits<float>::min() ? 1.0 : 4.0));
    }
    for (size_t i = 0; i < xd.size(); ++i) CHECK(ulp_error(yd[i], std::exp(static_cast<ld>(xd[i]))) <= 4.0);
  }
}

TEST_CASE("exp's 2^(j/32) (float) and 2^(j/16) (double) tables are correctly rounded", "[kernels][accuracy]") {
  // An entry off by its last bit passes the 4-ulp sweeps, and even the sweep below for the
  // entries whose exact value lies near a rounding tie; compare the entries themselves.
  for (int j = 0; j < 32; ++j) {
    INFO("float entry " << j);
    CHECK(k::exp2_table32[j] == static_cast<float>(std::exp2(static_cast<ld>(j) / 32)));
  }
  for (int j = 0; j < 16; ++j) {
    INFO("double entry " << j);
    CHECK(k::exp2_table16[j] == static_cast<double>(std::exp2(static_cast<ld>(j) / 16)));
  }
  // The offset tables (ExpNormal): entry j's bits plus j in the top bits of the mantissa field
  // (5 / 4 index bits below the exponent) are the plain entry's bits again.
  for (int j = 0; j < 32; ++j) {
    INFO("float offset entry " << j);
    CHECK(std::bit_cast<std::uint32_t>(k::exp2_table32_offset[j]) + (std::uint32_t(j) << 18) ==
          std::bit_cast<std::uint32_t>(k::exp2_table32[j]));
  }
  for (int j = 0; j < 16; ++j) {
    INFO("double offset entry " << j);
    CHECK(std::bit_cast<std::uint64_t>(k::exp2_table16_offset[j]) + (std::uint64_t(j) << 48) ==
          std::bit_cast<std::uint64_t>(k::exp2_table16[j]));
  }
}

TEST_CASE("float exp is within 1.05 ulp next to every entry of its 2^(j/32) table", "[kernels][accuracy]") {
  // Next to x = (32m + j) ln2/32, where the polynomial part is tiny, the error of the result is
  // the entry's error plus one rounding: at most about 1 ulp. The sweep covers every entry,
  // several m and both halves of r, and checks the reduction around them.
  const ld ln2_32 = 0.693147180559945309417232121458176568L / 32;
  std::vector<float> xs;
  for (int m = -5; m <= 5; ++m)
    for (int j = 0; j < 32; ++j)
      for (int step = -60; step <= 60; ++step)
        xs.push_back(static_cast<float>((32 * m + j + step / 121.0L) * ln2_32));
  for (const auto& s : all_settings()) {
    std::vector<float> ys(xs.size());
    k::unary(unary_op::exp, xs.data(), ys.data(), static_cast<index_t>(xs.size()), s);
    double worst = 0;
    float worst_x = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const double e = ulp_error(ys[i], std::exp(static_cast<ld>(xs[i])));
      if (e > worst) worst = e, worst_x = xs[i];
    }
    INFO(describe(s) << " worst at x = " << worst_x);
    CHECK(worst <= 1.05);
  }
}

TEST_CASE("sin and cos next to multiples of pi/2", "[kernels][accuracy]") {
  // The reduction's hard cases: r = x - k pi/2 cancels almost completely. Every multiple up to
  // the vector range's end (2^19) and the neighbours of its rounded value.
  const ld half_pi = 1.570796326794896619231321691639751442L;
  std::vector<double> xd;
  std::vector<float> xf;
  for (index_t q = 1; q < 333000; q += 1) {
    const double d = static_cast<double>(q * half_pi);
    const float f = static_cast<float>(q * half_pi);
    for (double v : {d, std::nextafter(d, 0.0), std::nextafter(d, 1e300)}) xd.push_back(v);
    for (float v : {f, std::nextafter(f, 0.0f), std::nextafter(f, 1e30f)}) xf.push_back(v);
  }
  for (const auto& s : all_settings())
    for (unary_op op : {unary_op::sin, unary_op::cos}) {
      const auto ref = [op](ld x) { return op == unary_op::sin ? std::sin(x) : std::cos(x); };
      std::vector<double> yd(xd.size());
      std::vector<float> yf(xf.size());
      k::unary(op, xd.data(), yd.data(), static_cast<index_t>(xd.size()), s);
      k::unary(op, xf.data(), yf.data(), static_cast<index_t>(xf.size()), s);
      double worst_d = 0, worst_f = 0;
      for (size_t i = 0; i < xd.size(); ++i) worst_d = std::max(worst_d, ulp_error(yd[i], ref(xd[i])));
      for (size_t i = 0; i < xf.size(); ++i) worst_f = std::max(worst_f, ulp_error(yf[i], ref(xf[i])));
      if (report())
        std::printf("%s near k*pi/2 %-15s max %.3f ulp (double), %.3f ulp (float)\n",
                    op == unary_op::sin ? "sin" : "cos", describe(s).c_str(), worst_d, worst_f);
      INFO(describe(s) << " op " << int(op));
      CHECK(worst_d <= 4.0);
      CHECK(worst_f <= 4.0);
    }
}

TEST_CASE("simd transcendentals differ between FMA policies yet each is deterministic", "[kernels][accuracy]") {
  // The policy must reach the polynomials: over many inputs some results differ in the last bit.
  // log and log1p need more inputs, since there the polynomial is only a small correction term;
  // float gelu is evaluated in double, so its policy almost never shows after rounding.
  struct probe {
    unary_op op;
    int n;
    bool with_float;
  };
  for (const probe& p : {probe{unary_op::exp, 4096, true}, probe{unary_op::expm1, 4096, true},
                         probe{unary_op::log, 1 << 20, true}, probe{unary_op::log1p, 1 << 20, true},
                         probe{unary_op::sin, 4096, true}, probe{unary_op::cos, 4096, true},
                         probe{unary_op::tanh, 4096, true}, probe{unary_op::sigmoid, 4096, true},
                         probe{unary_op::silu, 4096, true}, probe{unary_op::gelu, 1 << 16, false}}) {
    const auto count_differences = [&](auto zero) {
      using T = decltype(zero);
      const size_t n = static_cast<size_t>(p.n);
      std::vector<T> x(n), fused(n), separate(n), again(n);
      for (size_t i = 0; i < n; ++i) x[i] = static_cast<T>(0.1 + 3.0 * static_cast<double>(i) / static_cast<double>(n));
      k::unary(p.op, x.data(), fused.data(), p.n, {ct::backend::simd, ct::fma_policy::fused});
      k::unary(p.op, x.data(), separate.data(), p.n, {ct::backend::simd, ct::fma_policy::separate});
      k::unary(p.op, x.data(), again.data(), p.n, {ct::backend::simd, ct::fma_policy::fused});
      int differ = 0;
      for (size_t i = 0; i < n; ++i) {
        differ += !same_bits(fused[i], separate[i]);
        REQUIRE(same_bits(fused[i], again[i]));
      }
      return differ;
    };
    INFO("op " << int(p.op) << ", target " << k::simd_target());
    if (ct_test_kernels::simd_has_fma()) {
      CHECK(count_differences(0.0) > 0);
      if (p.with_float) CHECK(count_differences(0.0f) > 0);
    } else {  // no FMA hardware: both policies round twice, the same results
      CHECK(count_differences(0.0) == 0);
      CHECK(count_differences(0.0f) == 0);
    }
  }
}

TEST_CASE("elementwise results do not depend on the position within a tile", "[kernels]") {
  // Each value is computed alone (n = 1, the padded tail path) and inside a long tile at every
  // offset; the bits must agree for every op and setting.
  rng r(8);
  std::vector<float> xs(300);
  for (auto& v : xs) v = static_cast<float>(r.uniform(-30, 30));
  for (const auto& s : all_settings())
    for (int op = 0; op <= static_cast<int>(unary_op::reciprocal); ++op) {
      std::vector<float> whole(xs.size());
      k::unary(static_cast<unary_op>(op), xs.data(), whole.data(), static_cast<index_t>(xs.size()), s);
      for (size_t i = 0; i < xs.size(); ++i) {
        float alone;
        k::unary(static_cast<unary_op>(op), &xs[i], &alone, 1, s);
        if (!same_bits(alone, whole[i]) && !(std::isnan(alone) && std::isnan(whole[i])))
          FAIL(describe(s) << " op " << op << " x=" << xs[i] << ": " << alone << " vs " << whole[i]);
      }
    }
}
