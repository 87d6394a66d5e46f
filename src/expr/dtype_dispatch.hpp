// src/expr/dtype_dispatch.hpp — the evaluator's element-type helpers (internal).
#pragma once
#include <cstddef>
#include <cstdlib>

#include "ct/core/dtype.hpp"
#include "ct/expr/program.hpp"

namespace ct::detail {

// The types instructions compute in (every element type but the 16-bit floats, which compute
// as float32); a 16-bit float reaching here is an internal error.
template <class F>
decltype(auto) with_type(dtype t, F&& f) {
  return visit_dtype(t, [&](auto v) -> decltype(auto) {
    if constexpr (kind_of_v<decltype(v)> == dtype_kind::storage_float) {
      std::abort();  // instructions carry compute types only (program::emit_load, emit_cast)
      return f(float{});
    } else {
      return f(v);
    }
  });
}

}  // namespace ct::detail
