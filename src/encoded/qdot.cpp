// The portable quantized-mode dot products (qdot.hpp gives the orders), the activation
// quantizer and the choice of kernel.
//
// Integer bounds (all within int32): q8_0 isum_b <= 32 * 128 * 127; q4_0 <= 32 * 8 * 127;
// q4_K A_s <= 256 * 63 * 15 * 127, B_s <= 256 * 63 * 127; q6_K A_s <= 256 * 128 * 32 * 127.
#include "src/kernels/fp_contract_off.hpp"  // must stay first
#include <cmath>
#include <cstring>

#include "src/encoded/builtin.hpp"
#include "src/encoded/qdot.hpp"
#include "src/matmul/matmul_common.hpp"

namespace ct::detail::encoded {

namespace {

template <bool kQ4, bool kFused>
float qdot_32(const unsigned char* w, const qactivation& x, index_t blocks) {
  float lane[qdot_lanes] = {};
  const index_t wbytes = kQ4 ? q4_0_bytes : q8_0_bytes;
  const std::int8_t* xq = x.q;
  for (index_t b = 0; b < blocks; ++b, w += wbytes, xq += 32) {
    std::int32_t isum = 0;
    if constexpr (kQ4) {
      for (int j = 0; j < 16; ++j) {
        isum += ((w[2 + j] & 0x0f) - 8) * xq[j];
        isum += ((w[2 + j] >> 4) - 8) * xq[16 + j];
      }
    } else {
      for (int j = 0; j < 32; ++j) isum += static_cast<std::int8_t>(w[2 + j]) * xq[j];
    }
    const float scale = load_f16_le(w) * x.d[b];
    float& l = lane[b % qdot_lanes];
    l = mm::muladd<kFused>(scale, static_cast<float>(isum), l);
  }
  return fold_lanes(lane);
}

template <bool kFused>
float qdot_q4_K(const unsigned char* w, const qactivation& x, index_t blocks) {
  float acc = 0.0f;
  for (index_t s = 0; s < blocks; ++s, w += q4_K_bytes) {
    const std::int8_t* xq = x.q + s * 256;
    const std::int16_t* xs = x.sums + s * 16;
    std::int32_t a = 0, bsum = 0;
    for (int j = 0; j < 8; ++j) {
      int sc = 0, m = 0;
      q4_K_scale_min(w + 4, j, sc, m);
      const unsigned char* qs = w + 16 + 32 * (j / 2);
      const int shift = 4 * (j % 2);
      std::int32_t isum = 0;
      for (int l = 0; l < 32; ++l) isum += ((qs[l] >> shift) & 0x0f) * xq[32 * j + l];
      a += sc * isum;
      bsum += m * (xs[2 * j] + xs[2 * j + 1]);
    }
    const float dx = x.d[s];
    acc = mm::muladd<kFused>(dx * load_f16_le(w), static_cast<float>(a), acc);
    acc = mm::muladd<kFused>(-(dx * load_f16_le(w + 2)), static_cast<float>(bsum), acc);
  }
  return acc;
}

template <bool kFused>
float qdot_q6_K(const unsigned char* w, const qactivation& x, index_t blocks) {
  float acc = 0.0f;
  for (index_t s = 0; s < blocks; ++s, w += q6_K_bytes) {
    const std::int8_t* xq = x.q + s * 256;
    std::int32_t a = 0;
    for (int g = 0; g < 16; ++g) {
      std::int32_t isum = 0;
      for (int l = 0; l < 16; ++l) isum += (q6_K_quant(w, 16 * g + l) - 32) * xq[16 * g + l];
      a += static_cast<std::int8_t>(w[192 + g]) * isum;
    }
    acc = mm::muladd<kFused>(x.d[s] * load_f16_le(w + 208), static_cast<float>(a), acc);
  }
  return acc;
}

template <bool kFused>
qdot_fn portable_for(qformat f) {
  return by_format(f, &qdot_32<false, kFused>, &qdot_32<true, kFused>, &qdot_q4_K<kFused>, &qdot_q6_K<kFused>);
}

bool quantized_format(std::string_view name, qformat& f, index_t& block) {
  if (name == "q8_0") f = qformat::q8_0, block = 32;
  else if (name == "q4_0") f = qformat::q4_0, block = 32;
  else if (name == "q4_K") f = qformat::q4_K, block = 256;
  else if (name == "q6_K") f = qformat::q6_K, block = 256;
  else return false;
  return true;
}

}  // namespace

qdot_kernel portable_qdot(std::string_view format, bool fused) {
  qformat f{};
  index_t block = 0;
  if (!quantized_format(format, f, block)) return {};
  return {fused ? portable_for<true>(f) : portable_for<false>(f), block};
}

qdot_kernel resolve_qdot(std::string_view format, const settings& s) {
  const bool fused = s.fma == fma_policy::fused;
  qformat f{};
  index_t block = 0;
  if (!quantized_format(format, f, block)) return {};
  if (s.backend == backend::simd)
    if (qdot_fn fn = simd_qdot(f, fused))
      // The AVX-512 q4_0 kernel is the one that reads the split layout.
      return {fn,
              block,
              simd_qdot_rows(f, fused),
              simd_qdot_tile_pack(f),
              simd_qdot_tile(f, fused),
              f == qformat::q8_0 ? 128 : 8,
              f == qformat::q4_0 && fn == avx512_qdot(f, fused),
              f == qformat::q4_0 || f == qformat::q4_K,
              simd_qdot_multi(f, fused)};
  return portable_qdot(format, fused);
}

void split_quants(const std::int8_t* q, index_t k, std::int8_t* out) {
  const index_t whole = k / 128 * 128;
  for (index_t base = 0; base < whole; base += 128)
    for (index_t j = 0; j < 4; ++j) {
      std::memcpy(out + base + 16 * j, q + base + 32 * j, 16);
      std::memcpy(out + base + 64 + 16 * j, q + base + 32 * j + 16, 16);
    }
  std::memcpy(out + whole, q + whole, static_cast<std::size_t>(k - whole));
}

void quantize_activation(const float* v, index_t k, index_t block, std::int8_t* q, float* d, std::int16_t* sums,
                         bool simd) {
  if (simd && simd_quantize(v, k, block, q, d, sums)) return;  // the same bits as below
  require_finite(block == 32 ? "q8_0 activation" : "q8_K activation", v, k);
  if (block == 32) {
    // Each block exactly as a q8_0 block: its float16 scale, widened, and its quants.
    unsigned char enc[q8_0_bytes];
    for (index_t b = 0; b < k / 32; ++b) {
      encode_q8_0(v + 32 * b, enc, 32);
      d[b] = load_f16_le(enc);
      for (int j = 0; j < 32; ++j) q[32 * b + j] = static_cast<std::int8_t>(enc[2 + j]);
    }
  } else {
    // 256-value blocks with a float scale (no float16 rounding): d = max|x| / 127,
    // q = round(x / d) half away from zero, by the reciprocal as q8_0 does (ggml's q8_K layout
    // of activations, with ct's rounding).
    for (index_t b = 0; b < k / block; ++b) {
      const float* x = v + b * block;
      float amax = 0.0f;
      for (index_t j = 0; j < block; ++j) amax = max_abs(amax, x[j]);
      const float db = amax / 127.0f;
      const float id = reciprocal_or_zero(db);
      d[b] = db;
      for (index_t j = 0; j < block; ++j) q[b * block + j] = static_cast<std::int8_t>(round_half_away(x[j] * id));
    }
  }
  quant_sums(q, k, sums);
}

void quant_sums(const std::int8_t* q, index_t k, std::int16_t* sums) {
  for (index_t g = 0; g < k / 16; ++g) {
    int s = 0;
    for (int j = 0; j < 16; ++j) s += q[16 * g + j];
    sums[g] = static_cast<std::int16_t>(s);
  }
}

void pair_sums(const std::int16_t* sums, index_t k, std::int16_t* out) {
  for (index_t j = 0; j < k / 32; ++j) out[j] = static_cast<std::int16_t>(sums[2 * j] + sums[2 * j + 1]);
}

void minus16_sums(const std::int16_t* sums, index_t k, std::int16_t* out) {
  for (index_t g = 0; g < k / 16; ++g) out[g] = static_cast<std::int16_t>(-16 * sums[g]);
}

void reserve_tile_activations(index_t vectors, index_t blocks, qtile_activations& out) {
  out.blocks = blocks;
  out.groups = (blocks + 15) / 16;
  out.vectors = vectors;
  out.q.assign(static_cast<std::size_t>(out.groups * vectors * 512), 0);
  out.start.assign(static_cast<std::size_t>(out.groups * vectors * 16), 0);
  out.d.assign(static_cast<std::size_t>(out.groups * vectors * 16), 0.0f);
}

void pack_tile_activations(const std::int8_t* q, const float* d, const std::int16_t* sums, std::int32_t c, index_t v,
                           qtile_activations& out) {
  for (index_t b = 0; b < out.blocks; ++b) {
    const index_t g = b / 16, j = b % 16, at = g * out.vectors + v;
    std::int8_t* oq = out.q.data() + at * 512 + j * 4;
    for (index_t i = 0; i < 8; ++i)
      for (index_t l = 0; l < 4; ++l) oq[i * 64 + l] = q[32 * b + 4 * i + l];
    out.start[static_cast<std::size_t>(at * 16 + j)] = -c * (sums[2 * b] + sums[2 * b + 1]);
    out.d[static_cast<std::size_t>(at * 16 + j)] = d[b];
  }
}

}  // namespace ct::detail::encoded
