// tests/kernels/test_convert.cpp — float32 <-> bfloat16 / float16: the scalar conversions of
// ct/core/float16.hpp against an independent reference, and the tile kernels
// (src/kernels/convert.hpp) against the scalar conversions, bitwise, on every simd target.
//
// The reference shares no code or method with float16.hpp: the value of each 16-bit pattern
// comes from std::ldexp, and rounding is a search for the nearest representable value in the
// sorted table of all of them (ties: the even pattern), compared in double / long double where
// the midpoints are exact.
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iomanip>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../../src/kernels/convert.hpp"
#include "../../src/kernels/target_control.hpp"
#include "pinned_target.hpp"
#include "ct/core/float16.hpp"

namespace {

namespace k = ct::detail::kernels;
using ct::index_t;
using std::uint16_t;
using std::uint32_t;
using std::uint64_t;

// ---- the independent reference -----------------------------------------------------------

/// A binary format with exp_bits exponent and man_bits stored mantissa bits.
struct format {
  const char* name;
  int exp_bits, man_bits;
  int bias() const { return (1 << (exp_bits - 1)) - 1; }
  uint32_t inf_bits() const { return ((1u << exp_bits) - 1u) << man_bits; }
};
const format bf16_format{"bfloat16", 8, 7};
const format f16_format{"float16", 5, 10};

/// The value of a finite pattern, from its fields: (-1)^s * significand * 2^(exponent).
double value_of(const format& f, uint16_t h) {
  const int e = (h >> f.man_bits) & ((1 << f.exp_bits) - 1);
  const int m = h & ((1 << f.man_bits) - 1);
  const double mag = e == 0 ? std::ldexp(double(m), 1 - f.bias() - f.man_bits)
                            : std::ldexp(double(m + (1 << f.man_bits)), e - f.bias() - f.man_bits);
  return std::copysign(mag, (h & 0x8000u) ? -1.0 : 1.0);
}

/// Widening: the float with the pattern's value; inf and NaN field by field (payload in the
/// float's top mantissa bits, nothing else changed).
uint32_t ref_widen(const format& f, uint16_t h) {
  const uint32_t field = h & 0x7fffu;
  if (field >= f.inf_bits()) {
    const uint32_t payload = field & ((1u << f.man_bits) - 1u);
    return (uint32_t(h & 0x8000u) << 16) | 0x7f800000u | (payload << (23 - f.man_bits));
  }
  return std::bit_cast<uint32_t>(static_cast<float>(value_of(f, h)));  // exact: fewer digits than float
}

/// All non-negative finite patterns in increasing value, then 2^(emax+1) standing for inf
/// (its pattern has an even mantissa, so a tie with the largest finite value goes to inf).
struct value_table {
  std::vector<double> value;
  std::vector<uint16_t> bits;
  explicit value_table(const format& f) {
    for (uint32_t h = 0; h < f.inf_bits(); ++h) {
      value.push_back(value_of(f, static_cast<uint16_t>(h)));
      bits.push_back(static_cast<uint16_t>(h));
    }
    value.push_back(std::ldexp(1.0, f.bias() + 1));
    bits.push_back(static_cast<uint16_t>(f.inf_bits()));
    REQUIRE(std::is_sorted(value.begin(), value.end()));
  }
};
const value_table& table(const format& f) {
  static const value_table bf(bf16_format), hf(f16_format);
  return f.exp_bits == 8 ? bf : hf;
}

/// Nearest pattern to the non-NaN x (double or long double: the midpoints below, and
/// 2^(emax+1) for bfloat16, are not all floats), ties to the even pattern.
template <class T>
uint16_t ref_round(const format& f, T x) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const T a = std::fabs(x);
  const value_table& t = table(f);
  uint16_t r;
  if (a >= static_cast<T>(t.value.back())) {
    r = t.bits.back();
  } else {
    // t.value[lo] <= a < t.value[lo + 1]
    const auto up = std::upper_bound(t.value.begin(), t.value.end(), a,
                                     [](T v, double e) { return v < static_cast<T>(e); });
    const auto lo = static_cast<size_t>(up - t.value.begin()) - 1;
    const T below = static_cast<T>(t.value[lo]), above = static_cast<T>(t.value[lo + 1]);
    const T mid = (below + above) / 2;  // exact: two neighbours have few digits
    if (a < mid)
      r = t.bits[lo];
    else if (a > mid)
      r = t.bits[lo + 1];
    else
      r = (t.bits[lo] & 1u) == 0 ? t.bits[lo] : t.bits[lo + 1];
  }
  return static_cast<uint16_t>(sign | r);
}

