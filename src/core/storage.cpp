// src/core/storage.cpp — the allocation behind ct/core/storage.hpp: small buffers cache-line
// aligned, large ones on huge-page boundaries with the kernel's huge-page advice.
#include "ct/core/storage.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace ct::detail {

void* acquire_storage(std::size_t n) {
  if (n < large_storage_bytes) return ::operator new(n, std::align_val_t{storage_alignment});
  void* p = ::operator new(n, std::align_val_t{large_storage_alignment});
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Advice only: with transparent huge pages off, or none free, the pages stay 4 KiB and the
  // call's failure changes nothing. Whole 2 MiB pages only (the last partial one stays small).
  ::madvise(p, n / large_storage_alignment * large_storage_alignment, MADV_HUGEPAGE);
#endif
  return p;
}

void release_storage(void* p, std::size_t n) noexcept {
  ::operator delete(p, std::align_val_t{n < large_storage_bytes ? storage_alignment : large_storage_alignment});
}

}  // namespace ct::detail
