// tests/kernels/test_kernels.cpp — elementwise tile kernels (unary, binary, muladd) under every
// backend and FMA policy, every tile length, misaligned and in place, against references
// computed independently in a wider type with the C library.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>

#include "kernel_test_util.hpp"

using namespace ct_test_kernels;
using k::binary_op;
using k::unary_op;

namespace {

using ld = long double;

/// Reference definition and test domain of one unary op.
struct unary_case {
  unary_op op;
  const char* name;
  std::function<ld(ld)> ref;
  double lo, hi;     // inputs drawn uniformly from [lo, hi]
  double ulp_float;  // allowed error of float results
  double ulp_double; // allowed error of double results
};

ld ref_sigmoid(ld x) { return 1.0L / (1.0L + std::exp(-x)); }
// gelu's tanh form, rewritten with 1+tanh(u) = 2/(1+e^-2u) so the reference does not cancel.
ld ref_gelu(ld x) {
  const ld u = std::sqrt(2.0L / 3.14159265358979323846264338327950288L) * (x + 0.044715L * x * x * x);
  return x / (1.0L + std::exp(-2.0L * u));
}

const std::vector<unary_case>& unary_cases() {
  // Exactly rounded ops must match bitwise (0 ulp); rsqrt is 1/sqrt with two roundings.
  static const std::vector<unary_case> v{
      {unary_op::neg, "neg", [](ld x) { return -x; }, -1e3, 1e3, 0, 0},
      {unary_op::abs, "abs", [](ld x) { return std::fabs(x); }, -1e3, 1e3, 0, 0},
      {unary_op::sqrt, "sqrt", [](ld x) { return std::sqrt(x); }, 0, 1e6, 0.5, 0.5},
      {unary_op::rsqrt, "rsqrt", [](ld x) { return 1 / std::sqrt(x); }, 1e-3, 1e6, 1.5, 1.5},
      {unary_op::exp, "exp", [](ld x) { return std::exp(x); }, -87, 88, 4, 4},
      {unary_op::expm1, "expm1", [](ld x) { return std::expm1(x); }, -20, 20, 4, 4},
      {unary_op::log, "log", [](ld x) { return std::log(x); }, 1e-30, 1e30, 4, 4},
      {unary_op::log1p, "log1p", [](ld x) { return std::log1p(x); }, -0.999, 1e3, 4, 4},
      {unary_op::sin, "sin", [](ld x) { return std::sin(x); }, -100, 100, 4, 4},
      {unary_op::cos, "cos", [](ld x) { return std::cos(x); }, -100, 100, 4, 4},
      {unary_op::tanh, "tanh", [](ld x) { return std::tanh(x); }, -10, 10, 4, 4},
      {unary_op::sigmoid, "sigmoid", ref_sigmoid, -80, 80, 4, 4},
      {unary_op::relu, "relu", [](ld x) { return x > 0 ? x : 0; }, -10, 10, 0, 0},
      {unary_op::gelu, "gelu", ref_gelu, -30, 30, 4, 4},
      {unary_op::silu, "silu", [](ld x) { return x * ref_sigmoid(x); }, -80, 80, 4, 4},
      {unary_op::square, "square", [](ld x) { return x * x; }, -1e3, 1e3, 0.5, 0.5},
      {unary_op::reciprocal, "reciprocal", [](ld x) { return 1 / x; }, 1e-3, 1e3, 0.5, 0.5},
  };
  return v;
}

template <class T>
void check_unary_case(const unary_case& c, const ct::settings& s) {
  const double tol = sizeof(T) == 4 ? c.ulp_float : c.ulp_double;
  rng r(0x5eed + static_cast<unsigned>(c.op));
  for (index_t n : tile_lengths()) {
    offset_buffer<T> x(n), y(n), in_place(n);
    for (index_t i = 0; i < n; ++i) in_place[i] = x[i] = static_cast<T>(r.uniform(c.lo, c.hi));
    k::unary(c.op, x.data(), y.data(), n, s);
    k::unary(c.op, in_place.data(), in_place.data(), n, s);
    double worst = 0;
    index_t worst_i = -1;
    for (index_t i = 0; i < n; ++i) {
      const double e = ulp_error(y[i], c.ref(static_cast<ld>(x[i])));
      if (e > worst) worst = e, worst_i = i;
      if (!same_bits(y[i], in_place[i])) FAIL(c.name << ": in-place result differs at " << i);
    }
    INFO(c.name << " " << describe(s) << " n=" << n << " worst at x=" << (worst_i >= 0 ? x[worst_i] : T(0)));
    CHECK(worst <= tol);
  }
}

}  // namespace

