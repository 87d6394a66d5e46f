// The narrow element types: bfloat16 and float16 (stored in two bytes, computed in float32,
// rounded once when a value leaves its type) and int8 / uint8 / int16 (computed in their own
// type, wrapping like NumPy's fixed-width integers). References are computed here from the
// definitions: float32 arithmetic then one rounding, or double-precision loops with bounds.
#include <boost/asio/thread_pool.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "ct/asio.hpp"
#include "ct/ct.hpp"
#include "support/asio_options.hpp"
#include "support/executor_zoo.hpp"
#include "support/executors.hpp"
#include "support/reference.hpp"

using ct::bfloat16;
using ct::dims;
using ct::float16;
using ct::index_t;

namespace {

constexpr float inf = std::numeric_limits<float>::infinity();
constexpr float qnan = std::numeric_limits<float>::quiet_NaN();

// Inputs with the values that matter for rounding: specials, subnormals of both 16-bit types,
// values near their overflow, and random values of several magnitudes.
std::vector<float> interesting_floats(std::size_t random_count, std::uint64_t seed) {
  std::vector<float> v{0.0f, -0.0f, 1.0f, -1.0f, inf, -inf, qnan, -qnan, 65504.0f, 65519.0f, 65520.0f, -65536.0f,
                       3.0e38f, -3.39e38f, 6.0e-8f, 5.96e-8f, 2.98e-8f, 1.0e-40f, -1.2e-38f, 9.2e-41f, 1.0f + 0x1p-8f,
                       1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-9f, 1.0f + 3 * 0x1p-12f};
  auto r = ct::random_uniform<double>({static_cast<index_t>(random_count)}, seed, -1.0, 1.0);
  for (index_t i = 0; i < r.size(); ++i) {
    const double scale = std::ldexp(1.0, static_cast<int>(i % 40) - 20);
    v.push_back(static_cast<float>(r(i) * scale));
  }
  return v;
}

template <class T>
ct::tensor<T> narrow_tensor(const std::vector<float>& f) {
  ct::tensor<T> t(dims{static_cast<index_t>(f.size())});
  for (std::size_t i = 0; i < f.size(); ++i) t(static_cast<index_t>(i)) = T(f[i]);
  return t;
}

template <class T>
std::uint16_t bits(T v) {
  return v.bits;
}

// Same bits, except that any two NaNs count as equal when payloads may legitimately differ.
template <class T>
bool same16(T a, T b, bool any_nan = false) {
  const float fa = static_cast<float>(a), fb = static_cast<float>(b);
  if (any_nan && std::isnan(fa) && std::isnan(fb)) return true;
  return a.bits == b.bits;
}

template <class T>
double ulp16_rel() {  // half an ulp relative to the value, the rounding of a 16-bit store
  return std::is_same_v<T, bfloat16> ? 0x1p-8 : 0x1p-11;
}
template <class T>
double ulp16_abs() {  // half the spacing of the subnormals, where the relative bound stops
  return std::is_same_v<T, bfloat16> ? 0x1p-134 : 0x1p-25;
}

// The zoo's check with the element type taken from the expression.
template <class Make>
void same_everywhere(Make make, const char* what) {
  using T = typename decltype(ct::eval(make()))::value_type;
  ct_test::expect_same_under_every_executor<T>(make, what);
}

}  // namespace

TEMPLATE_TEST_CASE("16-bit floats: exact operations are the float32 result rounded once", "[narrow]", bfloat16, float16) {
  using T = TestType;
  const auto fa = interesting_floats(3000, 1), fb = interesting_floats(3000, 2);
  const auto a = narrow_tensor<T>(fa), b = narrow_tensor<T>(fb);
  for (ct::backend be : {ct::backend::scalar, ct::backend::simd}) {
    ct::backend_scope scope(be);
    const auto sum = ct::eval(a + b), prod = ct::eval(a * b), quot = ct::eval(a / b), diff = ct::eval(a - 0.3);
    const auto neg = ct::eval(-a), absv = ct::eval(ct::abs(a)), mx = ct::eval(ct::maximum(a, b));
    const auto root = ct::eval(ct::sqrt(ct::abs(a)));
    for (index_t i = 0; i < a.size(); ++i) {
      const float x = static_cast<float>(a(i)), y = static_cast<float>(b(i));
      INFO("x = " << x << " y = " << y << " backend " << (be == ct::backend::simd ? "simd" : "scalar"));
      CHECK(same16(sum(i), T(x + y), true));
      CHECK(same16(prod(i), T(x * y), true));
      CHECK(same16(quot(i), T(x / y), true));
      CHECK(same16(diff(i), T(x - static_cast<float>(T(0.3))), true));  // the number adopts the type
      CHECK(same16(neg(i), T(-x), true));
      CHECK(same16(absv(i), T(std::fabs(x)), true));
      CHECK(same16(mx(i), T(std::isnan(x) ? x : std::isnan(y) ? y : (y > x ? y : x)), true));
      CHECK(same16(root(i), T(std::sqrt(std::fabs(x))), true));
    }
  }
}