/// Narrowing a float: NaN becomes the quiet NaN with the same sign and the top man_bits of the
/// payload; everything else rounds to nearest even.
uint16_t ref_narrow(const format& f, uint32_t xbits) {
  if ((xbits & 0x7f800000u) == 0x7f800000u && (xbits & 0x7fffffu) != 0) {
    const uint32_t top_payload = (xbits & 0x7fffffu) >> (23 - f.man_bits);
    return static_cast<uint16_t>(((xbits >> 16) & 0x8000u) | f.inf_bits() | (1u << (f.man_bits - 1)) | top_payload);
  }
  return ref_round(f, static_cast<double>(std::bit_cast<float>(xbits)));
}

// ---- the scalar conversions under test ------------------------------------------------------

uint16_t scalar_narrow(const format& f, uint32_t xbits) {
  const float x = std::bit_cast<float>(xbits);
  return f.exp_bits == 8 ? ct::detail::float_to_bf16_bits(x) : ct::detail::float_to_f16_bits(x);
}
uint32_t scalar_widen(const format& f, uint16_t h) {
  return std::bit_cast<uint32_t>(f.exp_bits == 8 ? ct::detail::bf16_bits_to_float(h) : ct::detail::f16_bits_to_float(h));
}

std::string hex(uint64_t v, int width) {
  std::ostringstream os;
  os << "0x" << std::hex << std::setw(width) << std::setfill('0') << v;
  return os.str();
}

// ---- inputs ---------------------------------------------------------------------------------

/// Float patterns where rounding to either format can go wrong: every sign and exponent with
/// mantissas at and next to the halfway point of every rounding position (the subnormal
/// results of float16 round at a different bit per exponent), with even and odd kept bits,
/// and the extremes; plus the named boundaries. NaNs are the exponent-255 rows.
const std::vector<uint32_t>& narrow_corpus() {
  static const std::vector<uint32_t> corpus = [] {
    std::vector<uint32_t> mant{0, 1, 2, 3, 0x7fffff, 0x7ffffe, 0x400000, 0x3fffff, 0x400001, 0x200000, 0x1fffff, 0x000fff,
                               0x001000, 0x001001, 0x00ffff, 0x010000, 0x7fe000, 0x7ff000, 0x7f8000, 0x7f0000};
    for (int s = 1; s <= 23; ++s) {  // drop the s low bits: the tie is bit s-1 alone
      const uint32_t low = (1u << s) - 1u, tie = 1u << (s - 1);
      for (uint32_t hi : {0u, 1u << s, 0x7fffffu & ~low, 0x555555u & ~low, 0x2aaaaau & ~low, 0x7ffffeu & ~low})
        for (int d : {-1, 0, 1}) mant.push_back((((hi & 0x7fffffu) | tie) + static_cast<uint32_t>(d)) & 0x7fffffu);
    }
    std::sort(mant.begin(), mant.end());
    mant.erase(std::unique(mant.begin(), mant.end()), mant.end());
    std::vector<uint32_t> v;
    for (uint32_t sign : {0u, 0x80000000u})
      for (uint32_t e = 0; e < 256; ++e)
        for (uint32_t m : mant) v.push_back(sign | (e << 23) | m);
    for (float f : {65504.0f, std::nextafter(65520.0f, 0.0f), 65520.0f, std::nextafter(65520.0f, 1e9f), 65536.0f,
                    0x1p-14f, std::nextafter(0x1p-14f, 0.0f), 0x1p-24f, 0x1p-25f, std::nextafter(0x1p-25f, 0.0f),
                    std::nextafter(0x1p-25f, 1.0f), 0x1.8p-25f, 0x1.8p-24f, 0x1.fffp-15f,
                    std::numeric_limits<float>::max(), std::numeric_limits<float>::min(),
                    std::numeric_limits<float>::denorm_min(), 0x1.fep127f, 0x1.ffp127f, 0x1.fefffep127f, 0x1p-133f,
                    0x1p-134f, 0x1.8p-134f, 0.0f, std::numeric_limits<float>::infinity()})
      for (float s : {1.0f, -1.0f}) v.push_back(std::bit_cast<uint32_t>(s * f));
    for (uint32_t nan : {0x7f800001u, 0x7f801fffu, 0x7f802000u, 0x7f810000u, 0x7fbfffffu, 0x7fc00000u, 0x7fc00001u,
                         0x7fd55555u, 0x7fe00000u, 0x7fffffffu, 0x7faaaaaau})
      for (uint32_t s : {0u, 0x80000000u}) v.push_back(nan | s);
    return v;
  }();
  return corpus;
}