TEST_CASE("unary kernels match wider references for every tile length and setting", "[kernels]") {
  for (const auto& s : all_settings())
    for (const auto& c : unary_cases()) {
      check_unary_case<float>(c, s);
      check_unary_case<double>(c, s);
    }
}

TEMPLATE_TEST_CASE("unary kernels: special values", "[kernels]", float, double) {
  using T = TestType;
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  const T big = sizeof(T) == 4 ? T(110) : T(800);  // e^big overflows, e^-big is below the least subnormal
  struct expect {
    unary_op op;
    T in, out;
  };
  const std::vector<expect> cases{
      {unary_op::exp, inf, inf},         {unary_op::exp, -inf, 0},          {unary_op::exp, big, inf},
      {unary_op::exp, -big, 0},          {unary_op::exp, 0, 1},             {unary_op::exp, nan, nan},
      {unary_op::expm1, inf, inf},       {unary_op::expm1, -inf, -1},       {unary_op::expm1, big, inf},
      {unary_op::expm1, -big, -1},       {unary_op::expm1, -T(0), -T(0)},   {unary_op::expm1, nan, nan},
      {unary_op::log, 0, -inf},          {unary_op::log, -T(0), -inf},      {unary_op::log, -1, nan},
      {unary_op::log, inf, inf},         {unary_op::log, -inf, nan},        {unary_op::log, 1, 0},
      {unary_op::log, nan, nan},         {unary_op::log1p, -1, -inf},       {unary_op::log1p, -2, nan},
      {unary_op::log1p, inf, inf},       {unary_op::log1p, -T(0), -T(0)},   {unary_op::log1p, nan, nan},
      {unary_op::sin, inf, nan},         {unary_op::sin, -inf, nan},        {unary_op::sin, -T(0), -T(0)},
      {unary_op::sin, nan, nan},         {unary_op::cos, inf, nan},         {unary_op::cos, 0, 1},
      {unary_op::cos, nan, nan},         {unary_op::tanh, inf, 1},          {unary_op::tanh, -inf, -1},
      {unary_op::tanh, -T(0), -T(0)},    {unary_op::tanh, big, 1},          {unary_op::tanh, nan, nan},
      {unary_op::sigmoid, inf, 1},       {unary_op::sigmoid, -inf, 0},      {unary_op::sigmoid, 0, T(0.5)},
      {unary_op::sigmoid, nan, nan},     {unary_op::relu, nan, nan},        {unary_op::relu, -T(0), 0},
      {unary_op::relu, -inf, 0},         {unary_op::relu, inf, inf},        {unary_op::gelu, inf, inf},
      {unary_op::gelu, -inf, -T(0)},     {unary_op::gelu, nan, nan},        {unary_op::gelu, 0, 0},
      {unary_op::silu, inf, inf},        {unary_op::silu, -inf, -T(0)},     {unary_op::silu, nan, nan},
      {unary_op::sqrt, -1, nan},         {unary_op::sqrt, inf, inf},        {unary_op::rsqrt, 0, inf},
      {unary_op::reciprocal, -T(0), -inf}, {unary_op::abs, -T(0), 0},       {unary_op::neg, 0, -T(0)},
  };
  for (const auto& s : all_settings())
    for (const auto& c : cases) {
      // Put the special value among ordinary ones so vector and tail paths both see it.
      for (index_t pos : {index_t(0), index_t(5), index_t(16), index_t(18)}) {
        std::vector<T> x(19, T(0.5)), y(19);
        x[static_cast<size_t>(pos)] = c.in;
        k::unary(c.op, x.data(), y.data(), 19, s);
        const T got = y[static_cast<size_t>(pos)];
        INFO(describe(s) << " op " << int(c.op) << " in " << c.in << " got " << got << " want " << c.out);
        if (std::isnan(c.out))
          CHECK(std::isnan(got));
        else
          CHECK(same_bits(got, c.out));
      }
    }
}