TEMPLATE_TEST_CASE("16-bit floats: a chain is computed in float32 and rounded only at the end", "[narrow]", bfloat16, float16) {
  using T = TestType;
  const auto fa = interesting_floats(2000, 3), fb = interesting_floats(2000, 4);
  const auto a = narrow_tensor<T>(fa), b = narrow_tensor<T>(fb);
  {
    ct::fma_scope f(ct::fma_policy::fused);
    const auto r = ct::eval(a * b + a);
    for (index_t i = 0; i < a.size(); ++i) {
      const float x = static_cast<float>(a(i)), y = static_cast<float>(b(i));
      CHECK(same16(r(i), T(std::fma(x, y, x)), true));
    }
  }
  {
    ct::fma_scope f(ct::fma_policy::separate);
    const auto r = ct::eval(a * b + a);
    for (index_t i = 0; i < a.size(); ++i) {
      const float x = static_cast<float>(a(i)), y = static_cast<float>(b(i));
      volatile float p = x * y;  // rounded on its own
      CHECK(same16(r(i), T(p + x), true));
    }
  }
  // cast<float> of a computed 16-bit value rounds it to its type first; of a loaded one it is exact.
  const auto c = ct::eval(ct::cast<float>(a + b));
  const auto w = ct::eval(ct::cast<float>(a));
  for (index_t i = 0; i < a.size(); ++i) {
    const float x = static_cast<float>(a(i)), y = static_cast<float>(b(i));
    const float expect = static_cast<float>(T(x + y));
    CHECK((std::memcmp(&c(i), &expect, 4) == 0 || (std::isnan(c(i)) && std::isnan(expect))));
    CHECK(std::memcmp(&w(i), &x, 4) == 0);
  }
}

TEST_CASE("16-bit floats: casts round once, from float and from double", "[narrow]") {
  const auto f = interesting_floats(5000, 5);
  ct::tensor<float> x(dims{static_cast<index_t>(f.size())});
  for (std::size_t i = 0; i < f.size(); ++i) x(static_cast<index_t>(i)) = f[i];
  // Doubles just off a float16/bfloat16 tie: rounding them to float first would land on the tie.
  std::vector<double> dv;
  for (int e = -20; e < 15; ++e)
    for (int m : {1, 3, 5, 7, 11}) {
      const double base = std::ldexp(1.0 + m * 0x1p-11, e), tie16 = std::ldexp(0x1p-11, e - 1);
      const double base_b = std::ldexp(1.0 + m * 0x1p-8, e), tieb = std::ldexp(0x1p-8, e - 1);
      dv.insert(dv.end(), {base + tie16 + std::ldexp(1.0, e - 40), base + tie16 - std::ldexp(1.0, e - 40),
                           base_b + tieb + std::ldexp(1.0, e - 40), -(base_b + tieb - std::ldexp(1.0, e - 40))});
    }
  ct::tensor<double> d(dims{static_cast<index_t>(dv.size())});
  for (std::size_t i = 0; i < dv.size(); ++i) d(static_cast<index_t>(i)) = dv[i];

  const auto xb = ct::eval(ct::cast<bfloat16>(x));
  const auto xh = ct::eval(ct::cast<float16>(x));
  const auto back = ct::eval(ct::cast<float>(xb));
  const auto bh = ct::eval(ct::cast<float16>(xb));
  const auto xi = ct::eval(ct::cast<std::int32_t>(ct::cast<float16>(x)));
  for (index_t i = 0; i < x.size(); ++i) {
    INFO("x = " << x(i));
    CHECK(bits(xb(i)) == bits(bfloat16(x(i))));
    CHECK(bits(xh(i)) == bits(float16(x(i))));
    const float wb = static_cast<float>(bfloat16(x(i)));
    CHECK(std::memcmp(&back(i), &wb, 4) == 0);
    CHECK(bits(bh(i)) == bits(float16(wb)));
    const float h = static_cast<float>(float16(x(i)));
    const std::int32_t expect = std::isnan(h) ? 0 : h >= 2147483648.0f ? std::numeric_limits<std::int32_t>::max()
                                : h < -2147483648.0f ? std::numeric_limits<std::int32_t>::min() : static_cast<std::int32_t>(h);
    CHECK(xi(i) == expect);
  }
  const auto db = ct::eval(ct::cast<bfloat16>(d));
  const auto dh = ct::eval(ct::cast<float16>(d));
  for (index_t i = 0; i < d.size(); ++i) {
    INFO("d = " << d(i));
    // The scalar conversions are checked bit by bit against an independent reference in
    // tests/kernels/test_convert.cpp; here the cast must agree with them.
    CHECK(bits(db(i)) == bits(bfloat16(d(i))));
    CHECK(bits(dh(i)) == bits(float16(d(i))));
    // Rounding once is never further from the double than rounding to float first.
    const float16 twice(static_cast<float>(d(i)));
    const double err_once = std::fabs(static_cast<double>(static_cast<float>(dh(i))) - d(i));
    const double err_twice = std::fabs(static_cast<double>(static_cast<float>(twice)) - d(i));
    CHECK(err_once <= err_twice);
  }
}

