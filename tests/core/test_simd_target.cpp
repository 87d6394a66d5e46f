// tests/core/test_simd_target.cpp — the public operations (not only the kernels, which
// tests/kernels/test_targets.cpp covers) on every Highway target this CPU can run: on an
// AVX-512 machine the AVX2 kernels — other register blockings, other vector widths — are run
// by pinning dispatch (what CT_SIMD_TARGET does for a process), and give the bits of the
// scalar backend wherever the documentation promises it, else stay within the reference
// bounds. Also CT_SIMD_TARGET's name parsing.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "../../src/kernels/target_control.hpp"
#include "ct/ct.hpp"
#include "kernels/pinned_target.hpp"
#include "matmul/helpers.hpp"
#include "support/executor_zoo.hpp"
#include "support/reference.hpp"

namespace {

namespace kt = ct::detail::kernels;

// Targets where a fused multiply-add is one hardware instruction (the exp family's bitwise
// promise holds there, tests/kernels/test_targets.cpp); SSE4 and below emulate or lack it.
bool has_hardware_fma(const std::string& label) { return label.rfind("AVX", 0) == 0; }

template <class F>
auto under_scalar(F f) {
  ct::settings s = ct::current_settings();
  s.backend = ct::backend::scalar;
  ct::settings_scope scope(s);
  return f();
}

// product() gives the scalar backend's bits on every simd target (what: the case, for INFO).
template <class F>
void check_every_target(const std::string& what, F product) {
  const auto want = under_scalar(product);
  for (const std::int64_t t : kt::simd_available_targets()) {
    const ct_test_kernels::pinned_target pin(t);
    INFO(what << " on " << kt::simd_target_label(t));
    CHECK(ct_test::bitwise_equal(product(), want));
  }
}

}  // namespace

TEST_CASE("CT_SIMD_TARGET: every available target by its name in any case; other names refused", "[targets]") {
  const std::vector<std::int64_t> targets = kt::simd_available_targets();
  REQUIRE_FALSE(targets.empty());
  for (const std::int64_t t : targets) {
    std::string name = kt::simd_target_label(t), lower = name, why;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::int64_t found = 0;
    CHECK(kt::parse_simd_target(name, found, why));
    CHECK(found == t);
    found = 0;
    CHECK(kt::parse_simd_target(lower, found, why));
    CHECK(found == t);
  }
  for (const char* bad : {"AVX9", "", "AVX2 ", "avx-2"}) {
    std::int64_t found = 17;
    std::string why;
    INFO("'" << bad << "'");
    CHECK_FALSE(kt::parse_simd_target(bad, found, why));
    CHECK(found == 17);
    CHECK(why.find(std::string("'") + bad + "'") != std::string::npos);
    CHECK(why.find(kt::simd_target_label(targets.front())) != std::string::npos);  // lists them
  }
}

TEST_CASE("every simd target: products give the scalar backend's bits and the reference's values",
          "[targets][matmul]") {
  auto floats = mm_test::products<float>();
  auto doubles = mm_test::products<double>();
  // Larger than one B panel and one A block on any target (k chunks carried, B packed).
  // Rows of C an odd number of elements apart, a partial last panel, and k past one chunk, so
  // that the edge tiles add to C rows that start off any vector alignment (Highway 1.0.3's
  // MaskedLoad read whole aligned vectors on SSSE3 / SSE4 and faulted here).
  floats.push_back({"[37,300]@[300,33]", ct::random_uniform<float>({37, 300}, 7, -1.0f, 1.0f),
                    ct::random_uniform<float>({300, 33}, 8, -1.0f, 1.0f)});
  doubles.push_back({"[37,300]@[300,33]", ct::random_uniform<double>({37, 300}, 9, -1.0, 1.0),
                     ct::random_uniform<double>({300, 33}, 10, -1.0, 1.0)});
  floats.push_back({"[300,700]@[700,260]", ct::random_uniform<float>({300, 700}, 5, -1.0f, 1.0f),
                    ct::random_uniform<float>({700, 260}, 6, -1.0f, 1.0f)});
  // Both FMA policies: a target without FMA hardware (SSSE3, SSE4, scalar) hands the fused
  // policy's products to the scalar backend, so only the separate policy runs its own kernels.
  for (const ct::fma_policy fma : {ct::fma_policy::fused, ct::fma_policy::separate}) {
    ct::settings policy = ct::current_settings();
    policy.fma = fma;
    const ct::settings_scope with_policy(policy);
    std::vector<ct::tensor<float>> f_expected;
    std::vector<ct::tensor<double>> d_expected;
    for (const auto& p : floats) f_expected.push_back(under_scalar([&] { return p.run(); }));
    for (const auto& p : doubles) d_expected.push_back(under_scalar([&] { return p.run(); }));
    for (const std::int64_t t : kt::simd_available_targets()) {
      const ct_test_kernels::pinned_target pin(t);
      REQUIRE(std::string(ct::simd_target_name()) == kt::simd_target_label(t));
      ct_test::executor_zoo zoo;
      for (auto& [ename, exec] : zoo.all()) {
        ct::executor_scope e(exec);
        const char* pname = fma == ct::fma_policy::fused ? "fused" : "separate";
        for (std::size_t i = 0; i < floats.size(); ++i) {
          INFO(kt::simd_target_label(t) << " " << pname << " " << ename << " " << floats[i].name);
          CHECK(ct_test::bitwise_equal(floats[i].run(), f_expected[i]));
        }
        for (std::size_t i = 0; i < doubles.size(); ++i) {
          INFO(kt::simd_target_label(t) << " " << pname << " " << ename << " double " << doubles[i].name);
          CHECK(ct_test::bitwise_equal(doubles[i].run(), d_expected[i]));
        }
      }
    }
  }
  for (const std::int64_t t : kt::simd_available_targets()) {
    const ct_test_kernels::pinned_target pin(t);
    // And the values themselves, against a double-precision loop (the scalar backend's bits
    // could share a mistake with every target).
    const auto& big = floats.back();
    const auto got = big.run();
    double worst = 0, scale = 0;
    for (ct::index_t i = 0; i < 300; i += 37) {
      for (ct::index_t j = 0; j < 260; j += 11) {
        double ref = 0;
        for (ct::index_t k = 0; k < 700; ++k) ref += double(big.a(i, k)) * double(big.b(k, j));
        worst = std::max(worst, std::abs(double(got(i, j)) - ref));
        scale = std::max(scale, std::abs(ref));
      }
    }
    INFO(kt::simd_target_label(t) << " max|err| " << worst << " max|ref| " << scale);
    CHECK(worst <= 700 * 6e-8 * 1.0 * 1.0 * 4);  // k * eps/2 * max|a| * max|b|, with room
  }
}