TEMPLATE_TEST_CASE("binary kernels with and without uniform operands", "[kernels]", float, double) {
  using T = TestType;
  const T nan = std::numeric_limits<T>::quiet_NaN();
  struct ref_case {
    binary_op op;
    std::function<T(T, T)> ref;  // exactly rounded in T, or std::pow
  };
  const std::vector<ref_case> ops{
      {binary_op::add, [](T a, T b) { return a + b; }},
      {binary_op::sub, [](T a, T b) { return a - b; }},
      {binary_op::mul, [](T a, T b) { return a * b; }},
      {binary_op::div, [](T a, T b) { return a / b; }},
      {binary_op::min, [](T a, T b) { return std::isnan(a) ? a : std::isnan(b) ? b : (b < a ? b : a); }},
      {binary_op::max, [](T a, T b) { return std::isnan(a) ? a : std::isnan(b) ? b : (b > a ? b : a); }},
      {binary_op::pow, [](T a, T b) { return std::pow(a, b); }},
  };
  rng r(42);
  for (const auto& s : all_settings())
    for (const auto& c : ops)
      for (index_t n : tile_lengths())
        for (int uni = 0; uni < 4; ++uni) {
          const bool au = uni & 1, bu = uni & 2;
          offset_buffer<T> a(n + 1), b(n + 1), y(n + 1);
          for (index_t i = 0; i <= n; ++i) {
            a[i] = static_cast<T>(r.uniform(0.01, 4));
            b[i] = static_cast<T>(r.uniform(-3, 3));
            if (r.below(17) == 0) a[i] = nan;
            if (r.below(19) == 0) b[i] = nan;
            if (r.below(23) == 0) b[i] = a[i];
          }
          k::binary(c.op, a.data(), au, b.data(), bu, y.data(), n, s);
          for (index_t i = 0; i < n; ++i) {
            const T want = c.ref(a[au ? 0 : i], b[bu ? 0 : i]);
            if (!(same_bits(y[i], want) || (std::isnan(want) && std::isnan(y[i])))) {
              FAIL(describe(s) << " op " << int(c.op) << " n=" << n << " uniform " << uni << " i=" << i
                               << ": " << y[i] << " != " << want);
            }
          }
          // In place on the first operand (only meaningful when it is not uniform).
          if (!au) {
            offset_buffer<T> a2 = a;
            k::binary(c.op, a2.data(), false, b.data(), bu, a2.data(), n, s);
            for (index_t i = 0; i < n; ++i)
              if (!same_bits(a2[i], y[i])) FAIL("in-place binary differs at " << i);
          }
        }
}

TEST_CASE("binary min/max: NaN propagation and signed zeros", "[kernels]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const auto& s : all_settings()) {
    const float a[4] = {nan, 1.0f, -0.0f, 0.0f};
    const float b[4] = {1.0f, nan, 0.0f, -0.0f};
    float y[4];
    k::binary(binary_op::min, a, false, b, false, y, 4, s);
    CHECK(std::isnan(y[0]));
    CHECK(std::isnan(y[1]));
    CHECK(same_bits(y[2], -0.0f));  // ties keep the first operand
    CHECK(same_bits(y[3], 0.0f));
    k::binary(binary_op::max, a, false, b, false, y, 4, s);
    CHECK(std::isnan(y[0]));
    CHECK(std::isnan(y[1]));
    CHECK(same_bits(y[2], -0.0f));
    CHECK(same_bits(y[3], 0.0f));
  }
}

