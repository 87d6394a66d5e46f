// Non-temporal copy for large expression results (Highway, runtime dispatch).
#include "src/kernels/fp_contract_off.hpp"  // must stay first
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/expr/stream_copy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <cstdint>
#include <cstring>
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include "src/expr/stream_copy.hpp"

HWY_BEFORE_NAMESPACE();
namespace ct::detail {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void StreamCopy(unsigned char* HWY_RESTRICT dst, const unsigned char* HWY_RESTRICT src, std::size_t bytes) {
  const hn::ScalableTag<std::uint8_t> d;
  const std::size_t N = hn::Lanes(d);
  std::size_t i = (N - reinterpret_cast<std::uintptr_t>(dst) % N) % N;  // up to the first aligned vector
  if (i > bytes) i = bytes;
  std::memcpy(dst, src, i);
  for (; i + N <= bytes; i += N) hn::Stream(hn::LoadU(d, src + i), d, dst + i);
  std::memcpy(dst + i, src + i, bytes - i);
}

}  // namespace HWY_NAMESPACE
}  // namespace ct::detail
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ct::detail {
HWY_EXPORT(StreamCopy);
void stream_copy(void* dst, const void* src, std::size_t bytes) noexcept {
  HWY_DYNAMIC_DISPATCH(StreamCopy)(static_cast<unsigned char*>(dst), static_cast<const unsigned char*>(src), bytes);
}
void stream_fence() noexcept { hwy::FlushStream(); }
}  // namespace ct::detail
#endif
