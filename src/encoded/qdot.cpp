// The portable quantized-mode dot products (qdot.hpp gives the order) and the choice of kernel.
#include "src/kernels/fp_contract_off.hpp"  // must stay first
#include <cmath>

#include "src/encoded/builtin.hpp"
#include "src/encoded/qdot.hpp"
#include "src/matmul/matmul_common.hpp"

namespace ct::detail::encoded {

namespace {

float fold(float* lane) {
  for (index_t w = qdot_lanes / 2; w >= 1; w /= 2)
    for (index_t l = 0; l < w; ++l) lane[l] = lane[l] + lane[l + w];
  return lane[0];
}

template <bool kQ4, bool kFused>
float qdot_portable(const unsigned char* w, const std::int8_t* xq, const float* xd, index_t blocks) {
  float lane[qdot_lanes] = {};
  const index_t wbytes = kQ4 ? 18 : 34;
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
    const float scale = load_f16_le(w) * xd[b];
    float& l = lane[b % qdot_lanes];
    l = mm::muladd<kFused>(scale, static_cast<float>(isum), l);
  }
  return fold(lane);
}

}  // namespace

qdot_fn portable_qdot(std::string_view format, bool fused) {
  if (format == "q8_0") return fused ? &qdot_portable<false, true> : &qdot_portable<false, false>;
  if (format == "q4_0") return fused ? &qdot_portable<true, true> : &qdot_portable<true, false>;
  return nullptr;
}

qdot_fn resolve_qdot(std::string_view format, const settings& s) {
  const bool fused = s.fma == fma_policy::fused;
  if (format != "q8_0" && format != "q4_0") return nullptr;
  if (s.backend == backend::simd)
    if (qdot_fn f = simd_qdot(format == "q4_0", fused)) return f;
  return portable_qdot(format, fused);
}

}  // namespace ct::detail::encoded