TEMPLATE_TEST_CASE("muladd: fused has one rounding, separate two", "[kernels]", float, double) {
  using T = TestType;
  // a = 1+eps, b = 1-eps, c = -1: a*b = 1 - eps^2 exactly; rounded, it becomes 1, so the separate
  // form gives 0 while the fused one keeps -eps^2.
  const T eps = std::numeric_limits<T>::epsilon();
  for (index_t n : tile_lengths()) {
    for (int uni = 0; uni < 8; ++uni) {
      offset_buffer<T> a(n + 1, T(1) + eps), b(n + 1, T(1) - eps), c(n + 1, T(-1)), y(n + 1);
      for (auto backend : {ct::backend::scalar, ct::backend::simd}) {
        k::muladd(a.data(), uni & 1, b.data(), uni & 2, c.data(), uni & 4, y.data(), n,
                  ct::settings{backend, ct::fma_policy::fused});
        for (index_t i = 0; i < n; ++i) REQUIRE(same_bits(y[i], -eps * eps));
        k::muladd(a.data(), uni & 1, b.data(), uni & 2, c.data(), uni & 4, y.data(), n,
                  ct::settings{backend, ct::fma_policy::separate});
        for (index_t i = 0; i < n; ++i) REQUIRE(same_bits(y[i], T(0)));
      }
    }
  }
}

TEMPLATE_TEST_CASE("muladd: random operands match std::fma / two roundings, in place", "[kernels]", float,
                   double) {
  using T = TestType;
  rng r(7);
  for (const auto& s : all_settings())
    for (index_t n : tile_lengths())
      for (int uni = 0; uni < 8; ++uni) {
        const bool au = uni & 1, bu = uni & 2, cu = uni & 4;
        offset_buffer<T> a(n + 1), b(n + 1), c(n + 1), y(n + 1);
        for (index_t i = 0; i <= n; ++i) {
          a[i] = static_cast<T>(r.uniform(-2, 2));
          b[i] = static_cast<T>(r.uniform(-2, 2));
          c[i] = static_cast<T>(r.uniform(-2, 2));
        }
        k::muladd(a.data(), au, b.data(), bu, c.data(), cu, y.data(), n, s);
        for (index_t i = 0; i < n; ++i) {
          const T pa = a[au ? 0 : i], pb = b[bu ? 0 : i], pc = c[cu ? 0 : i];
          volatile T prod = pa * pb;  // volatile: the reference itself must not be contracted
          const T want = s.fma == ct::fma_policy::fused ? std::fma(pa, pb, pc) : T(prod + pc);
          if (!same_bits(y[i], want)) FAIL(describe(s) << " n=" << n << " i=" << i << " uniform " << uni);
        }
        if (!cu) {  // in place on c
          offset_buffer<T> c2 = c;
          k::muladd(a.data(), au, b.data(), bu, c2.data(), false, c2.data(), n, s);
          for (index_t i = 0; i < n; ++i)
            if (!same_bits(c2[i], y[i])) FAIL("in-place muladd differs at " << i);
        }
      }
}