/// A few million random floats: all bit patterns alike, and half again within float16's range.
const std::vector<uint32_t>& random_floats() {
  static const std::vector<uint32_t> v = [] {
    std::mt19937_64 gen(20240611);
    std::vector<uint32_t> r(3'000'000);
    for (size_t i = 0; i < r.size(); ++i) {
      const auto u = static_cast<uint32_t>(gen());
      r[i] = i % 2 ? u : (u & 0x807fffffu) | ((100u + (u >> 23) % 46u) << 23);  // exponents 2^-27 .. 2^18
    }
    return r;
  }();
  return v;
}

std::vector<uint16_t> all_patterns() {
  std::vector<uint16_t> v(65536);
  for (uint32_t h = 0; h < 65536; ++h) v[h] = static_cast<uint16_t>(h);
  return v;
}

// ---- running the kernels --------------------------------------------------------------------

const ct::settings scalar_backend{ct::backend::scalar, ct::fma_policy::fused};
const ct::settings simd_backend{ct::backend::simd, ct::fma_policy::fused};

void narrow(const format& f, const float* x, uint16_t* y, index_t n, const ct::settings& s) {
  f.exp_bits == 8 ? k::narrow_bf16(x, y, n, s) : k::narrow_f16(x, y, n, s);
}
void widen(const format& f, const uint16_t* x, float* y, index_t n, const ct::settings& s) {
  f.exp_bits == 8 ? k::widen_bf16(x, y, n, s) : k::widen_f16(x, y, n, s);
}
k::narrow_fn resolve_narrow(const format& f, const ct::settings& s) {
  return f.exp_bits == 8 ? k::resolve_narrow_bf16(s) : k::resolve_narrow_f16(s);
}
k::widen_fn resolve_widen(const format& f, const ct::settings& s) {
  return f.exp_bits == 8 ? k::resolve_widen_bf16(s) : k::resolve_widen_f16(s);
}

/// Runs convert(in, out, n) on [begin, begin+n) of `in` from an input copy starting `shift`
/// elements past a 64-byte boundary into an output at `shift + 1` elements past one (so input
/// and output are misaligned differently), with guard elements around the output that must
/// stay untouched; returns the outputs.
template <class In, class Out, class Convert>
std::vector<Out> run_shifted(const std::vector<In>& in, size_t begin, size_t n, size_t shift, Convert convert) {
  constexpr size_t kGuard = 32;
  alignas(64) static thread_local In in_buf[64 + 8];
  std::vector<In> in_big;
  In* src = in_buf + shift;
  if (n + shift > 64) {
    in_big.resize(n + shift + 16);
    src = in_big.data() + shift;  // vector storage: at least 16-byte aligned, then shifted
  }
  std::copy(in.begin() + static_cast<std::ptrdiff_t>(begin), in.begin() + static_cast<std::ptrdiff_t>(begin + n), src);
  std::vector<Out> out_buf(n + 2 * kGuard + shift + 1);
  Out sentinel;
  std::memset(&sentinel, 0xA5, sizeof(Out));
  std::fill(out_buf.begin(), out_buf.end(), sentinel);
  Out* dst = out_buf.data() + kGuard + shift + 1;
  convert(src, dst, static_cast<index_t>(n));
  bool guards_kept = true;
  for (Out* p = out_buf.data(); p < dst; ++p) guards_kept &= std::memcmp(p, &sentinel, sizeof(Out)) == 0;
  for (Out* p = dst + n; p < out_buf.data() + out_buf.size(); ++p) guards_kept &= std::memcmp(p, &sentinel, sizeof(Out)) == 0;
  if (!guards_kept) FAIL("a conversion of " << n << " elements wrote outside its output");
  return std::vector<Out>(dst, dst + n);
}

