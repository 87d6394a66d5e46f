// The general path: one instruction over a tile, by operation and element type.
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "ct/core/error.hpp"
#include "src/kernels/kernels.hpp"
#include "src/expr/dtype_dispatch.hpp"
#include "src/expr/one_value.hpp"
#include "src/expr/run/interpreter.hpp"
#include "src/expr/run/narrow_io.hpp"

namespace ct::detail::evaluator {

namespace {

// Calls f(ia, ib) for i in [0, n) with index 0 for uniform operands; split so loops vectorise.
template <class F>
inline void for_pairs(bool ua, bool ub, index_t n, F&& f) {
  if (!ua && !ub) for (index_t i = 0; i < n; ++i) f(i, i, i);
  else if (ua && !ub) for (index_t i = 0; i < n; ++i) f(i, 0, i);
  else if (!ua && ub) for (index_t i = 0; i < n; ++i) f(i, i, 0);
  else for (index_t i = 0; i < n; ++i) f(i, 0, 0);
}

template <class T>
void exec(const plan& pl, int i, index_t n, void* const* ptr, const char* uni, void* out, const settings& s) {
  const instruction& in = pl.prog.code()[static_cast<std::size_t>(i)];
  auto arg = [&](int k) { return static_cast<const T*>(ptr[in.args[k]]); };
  auto u = [&](int k) { return uni[in.args[k]] != 0; };
  T* y = static_cast<T*>(out);
  switch (in.op) {
    case opcode::constant:
      if constexpr (std::is_same_v<T, bool>) y[0] = in.ivalue != 0;
      else if constexpr (std::is_floating_point_v<T>) y[0] = static_cast<T>(in.fvalue);
      else y[0] = static_cast<T>(in.ivalue);
      return;
    case opcode::unary: {
      auto op = static_cast<kernels::unary_op>(in.sub);
      if constexpr (std::is_floating_point_v<T>) {
        kernels::unary<T>(op, arg(0), y, n, n == 1 && exactly_rounded(op) ? scalar_settings(s) : s);
      } else if constexpr (!std::is_same_v<T, bool>) {
        const T* x = arg(0);
        using U = std::make_unsigned_t<T>;  // wrap-around like NumPy instead of UB
        for (index_t j = 0; j < n; ++j) {
          if (op == kernels::unary_op::neg) y[j] = static_cast<T>(U(0) - static_cast<U>(x[j]));
          else if (op == kernels::unary_op::abs) y[j] = std::is_signed_v<T> && x[j] < T(0) ? static_cast<T>(U(0) - static_cast<U>(x[j])) : x[j];
          else y[j] = static_cast<T>(static_cast<U>(x[j]) * static_cast<U>(x[j]));  // square
        }
      }
      return;
    }
    case opcode::binary: {
      auto op = static_cast<kernels::binary_op>(in.sub);
      if constexpr (std::is_floating_point_v<T>) {
        kernels::binary<T>(op, arg(0), u(0), arg(1), u(1), y, n, n == 1 && op != kernels::binary_op::pow ? scalar_settings(s) : s);
      } else if constexpr (!std::is_same_v<T, bool>) {
        const T *a = arg(0), *b = arg(1);
        using U = std::make_unsigned_t<T>;
        switch (op) {
          case kernels::binary_op::add: for_pairs(u(0), u(1), n, [&](index_t j, index_t ia, index_t ib) { y[j] = static_cast<T>(static_cast<U>(a[ia]) + static_cast<U>(b[ib])); }); break;
          case kernels::binary_op::sub: for_pairs(u(0), u(1), n, [&](index_t j, index_t ia, index_t ib) { y[j] = static_cast<T>(static_cast<U>(a[ia]) - static_cast<U>(b[ib])); }); break;
          case kernels::binary_op::mul: for_pairs(u(0), u(1), n, [&](index_t j, index_t ia, index_t ib) { y[j] = static_cast<T>(static_cast<U>(a[ia]) * static_cast<U>(b[ib])); }); break;
          case kernels::binary_op::min: for_pairs(u(0), u(1), n, [&](index_t j, index_t ia, index_t ib) { y[j] = std::min(a[ia], b[ib]); }); break;
          case kernels::binary_op::max: for_pairs(u(0), u(1), n, [&](index_t j, index_t ia, index_t ib) { y[j] = std::max(a[ia], b[ib]); }); break;
          case kernels::binary_op::div:
            for_pairs(u(0), u(1), n, [&](index_t j, index_t ia, index_t ib) {
              if (b[ib] == 0) throw error(std::string("ct::") + pl.op + ": integer division by zero in an expression of shape " + pl.prog.full_shape().str());
              if constexpr (std::is_signed_v<T>) {
                if (b[ib] == T(-1)) {  // INT_MIN / -1 wraps instead of trapping
                  y[j] = static_cast<T>(U(0) - static_cast<U>(a[ia]));
                  return;
                }
              }
              y[j] = static_cast<T>(a[ia] / b[ib]);
            });
            break;
          case kernels::binary_op::pow: break;  // rejected at compile time for integers
        }
      }
      return;
    }
    case opcode::muladd:
      if constexpr (std::is_floating_point_v<T>) kernels::muladd<T>(arg(0), u(0), arg(1), u(1), arg(2), u(2), y, n, n == 1 ? scalar_settings(s) : s);
      return;
    case opcode::where: {
      const bool* c = static_cast<const bool*>(ptr[in.args[0]]);
      const T *a = arg(1), *b = arg(2);
      bool uc = u(0), ua = u(1), ub = u(2);
      for (index_t j = 0; j < n; ++j) y[j] = c[uc ? 0 : j] ? a[ua ? 0 : j] : b[ub ? 0 : j];
      return;
    }
    case opcode::load: case opcode::compare: case opcode::logical_and: case opcode::logical_or:
    case opcode::logical_not: case opcode::cast: case opcode::round_to: case opcode::map: case opcode::reduce:
      return;  // not typed by their result: exec_op and the runners handle them
  }
}

template <class T, class Cmp>
void compare_loop(const T* a, bool ua, const T* b, bool ub, bool* y, index_t n, Cmp cmp) {
  for_pairs(ua, ub, n, [&](index_t j, index_t ia, index_t ib) { y[j] = cmp(a[ia], b[ib]); });
}

void exec_compare(const instruction& in, dtype arg_type, index_t n, void* const* ptr, const char* uni, bool* y) {
  with_type(arg_type, [&](auto tag) {
    using T = decltype(tag);
    const T* a = static_cast<const T*>(ptr[in.args[0]]);
    const T* b = static_cast<const T*>(ptr[in.args[1]]);
    bool ua = uni[in.args[0]], ub = uni[in.args[1]];
    switch (static_cast<compare_op>(in.sub)) {
      case compare_op::eq: compare_loop(a, ua, b, ub, y, n, [](T p, T q) { return p == q; }); break;
      case compare_op::ne: compare_loop(a, ua, b, ub, y, n, [](T p, T q) { return p != q; }); break;
      case compare_op::lt: compare_loop(a, ua, b, ub, y, n, [](T p, T q) { return p < q; }); break;
      case compare_op::le: compare_loop(a, ua, b, ub, y, n, [](T p, T q) { return p <= q; }); break;
      case compare_op::gt: compare_loop(a, ua, b, ub, y, n, [](T p, T q) { return p > q; }); break;
      case compare_op::ge: compare_loop(a, ua, b, ub, y, n, [](T p, T q) { return p >= q; }); break;
    }
  });
}

void exec_cast(dtype from, dtype to, const void* x, bool ux, void* y, index_t n) {
  with_type(from, [&](auto ftag) {
    using S = decltype(ftag);
    with_type(to, [&](auto ttag) {
      using D = decltype(ttag);
      const S* src = static_cast<const S*>(x);
      D* dst = static_cast<D*>(y);
      for (index_t j = 0; j < n; ++j) {
        S v = src[ux ? 0 : j];
        if constexpr (std::is_same_v<D, bool>) dst[j] = v != S(0);
        else if constexpr (std::is_integral_v<D> && std::is_floating_point_v<S>) {
          // Out-of-range and NaN conversions are UB in C++; saturate instead (NaN -> 0).
          constexpr double lo = static_cast<double>(std::numeric_limits<D>::min());
          constexpr double hi = static_cast<double>(std::numeric_limits<D>::max());
          double d = static_cast<double>(v);
          dst[j] = d != d ? D(0) : d <= lo ? std::numeric_limits<D>::min() : d >= hi ? std::numeric_limits<D>::max() : static_cast<D>(d);
        } else {
          dst[j] = static_cast<D>(v);
        }
      }
    });
  });
}

}  // namespace

void load_tile(const plan& pl, int i, const std::vector<index_t>& offsets, index_t pos, index_t n, void* out) {
  const instruction& in = pl.prog.code()[static_cast<std::size_t>(i)];
  const leaf_info& leaf = pl.prog.leaves()[static_cast<std::size_t>(in.leaf)];
  const index_t stride = pl.geo.walk.back().strides[static_cast<std::size_t>(in.leaf)];
  if (widened(leaf.type)) {
    const auto* src = static_cast<const std::uint16_t*>(leaf.data) + offsets[static_cast<std::size_t>(in.leaf)] + pos * stride;
    return widen_values(leaf.type, src, stride, static_cast<float*>(out), n, current_settings());
  }
  with_type(leaf.type, [&](auto tag) {
    using T = decltype(tag);
    const T* src = static_cast<const T*>(leaf.data) + offsets[static_cast<std::size_t>(in.leaf)] + pos * stride;
    T* dst = static_cast<T*>(out);
    if (stride == 1) std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(T));
    else if (stride == 0) std::fill(dst, dst + n, *src);
    else for (index_t j = 0; j < n; ++j) dst[j] = src[j * stride];
  });
}

