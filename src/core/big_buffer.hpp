// src/core/big_buffer.hpp — an uninitialised, aligned array for the large temporaries a call
// makes before scheduling (packed matrix operands, weights laid out for a kernel): 64-byte
// aligned, and from 4 MiB on 2 MiB aligned with a request for transparent huge pages (honoured
// in Linux's usual "madvise" setting). In 4 KiB pages the first-touch faults of a 64 MiB packed
// B were a third of a prompt-shaped x·Wᵀ on a VM (perf, Zen 5 guest); in huge pages they vanish.
// Memory comes from operator new, so allocation failures are std::bad_alloc as everywhere else.
#pragma once
#include <cstddef>
#include <memory>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "ct/core/index.hpp"

namespace ct::detail {

template <class T>
class big_buffer {
 public:
  static constexpr std::size_t huge_from = std::size_t{4} << 20, huge_page = std::size_t{2} << 20;

  big_buffer() = default;
  explicit big_buffer(index_t count) {
    const std::size_t bytes = static_cast<std::size_t>(count > 0 ? count : 1) * sizeof(T);
    const std::size_t alignment = bytes >= huge_from ? huge_page : 64;
    owner_ = std::unique_ptr<T, release>(static_cast<T*>(::operator new(bytes, std::align_val_t{alignment})), release{alignment});
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= huge_from) ::madvise(owner_.get(), bytes / huge_page * huge_page, MADV_HUGEPAGE);  // advice: failure is harmless
#endif
  }
  T* data() const noexcept { return owner_.get(); }

 private:
  struct release {
    std::size_t alignment = 64;
    void operator()(T* p) const noexcept { ::operator delete(p, std::align_val_t{alignment}); }
  };
  std::unique_ptr<T, release> owner_;
};

}  // namespace ct::detail