/// Checks got == want elementwise (bit patterns), reporting the first difference.
template <class Bits, class In>
void check_same(const std::vector<Bits>& got, const std::vector<Bits>& want, const std::vector<In>& input,
                size_t input_begin, const std::string& what) {
  REQUIRE(got.size() <= want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i]) {
      FAIL(what << ": input " << hex(input[input_begin + i], 2 * sizeof(In)) << " gives " << hex(got[i], 2 * sizeof(Bits))
                << ", expected " << hex(want[i], 2 * sizeof(Bits)) << " (element " << i << ")");
    }
}

/// The tile kernels of settings s (and the resolved function, on simd) against the scalar
/// conversions for every input of the corpora: whole arrays at several misalignments, and tiles
/// of every length 1..67 walking through the corpus, so each value also lands in tails.
void check_kernels(const ct::settings& s, const std::string& label) {
  const std::vector<uint32_t>& corpus = narrow_corpus();
  const std::vector<uint32_t>& random = random_floats();
  const std::vector<uint16_t> patterns = all_patterns();
  for (const format* f : {&bf16_format, &f16_format}) {
    const std::string what = label + " " + f->name;
    // ---- narrowing
    for (const std::vector<uint32_t>* input : {&corpus, &random}) {
      std::vector<uint16_t> want(input->size());
      for (size_t i = 0; i < input->size(); ++i) want[i] = scalar_narrow(*f, (*input)[i]);
      std::vector<float> xf(input->size());
      std::memcpy(xf.data(), input->data(), input->size() * sizeof(float));
      const auto via_kernel = [&](const float* x, uint16_t* y, index_t n) { narrow(*f, x, y, n, s); };
      for (size_t shift : {0, 1, 3})
        check_same(run_shifted<float, uint16_t>(xf, 0, xf.size(), shift, via_kernel), want, *input, 0,
                   what + " narrow, whole array, shift " + std::to_string(shift));
      if (input != &corpus) continue;
      for (size_t n = 1; n <= 67; ++n)
        for (size_t begin = 0; begin + n <= xf.size(); begin += n) {
          const auto got = run_shifted<float, uint16_t>(xf, begin, n, begin / n % 4, via_kernel);
          if (!std::equal(got.begin(), got.end(), want.begin() + static_cast<std::ptrdiff_t>(begin)))
            check_same(got, std::vector<uint16_t>(want.begin() + static_cast<std::ptrdiff_t>(begin), want.end()), *input,
                       begin, what + " narrow, n = " + std::to_string(n));
        }
      if (const k::narrow_fn fn = resolve_narrow(*f, s)) {
        check_same(run_shifted<float, uint16_t>(xf, 0, xf.size(), 1, fn), want, *input, 0, what + " resolved narrow");
        check_same(run_shifted<float, uint16_t>(xf, 5, 13, 2, fn),
                   std::vector<uint16_t>(want.begin() + 5, want.end()), *input, 5, what + " resolved narrow, n = 13");
      }
    }
    // ---- widening: all 65536 patterns
    std::vector<uint32_t> want(patterns.size());
    for (size_t i = 0; i < patterns.size(); ++i) want[i] = scalar_widen(*f, patterns[i]);
    const auto via_kernel = [&](const uint16_t* x, float* y, index_t n) { widen(*f, x, y, n, s); };
    const auto as_bits = [](const std::vector<float>& v) {
      std::vector<uint32_t> b(v.size());
      std::memcpy(b.data(), v.data(), v.size() * sizeof(float));
      return b;
    };
    for (size_t shift : {0, 1, 2})
      check_same(as_bits(run_shifted<uint16_t, float>(patterns, 0, patterns.size(), shift, via_kernel)), want, patterns,
                 0, what + " widen, whole array, shift " + std::to_string(shift));
    for (size_t n = 1; n <= 67; ++n)
      for (size_t begin = 0; begin + n <= patterns.size(); begin += n) {
        const auto got = as_bits(run_shifted<uint16_t, float>(patterns, begin, n, begin / n % 4, via_kernel));
        if (!std::equal(got.begin(), got.end(), want.begin() + static_cast<std::ptrdiff_t>(begin)))
          check_same(got, std::vector<uint32_t>(want.begin() + static_cast<std::ptrdiff_t>(begin), want.end()), patterns,
                     begin, what + " widen, n = " + std::to_string(n));
      }
    if (const k::widen_fn fn = resolve_widen(*f, s))
      check_same(as_bits(run_shifted<uint16_t, float>(patterns, 0, patterns.size(), 3, fn)), want, patterns, 0,
                 what + " resolved widen");
    // n == 0 writes nothing (run_shifted checks the guards).
    (void)run_shifted<uint16_t, float>(patterns, 0, 0, 1, via_kernel);
  }
}