TEMPLATE_TEST_CASE("16-bit floats: reductions and the fused row operations", "[narrow]", bfloat16, float16) {
  using T = TestType;
  const index_t rows = 23, cols = 1037;
  const auto x = ct::eval(ct::cast<T>(ct::random_uniform<float>({rows, cols}, 7, -4.0f, 4.0f)));
  const auto w = ct::eval(ct::cast<T>(ct::random_uniform<float>({cols}, 8, 0.5f, 1.5f)));
  const auto bias = ct::eval(ct::cast<T>(ct::random_uniform<float>({cols}, 9, -1.0f, 1.0f)));
  const auto xv = ct_test::values(x), wv = ct_test::values(w), bv = ct_test::values(bias);
  const double half_ulp = ulp16_rel<T>();

  const auto s = ct::eval(ct::sum(x, -1));
  const auto mx = ct::eval(ct::max(x, -1));
  const auto am = ct::eval(ct::argmax(x, -1));
  const auto sm = ct::eval(ct::softmax(x, -1));
  const auto ln = ct::eval(ct::layer_norm(x, -1, T(1e-5f), w, bias));
  const auto rn = ct::eval(ct::rms_norm(x, -1, T(1e-6f), w));
  const auto lse = ct::eval(ct::logsumexp(x, -1));
  for (index_t r = 0; r < rows; ++r) {
    const double* row = xv.data() + r * cols;
    double sum = 0, sum_abs = 0, best = row[0], m2 = 0;
    index_t best_at = 0;
    for (index_t c = 0; c < cols; ++c) {
      sum += row[c];
      sum_abs += std::fabs(row[c]);
      if (row[c] > best) best = row[c], best_at = c;
      m2 += row[c] * row[c];
    }
    INFO("row " << r);
    // Lane sums in double, one float rounding, one 16-bit rounding.
    CHECK(std::fabs(static_cast<double>(s(r)) - sum) <= half_ulp * 1.001 * std::fabs(sum) + 1e-7 * sum_abs);
    CHECK(static_cast<double>(mx(r)) == best);
    CHECK(am(r) == best_at);
    double z = 0;
    for (index_t c = 0; c < cols; ++c) z += std::exp(row[c] - best);
    CHECK(std::fabs(static_cast<double>(lse(r)) - (best + std::log(z))) <= half_ulp * 1.001 * std::fabs(best + std::log(z)) + 1e-5);
    const double mean = sum / static_cast<double>(cols);
    double var = 0;
    for (index_t c = 0; c < cols; ++c) var += (row[c] - mean) * (row[c] - mean);
    var /= static_cast<double>(cols);
    const double rinv = 1.0 / std::sqrt(var + static_cast<double>(static_cast<float>(T(1e-5f))));
    const double rms = 1.0 / std::sqrt(m2 / static_cast<double>(cols) + static_cast<double>(static_cast<float>(T(1e-6f))));
    for (index_t c = 0; c < cols; ++c) {
      const double soft = std::exp(row[c] - best) / z;
      const double l = (row[c] - mean) * rinv * wv[static_cast<std::size_t>(c)] + bv[static_cast<std::size_t>(c)];
      const double q = row[c] * rms * wv[static_cast<std::size_t>(c)];
      // One 16-bit rounding plus float32 arithmetic (a few float ulps, far below it).
      CHECK(std::fabs(static_cast<double>(sm(r, c)) - soft) <= half_ulp * 1.001 * soft + ulp16_abs<T>() + 1e-12);
      CHECK(std::fabs(static_cast<double>(ln(r, c)) - l) <= half_ulp * 1.001 * std::fabs(l) + 1e-5);
      CHECK(std::fabs(static_cast<double>(rn(r, c)) - q) <= half_ulp * 1.001 * std::fabs(q) + 1e-5);
    }
  }
  // A 16-bit tensor into a float32 result: no 16-bit rounding of the result at all.
  const auto sf = ct::eval(ct::cast<float>(ct::softmax(ct::cast<float>(x), -1)));
  for (index_t r = 0; r < rows; ++r) {
    const double* row = xv.data() + r * cols;
    double best = row[0], z = 0;
    for (index_t c = 0; c < cols; ++c) best = std::max(best, row[c]);
    for (index_t c = 0; c < cols; ++c) z += std::exp(row[c] - best);
    for (index_t c = 0; c < cols; c += 97) CHECK(std::fabs(static_cast<double>(sf(r, c)) - std::exp(row[c] - best) / z) <= 1e-6 * std::exp(row[c] - best) / z + 1e-12);
  }
}

