// tests/kernels/test_erf.cpp — erf and erfc (src/kernels/erf.hpp): accuracy in ulp against the
// C library's long double erfl/erfcl (itself checked against mpmath in the tail), on the
// scalar backend and on every Highway target the CPU runs, under both FMA policies; special
// values; independence of the position in a tile; the FMA policy reaching the polynomials.
// Set CT_KERNELS_REPORT=1 to print the measured maxima (docs/kernels.md quotes them).
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../src/kernels/erf.hpp"
#include "../../src/kernels/target_control.hpp"
#include "kernel_test_util.hpp"
#include "pinned_target.hpp"

using namespace ct_test_kernels;

namespace {

using ld = long double;

/// Whether long double can serve as the reference of double results (x86: 64 digits).
constexpr bool wide_reference = std::numeric_limits<ld>::digits > std::numeric_limits<double>::digits;

bool report() {
  static const bool on = std::getenv("CT_KERNELS_REPORT") != nullptr;
  return on;
}

using ct_test_kernels::pinned_target;
using ct_test_kernels::simd_settings;

template <class T>
void apply(bool complement, const T* x, T* y, index_t n, const ct::settings& s) {
  if (complement)
    k::erfc_tile(x, y, n, s);
  else
    k::erf_tile(x, y, n, s);
}

const char* fn_name(bool complement) { return complement ? "erfc" : "erf"; }

/// Inputs with their long double references, computed once for every setting.
template <class T>
struct sweep {
  std::vector<T> x;
  std::vector<ld> want;
};

template <class T>
sweep<T> with_reference(bool complement, std::vector<T> xs) {
  sweep<T> s{std::move(xs), {}};
  s.want.reserve(s.x.size());
  for (T v : s.x) s.want.push_back(complement ? std::erfc(static_cast<ld>(v)) : std::erf(static_cast<ld>(v)));
  return s;
}

/// float: every `stride`-th bit pattern of [0, 10.5] with both signs (every binade evenly: erfc
/// is 0 in float from 10.06 on), plus a uniform grid of [-6, 10.25] with spacing `step`.
std::vector<float> float_inputs(std::uint32_t stride, double step) {
  std::vector<float> xs;
  const float top = 10.5f;
  std::uint32_t end;
  std::memcpy(&end, &top, 4);
  for (std::uint64_t b = 0; b <= end; b += stride) {
    const auto bits = static_cast<std::uint32_t>(b);
    float v;
    std::memcpy(&v, &bits, 4);
    xs.push_back(v);
    xs.push_back(-v);
  }
  for (double v = -6; v <= 10.25; v += step) xs.push_back(static_cast<float>(v));
  return xs;
}

/// double: half log-uniform in magnitude from 2^-60 to 32 with random sign, half uniform over
/// [-6, 27.3] (erfc is 0 in double from 27.23 on).
std::vector<double> double_inputs(int count, std::uint64_t seed) {
  rng r(seed);
  std::vector<double> xs;
  for (int i = 0; i < count; ++i) {
    if (i % 2) {
      xs.push_back(r.uniform(-6, 27.3));
    } else {
      const double v = std::exp2(r.uniform(-60, 5));
      xs.push_back(r.below(2) ? -v : v);
    }
  }
  return xs;
}

struct measured {
  double normal = 0, subnormal = 0;  // max error: ulp of the normal results / spacings of the subnormal
  double x_normal = 0, x_subnormal = 0;
};

template <class T>
measured measure(bool complement, const sweep<T>& sw, const ct::settings& s) {
  std::vector<T> y(sw.x.size());
  apply(complement, sw.x.data(), y.data(), static_cast<index_t>(y.size()), s);
  measured m;
  for (size_t i = 0; i < y.size(); ++i) {
    const double e = ulp_error(y[i], sw.want[i]);
    if (std::fabs(sw.want[i]) >= std::numeric_limits<T>::min() || sw.want[i] == 0) {
      if (e > m.normal) m.normal = e, m.x_normal = static_cast<double>(sw.x[i]);
    } else if (e > m.subnormal) {
      m.subnormal = e, m.x_subnormal = static_cast<double>(sw.x[i]);
    }
  }
  return m;
}

/// The documented bound: 4 ulp over normal results. Subnormal results are outside it; the simd
/// code rounds them once (the scalar float ones too, double ones may round twice), so they stay
/// within 2 spacings (measured: 1.08, the error of the value before that rounding being about an
/// ulp of the smallest normal near the boundary).
template <class T>
void check_sweep(bool complement, const sweep<T>& sw, const std::vector<ct::settings>& settings, const char* target) {
  for (const auto& s : settings) {
    const measured m = measure(complement, sw, s);
    const char* where = s.backend == ct::backend::simd ? target : "";
    if (report())
      std::printf("%-5s %-6s %-15s %-7s max %.3f ulp at x = %.17g; subnormal results %.3f spacings (%zu inputs)\n",
                  fn_name(complement), sizeof(T) == 4 ? "float" : "double", describe(s).c_str(), where, m.normal,
                  m.x_normal, m.subnormal, sw.x.size());
    INFO(fn_name(complement) << " " << (sizeof(T) == 4 ? "float " : "double ") << describe(s) << " " << where
                             << " worst at x = " << m.x_normal << ", subnormal worst at x = " << m.x_subnormal);
    CHECK(m.normal <= 4.0);
    CHECK(m.subnormal <= 2.0);
  }
}

template <class T>
void check_special_values(const ct::settings& s) {
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  struct expect {
    bool complement;
    T in, out;
  };
  const std::vector<expect> cases{
      {false, T(0), T(0)},  {false, -T(0), -T(0)}, {false, inf, T(1)},  {false, -inf, T(-1)}, {false, nan, nan},
      {false, -nan, nan},   {true, T(0), T(1)},    {true, -T(0), T(1)}, {true, inf, T(0)},    {true, -inf, T(2)},
      {true, nan, nan},     {true, -nan, nan},
  };
  for (const auto& c : cases) {
    std::vector<T> x(21, T(0.75)), y(21);
    x[3] = x[20] = c.in;  // in a full vector and in the padded tail
    x[5] = T(3);          // a vector mixing both formulas
    apply(c.complement, x.data(), y.data(), 21, s);
    for (size_t i : {size_t(3), size_t(20)}) {
      INFO(fn_name(c.complement) << " " << describe(s) << " in " << c.in << " got " << y[i]);
      CHECK((std::isnan(c.out) ? std::isnan(y[i]) : same_bits(y[i], c.out)));
    }
    // Alone (n = 1: only the padded vector).
    T alone;
    apply(c.complement, &c.in, &alone, 1, s);
    INFO(fn_name(c.complement) << " " << describe(s) << " alone, in " << c.in << " got " << alone);
    CHECK((std::isnan(c.out) ? std::isnan(alone) : same_bits(alone, c.out)));
  }
}

/// erfc from mpmath (tools/fit_erf.py --reference, 24 digits): every 1/4 on [1/2, 26.5] and
/// the last normal results of float and double.
struct tail_point {
  double x;
  ld erfc;
};
const std::vector<tail_point>& mpmath_tail() {
  static const std::vector<tail_point> v{
      {0.5, 4.79500122186953462317253e-1L},    {0.75, 2.88844366346484868401062e-1L},
      {1.0, 1.57299207050285130658779e-1L},    {1.25, 7.70998717435417698634765e-2L},
      {1.5, 3.38948535246892729330237e-2L},    {1.75, 1.33283287808175562277889e-2L},
      {2.0, 4.67773498104726583793074e-3L},    {2.25, 1.4627165866811516979108e-3L},
      {2.5, 4.06952017444958939564216e-4L},    {2.75, 1.00621922119636836904392e-4L},
      {3.0, 2.20904969985854413727761e-5L},    {3.25, 4.3027794636751218304759e-6L},
      {3.5, 7.43098372341412745523684e-7L},    {3.75, 1.13727256569796653259077e-7L},
      {4.0, 1.54172579002800188521597e-8L},    {4.25, 1.85057413738674252005584e-9L},
      {4.5, 1.96616044154288747627916e-10L},   {4.75, 1.84850477214853108874294e-11L},
      {5.0, 1.53745979442803485018834e-12L},   {5.25, 1.13103132668871538827868e-13L},
      {5.5, 7.35784791797439806306836e-15L},   {5.75, 4.23213661742573762594672e-16L},
      {6.0, 2.15197367124989131165934e-17L},   {6.25, 9.67220413187625399148203e-19L},
      {6.5, 3.8421483271206474698758e-20L},    {6.75, 1.34876788936113005121987e-21L},
      {7.0, 4.18382560777941439861401e-23L},   {7.25, 1.14669008148150116166947e-24L},
      {7.5, 2.77664938603056910066397e-26L},   {7.75, 5.93974785951714621527532e-28L},
      {8.0, 1.12242971729829270799679e-29L},   {8.25, 1.87356647055049970786165e-31L},
      {8.5, 2.7623240713337714461345e-33L},    {8.75, 3.59711572864707201565535e-35L},
      {9.0, 4.1370317465138102380539e-37L},    {9.25, 4.20203721491971113453249e-39L},
      {9.5, 3.76921448565487994167709e-41L},   {9.75, 2.98570083280057832205665e-43L},
      {10.0, 2.08848758376254475700079e-45L},  {10.25, 1.29001389050429040379721e-47L},
      {10.5, 7.03592809017752268673531e-50L},  {10.75, 3.38845242706494294266089e-52L},
      {11.0, 1.44086613794369468033981e-54L},  {11.25, 5.40976087068992136094766e-57L},
      {11.5, 1.79330964357678205810912e-59L},  {11.75, 5.24863609700854167115798e-62L},
      {12.0, 1.35626116920590421278031e-64L},  {12.25, 3.09412674054020985423703e-67L},
      {12.5, 6.23194278197991100613955e-70L},  {12.75, 1.10813457685205796090759e-72L},
      {13.0, 1.7395573154667245218042e-75L},   {13.25, 2.41077137263713461558825e-78L},
      {13.5, 2.94943311325798826475919e-81L},  {13.75, 3.1855236206403380017908e-84L},
      {14.0, 3.03722984775031166511517e-87L},  {14.25, 2.5563723430886488689397e-90L},
      {14.5, 1.8993959419795030495742e-93L},   {14.75, 1.24579735218575861514141e-96L},
      {15.0, 7.21299417245120666656507e-100L}, {15.25, 3.68651514923081346576433e-103L},
      {15.5, 1.6632016400488723341491e-106L},  {15.75, 6.62366841255906380876212e-110L},
      {16.0, 2.32848575157153069336487e-113L}, {16.25, 7.22547819622694436048678e-117L},
      {16.5, 1.97913057555326797205733e-120L}, {16.75, 4.78513418346709195045359e-124L},
      {17.0, 1.0212280150942608811456e-127L},  {17.25, 1.923789189586878804528e-131L},
      {17.5, 3.19886381234348098819347e-135L}, {17.75, 4.6949934999226950908182e-139L},
      {18.0, 6.08236923181639930766847e-143L}, {18.25, 6.95515436739782160189373e-147L},
      {18.5, 7.01996157498567932460002e-151L}, {18.75, 6.25395158887810493808016e-155L},
      {19.0, 4.9177228392564754464133e-159L},  {19.25, 3.4131969559665760995581e-163L},
      {19.5, 2.09095414792272946049624e-167L}, {19.75, 1.13060705346620141382381e-171L},
      {20.0, 5.395865611607900928935e-176L},   {20.25, 2.2729564178807836708525e-180L},
      {20.5, 8.45084236957245839432467e-185L}, {20.75, 2.7732321105647362914953e-189L},
      {21.0, 8.03245387102245566902136e-194L}, {21.25, 2.05345215844498411264795e-198L},
      {21.5, 4.63333653965844564912969e-203L}, {21.75, 9.22729996799771982824261e-208L},
      {22.0, 1.62190586093347251305203e-212L}, {22.25, 2.5162024287605107337897e-217L},
      {22.5, 3.44534886046460176203272e-222L}, {22.75, 4.16377567405404090703433e-227L},
      {23.0, 4.44126594808805724407488e-232L}, {23.25, 4.18109900317829628215448e-237L},
      {23.5, 3.47405949564997150274191e-242L}, {23.75, 2.54768734815447805664905e-247L},
      {24.0, 1.64898258315193351421851e-252L}, {24.25, 9.41989537813256385880898e-258L},
      {24.5, 4.74936126406737899755288e-263L}, {24.75, 2.11340397565541013583902e-268L},
      {25.0, 8.30017257119652275204401e-274L}, {25.25, 2.87705482732939500162382e-279L},
      {25.5, 8.80166269072795057126715e-285L}, {25.75, 2.37649030570294064162979e-290L},
      {26.0, 5.66319240885614284647573e-296L}, {26.25, 1.19107677067262300403121e-301L},
      {26.5, 2.21090766426373427592924e-307L}, {9.125, 4.23468267913926750198066e-38L},
      {9.1875, 1.33914356173301425185374e-38L}, {26.53125, 4.21051424774213900043101e-308L},
      {26.5390625, 2.78063402674283472318815e-308L},
  };
  return v;
}

}  // namespace