using ct_test_kernels::pinned_target;

}  // namespace

TEST_CASE("bfloat16 and float16 widen exactly: all 65536 patterns against the reference", "[kernels][convert]") {
  for (const format* f : {&bf16_format, &f16_format}) {
    size_t bad = 0;
    for (uint32_t h = 0; h < 65536; ++h) {
      const uint32_t got = scalar_widen(*f, static_cast<uint16_t>(h)), want = ref_widen(*f, static_cast<uint16_t>(h));
      if (got != want && bad++ == 0) FAIL_CHECK(f->name << " " << hex(h, 4) << " -> " << hex(got, 8) << ", expected " << hex(want, 8));
    }
    CHECK(bad == 0);
  }
  // A few values by name.
  CHECK(ct::detail::f16_bits_to_float(0x0001) == 0x1p-24f);
  CHECK(ct::detail::f16_bits_to_float(0x03ff) == 0x1.ff8p-15f);
  CHECK(ct::detail::f16_bits_to_float(0x7bff) == 65504.0f);
  CHECK(ct::detail::bf16_bits_to_float(0x0001) == 0x1p-133f);
  CHECK(std::bit_cast<uint32_t>(ct::detail::f16_bits_to_float(0xfc01)) == 0xff802000u);  // signalling stays signalling
}

TEST_CASE("bfloat16 and float16 narrowing rounds to nearest even: scalar against the reference", "[kernels][convert]") {
  for (const format* f : {&bf16_format, &f16_format})
    for (const std::vector<uint32_t>* input : {&narrow_corpus(), &random_floats()}) {
      size_t bad = 0;
      for (uint32_t x : *input) {
        const uint16_t got = scalar_narrow(*f, x), want = ref_narrow(*f, x);
        if (got != want && bad++ < 5) FAIL_CHECK(f->name << " " << hex(x, 8) << " -> " << hex(got, 4) << ", expected " << hex(want, 4));
      }
      INFO(f->name << " over " << input->size() << " floats");
      CHECK(bad == 0);
    }
  using ct::detail::float_to_f16_bits;
  using ct::detail::float_to_bf16_bits;
  CHECK(float_to_f16_bits(65504.0f) == 0x7bff);
  CHECK(float_to_f16_bits(std::nextafter(65520.0f, 0.0f)) == 0x7bff);
  CHECK(float_to_f16_bits(65520.0f) == 0x7c00);
  CHECK(float_to_f16_bits(-65520.0f) == 0xfc00);
  CHECK(float_to_f16_bits(0x1p-25f) == 0x0000);                            // tie with 0: even
  CHECK(float_to_f16_bits(std::nextafter(0x1p-25f, 1.0f)) == 0x0001);
  CHECK(float_to_f16_bits(0x1.8p-24f) == 0x0002);                          // tie 1.5 units: even 2
  CHECK(float_to_f16_bits(-0.0f) == 0x8000);
  CHECK(float_to_f16_bits(std::bit_cast<float>(0x7f800001u)) == 0x7e00);   // quieted, payload below the kept bits
  CHECK(float_to_f16_bits(std::bit_cast<float>(0xffa02000u)) == 0xff01);
  CHECK(float_to_bf16_bits(std::bit_cast<float>(0x7f800001u)) == 0x7fc0);
  CHECK(float_to_bf16_bits(std::bit_cast<float>(0x00008001u)) == 0x0001);  // subnormals kept
  CHECK(float_to_bf16_bits(std::bit_cast<float>(0x3f808000u)) == 0x3f80);  // tie: even
  CHECK(float_to_bf16_bits(std::bit_cast<float>(0x3f818000u)) == 0x3f82);
  CHECK(float_to_bf16_bits(std::numeric_limits<float>::max()) == 0x7f80);
}