TEST_CASE("narrow integers wrap like NumPy's fixed-width integers", "[narrow]") {
  auto i8 = ct::from_vector<std::int8_t>({100, -128, 127, -1, 0, 5});
  auto j8 = ct::from_vector<std::int8_t>({100, -1, 1, -1, 7, -3});
  auto s = ct::eval(i8 + j8), p = ct::eval(i8 * j8), q = ct::eval(i8 / j8), d = ct::eval(i8 - j8);
  const int es[] = {-56, 127, -128, -2, 7, 2}, ep[] = {16, -128, 127, 1, 0, -15}, eq[] = {1, -128, 127, 1, 0, -1},
            ed[] = {0, -127, 126, 0, -7, 8};
  for (index_t i = 0; i < 6; ++i) {
    INFO(i);
    CHECK(int(s(i)) == es[i]);
    CHECK(int(p(i)) == ep[i]);
    CHECK(int(q(i)) == eq[i]);
    CHECK(int(d(i)) == ed[i]);
  }
  auto neg = ct::eval(-i8), ab = ct::eval(ct::abs(i8)), sq = ct::eval(ct::square(i8));
  CHECK(int(neg(1)) == -128);  // -(-128) wraps
  CHECK(int(ab(1)) == -128);
  CHECK(int(sq(0)) == 16);     // 10000 mod 256
  auto u8 = ct::from_vector<std::uint8_t>({200, 0, 255, 3});
  auto v8 = ct::from_vector<std::uint8_t>({100, 1, 255, 2});
  auto us = ct::eval(u8 + v8), ud = ct::eval(u8 - v8), un = ct::eval(-u8), uq = ct::eval(u8 / v8), ua = ct::eval(ct::abs(u8));
  const int eus[] = {44, 1, 254, 5}, eud[] = {100, 255, 0, 1}, eun[] = {56, 0, 1, 253}, euq[] = {2, 0, 1, 1};
  for (index_t i = 0; i < 4; ++i) {
    INFO(i);
    CHECK(int(us(i)) == eus[i]);
    CHECK(int(ud(i)) == eud[i]);
    CHECK(int(un(i)) == eun[i]);
    CHECK(int(uq(i)) == euq[i]);
    CHECK(int(ua(i)) == int(u8(i)));
  }
  auto i16 = ct::from_vector<std::int16_t>({300, -32768, 32767});
  auto m16 = ct::eval(i16 * i16), a16 = ct::eval(i16 + std::int16_t(1));
  CHECK(int(m16(0)) == 24464);  // 90000 mod 65536
  CHECK(int(m16(1)) == 0);
  CHECK(int(a16(2)) == -32768);
  auto cmp = ct::eval(i8 < j8);
  CHECK((!cmp(0) && cmp(1) && !cmp(2) && !cmp(3) && cmp(4) && !cmp(5)));
  // Casts: float to a narrow integer truncates and saturates (NaN gives 0); between integers
  // the value wraps, as NumPy's astype does.
  auto f = ct::from_vector<float>({300.0f, -300.0f, 2.9f, -2.9f, qnan, 255.5f, -0.5f});
  auto c8 = ct::eval(ct::cast<std::int8_t>(f));
  auto cu = ct::eval(ct::cast<std::uint8_t>(f));
  auto c16 = ct::eval(ct::cast<std::int16_t>(f));
  const int e8[] = {127, -128, 2, -2, 0, 127, 0}, eu8[] = {255, 0, 2, 0, 0, 255, 0}, e16[] = {300, -300, 2, -2, 0, 255, 0};
  for (index_t i = 0; i < 7; ++i) {
    INFO(i);
    CHECK(int(c8(i)) == e8[i]);
    CHECK(int(cu(i)) == eu8[i]);
    CHECK(int(c16(i)) == e16[i]);
  }
  auto big = ct::from_vector<std::int32_t>({300, -1, 65537});
  auto w8 = ct::eval(ct::cast<std::uint8_t>(big));
  auto w16 = ct::eval(ct::cast<std::int16_t>(big));
  CHECK((int(w8(0)) == 44 && int(w8(1)) == 255 && int(w8(2)) == 1));
  CHECK((int(w16(0)) == 300 && int(w16(1)) == -1 && int(w16(2)) == 1));
}