// The streaming variants (non-temporal stores from the first vector-aligned element on) write
// the same values as the ordinary tile functions, wherever the destination starts and however
// long the tile is, and leave the elements around it alone.
TEMPLATE_TEST_CASE("resolve_binary/muladd with stream: same values as the ordinary tile functions", "[kernels]", float,
                   double) {
  using T = TestType;
  rng r(77);
  for (const auto& s : all_settings()) {
    INFO(describe(s));
    const bool simd = s.backend == ct::backend::simd;
    CHECK((k::resolve_binary<T>(binary_op::div, false, true, s, true) != nullptr) == simd);
    CHECK(k::resolve_binary<T>(binary_op::pow, false, true, s, true) == nullptr);
    for (index_t n : tile_lengths())
      for (index_t shift : {0, 1, 3, 15}) {  // elements past a 64-byte boundary
        INFO("n " << n << " shift " << shift);
        const auto size = static_cast<std::size_t>(n + shift + 48);
        std::vector<T> a(size), b(size), c(size), want(size, T(-7)), got(size, T(-7));
        for (std::size_t i = 0; i < size; ++i)
          a[i] = static_cast<T>(r.uniform(-10, 10)), b[i] = static_cast<T>(r.uniform(0.5, 10)), c[i] = static_cast<T>(r.uniform(-3, 3));
        // An aligned start inside the buffers, then `shift` elements on.
        const auto base = [&](std::vector<T>& v) {
          auto addr = reinterpret_cast<std::uintptr_t>(v.data());
          return v.data() + 8 + (64 - addr % 64) % 64 / sizeof(T) + shift;
        };
        // The n results and the 8 elements on either side (untouched: still -7).
        const auto same_around = [&](std::vector<T>& g, std::vector<T>& w) {
          const T *pg = base(g), *pw = base(w);
          for (index_t i = -8; i < n + 8; ++i)
            if (!same_bits(pg[i], pw[i]) || ((i < 0 || i >= n) && pg[i] != T(-7))) return false;
          return true;
        };
        for (binary_op op : {binary_op::add, binary_op::sub, binary_op::mul, binary_op::div, binary_op::min, binary_op::max})
          for (int flags = 0; flags < 4; ++flags) {
            const bool au = flags & 1, bu = flags & 2;
            const auto plain = k::resolve_binary<T>(op, au, bu, s), streamed = k::resolve_binary<T>(op, au, bu, s, true);
            if (!plain) continue;
            REQUIRE(streamed != nullptr);
            plain(a.data(), b.data(), base(want), n);
            streamed(a.data(), b.data(), base(got), n);
            REQUIRE(same_around(got, want));
          }
        for (int flags = 0; flags < 8; ++flags) {
          const bool au = flags & 1, bu = flags & 2, cu = flags & 4;
          const auto plain = k::resolve_muladd<T>(au, bu, cu, s), streamed = k::resolve_muladd<T>(au, bu, cu, s, true);
          if (!plain) continue;
          REQUIRE(streamed != nullptr);
          plain(a.data(), b.data(), c.data(), base(want), n);
          streamed(a.data(), b.data(), c.data(), base(got), n);
          REQUIRE(same_around(got, want));
        }
      }
  }
}

// (x * u) * w [+ c] in one pass equals binary(mul) with u uniform followed by binary(mul) or
// muladd, for every setting, length, uniform c and streaming.
TEMPLATE_TEST_CASE("resolve_scale_then equals a scaling and a multiply / multiply-add", "[kernels]", float, double) {
  using T = TestType;
  rng r(78);
  for (const auto& s : all_settings()) {
    INFO(describe(s));
    const bool simd = s.backend == ct::backend::simd;
    CHECK((k::resolve_scale_then<T>(false, false, s) != nullptr) == simd);
    for (bool muladd : {false, true})
      for (bool cu : {false, true})
        for (bool stream : {false, true}) {
          const auto f = k::resolve_scale_then<T>(muladd, cu, s, stream);
          if (!simd) CHECK(f == nullptr);
          if (!f) continue;  // also none for fused FMA without hardware FMA
          for (index_t n : tile_lengths()) {
            offset_buffer<T> x(n + 1), w(n + 1), c(n + 1), tmp(n + 1), want(n), got(n);
            for (index_t i = 0; i <= n; ++i)
              x[i] = static_cast<T>(r.uniform(-3, 3)), w[i] = static_cast<T>(r.uniform(-3, 3)), c[i] = static_cast<T>(r.uniform(-3, 3));
            const T u[1] = {static_cast<T>(r.uniform(0.1, 3))};
            k::binary(binary_op::mul, x.data(), false, u, true, tmp.data(), n, s);
            if (muladd) k::muladd(tmp.data(), false, w.data(), false, c.data(), cu, want.data(), n, s);
            else k::binary(binary_op::mul, tmp.data(), false, w.data(), false, want.data(), n, s);
            f(x.data(), u, w.data(), muladd ? c.data() : nullptr, got.data(), n);
            for (index_t i = 0; i < n; ++i) REQUIRE(same_bits(got[i], want[i]));
          }
        }
  }
}