void exec_op(const plan& pl, int i, index_t n, void* const* ptr, const char* uni, void* out, const settings& s) {
  const instruction& in = pl.prog.code()[static_cast<std::size_t>(i)];
  switch (in.op) {
    case opcode::compare:
      exec_compare(in, pl.prog.code()[static_cast<std::size_t>(in.args[0])].type, n, ptr, uni, static_cast<bool*>(out));
      break;
    case opcode::logical_and: case opcode::logical_or: case opcode::logical_not: {
      const bool* a = static_cast<const bool*>(ptr[in.args[0]]);
      bool* y = static_cast<bool*>(out);
      bool ua = uni[in.args[0]] != 0;
      if (in.op == opcode::logical_not) {
        for (index_t j = 0; j < n; ++j) y[j] = !a[ua ? 0 : j];
      } else {
        const bool* b = static_cast<const bool*>(ptr[in.args[1]]);
        bool ub = uni[in.args[1]] != 0;
        if (in.op == opcode::logical_and) for_pairs(ua, ub, n, [&](index_t j, index_t ia, index_t ib) { y[j] = a[ia] && b[ib]; });
        else for_pairs(ua, ub, n, [&](index_t j, index_t ia, index_t ib) { y[j] = a[ia] || b[ib]; });
      }
      break;
    }
    case opcode::cast:
      exec_cast(pl.prog.code()[static_cast<std::size_t>(in.args[0])].type, in.type, ptr[in.args[0]],
                uni[in.args[0]] != 0, out, n);
      break;
    case opcode::map: {
      const map_call& m = pl.prog.maps()[static_cast<std::size_t>(in.leaf)];
      void* args[16];
      bool flags[16];
      for (std::size_t k = 0; k < m.args.size(); ++k) {
        args[k] = ptr[m.args[k]];
        flags[k] = uni[m.args[k]] != 0;
      }
      m.fn(m.functor, args, flags, out, n);
      break;
    }
    case opcode::round_to: {
      const dtype at = pl.prog.code()[static_cast<std::size_t>(in.args[0])].type;
      const auto to = static_cast<dtype>(in.sub);
      const bool ua = uni[in.args[0]] != 0;
      float* y = static_cast<float*>(out);
      if (at == dtype::f64) {
        const double* x = static_cast<const double*>(ptr[in.args[0]]);
        for (index_t j = 0; j < n; ++j) y[j] = round_through(to, x[ua ? 0 : j]);
      } else if (ua) {
        y[0] = round_through(to, static_cast<const float*>(ptr[in.args[0]])[0]);
        for (index_t j = 1; j < n; ++j) y[j] = y[0];
      } else {  // through the conversion kernels, a piece at a time
        const float* x = static_cast<const float*>(ptr[in.args[0]]);
        std::uint16_t bits[256];
        for (index_t at = 0; at < n; at += 256) {
          const index_t len = std::min<index_t>(256, n - at);
          narrow_values(to, x + at, false, bits, 1, len, s);
          widen_values(to, bits, 1, y + at, len, s);
        }
      }
      break;
    }
    case opcode::reduce:
    case opcode::load:
      break;  // handled by the runners
    case opcode::constant: case opcode::unary: case opcode::binary: case opcode::muladd: case opcode::where:
      with_type(in.type, [&](auto tag) { exec<decltype(tag)>(pl, i, n, ptr, uni, out, s); });
      break;
  }
}

}  // namespace ct::detail::evaluator