TEST_CASE("narrow integers: reductions count in int64 and errors change nothing", "[narrow]") {
  const index_t rows = 9, cols = 3001;
  auto x = ct::random_uniform<std::int8_t>({rows, cols}, 11, std::int8_t(-128), std::int8_t(127));
  auto u = ct::random_uniform<std::uint8_t>({rows, cols}, 12, std::uint8_t(0), std::uint8_t(255));
  auto h = ct::random_uniform<std::int16_t>({rows, cols}, 13, std::int16_t(-30000), std::int16_t(30000));
  static_assert(std::is_same_v<decltype(ct::eval(ct::sum(x, -1)))::value_type, std::int64_t>);
  static_assert(std::is_same_v<decltype(ct::eval(ct::max(x, -1)))::value_type, std::int8_t>);
  auto sx = ct::eval(ct::sum(x, -1)), su = ct::eval(ct::sum(u, -1)), sh = ct::eval(ct::sum(h, -1));
  auto mx = ct::eval(ct::max(x, -1));
  auto mu = ct::eval(ct::min(u, -1));
  auto ah = ct::eval(ct::argmax(h, -1));
  auto s0 = ct::eval(ct::sum(x, 0));
  for (index_t r = 0; r < rows; ++r) {
    std::int64_t a = 0, b = 0, c = 0;
    int best = -1000, least = 1000, hb = -40000;
    index_t hat = 0;
    for (index_t k = 0; k < cols; ++k) {
      a += x(r, k);
      b += u(r, k);
      c += h(r, k);
      best = std::max(best, int(x(r, k)));
      least = std::min(least, int(u(r, k)));
      if (h(r, k) > hb) hb = h(r, k), hat = k;
    }
    CHECK(sx(r) == a);
    CHECK(su(r) == b);
    CHECK(sh(r) == c);
    CHECK(int(mx(r)) == best);
    CHECK(int(mu(r)) == least);
    CHECK(ah(r) == hat);
  }
  for (index_t k = 0; k < cols; k += 101) {
    std::int64_t a = 0;
    for (index_t r = 0; r < rows; ++r) a += x(r, k);
    CHECK(s0(k) == a);
  }
  // Division by zero: a clear error, and the destination keeps its old bits.
  auto num = ct::from_vector<std::int8_t>({1, 2, 3, 4});
  auto den = ct::from_vector<std::int8_t>({1, 1, 0, 1});
  auto dest = ct::full<std::int8_t>({4}, std::int8_t(42));
  CHECK_THROWS_WITH(ct::eval(num / den, dest), Catch::Contains("division by zero"));
  for (index_t i = 0; i < 4; ++i) CHECK(int(dest(i)) == 42);
}