TEST_CASE("bfloat16 and float16 from double and integers round once, directly", "[kernels][convert]") {
  std::mt19937_64 gen(99);
  for (const format* f : {&bf16_format, &f16_format}) {
    const bool is_bf = f->exp_bits == 8;
    const auto from_double = [&](double d) { return is_bf ? ct::bfloat16(d).bits : ct::float16(d).bits; };
    std::vector<double> inputs{0.0, 1e-300, 5e-324, 1e300, std::numeric_limits<double>::max(),
                               std::numeric_limits<double>::infinity(), 65504.0, 65519.999999, 65520.0};
    // Every halfway point between neighbours (and the largest value and 2^(emax+1)), exactly,
    // next to it, and off it by less than float can see: through float these would round twice.
    const value_table& t = table(*f);
    for (size_t i = 0; i + 1 < t.value.size(); ++i) {
      const double mid = (t.value[i] + t.value[i + 1]) / 2;
      for (double d : {t.value[i], mid, std::nextafter(mid, 0.0), std::nextafter(mid, 1e300), mid * (1 + 0x1p-40),
                       mid * (1 - 0x1p-40)})
        inputs.push_back(d);
    }
    for (int i = 0; i < 200000; ++i) inputs.push_back(std::bit_cast<double>(gen()));
    size_t bad = 0;
    for (double d : inputs)
      for (double s : {1.0, -1.0}) {
        const double x = s * d;
        if (std::isnan(x)) continue;
        const uint16_t got = from_double(x), want = ref_round(*f, x);
        if (got != want && bad++ < 5) FAIL_CHECK(f->name << "(double " << std::hexfloat << x << ") -> " << hex(got, 4) << ", expected " << hex(want, 4));
      }
    CHECK(bad == 0);
    // NaN: quiet, same sign, top payload bits (as from float).
    CHECK(from_double(std::bit_cast<double>(0x7ff0000000000001ull)) == (is_bf ? 0x7fc0 : 0x7e00));
    CHECK(from_double(std::bit_cast<double>(0xfff4000000000000ull)) == (is_bf ? 0xffe0 : 0xff00));
    // The double rounding that going through float would make.
    const double above_tie = 1 + (is_bf ? 0x1p-8 : 0x1p-11) + 0x1p-30;
    CHECK(from_double(above_tie) == (is_bf ? 0x3f81 : 0x3c01));
    CHECK(scalar_narrow(*f, std::bit_cast<uint32_t>(static_cast<float>(above_tie))) == (is_bf ? 0x3f80 : 0x3c00));

    // Integers: exact in long double where it has 64 digits (x86), else only up to 2^53.
    const auto from_int = [&](auto v) { return is_bf ? ct::bfloat16(v).bits : ct::float16(v).bits; };
    const bool wide = std::numeric_limits<long double>::digits >= 64;
    std::vector<std::int64_t> ints{0, 1, -1, 2047, 2049, 2051, 65504, 65519, 65520, -65520, 256, 257, 258, 259, 384, 385};
    for (int b = 0; b < 63; ++b)
      for (std::int64_t d : {-1, 0, 1}) ints.push_back((std::int64_t{1} << b) + d);
    for (int i = 0; i < 100000; ++i) ints.push_back(static_cast<std::int64_t>(gen()) >> (gen() % 64));
    if (wide) ints.push_back(std::numeric_limits<std::int64_t>::min());
    size_t bad_int = 0;
    for (std::int64_t v : ints) {
      if (!wide && (v > (std::int64_t{1} << 53) || v < -(std::int64_t{1} << 53))) continue;
      const uint16_t got = from_int(v), want = ref_round(*f, static_cast<long double>(v));
      if (got != want && bad_int++ < 5) FAIL_CHECK(f->name << "(" << v << ") -> " << hex(got, 4) << ", expected " << hex(want, 4));
      if (v >= 0 && v <= 1000000) {
        CHECK(from_int(static_cast<std::uint32_t>(v)) == want);
        CHECK(from_int(static_cast<short>(v % 32768)) == ref_round(*f, static_cast<long double>(v % 32768)));
      }
    }
    CHECK(bad_int == 0);
    if (wide) CHECK(from_int(std::numeric_limits<std::uint64_t>::max()) == ref_round(*f, static_cast<long double>(std::numeric_limits<std::uint64_t>::max())));
    CHECK(from_int(true) == (is_bf ? 0x3f80 : 0x3c00));
  }
}