TEST_CASE("simd_target_name names a target", "[kernels]") {
  const std::string name = k::simd_target_name();
  INFO(name);
  CHECK(!name.empty());
}

// The direct tile functions are the general kernels without the dispatch: bitwise the same
// results for every operation, uniform flags, length and setting; none for the scalar backend
// or pow.
TEMPLATE_TEST_CASE("resolve_unary/binary/muladd/sub_unary: direct tile functions equal the general kernels", "[kernels]",
                   float, double) {
  using T = TestType;
  rng r(2024);
  for (const auto& s : all_settings()) {
    INFO(describe(s));
    const bool simd = s.backend == ct::backend::simd;
    CHECK(k::resolve_binary<T>(binary_op::pow, false, false, s) == nullptr);
    for (const auto& c : unary_cases()) {
      const auto f = k::resolve_unary<T>(c.op, s);
      CHECK((f != nullptr) == simd);
      if (!f) continue;
      // The prefetching variant (exp only) gives the same bits.
      const auto fp = k::resolve_unary_prefetch<T>(c.op, s);
      CHECK((fp != nullptr) == (c.op == unary_op::exp));
      for (index_t n : tile_lengths()) {
        offset_buffer<T> x(n), want(n), got(n), other(n + 1);
        for (index_t i = 0; i < n; ++i) x[i] = static_cast<T>(r.uniform(c.lo, c.hi));
        k::unary(c.op, x.data(), want.data(), n, s);
        f(x.data(), got.data(), n);
        for (index_t i = 0; i < n; ++i) REQUIRE(same_bits(got[i], want[i]));
        if (!fp) continue;
        fp(x.data(), got.data(), n, other.data());
        for (index_t i = 0; i < n; ++i) REQUIRE(same_bits(got[i], want[i]));
      }
    }
    for (binary_op op : {binary_op::add, binary_op::sub, binary_op::mul, binary_op::div, binary_op::min, binary_op::max})
      for (int flags = 0; flags < 4; ++flags) {
        const bool au = flags & 1, bu = flags & 2;
        const auto f = k::resolve_binary<T>(op, au, bu, s);
        CHECK((f != nullptr) == simd);
        if (!f) continue;
        for (index_t n : tile_lengths()) {
          offset_buffer<T> a(n + 1), b(n + 1), want(n), got(n);
          for (index_t i = 0; i <= n; ++i) a[i] = static_cast<T>(r.uniform(-10, 10)), b[i] = static_cast<T>(r.uniform(0.5, 10));
          k::binary(op, a.data(), au, b.data(), bu, want.data(), n, s);
          f(a.data(), b.data(), got.data(), n);
          for (index_t i = 0; i < n; ++i) REQUIRE(same_bits(got[i], want[i]));
        }
      }
    for (int flags = 0; flags < 8; ++flags) {
      const bool au = flags & 1, bu = flags & 2, cu = flags & 4;
      const auto f = k::resolve_muladd<T>(au, bu, cu, s);
      if (!simd) CHECK(f == nullptr);
      if (!f) continue;  // also null for fused FMA on a target without hardware FMA
      for (index_t n : tile_lengths()) {
        offset_buffer<T> a(n + 1), b(n + 1), c(n + 1), want(n), got(n);
        for (index_t i = 0; i <= n; ++i)
          a[i] = static_cast<T>(r.uniform(-3, 3)), b[i] = static_cast<T>(r.uniform(-3, 3)), c[i] = static_cast<T>(r.uniform(-3, 3));
        k::muladd(a.data(), au, b.data(), bu, c.data(), cu, want.data(), n, s);
        f(a.data(), b.data(), c.data(), got.data(), n);
        for (index_t i = 0; i < n; ++i) REQUIRE(same_bits(got[i], want[i]));
      }
    }
    // exp(x - u) in one pass equals the subtraction and exp as two kernel calls, in place too,
    // over the whole exp range incl. overflow, underflow and NaN.
    CHECK(k::resolve_sub_unary<T>(unary_op::log, s) == nullptr);
    CHECK(k::resolve_sub_unary_prefetch<T>(unary_op::log, s) == nullptr);
    const auto sub_exp = k::resolve_sub_unary<T>(unary_op::exp, s);
    const auto sub_exp_prefetch = k::resolve_sub_unary_prefetch<T>(unary_op::exp, s);
    CHECK((sub_exp != nullptr) == simd);
    CHECK((sub_exp_prefetch != nullptr) == simd);
    if (!sub_exp) continue;
    for (index_t n : tile_lengths()) {
      offset_buffer<T> x(n + 1), want(n), got(n);
      for (index_t i = 0; i < n; ++i) x[i] = static_cast<T>(r.uniform(-800, 100));
      if (n > 3) x[3] = std::numeric_limits<T>::quiet_NaN();
      const T u[1] = {static_cast<T>(r.uniform(-50, 50))};
      k::binary(binary_op::sub, x.data(), false, u, true, want.data(), n, s);
      k::unary(unary_op::exp, want.data(), want.data(), n, s);
      sub_exp(x.data(), u, got.data(), n);
      for (index_t i = 0; i < n; ++i) REQUIRE((same_bits(got[i], want[i]) || (got[i] != got[i] && want[i] != want[i])));
      // The prefetching variant: the same values (the prefetched bytes are another buffer).
      offset_buffer<T> other(n + 1), got_prefetch(n);
      sub_exp_prefetch(x.data(), u, got_prefetch.data(), n, other.data());
      for (index_t i = 0; i < n; ++i) REQUIRE((same_bits(got_prefetch[i], got[i]) || (got[i] != got[i] && got_prefetch[i] != got_prefetch[i])));
      sub_exp(x.data(), u, x.data(), n);  // in place
      for (index_t i = 0; i < n; ++i) REQUIRE((same_bits(x[i], want[i]) || (x[i] != x[i] && want[i] != want[i])));
    }
    // d = x - u and exp(d) both written in one pass equal the two kernel calls, with and
    // without prefetching, and with d written over x (the row runner may reuse x's slot).
    CHECK(k::resolve_sub_keep_unary<T>(unary_op::log, false, s) == nullptr);
    for (bool prefetch : {false, true}) {
      const auto keep = k::resolve_sub_keep_unary<T>(unary_op::exp, prefetch, s);
      CHECK((keep != nullptr) == simd);
      if (!keep) continue;
      for (index_t n : tile_lengths()) {
        offset_buffer<T> x(n + 1), want_d(n), want_y(n), d(n), y(n), other(n + 1);
        for (index_t i = 0; i < n; ++i) x[i] = static_cast<T>(r.uniform(-800, 100));
        if (n > 3) x[3] = std::numeric_limits<T>::quiet_NaN();
        const T u[1] = {static_cast<T>(r.uniform(-50, 50))};
        const auto same = [](T a, T b) { return same_bits(a, b) || (a != a && b != b); };
        k::binary(binary_op::sub, x.data(), false, u, true, want_d.data(), n, s);
        k::unary(unary_op::exp, want_d.data(), want_y.data(), n, s);
        keep(x.data(), u, d.data(), y.data(), n, prefetch ? other.data() : nullptr);
        for (index_t i = 0; i < n; ++i) {
          REQUIRE(same(d[i], want_d[i]));
          REQUIRE(same(y[i], want_y[i]));
        }
        keep(x.data(), u, x.data(), y.data(), n, prefetch ? other.data() : nullptr);  // d over x
        for (index_t i = 0; i < n; ++i) {
          REQUIRE(same(x[i], want_d[i]));
          REQUIRE(same(y[i], want_y[i]));
        }
      }
    }
  }
}