TEST_CASE("narrow types: results are bitwise identical under every executor", "[narrow][scheduling]") {
  auto xb = ct::eval(ct::cast<bfloat16>(ct::random_uniform<float>({37, 1037}, 21, -3.0f, 3.0f)));
  auto xh = ct::eval(ct::cast<float16>(ct::random_uniform<float>({19, 3001}, 22, -3.0f, 3.0f)));
  auto x8 = ct::random_uniform<std::int8_t>({41, 533}, 23, std::int8_t(-128), std::int8_t(127));
  auto xu = ct::random_uniform<std::uint8_t>({41, 533}, 24, std::uint8_t(0), std::uint8_t(255));
  auto wb = ct::eval(ct::cast<bfloat16>(ct::random_uniform<float>({1037}, 25, 0.5f, 1.5f)));
  same_everywhere([&] { return ct::softmax(xb, -1); }, "softmax bf16");
  same_everywhere([&] { return ct::softmax(xh, -1); }, "softmax f16 long rows");
  same_everywhere([&] { return ct::layer_norm(xb, -1, bfloat16(1e-5f), wb, wb); }, "layer_norm bf16");
  same_everywhere([&] { return ct::rms_norm(xh, -1, float16(1e-6f)); }, "rms_norm f16");
  same_everywhere([&] { return ct::sum(xb, -1); }, "sum bf16");
  same_everywhere([&] { return ct::sum(xh, 0); }, "sum f16 axis 0");
  same_everywhere([&] { return ct::argmax(xb, -1); }, "argmax bf16");
  same_everywhere([&] { return ct::logsumexp(xh, -1); }, "logsumexp f16");
  same_everywhere([&] { return ct::sum(x8, -1); }, "sum int8");
  same_everywhere([&] { return ct::max(xu, -1); }, "max uint8");
  same_everywhere([&] { return ct::argmin(x8, 0); }, "argmin int8 axis 0");
  same_everywhere([&] { return ct::cast<bfloat16>(ct::softmax(ct::cast<float>(x8), -1)); }, "softmax of int8 into bf16");
}

TEST_CASE("narrow types: a throwing functor leaves a 16-bit destination unchanged", "[narrow][scheduling]") {
  auto x = ct::eval(ct::cast<bfloat16>(ct::random_uniform<float>({64, 300}, 31, -1.0f, 1.0f)));
  auto dest = ct::full<bfloat16>({64, 300}, bfloat16(7.0f));
  auto before = dest.clone();
  boost::asio::thread_pool pool(2);
  {
    ct::executor_scope scope(ct::asio_executor(pool, 2, ct_test::sharing()));
    auto bad = ct::map([](bfloat16 v) -> bfloat16 {
      if (static_cast<float>(v) > 0.99f) throw std::runtime_error("too large");
      return v;
    }, x);
    CHECK_THROWS_WITH(ct::eval(bad / ct::sum(bad, -1), dest), "too large");
  }
  pool.join();
  CHECK(ct_test::bitwise_equal(dest, before));
}

TEMPLATE_TEST_CASE("16-bit floats: matmul accumulates in float32 and rounds each result once", "[narrow][matmul]", bfloat16, float16) {
  using T = TestType;
  const index_t m = 67, k = 129, n = 45;
  const auto a = ct::eval(ct::cast<T>(ct::random_uniform<float>({m, k}, 41, -1.0f, 1.0f)));
  const auto b = ct::eval(ct::cast<T>(ct::random_uniform<float>({k, n}, 42, -1.0f, 1.0f)));
  const auto v = ct::eval(ct::cast<T>(ct::random_uniform<float>({k}, 43, -1.0f, 1.0f)));
  const auto av = ct_test::values(a), bv = ct_test::values(b), vv = ct_test::values(v);
  const auto c = ct::matmul(a, b);
  const auto y = ct::matmul(a, v);
  const auto bt = ct::matmul(b.transpose(), a.transpose());
  for (index_t i = 0; i < m; ++i) {
    double yref = 0, yabs = 0;
    for (index_t p = 0; p < k; ++p) {
      yref += av[static_cast<std::size_t>(i * k + p)] * vv[static_cast<std::size_t>(p)];
      yabs += std::fabs(av[static_cast<std::size_t>(i * k + p)] * vv[static_cast<std::size_t>(p)]);
    }
    CHECK(std::fabs(static_cast<double>(y(i)) - yref) <= ulp16_rel<T>() * 1.001 * std::fabs(yref) + k * 0x1p-24 * yabs);
    for (index_t j = 0; j < n; ++j) {
      double ref = 0, sabs = 0;
      for (index_t p = 0; p < k; ++p) {
        const double t = av[static_cast<std::size_t>(i * k + p)] * bv[static_cast<std::size_t>(p * n + j)];
        ref += t;
        sabs += std::fabs(t);
      }
      INFO(i << ", " << j);
      CHECK(std::fabs(static_cast<double>(c(i, j)) - ref) <= ulp16_rel<T>() * 1.001 * std::fabs(ref) + k * 0x1p-24 * sabs);
      CHECK(bits(bt(j, i)) == bits(c(i, j)));  // the same products through transposed views
    }
  }
  ct_test::executor_zoo z;
  for (auto& [name, exec] : z.all()) {
    ct::executor_scope scope(exec);
    INFO(name);
    CHECK(ct_test::bitwise_equal(ct::matmul(a, b), c));
    CHECK(ct_test::bitwise_equal(ct::matmul(a, v), y));
  }
  // A destination overlapping an operand still gives the right product.
  auto sq = ct::eval(ct::cast<T>(ct::random_uniform<float>({32, 32}, 44, -1.0f, 1.0f)));
  const auto expect = ct::matmul(sq, sq);
  ct::matmul(sq, sq, sq);
  CHECK(ct_test::bitwise_equal(sq, expect));
}

