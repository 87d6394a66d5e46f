// q4_K and q6_K: ggml's "K-quant" super-blocks of 256 values, byte for byte (a GGUF tensor row
// of either type is used as it is). Little-endian float16 super-block scales, as in q8_0.
//
// q4_K, 144 bytes: d (float16), dmin (float16), 12 bytes holding eight 6-bit scales sc_j and
// eight 6-bit mins m_j (one pair per 32-value sub-block j), then 128 bytes of 4-bit q.
// Value = (d * sc_j) * q - dmin * m_j. The 12 bytes: bytes 0-3 keep sc_0..sc_3 in their low 6
// bits, bytes 4-7 keep m_0..m_3 likewise; byte 8 + i keeps the low 4 bits of sc_(4+i) (low
// nibble) and of m_(4+i) (high nibble), and the top 2 bits of byte i / byte 4 + i are the high
// 2 bits of sc_(4+i) / m_(4+i). The quants come in four 64-value chunks of 32 bytes: in chunk c,
// byte l's low nibble is value 64c + l (sub-block 2c), its high nibble value 64c + 32 + l
// (sub-block 2c + 1).
//
// q6_K, 210 bytes: ql (128 bytes, low 4 bits of each q), qh (64 bytes, high 2 bits), 16 int8
// scales (one per 16 values: value v uses scales[v / 16]), d (float16). Value = (d * sc) *
// (q - 32). Each 128-value half h has 64 ql bytes and 32 qh bytes of its own; its value r
// (quarter k = r / 32, lane l = r % 32) takes its low 4 bits from ql byte 32 * (k % 2) + l of
// the half (the low nibble for k < 2, the high one for k >= 2) and its high 2 bits from bits
// 2k, 2k + 1 of qh byte l of the half.
//
// Decoding is exactly the layouts above, multiplying in float the way ggml does. Encoding uses
// ct's own reference quantizer (not ggml's search-based one: equal floats need not give ggml's
// bytes, but ggml decodes ct's bytes to the same values ct does). It rounds every scale UP so
// that each block's grid covers its values and no value is clamped:
//  * q4_K: per sub-block, m_real = max(0, -min x) (the negated min(0, min x)). dmin is the
//    smallest float16 with 63 * dmin >= max m_real, m = ceil(m_real / dmin) (so dmin * m >=
//    m_real). With t = max x + dmin * m, d is the smallest float16 with 945 * d >= max t
//    (945 = 15 * 63) and sc = ceil(t / (15 d)) (so 15 * d * sc >= t). Then q = clamp(round((x +
//    dmin * m) / (d * sc)), 0, 15) with the stored d, dmin, sc, m, half away from zero.
//  * q6_K: symmetric per 16-value group (the scales are never negative and q - 32 stays in
//    -31..31): d is the smallest float16 with 3937 * d >= max|x| of the super-block (3937 =
//    127 * 31), sc = ceil(amax / (31 d)) (so 31 * d * sc >= amax), q - 32 = round(x / (d*sc)).
// Every error is then at most half a step, d * sc / 2 (docs/encoded.md, "Accuracy"). A block of
// zeros encodes to d = dmin = 0, all scales 0, q = 0 (q6_K: 32), and decodes to zeros. NaN and
// infinity are refused (require_finite); finite values so large that a scale overflows float16
// (an infinite d) give infinite or NaN values, as in q8_0.
#include <cmath>
#include <cstdint>

#include "ct/core/float16.hpp"
#include "ct/encoded/format.hpp"
#include "src/encoded/builtin.hpp"

