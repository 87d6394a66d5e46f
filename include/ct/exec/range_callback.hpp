/// \file
/// The cheap, copyable, non-owning callable an executor runs: ct::range_callback.
#pragma once
#include <concepts>
#include <memory>
#include <type_traits>

#include "ct/core/index.hpp"

namespace ct {

/// A reference to a callable void(index_t start, index_t end). It does not own the callable:
/// the operation that hands one to an executor keeps the callable alive until the executor
/// returns, which is why executors must not run callbacks after they return.
class range_callback {
 public:
  /// Refers to f, which must outlive every use of this callback and its copies.
  template <class F>
    requires(!std::same_as<std::remove_cvref_t<F>, range_callback> && std::invocable<F&, index_t, index_t>)
  range_callback(F& f) noexcept  // NOLINT(google-explicit-constructor): implicit by design
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* o, index_t start, index_t end) { (*static_cast<F*>(o))(start, end); }) {}

  /// Calls the referenced callable on the half-open range [start, end).
  void operator()(index_t start, index_t end) const { call_(object_, start, end); }

 private:
  void* object_;
  void (*call_)(void*, index_t, index_t);
};

}  // namespace ct
