// src/expr/run/reducers.hpp — reducer states: start, feed, finish, in both layouts (internal).
//
// Row layout (row_*): one state per reducer and group, fed a tile at a time by the SIMD
// kernels (float sums in double lanes, max/min with their position, logsumexp's lanes of
// reference and sums), integers and bools by the loops below. Column layout (column_*): one
// accumulator per group of a block, fed one reduced position at a time, each group
// sequentially, in double for floats (logsumexp: the running maximum in dvalue, its sum in dsum).
// Both layouts share the reducers' rules for integers and bools (start values, wrap-around,
// the first extreme wins). Their float paths stay apart: the row layout adds in the kernels'
// double lanes, the column layout one double per group in order, and each order gives its
// own bits.
// start and feed run per tile (or position) and are inline, with internal linkage like the
// runners that call them: their type switch (with_type) is then instantiated per file and
// inlined into the tile loop, which GCC did not do for a shared (comdat) instantiation.
// finish runs once per group (or block) and lives in reducers.cpp.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "ct/exec/settings.hpp"
#include "src/kernels/kernels.hpp"
#include "ct/expr/program.hpp"
#include "src/expr/column_kernels.hpp"
#include "src/expr/dtype_dispatch.hpp"
#include "src/expr/plan/plan.hpp"