TEST_CASE("conversion kernels: the scalar backend is the reference conversion", "[kernels][convert]") {
  CHECK(k::resolve_widen_bf16(scalar_backend) == nullptr);
  CHECK(k::resolve_widen_f16(scalar_backend) == nullptr);
  CHECK(k::resolve_narrow_bf16(scalar_backend) == nullptr);
  CHECK(k::resolve_narrow_f16(scalar_backend) == nullptr);
  check_kernels(scalar_backend, "scalar backend");
}

TEST_CASE("conversion kernels: every simd target gives the scalar bits", "[kernels][convert][targets]") {
  const auto targets = k::simd_available_targets();
  REQUIRE(!targets.empty());
  for (std::int64_t t : targets) {
    pinned_target pin(t);
    const std::string label = std::string("target ") + k::simd_target_label(t);
    INFO(label);
    CHECK(k::resolve_widen_bf16(simd_backend) != nullptr);
    CHECK(k::resolve_widen_f16(simd_backend) != nullptr);
    CHECK(k::resolve_narrow_bf16(simd_backend) != nullptr);
    CHECK(k::resolve_narrow_f16(simd_backend) != nullptr);
    check_kernels(simd_backend, label);
  }
}

// Every float (2^32 of them), for the record: the scalar conversions against the reference and
// every simd target against the scalar conversions. About five minutes: hidden, run it with
// ct_tests "[exhaustive]".
TEST_CASE("conversion kernels: every float32 on every target", "[.][exhaustive]") {
  constexpr uint64_t kChunk = 1 << 20;
  const auto targets = k::simd_available_targets();
  std::vector<float> x(kChunk);
  std::vector<uint16_t> want(kChunk), got(kChunk);
  for (const format* f : {&bf16_format, &f16_format}) {
    size_t bad_ref = 0, bad_simd = 0;
    for (uint64_t base = 0; base < (uint64_t{1} << 32); base += kChunk) {
      for (uint64_t i = 0; i < kChunk; ++i) x[i] = std::bit_cast<float>(static_cast<uint32_t>(base + i));
      narrow(*f, x.data(), want.data(), static_cast<index_t>(kChunk), scalar_backend);
      for (uint64_t i = 0; i < kChunk; ++i)
        if (want[i] != ref_narrow(*f, static_cast<uint32_t>(base + i)) && bad_ref++ < 5)
          FAIL_CHECK(f->name << " scalar " << hex(base + i, 8) << " -> " << hex(want[i], 4));
      for (std::int64_t t : targets) {
        pinned_target pin(t);
        narrow(*f, x.data(), got.data(), static_cast<index_t>(kChunk), simd_backend);
        if (got != want)
          for (uint64_t i = 0; i < kChunk; ++i)
            if (got[i] != want[i] && bad_simd++ < 5)
              FAIL_CHECK(f->name << " " << k::simd_target_label(t) << " " << hex(base + i, 8) << " -> " << hex(got[i], 4)
                                 << ", expected " << hex(want[i], 4));
      }
    }
    CHECK(bad_ref == 0);
    CHECK(bad_simd == 0);
  }
}