TEST_CASE("every simd target: encoded products give the portable kernels' bits", "[targets][encoded]") {
  const auto wf = ct::random_uniform<float>({70, 512}, 11, -1.0f, 1.0f);
  const auto x = ct::random_uniform<float>({5, 512}, 12, -2.0f, 2.0f);
  const auto xv = x.slice(0, 0, 1).reshape({512});
  for (const char* name : {"q8_0", "q4_0", "q4_K", "q6_K", "bf16", "f16"}) {
    const auto w = ct::encode(wf, ct::find_format(name));
    const auto q = under_scalar([&] { return ct::matmul(x, w.transpose()); });
    const auto e = under_scalar([&] { return ct::matmul(x, w.transpose(), ct::encoded_mode::exact); });
    const auto v = under_scalar([&] { return ct::matmul(w, xv); });
    for (const std::int64_t t : kt::simd_available_targets()) {
      const ct_test_kernels::pinned_target pin(t);
      INFO(name << " on " << kt::simd_target_label(t));
      CHECK(ct_test::bitwise_equal(ct::matmul(x, w.transpose()), q));
      CHECK(ct_test::bitwise_equal(ct::matmul(x, w.transpose(), ct::encoded_mode::exact), e));
      CHECK(ct_test::bitwise_equal(ct::matmul(w, xv), v));
      CHECK(ct_test::bitwise_equal(ct::decode(w), under_scalar([&] { return ct::decode(w); })));
    }
  }
  // 67 rows of 33 blocks (q8_0 / q4_0: a whole group and more) or 9 super-blocks (q4_K / q6_K:
  // a batch of eight and one): the row loops take the first and second half of the rows in
  // turns from 64 rows on, the second run a row shorter.
  for (const char* name : {"q8_0", "q4_0", "q4_K", "q6_K"}) {
    const ct::index_t k = std::string(name).back() == 'K' ? 9 * 256 : 33 * 32;
    const auto w = ct::encode(ct::random_uniform<float>({67, k}, 18, -1.0f, 1.0f), ct::find_format(name));
    const auto xk = ct::random_uniform<float>({k}, 19, -2.0f, 2.0f);
    check_every_target(std::string(name) + " 67 rows of K " + std::to_string(k), [&] { return ct::matmul(w, xk); });
  }
  // The K formats' kernels sum eight super-blocks at a time: rows of 11 (a batch and a tail);
  // and x·wᵀ takes eight activation vectors per call of their multi-vector form (11: one call
  // and three vectors by the rows form).
  for (const char* name : {"q4_K", "q6_K"}) {
    const auto w = ct::encode(ct::random_uniform<float>({9, 11 * 256}, 15, -1.0f, 1.0f), ct::find_format(name));
    const auto xk = ct::random_uniform<float>({11 * 256}, 16, -2.0f, 2.0f);
    const auto xm = ct::random_uniform<float>({11, 11 * 256}, 17, -2.0f, 2.0f);
    check_every_target(std::string(name) + " 11 super-blocks, w x", [&] { return ct::matmul(w, xk); });
    check_every_target(std::string(name) + " 11 super-blocks, x wᵀ", [&] { return ct::matmul(xm, w.transpose()); });
  }
  // bf16 / f16 gemv widens inside the dot product: rows whose K ends in a partial set of the
  // 32 virtual lanes (and 11 rows: full passes of every target's row count and a remainder).
  for (const char* name : {"bf16", "f16"})
    for (ct::index_t k : {45, 83}) {
      const auto w = ct::encode(ct::random_uniform<float>({11, k}, 13, -1.0f, 1.0f), ct::find_format(name));
      const auto xk = ct::random_uniform<float>({k}, 14, -2.0f, 2.0f);
      check_every_target(std::string(name) + " K " + std::to_string(k), [&] { return ct::matmul(w, xk); });
    }
}

