// Finishing reducers: once per group (row layout) or block (column layout).
#include "src/expr/run/reducers.hpp"

#include <cmath>
#include <limits>

namespace ct::detail::evaluator {

namespace {
/// logsumexp from one running maximum m and its sum s (lse_result's rules for one lane).
double column_lse_result(double m, double s) {
  if (m != m || s != s) return std::numeric_limits<double>::quiet_NaN();
  if (std::isinf(m)) return m;
  return m + std::log(s);
}
}  // namespace

void row_finish_general(const reducer_state& st, const instruction& in, dtype at, void* out, const settings& s) {
  auto op = static_cast<reduce_op>(in.sub);
  if (returns_position(op)) {
    index_t idx = at == dtype::f32 ? st.extreme_f.index : at == dtype::f64 ? st.extreme_d.index : st.iindex;
    *static_cast<std::int64_t*>(out) = idx;
    return;
  }
  if (is_logical(op)) {
    *static_cast<bool*>(out) = st.bvalue;
    return;
  }
  with_type(in.type, [&](auto tag) {
    using T = decltype(tag);
    T* y = static_cast<T*>(out);
    if constexpr (std::is_floating_point_v<T>) {
      if (op == reduce_op::logsumexp) {
        if constexpr (std::is_same_v<T, float>) *y = static_cast<T>(kernels::lse_result(st.lse_f, s));
        else *y = static_cast<T>(kernels::lse_result(st.lse_d, s));
      } else if (op == reduce_op::sum) *y = static_cast<T>(kernels::sum_result(st.lanes));
      else if (op == reduce_op::prod) *y = static_cast<T>(kernels::prod_result(st.lanes));
      else if constexpr (std::is_same_v<T, float>) *y = st.extreme_f.value;
      else *y = st.extreme_d.value;
    } else if constexpr (!std::is_same_v<T, bool>) {
      *y = static_cast<T>(st.ivalue);
    }
  });
}

void column_finish(column_accumulators a, reduce_op op, dtype at, dtype type, void* out, index_t n) {
  with_type(type, [&](auto tag) {
    using T = decltype(tag);
    T* y = static_cast<T*>(out);
    for (index_t j = 0; j < n; ++j) {
      if (returns_position(op)) y[j] = static_cast<T>(a.index[j]);
      else if (is_logical(op)) y[j] = static_cast<T>(a.bvalue[j]);
      else if (op == reduce_op::logsumexp) y[j] = static_cast<T>(column_lse_result(a.dvalue[j], a.dsum[j]));
      else if (at == dtype::f32 || at == dtype::f64) y[j] = static_cast<T>(a.dvalue[j]);
      else y[j] = static_cast<T>(a.ivalue[j]);
    }
  });
}

}  // namespace ct::detail::evaluator