TEST_CASE("erf and erfc: the reference erfcl agrees with mpmath in the tail", "[kernels][erf]") {
  // The sweeps trust the C library's long double erfc down to 1e-308; check it where the
  // double results are hardest (exp(-x^2) of large x) against 24-digit values: to 2^-58
  // (x86's 64-digit long double), or a few ulp where long double is only double.
  const ld tolerance = std::max(0x1p-58L, std::ldexp(1.0L, 6 - std::numeric_limits<ld>::digits));
  for (const auto& p : mpmath_tail()) {
    INFO("x = " << p.x);
    CHECK(std::fabs(std::erfc(static_cast<ld>(p.x)) / p.erfc - 1) < tolerance);
  }
}

TEST_CASE("erf and erfc match mpmath at tail points on every backend and policy", "[kernels][erf]") {
  std::vector<double> xd;
  std::vector<float> xf;
  for (const auto& p : mpmath_tail()) {
    xd.push_back(p.x);
    xf.push_back(static_cast<float>(p.x));  // every point is a float
  }
  for (const auto& s : all_settings()) {
    std::vector<double> yd(xd.size());
    std::vector<float> yf(xf.size());
    k::erfc_tile(xd.data(), yd.data(), static_cast<index_t>(xd.size()), s);
    k::erfc_tile(xf.data(), yf.data(), static_cast<index_t>(xf.size()), s);
    for (size_t i = 0; i < xd.size(); ++i) {
      const ld want = mpmath_tail()[i].erfc;
      INFO(describe(s) << " x = " << xd[i] << " double " << yd[i] << " float " << yf[i]);
      CHECK(ulp_error(yd[i], want) <= (want >= std::numeric_limits<double>::min() ? 4.0 : 1.0));
      CHECK(ulp_error(yf[i], want) <= (want >= std::numeric_limits<float>::min() ? 4.0 : 1.0));
    }
  }
}