namespace ct::detail::encoded {

namespace {

constexpr int sub_blocks = 8, sub_elements = 32;  // q4_K
constexpr int groups = 16, group_elements = 16;   // q6_K

// The smallest float16 h >= 0 with h * factor >= need (need >= 0, finite). Both products below
// are exact in double (11 significant bits times at most 12), so the test is exact; an
// overflowing need ends at +inf.
float16 half_covering(double need, double factor) {
  float16 h(static_cast<float>(need / factor));
  while (static_cast<double>(static_cast<float>(h)) * factor < need && h.bits < 0x7c00) ++h.bits;
  return h;
}

// An integer in [lo, hi] from v rounded up; NaN gives lo (no float-to-int conversion of a value
// out of range).
int ceil_in(double v, int lo, int hi) {
  return static_cast<int>(std::fmin(static_cast<double>(hi), std::fmax(static_cast<double>(lo), std::ceil(v))));
}

// round(v) half away from zero, clamped to [lo, hi]; NaN gives lo.
int round_in(float v, int lo, int hi) {
  return static_cast<int>(std::fmin(static_cast<float>(hi), std::fmax(static_cast<float>(lo), std::round(v))));
}

// q4_K's 12 bytes from the scales and mins (q4_K_scale_min reads them back).
void pack_scales_mins(const int* sc, const int* m, unsigned char* p) {
  for (int i = 0; i < 4; ++i) {
    p[i] = static_cast<unsigned char>(sc[i] | ((sc[4 + i] >> 4) << 6));
    p[4 + i] = static_cast<unsigned char>(m[i] | ((m[4 + i] >> 4) << 6));
    p[8 + i] = static_cast<unsigned char>((sc[4 + i] & 0x0f) | ((m[4 + i] & 0x0f) << 4));
  }
}

}  // namespace

void encode_q4_K(const float* x, unsigned char* blocks, index_t n) {
  require_finite("q4_K", x, n);
  for (index_t b = 0; b < n / q4_K_elements; ++b) {
    const float* v = x + b * q4_K_elements;
    unsigned char* out = blocks + b * q4_K_bytes;
    float hi[sub_blocks], low[sub_blocks];  // per sub-block: max x and m_real = max(0, -min x)
    float low_max = 0.0f;
    for (int j = 0; j < sub_blocks; ++j) {
      float mn = 0.0f, mx = v[j * sub_elements];
      for (int l = 0; l < sub_elements; ++l) {
        mn = std::fmin(mn, v[j * sub_elements + l]);
        mx = std::fmax(mx, v[j * sub_elements + l]);
      }
      hi[j] = mx;
      low[j] = -mn;  // +0 when no value is negative
      low_max = std::fmax(low_max, low[j]);
    }
    const float16 dmin_h = half_covering(low_max, 63.0);
    const float dmin = static_cast<float>(dmin_h);
    int sc[sub_blocks], m[sub_blocks];
    float off[sub_blocks];
    double top[sub_blocks], top_max = 0.0;  // t = max x + dmin * m: what 15 steps must reach
    for (int j = 0; j < sub_blocks; ++j) {
      m[j] = dmin > 0.0f ? ceil_in(static_cast<double>(low[j]) / dmin, 0, 63) : 0;
      if (m[j] < 63 && dmin * static_cast<float>(m[j]) < low[j]) ++m[j];  // the product is exact
      off[j] = m[j] != 0 ? dmin * static_cast<float>(m[j]) : 0.0f;
      top[j] = std::fmax(0.0, static_cast<double>(hi[j]) + static_cast<double>(off[j]));
      top_max = std::fmax(top_max, top[j]);
    }
    const float16 d_h = half_covering(top_max, 15.0 * 63.0);
    const float d = static_cast<float>(d_h);
    for (int j = 0; j < sub_blocks; ++j) {
      sc[j] = d > 0.0f ? ceil_in(top[j] / (15.0 * static_cast<double>(d)), 0, 63) : 0;
      if (sc[j] < 63 && 15.0 * static_cast<double>(d * static_cast<float>(sc[j])) < top[j]) ++sc[j];
    }
    store_u16_le(out, d_h.bits);
    store_u16_le(out + 2, dmin_h.bits);
    pack_scales_mins(sc, m, out + 4);
    unsigned char* qs = out + 16;
    for (int c = 0; c < sub_blocks / 2; ++c) {
      for (int l = 0; l < sub_elements; ++l) {
        int nib[2];
        for (int part = 0; part < 2; ++part) {
          const int j = 2 * c + part;
          const float step = d * static_cast<float>(sc[j]);
          nib[part] = step > 0.0f ? round_in((v[j * sub_elements + l] + off[j]) / step, 0, 15) : 0;
        }
        qs[32 * c + l] = static_cast<unsigned char>(nib[0] | (nib[1] << 4));
      }
    }
  }
}

void decode_q4_K(const unsigned char* blocks, float* y, index_t n) {
  for (index_t b = 0; b < n / q4_K_elements; ++b) {
    const unsigned char* in = blocks + b * q4_K_bytes;
    float* out = y + b * q4_K_elements;
    const float d = load_f16_le(in), dmin = load_f16_le(in + 2);
    const unsigned char* qs = in + 16;
    for (int j = 0; j < sub_blocks; ++j) {
      int sc = 0, m = 0;
      q4_K_scale_min(in + 4, j, sc, m);
      const float step = d * static_cast<float>(sc), off = dmin * static_cast<float>(m);
      const unsigned char* q = qs + 32 * (j / 2);
      const int shift = 4 * (j % 2);
      for (int l = 0; l < sub_elements; ++l)
        out[j * sub_elements + l] = step * static_cast<float>((q[l] >> shift) & 0x0f) - off;
    }
  }
}

void encode_q6_K(const float* x, unsigned char* blocks, index_t n) {
  require_finite("q6_K", x, n);
  for (index_t b = 0; b < n / q6_K_elements; ++b) {
    const float* v = x + b * q6_K_elements;
    unsigned char* out = blocks + b * q6_K_bytes;
    float amax[groups], all = 0.0f;
    for (int g = 0; g < groups; ++g) {
      amax[g] = 0.0f;
      for (int l = 0; l < group_elements; ++l) amax[g] = std::fmax(amax[g], std::fabs(v[g * group_elements + l]));
      all = std::fmax(all, amax[g]);
    }
    const float16 d_h = half_covering(all, 127.0 * 31.0);
    const float d = static_cast<float>(d_h);
    float step[groups];
    for (int g = 0; g < groups; ++g) {
      int sc = d > 0.0f ? ceil_in(static_cast<double>(amax[g]) / (31.0 * static_cast<double>(d)), 0, 127) : 0;
      if (sc < 127 && 31.0 * static_cast<double>(d * static_cast<float>(sc)) < amax[g]) ++sc;
      out[192 + g] = static_cast<unsigned char>(sc);  // 0..127: the same byte as int8
      step[g] = d * static_cast<float>(sc);
    }
    store_u16_le(out + 208, d_h.bits);
    unsigned char* ql = out;
    unsigned char* qh = out + 128;
    for (int i = 0; i < 192; ++i) out[i] = 0;
    for (int h = 0; h < 2; ++h)
      for (int r = 0; r < 128; ++r) {
        const int at = 128 * h + r, g = at / group_elements;
        const int q = 32 + (step[g] > 0.0f ? round_in(v[at] / step[g], -32, 31) : 0);
        const q6_K_place p = q6_K_place_of(r);
        ql[64 * h + p.ql] = static_cast<unsigned char>(ql[64 * h + p.ql] | ((q & 0x0f) << p.ql_shift));
        qh[32 * h + p.qh] = static_cast<unsigned char>(qh[32 * h + p.qh] | ((q >> 4) << p.qh_shift));
      }
  }
}

void decode_q6_K(const unsigned char* blocks, float* y, index_t n) {
  for (index_t b = 0; b < n / q6_K_elements; ++b) {
    const unsigned char* in = blocks + b * q6_K_bytes;
    float* out = y + b * q6_K_elements;
    const float d = load_f16_le(in + 208);
    float step[groups];
    for (int g = 0; g < groups; ++g) step[g] = d * static_cast<float>(static_cast<std::int8_t>(in[192 + g]));
    for (int h = 0; h < 2; ++h) {
      const unsigned char* ql = in + 64 * h;
      const unsigned char* qh = in + 128 + 32 * h;
      for (int r = 0; r < 128; ++r) {
        const q6_K_place p = q6_K_place_of(r);
        const int q = ((ql[p.ql] >> p.ql_shift) & 0x0f) | (((qh[p.qh] >> p.qh_shift) & 0x03) << 4);
        out[128 * h + r] = step[(128 * h + r) / group_elements] * static_cast<float>(q - 32);
      }
    }
  }
}

}  // namespace ct::detail::encoded