// Products of two bfloat16 or float16 values are exact in float32 (8 + 8 and 11 + 11
// significand bits), so a naive loop adding them in float, in the product's k order, and
// rounding the sum once is the exact expected value under either FMA policy: the blocked product must give it
// bit for bit — across row blocks, callbacks, a strided A, a strided destination and batches
// with a broadcast B.
TEMPLATE_TEST_CASE("16-bit floats: a matrix product is bitwise the float32 sum in k order rounded once", "[narrow][matmul]", bfloat16, float16) {
  using T = TestType;
  const index_t batches = 2, m = 530, k = 300, n = 70;
  const auto a = ct::eval(ct::cast<T>(ct::random_uniform<float>({batches, m, k}, 51, -1.0f, 1.0f)));
  const auto at = ct::eval(ct::cast<T>(ct::random_uniform<float>({k, m}, 52, -1.0f, 1.0f)));
  const auto b = ct::eval(ct::cast<T>(ct::random_uniform<float>({k, n}, 53, -1.0f, 1.0f)));
  const auto av = ct_test::values(a), atv = ct_test::values(at), bv = ct_test::values(b);
  // expected(i, j) for A element (i, p) at a_at(i, p)
  // ... in k chunks of 128 (docs/matmul.md): each chunk summed from 0, the chunks' sums added.
  const auto expected = [&](auto a_at, index_t i, index_t j) {
    float total = 0.0f;
    for (index_t q = 0; q < k; q += 128) {
      float acc = 0.0f;
      for (index_t p = q; p < std::min<index_t>(k, q + 128); ++p)
        acc += static_cast<float>(a_at(i, p)) * static_cast<float>(bv[static_cast<std::size_t>(p * n + j)]);
      total = q == 0 ? acc : total + acc;
    }
    return bits(T(total));
  };
  const auto check_all = [&](const ct::tensor<T>& c, auto a_at) {
    int wrong = 0;
    for (index_t i = 0; i < m; ++i)
      for (index_t j = 0; j < n; ++j) wrong += bits(c(i, j)) != expected(a_at, i, j);
    return wrong;
  };
  const auto batched_a = [&](index_t batch) {
    return [&, batch](index_t i, index_t p) { return av[static_cast<std::size_t>((batch * m + i) * k + p)]; };
  };
  const auto transposed_a = [&](index_t i, index_t p) { return atv[static_cast<std::size_t>(p * m + i)]; };

  ct_test::executor_zoo z;
  for (auto& [name, exec] : z.all()) {
    ct::executor_scope scope(exec);
    INFO(name);
    const auto c = ct::matmul(a, b);  // [2, m, n], b broadcast over the batch
    CHECK(check_all(c.slice(0, 0, 1).reshape({m, n}), batched_a(0)) == 0);
    CHECK(check_all(c.slice(0, 1, 2).reshape({m, n}), batched_a(1)) == 0);
    auto wide = ct::full<T>({m, 2 * n}, T(5.0f));
    auto strided = wide.slice(1, 0, 2 * n, 2);  // column stride 2
    ct::matmul(at.transpose(), b, strided);
    CHECK(check_all(strided, transposed_a) == 0);
    CHECK(static_cast<float>(wide(7, 1)) == 5.0f);  // the columns between are not written
  }
}