TEST_CASE("float erf and erfc are within 4 ulp (scalar and simd, both policies)", "[kernels][erf]") {
  const auto xs = float_inputs(1013, 0x1p-16);
  for (bool complement : {false, true}) check_sweep(complement, with_reference(complement, xs), all_settings(), k::simd_target_name());
}

TEST_CASE("double erf and erfc are within 4 ulp (scalar and simd, both policies)", "[kernels][erf]") {
  if (!wide_reference) {
    WARN("long double is double here: no reference for double erf/erfc");
    return;
  }
  const auto xs = double_inputs(400000, 0xe7f);
  for (bool complement : {false, true}) check_sweep(complement, with_reference(complement, xs), all_settings(), k::simd_target_name());
}

TEST_CASE("erf and erfc on every compiled simd target", "[kernels][erf]") {
  const auto xf = float_inputs(10007, 0x1p-12);
  const auto xd = double_inputs(40000, 0xe7fc);
  const sweep<float> sf[2] = {with_reference(false, xf), with_reference(true, xf)};
  const sweep<double> sd[2] = {with_reference(false, xd), with_reference(true, xd)};
  for (const std::int64_t t : k::simd_available_targets()) {
    const pinned_target pin(t);
    const char* name = k::simd_target_label(t);
    INFO("target " << name);
    for (bool complement : {false, true}) {
      check_sweep(complement, sf[complement], simd_settings(), name);
      if (wide_reference) check_sweep(complement, sd[complement], simd_settings(), name);
    }
    for (const auto& s : simd_settings()) {
      check_special_values<float>(s);
      check_special_values<double>(s);
    }
  }
}