namespace ct::detail {
namespace [[gnu::visibility("hidden")]] evaluator {  // see plan.hpp

// ---- shared by both layouts ----

/// Integer start value: products start from one, everything else from zero.
inline std::int64_t start_ivalue(reduce_op op) { return op == reduce_op::prod ? 1 : 0; }
/// Bool start value: all starts true, any false.
inline bool start_bvalue(reduce_op op) { return op == reduce_op::all; }
/// The position of a max/min before any element was seen.
constexpr index_t no_position = -1;

/// Integer sums and products wrap around (modulo 2^64) instead of overflowing (UB).
inline std::int64_t wrapping_add(std::int64_t a, std::int64_t b) {
  using U = std::uint64_t;
  return static_cast<std::int64_t>(static_cast<U>(a) + static_cast<U>(b));
}
inline std::int64_t wrapping_mul(std::int64_t a, std::int64_t b) {
  using U = std::uint64_t;
  return static_cast<std::int64_t>(static_cast<U>(a) * static_cast<U>(b));
}

/// An integer max (is_max) or min with its position: the first extreme stays.
inline void integer_extreme_step(bool is_max, std::int64_t x, index_t at, std::int64_t& value, index_t& position) {
  if (position < 0 || (is_max ? x > value : x < value)) {
    value = x;
    position = at;
  }
}

inline bool is_max_like(reduce_op op) { return op == reduce_op::max || op == reduce_op::argmax; }
inline bool returns_position(reduce_op op) { return op == reduce_op::argmax || op == reduce_op::argmin; }
inline bool is_logical(reduce_op op) { return op == reduce_op::all || op == reduce_op::any; }

// ---- row layout ----

struct reducer_state {
  kernels::lane_accumulator lanes;
  kernels::lse_state<float> lse_f;  // logsumexp's lanes (float or double argument)
  kernels::lse_state<double> lse_d;
  kernels::extreme_state<double> extreme_d;
  kernels::extreme_state<float> extreme_f;
  std::int64_t ivalue;
  index_t iindex;
  bool bvalue;
};

namespace {  // per tile: internal linkage, see the top of this file

/// Starts reducer `in` (float_sum: plan::float_sum, only its lanes are used).
inline void row_start(reducer_state& st, const instruction& in, bool float_sum) {
  if (float_sum) {  // only the lanes are used
    kernels::sum_init(st.lanes);  // (an inline std::fill became `rep stos`: LN 8192x1024 25% slower)
    return;
  }
  auto op = static_cast<reduce_op>(in.sub);
  if (op == reduce_op::logsumexp) {  // float or double argument, of the reducer's type
    if (in.type == dtype::f32) kernels::lse_init(st.lse_f);
    else kernels::lse_init(st.lse_d);
    return;
  }
  kernels::sum_init(st.lanes);
  if (op == reduce_op::prod) kernels::prod_init(st.lanes);
  kernels::extreme_init(st.extreme_d);
  kernels::extreme_init(st.extreme_f);
  st.ivalue = start_ivalue(op);
  st.iindex = no_position;
  st.bvalue = start_bvalue(op);
}

/// Feeds n elements x of type `at` (at reduced position pos) to reducer `in` through feed fd.
/// ahead > 0: x is read from memory (pass_plan::streamed), and the kernels prefetch that far
/// ahead as they read (kernels::stream_ahead).
inline void row_feed(reducer_state& st, const pass_plan::feed& fd, const instruction& in, dtype at, const void* x,
                     index_t n, index_t pos, index_t ahead, const settings& s) {
  if (fd.sum) {  // the common case, without the type and operation switches below
    if (at == dtype::f32)
      kernels::sum_with(reinterpret_cast<kernels::sum_bulk_fn<float>>(fd.bulk), st.lanes, static_cast<const float*>(x), n, ahead);
    else
      kernels::sum_with(reinterpret_cast<kernels::sum_bulk_fn<double>>(fd.bulk), st.lanes, static_cast<const double*>(x), n, ahead);
    return;
  }
  auto op = static_cast<reduce_op>(in.sub);
  with_type(at, [&](auto tag) {
    using T = decltype(tag);
    const T* v = static_cast<const T*>(x);
    if constexpr (std::is_same_v<T, bool>) {
      for (index_t j = 0; j < n; ++j) {
        if (op == reduce_op::all) st.bvalue = st.bvalue && v[j];
        else if (op == reduce_op::any) st.bvalue = st.bvalue || v[j];
        else if (op == reduce_op::sum) st.ivalue += v[j] ? 1 : 0;
      }
    } else if constexpr (std::is_floating_point_v<T>) {
      auto& ex = [&]() -> kernels::extreme_state<T>& {
        if constexpr (std::is_same_v<T, float>) return st.extreme_f;
        else return st.extreme_d;
      }();
      switch (op) {
        case reduce_op::sum: kernels::sum_accumulate<T>(st.lanes, v, n, s, ahead); break;
        case reduce_op::prod: kernels::prod_accumulate<T>(st.lanes, v, n, s); break;
        case reduce_op::max: kernels::max_accumulate<T>(ex, v, n, pos, s, false, ahead); break;
        case reduce_op::argmax: kernels::max_accumulate<T>(ex, v, n, pos, s, true, ahead); break;
        case reduce_op::min: kernels::min_accumulate<T>(ex, v, n, pos, s, false, ahead); break;
        case reduce_op::argmin: kernels::min_accumulate<T>(ex, v, n, pos, s, true, ahead); break;
        case reduce_op::logsumexp:
          if constexpr (std::is_same_v<T, float>) kernels::lse_accumulate<T>(st.lse_f, v, n, s, ahead);
          else kernels::lse_accumulate<T>(st.lse_d, v, n, s, ahead);
          break;
        case reduce_op::all: case reduce_op::any: break;  // bool operands only (compile-time rule)
      }
    } else {
      for (index_t j = 0; j < n; ++j) {
        switch (op) {
          case reduce_op::sum: st.ivalue = wrapping_add(st.ivalue, static_cast<std::int64_t>(v[j])); break;
          case reduce_op::prod: st.ivalue = wrapping_mul(st.ivalue, static_cast<std::int64_t>(v[j])); break;
          case reduce_op::max: case reduce_op::argmax: integer_extreme_step(true, v[j], pos + j, st.ivalue, st.iindex); break;
          case reduce_op::min: case reduce_op::argmin: integer_extreme_step(false, v[j], pos + j, st.ivalue, st.iindex); break;
          case reduce_op::all: case reduce_op::any: case reduce_op::logsumexp: break;  // compile-time rules
        }
      }
    }
  });
}

}  // namespace

/// Writes the result of a lanes-only float sum (plan::float_sum) to out.
inline void row_finish_sum(const reducer_state& st, const instruction& in, void* out) {
  const double v = kernels::sum_result(st.lanes);
  if (in.type == dtype::f32) *static_cast<float*>(out) = static_cast<float>(v);
  else *static_cast<double*>(out) = v;
}

/// Writes the result of any other reducer `in` (argument type at) to out; s picks logsumexp's
/// exp.
void row_finish_general(const reducer_state& st, const instruction& in, dtype at, void* out, const settings& s);

// ---- column layout ----

/// Per-group accumulator of the column walk (sizeof gives the scratch per group and reducer).
struct column_state {
  double dvalue;
  double dsum;  // logsumexp: the sum beside the running maximum in dvalue
  std::int64_t ivalue;
  index_t index;
  bool bvalue;
};

/// One reducer's accumulators for a block, as separate arrays so the loops vectorise.
struct column_accumulators {
  double* dvalue;
  double* dsum;
  std::int64_t* ivalue;
  index_t* index;
  bool* bvalue;
};

namespace {  // per position: internal linkage, see the top of this file

/// Starts the first n accumulators of a.
inline void column_start(const column_accumulators& a, reduce_op op, index_t n) {
  std::fill(a.dvalue, a.dvalue + n,
            op == reduce_op::prod ? 1.0 : op == reduce_op::logsumexp ? -std::numeric_limits<double>::infinity() : 0.0);
  std::fill(a.dsum, a.dsum + n, 0.0);
  std::fill(a.ivalue, a.ivalue + n, start_ivalue(op));
  std::fill(a.index, a.index + n, no_position);
  std::fill(a.bvalue, a.bvalue + n, start_bvalue(op));
}

/// Feeds the values x (type at; one value repeated when scalar_arg) of reduced position pos
/// to the first n accumulators of a.
inline void column_feed(const column_accumulators& a, reduce_op op, dtype at, const void* x, bool scalar_arg, index_t n,
                        index_t pos) {
  with_type(at, [&](auto tag) {
    using T = decltype(tag);
    const T* v = static_cast<const T*>(x);
    const index_t step = scalar_arg ? 0 : 1;  // a scalar argument repeats across the block
    if constexpr (std::is_same_v<T, bool>) {
      if (op == reduce_op::all) for (index_t j = 0; j < n; ++j) a.bvalue[j] = a.bvalue[j] && v[j * step];
      else if (op == reduce_op::any) for (index_t j = 0; j < n; ++j) a.bvalue[j] = a.bvalue[j] || v[j * step];
      else for (index_t j = 0; j < n; ++j) a.ivalue[j] += v[j * step] ? 1 : 0;
    } else if constexpr (std::is_floating_point_v<T>) {
      if (op == reduce_op::sum && step == 1) {
        column::add(a.dvalue, v, n);  // SIMD; same per-element result as the loop below
      } else if (op == reduce_op::sum) {
        for (index_t j = 0; j < n; ++j) a.dvalue[j] += static_cast<double>(v[0]);
      } else if (op == reduce_op::prod) {
        for (index_t j = 0; j < n; ++j) a.dvalue[j] *= static_cast<double>(v[j * step]);
      } else if (op == reduce_op::logsumexp) {
        // one lane in double following the running maximum (lse_state's headroom and partials
        // are the row kernels' speed; here every step is a scalar exp in double anyway)
        for (index_t j = 0; j < n; ++j) {
          const double x = static_cast<double>(v[j * step]), m = a.dvalue[j];
          const double mn = (m != m || x != x) ? m + x : std::max(m, x);
          if (mn != m) a.dsum[j] *= std::exp(m - mn);
          a.dsum[j] += x == mn ? 1.0 : std::exp(x - mn);
          a.dvalue[j] = mn;
        }
      } else {
        const bool is_max = is_max_like(op);
        for (index_t j = 0; j < n; ++j) {
          const double x = static_cast<double>(v[j * step]);
          if (a.index[j] >= 0 && a.dvalue[j] != a.dvalue[j]) continue;  // the first NaN stays
          if (a.index[j] < 0 || x != x || (is_max ? x > a.dvalue[j] : x < a.dvalue[j])) {
            a.dvalue[j] = x;
            a.index[j] = pos;
          }
        }
      }
    } else {
      if (op == reduce_op::sum) {
        for (index_t j = 0; j < n; ++j) a.ivalue[j] = wrapping_add(a.ivalue[j], static_cast<std::int64_t>(v[j * step]));
      } else if (op == reduce_op::prod) {
        for (index_t j = 0; j < n; ++j) a.ivalue[j] = wrapping_mul(a.ivalue[j], static_cast<std::int64_t>(v[j * step]));
      } else {
        const bool is_max = is_max_like(op);
        for (index_t j = 0; j < n; ++j) integer_extreme_step(is_max, static_cast<std::int64_t>(v[j * step]), pos, a.ivalue[j], a.index[j]);
      }
    }
  });
}

}  // namespace

/// Writes the results (type `type`; argument type at) of the first n accumulators of a to out.
void column_finish(column_accumulators a, reduce_op op, dtype at, dtype type, void* out, index_t n);

}  // namespace evaluator
}  // namespace ct::detail
