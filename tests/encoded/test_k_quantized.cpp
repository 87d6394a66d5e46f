// Quantized mode with q4_K / q6_K weights: 256-value activation blocks and integer dot products
// per super-block, against a double-precision reference of the decoded weights within the bound
// of docs/encoded.md ("Modes and their error bounds"). The bound's offsets (q4_K's dmin * m_j)
// are read from the bytes by this file's own reading of the layout, not by ct's decoder.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "ct/ct.hpp"
#include "support/reference.hpp"

using ct::index_t;

namespace {

double half_at(const unsigned char* p) {  // little-endian float16, by its definition
  const int bits = p[0] | (p[1] << 8);
  const int e = (bits >> 10) & 0x1f, f = bits & 0x3ff;
  const double mag = e == 0 ? std::ldexp(f, -24) : std::ldexp(1024 + f, e - 25);
  return bits & 0x8000 ? -mag : mag;
}

// q4_K sub-block j's min index m_j: bytes 4-7 keep m_0..m_3 in their low 6 bits; m_(4+i) is the
// high nibble of byte 12 + i and, as its top 2 bits, the top 2 bits of byte 8 + i (offsets in
// the 144-byte block, whose 12 scale bytes start at 4).
int q4_K_min(const unsigned char* blk, int j) {
  const unsigned char* p = blk + 4;
  return j < 4 ? p[4 + j] & 0x3f : (p[8 + j - 4] >> 4) | ((p[4 + j - 4] >> 6) << 4);
}

struct bound_parts {
  double activation = 0;  // sum over blocks of ||w_b||_1 * eps_b
  double magnitude = 0;   // sum_k (|w_k| + 2 o_k) (|x_k| + eps_b)
};

bound_parts parts(const ct::encoded_tensor& w, const std::vector<double>& wd, index_t row, index_t k, const std::vector<double>& x) {
  bound_parts p;
  const bool q4 = w.fmt().name() == "q4_K";
  for (index_t s = 0; s < k / 256; ++s) {
    double amax = 0;
    for (index_t j = 256 * s; j < 256 * s + 256; ++j) amax = std::max(amax, std::fabs(x[static_cast<std::size_t>(j)]));
    const double eps = amax * (1.0 / 254 + 0x1p-20);
    const unsigned char* blk = w.row(row) + s * 144;
    for (index_t j = 256 * s; j < 256 * s + 256; ++j) {
      const double wv = std::fabs(wd[static_cast<std::size_t>(row * k + j)]);
      const double o = q4 ? std::fabs(half_at(blk + 2)) * q4_K_min(blk, static_cast<int>((j % 256) / 32)) : 0.0;
      p.activation += wv * eps;
      p.magnitude += (wv + 2 * o) * (std::fabs(x[static_cast<std::size_t>(j)]) + eps);
    }
  }
  return p;
}

}  // namespace

TEST_CASE("quantized mode with q4_K / q6_K weights stays within the documented bound", "[encoded][matmul]") {
  const index_t n = 37, k = 1024;
  auto wf = ct::random_uniform<float>({n, k}, 171, -1.0f, 1.0f);
  for (index_t j = 0; j < k; ++j) wf(5, j) = 0.0f;                 // a zero row
  for (index_t j = 0; j < k; ++j) wf(6, j) = 0.25f + 0.5f * wf(6, j);  // an all-positive one (no mins)
  auto x = ct::random_uniform<float>({k}, 172, -2.0f, 2.0f);
  for (index_t j = 256; j < 512; ++j) x(j) = 0.0f;  // an all-zero activation block (scale 0)
  const auto xv = ct_test::values(x);
  for (const char* name : {"q4_K", "q6_K"})
    for (ct::fma_policy fma : {ct::fma_policy::fused, ct::fma_policy::separate})
      for (ct::backend be : {ct::backend::simd, ct::backend::scalar}) {
        INFO(name << (fma == ct::fma_policy::fused ? " fused" : " separate") << (be == ct::backend::simd ? " simd" : " scalar"));
        ct::settings_scope scope({be, fma});
        const auto w = ct::encode(wf, ct::find_format(name));
        const auto wd = ct_test::values(ct::decode(w));
        const auto y = ct_test::values(ct::matmul(w, x));
        int outside = 0, beyond_64th = 0;
        for (index_t i = 0; i < n; ++i) {
          double ref = 0;
          for (index_t j = 0; j < k; ++j) ref += wd[static_cast<std::size_t>(i * k + j)] * xv[static_cast<std::size_t>(j)];
          const bound_parts p = parts(w, wd, i, k, xv);
          const double bound = p.activation * (1 + 0x1p-10) + (2.0 * k / 256 + 6) * 0x1p-24 * p.magnitude;
          const double err = std::fabs(y[static_cast<std::size_t>(i)] - ref);
          outside += err > bound + 1e-30;
          beyond_64th += err > p.activation / 64;
        }
        CHECK(outside == 0);
        CHECK(beyond_64th > 0);  // the activation term is not slack by more than 64x
        CHECK(y[5] == 0.0);
        // the quantized result differs from exact mode (the activations really were rounded)
        const auto ye = ct_test::values(ct::matmul(w, x, ct::encoded_mode::exact));
        CHECK(y != ye);
      }
}

TEST_CASE("quantized mode with K formats: NaN activations and short rows are refused before any work", "[encoded][matmul]") {
  const auto w = ct::encode(ct::random_uniform<float>({4, 512}, 3, -1.0f, 1.0f), ct::formats::q4_K());
  auto x = ct::random_uniform<float>({512}, 4, -1.0f, 1.0f);
  x(300) = std::nanf("");
  auto y = ct::full<float>({4}, 7.0f);
  CHECK_THROWS_AS(ct::matmul(w, x, y), ct::format_error);
  CHECK_THROWS_WITH(ct::matmul(w, x, y), Catch::Contains("activation") && Catch::Contains("300"));
  for (index_t i = 0; i < 4; ++i) CHECK(y(i) == 7.0f);
  CHECK_NOTHROW(ct::matmul(w, x, y, ct::encoded_mode::exact));  // exact mode takes NaN through
}