TEST_CASE("erf and erfc special values on every backend", "[kernels][erf]") {
  for (const auto& s : all_settings()) {
    check_special_values<float>(s);
    check_special_values<double>(s);
  }
}

TEST_CASE("erf and erfc do not depend on the position within a tile", "[kernels][erf]") {
  rng r(0xe7f);
  std::vector<double> xd(203);
  for (auto& v : xd) v = r.below(4) == 0 ? r.uniform(-1, 1) : r.uniform(-8, 30);
  std::vector<float> xf(xd.begin(), xd.end());
  for (const auto& s : all_settings())
    for (bool complement : {false, true}) {
      const auto check = [&](auto& xs) {
        using T = typename std::decay_t<decltype(xs)>::value_type;
        std::vector<T> whole(xs.size());
        apply(complement, xs.data(), whole.data(), static_cast<index_t>(xs.size()), s);
        for (size_t i = 0; i < xs.size(); ++i) {
          T alone;
          apply(complement, &xs[i], &alone, 1, s);
          INFO(fn_name(complement) << " " << describe(s) << " x = " << xs[i]);
          REQUIRE(same_bits(alone, whole[i]));
        }
        // In place.
        std::vector<T> y(xs);
        apply(complement, y.data(), y.data(), static_cast<index_t>(y.size()), s);
        for (size_t i = 0; i < xs.size(); ++i) REQUIRE(same_bits(y[i], whole[i]));
      };
      check(xd);
      check(xf);
    }
}

TEST_CASE("erf and erfc: the FMA policy reaches the polynomials, each result deterministic", "[kernels][erf]") {
  for (bool complement : {false, true}) {
    const auto count_differences = [&](auto zero) {
      using T = decltype(zero);
      const int n = 1 << 14;
      std::vector<T> x(n), fused(n), separate(n), again(n);
      for (int i = 0; i < n; ++i) x[static_cast<size_t>(i)] = static_cast<T>(-4 + 12.0 * i / n);
      apply(complement, x.data(), fused.data(), n, simd_settings()[0]);
      apply(complement, x.data(), separate.data(), n, simd_settings()[1]);
      apply(complement, x.data(), again.data(), n, simd_settings()[0]);
      int differ = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        differ += !same_bits(fused[i], separate[i]);
        REQUIRE(same_bits(fused[i], again[i]));
      }
      return differ;
    };
    INFO(fn_name(complement) << ", target " << k::simd_target());
    const bool differ = ct_test_kernels::simd_has_fma();  // else both policies round twice
    CHECK((count_differences(0.0) > 0) == differ);
    CHECK((count_differences(0.0f) > 0) == differ);
  }
}