TEST_CASE("every simd target: reductions and row operations", "[targets][reduce]") {
  const auto r = ct::random_uniform<float>({64, 300}, 13, -4.0f, 4.0f);
  const auto sum = [&] { return ct::eval(ct::sum(r, -1)); };
  const auto softmax = [&] { return ct::eval(ct::softmax(r, -1)); };
  const auto norm = [&] { return ct::eval(ct::layer_norm(r, -1, 1e-5f)); };
  const auto lse = [&] { return ct::eval(ct::logsumexp(r, -1)); };
  const auto sum0 = under_scalar(sum), norm0 = under_scalar(norm);
  const auto softmax_native = softmax(), lse_native = lse();
  for (const std::int64_t t : kt::simd_available_targets()) {
    const ct_test_kernels::pinned_target pin(t);
    const std::string label = kt::simd_target_label(t);
    INFO(label);
    // Sums keep their documented lane order and layer norm is the scalar's bits on any target.
    CHECK(ct_test::bitwise_equal(sum(), sum0));
    CHECK(ct_test::bitwise_equal(norm(), norm0));
    const auto s = softmax();
    const auto l = lse();
    if (has_hardware_fma(label)) {  // the exp family is the same bits wherever FMA is hardware
      CHECK(ct_test::bitwise_equal(s, softmax_native));
      CHECK(ct_test::bitwise_equal(l, lse_native));
    }
    // On every target, within the documented bounds of a double-precision reference.
    for (ct::index_t i = 0; i < 64; ++i) {
      double m = -INFINITY, z = 0;
      for (ct::index_t j = 0; j < 300; ++j) m = std::max(m, double(r(i, j)));
      for (ct::index_t j = 0; j < 300; ++j) z += std::exp(double(r(i, j)) - m);
      CHECK(std::abs(double(l(i)) - (m + std::log(z))) <= 1e-5 * std::max(1.0, std::abs(m + std::log(z))));
      for (ct::index_t j = 0; j < 300; j += 7) {
        const double ref = std::exp(double(r(i, j)) - m) / z;
        CHECK(std::abs(double(s(i, j)) - ref) <= 1e-5 * ref + 1e-30);
      }
    }
  }
}

// CT_SIMD_TARGET is read once per process, so it is checked in child processes: this binary
// again, running the hidden case below under the variable.
namespace {

std::string this_binary() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  REQUIRE(n > 0);
  return std::string(path, static_cast<std::size_t>(n));
}

int run_child(const std::string& value, const std::string& expect) {
  const std::string cmd = "CT_SIMD_TARGET='" + value + "' CT_TEST_EXPECT_TARGET='" + expect + "' '" + this_binary() +
                          "' '[.simd_target_child]' > /dev/null 2>&1";
  return std::system(cmd.c_str());
}

}  // namespace

TEST_CASE("CT_SIMD_TARGET pins a process; an unavailable name is a tuning_error at the first operation",
          "[targets][errors]") {
  const std::vector<std::int64_t> targets = kt::simd_available_targets();
  const std::string lowest = kt::simd_target_label(targets.back());
  std::string lower = lowest;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  CHECK(run_child(lower, lowest) == 0);
  CHECK(run_child("AVX9", "error") == 0);
  CHECK(run_child("AVX9", "nonsense") != 0);  // the child really checks what it is told
}

TEST_CASE("CT_SIMD_TARGET child process", "[.simd_target_child]") {
  const char* expect = std::getenv("CT_TEST_EXPECT_TARGET");
  REQUIRE(expect != nullptr);
  const auto a = ct::random_uniform<float>({20, 30}, 1, -1.0f, 1.0f);
  const auto b = ct::random_uniform<float>({30, 40}, 2, -1.0f, 1.0f);
  auto out = ct::full<float>({20, 40}, 3.0f);
  if (std::string(expect) == "error") {
    try {
      ct::matmul(a, b, out);
      FAIL("no error");
    } catch (const ct::tuning_error& e) {
      const std::string what = e.what();
      CHECK(what.find("CT_SIMD_TARGET") != std::string::npos);
      CHECK(what.find("'AVX9'") != std::string::npos);
      CHECK(what.find("available: ") != std::string::npos);
    }
    CHECK_THROWS_AS(ct::eval(ct::exp(a)), ct::tuning_error);  // every time, not only the first
    CHECK(ct_test::bitwise_equal(out, ct::full<float>({20, 40}, 3.0f)));
  } else {
    CHECK(std::string(ct::simd_target_name()) == expect);
    ct::matmul(a, b, out);
    CHECK(ct_test::bitwise_equal(out, under_scalar([&] { return ct::matmul(a, b); })));
    CHECK(std::string(ct::simd_target_name()) == expect);
  }
}
