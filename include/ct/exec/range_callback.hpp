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
///
/// It also carries a hint, grain(): the smallest range worth handing out, in groups. An
/// operation whose every range pays a fixed cost sets it — a matrix product streams all of B
/// once per range, which costs about as much as computing a dozen rows, so ranges of four rows
/// spend most of their time on B. Executors may ignore it (any partition stays correct);
/// ct::sharing_executor and ct::asio_executor hand out ranges of at least the grain where the
/// work allows one per worker.
class range_callback {
 public:
  /// Refers to f, which must outlive every use of this callback and its copies.
  template <class F>
    requires(!std::same_as<std::remove_cvref_t<F>, range_callback> && std::invocable<F&, index_t, index_t>)
  range_callback(F& f, index_t grain = 1) noexcept  // NOLINT(google-explicit-constructor): implicit by design
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* o, index_t start, index_t end) { (*static_cast<F*>(o))(start, end); }),
        grain_(grain > 1 ? grain : 1) {}

  /// Calls the referenced callable on the half-open range [start, end).
  void operator()(index_t start, index_t end) const { call_(object_, start, end); }

  /// The smallest range worth handing out (>= 1; 1 when the operation gave no hint).
  index_t grain() const noexcept { return grain_; }

 private:
  void* object_;
  void (*call_)(void*, index_t, index_t);
  index_t grain_;
};

}  // namespace ct