// "Computed in float32, rounded once": a row operation of 16-bit tensors must give bit for bit
// the float32 operation of the widened tensors (materialised as float32 first, so it runs on
// float32's own paths), each result rounded once — for one-tile rows (the layer-norm row
// kernel), multi-tile rows and weights shared by every row.
TEMPLATE_TEST_CASE("16-bit floats: row operations are the float32 ones of the widened values, rounded once", "[narrow]", bfloat16, float16) {
  using T = TestType;
  const ct::settings all[] = {{ct::backend::simd, ct::fma_policy::fused}, {ct::backend::simd, ct::fma_policy::separate},
                              {ct::backend::scalar, ct::fma_policy::fused}};
  for (const ct::settings& st : all)
  for (const index_t cols : {index_t{512}, index_t{1024}, index_t{1037}, index_t{4100}}) {
    ct::settings_scope scope(st);
    const index_t rows = 9;
    INFO("cols " << cols << (st.backend == ct::backend::scalar ? " scalar" : " simd") << (st.fma == ct::fma_policy::fused ? " fused" : " separate"));
    const auto x = ct::eval(ct::cast<T>(ct::random_uniform<float>({rows, cols}, 61, -4.0f, 4.0f)));
    const auto w = ct::eval(ct::cast<T>(ct::random_uniform<float>({cols}, 62, 0.5f, 1.5f)));
    const auto bias = ct::eval(ct::cast<T>(ct::random_uniform<float>({cols}, 63, -1.0f, 1.0f)));
    const auto xf = ct::eval(ct::cast<float>(x)), wf = ct::eval(ct::cast<float>(w)), bf = ct::eval(ct::cast<float>(bias));
    const float eps = static_cast<float>(T(1e-5f));
    const auto same = [&](const ct::tensor<T>& got, const ct::tensor<float>& want) {
      const auto g = got.contiguous();
      const auto f = want.contiguous();
      int wrong = 0;
      for (index_t i = 0; i < f.size(); ++i) wrong += bits(g.data()[i]) != bits(T(f.data()[i]));
      return wrong;
    };
    CHECK(same(ct::eval(ct::softmax(x, -1)), ct::eval(ct::softmax(xf, -1))) == 0);
    CHECK(same(ct::eval(ct::log_softmax(x, -1)), ct::eval(ct::log_softmax(xf, -1))) == 0);
    CHECK(same(ct::eval(ct::layer_norm(x, -1, T(eps), w, bias)), ct::eval(ct::layer_norm(xf, -1, eps, wf, bf))) == 0);
    CHECK(same(ct::eval(ct::layer_norm(x, -1, T(eps))), ct::eval(ct::layer_norm(xf, -1, eps))) == 0);
    CHECK(same(ct::eval(ct::rms_norm(x, -1, T(eps), w)), ct::eval(ct::rms_norm(xf, -1, eps, wf))) == 0);
    CHECK(same(ct::eval(ct::logsumexp(x, -1)), ct::eval(ct::logsumexp(xf, -1))) == 0);
    CHECK(same(ct::eval(ct::sum(x, -1)), ct::eval(ct::sum(xf, -1))) == 0);
    CHECK(same(ct::eval(ct::max(x * w, -1)), ct::eval(ct::max(xf * wf, -1))) == 0);
    CHECK(same(ct::eval(x - ct::mean(x, -1)), ct::eval(xf - ct::mean(xf, -1))) == 0);
  }
  // A result of 16 MiB and more is streamed out (non-temporal stores of the rounded tiles).
  const auto x = ct::eval(ct::cast<T>(ct::random_uniform<float>({2048, 4096}, 64, -4.0f, 4.0f)));
  const auto xf = ct::eval(ct::cast<float>(x));
  const auto ys = ct::eval(ct::softmax(x, -1));
  const auto yf = ct::eval(ct::softmax(xf, -1));
  int wrong = 0;
  for (index_t i = 0; i < ys.size(); ++i) wrong += bits(ys.data()[i]) != bits(T(yf.data()[i]));
  CHECK(wrong == 0);
}
