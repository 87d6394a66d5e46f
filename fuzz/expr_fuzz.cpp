// fuzz/expr_fuzz.cpp — libFuzzer target: random expression trees (docs/reliability.md).
//
// The input describes up to four float tensors — random shapes (zero extents included),
// contiguous or as views (transposed, strided, reversed, broadcast) — and a list of up to
// twelve operations over them and over earlier results (elementwise functions and operators,
// where, reductions over random axes with and without keepdims, softmax, log_softmax,
// logsumexp), shared sub-expressions included. ct builds the expression through its public
// functions and evaluates it; an interpreter written here for the fuzzer, knowing nothing of
// ct's engine, evaluates the same tree in double precision over dense arrays with its own
// broadcasting and reductions, and says which error the documented rules give, if any.
//
// Checked, for every input:
// - both reject or neither, with the same ct::error class, and a rejected call leaves the
//   destination bitwise unchanged;
// - an accepted result is within a bound the interpreter carries along with every value
//   (each operation's rounding, ct's documented 4-ulp transcendentals, and how the inputs'
//   errors propagate); values a chain of IEEE operations computes exactly (+ - * / sqrt,
//   abs, neg, min, max, where, with the FMA policy separate) must be bitwise equal to the
//   interpreter's float computation of the same chain;
// - the same evaluation under an executor that cuts the groups into uneven ranges run in
//   reverse gives the same bits.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <typeinfo>
#include <vector>

#include "ct/ct.hpp"

namespace {

using ct::dims;
using ct::index_t;

// ---- ct's side: type-erased expression nodes, so a tree can be built at run time ----------

// Holds any ct expression node of value type float; is itself one (ct's node interface:
// shape, full_shape, lower, and result_shape for a top-level reduction).
class any_expr {
 public:
  using value_type = float;
  static constexpr bool is_ct_expression = true;

  template <class N>
    requires(!std::is_same_v<std::remove_cvref_t<N>, any_expr>)
  explicit any_expr(N n) : p_(std::make_shared<holder<decltype(ct::detail::to_node(n))>>(ct::detail::to_node(n))) {}

  const dims& shape() const noexcept { return p_->shape(); }
  const dims& full_shape() const noexcept { return p_->full_shape(); }
  int lower(ct::detail::program& p) const { return p_->lower(p); }
  dims result_shape() const { return p_->result_shape(); }

 private:
  struct base {
    virtual ~base() = default;
    virtual const dims& shape() const noexcept = 0;
    virtual const dims& full_shape() const noexcept = 0;
    virtual int lower(ct::detail::program& p) const = 0;
    virtual dims result_shape() const = 0;
  };
  template <class N>
  struct holder final : base {
    explicit holder(N x) : n(std::move(x)) {}
    const dims& shape() const noexcept override { return n.shape(); }
    const dims& full_shape() const noexcept override { return n.full_shape(); }
    int lower(ct::detail::program& p) const override { return n.lower(p); }
    dims result_shape() const override { return ct::detail::result_shape(n); }
    N n;
  };
  std::shared_ptr<const base> p_;
};

// ---- the tree, as the fuzz input describes it ---------------------------------------------

enum class kind {
  leaf,
  neg, abs, square, relu, sqrt, exp, log, tanh, sigmoid, erf,  // unary
  add, sub, mul, div, maximum, minimum,                       // binary
  add_scalar, mul_scalar,                                     // x + c, x * c
  where,                                                      // where(a > b, c, d)
  sum, mean, max, min,                                        // reductions
  softmax, log_softmax, logsumexp                             // normalisations
};
constexpr int last_unary = static_cast<int>(kind::erf);
constexpr int first_binary = static_cast<int>(kind::add), last_binary = static_cast<int>(kind::minimum);

struct node_spec {
  kind k = kind::leaf;
  int kids[4] = {-1, -1, -1, -1};
  float scalar = 0;
  dims axes;  // as given (may be negative, out of range or repeated); empty: every axis
  bool keepdims = false;
};

bool is_reduction(kind k) { return k == kind::sum || k == kind::mean || k == kind::max || k == kind::min; }
bool is_norm(kind k) { return k == kind::softmax || k == kind::log_softmax || k == kind::logsumexp; }
bool is_exact_unary(kind k) {
  return k == kind::neg || k == kind::abs || k == kind::square || k == kind::relu || k == kind::sqrt;
}

// ---- the interpreter: shapes and errors by the documented rules ---------------------------

enum class err { none, shape, axis, empty };

std::optional<dims> broadcast(const dims& a, const dims& b) {
  const int r = std::max(a.size(), b.size());
  dims out = dims::filled(r, 1);
  for (int i = 0; i < r; ++i) {
    const int ia = i - (r - a.size()), ib = i - (r - b.size());
    const index_t x = ia >= 0 ? a[ia] : 1, y = ib >= 0 ? b[ib] : 1;
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[i] = x == 1 ? y : x;
  }
  return out;
}

// Axes normalised against a rank (negative ones count from the end); nullopt when one is out
// of range or repeated. An empty list means every axis.
std::optional<std::vector<int>> normalise(const dims& axes, int rank) {
  std::vector<int> out;
  if (axes.empty()) {
    for (int a = 0; a < rank; ++a) out.push_back(a);
    return out;
  }
  for (index_t a : axes) {
    const index_t n = a < 0 ? a + rank : a;
    if (n < 0 || n >= rank) return std::nullopt;
    if (std::find(out.begin(), out.end(), static_cast<int>(n)) != out.end()) return std::nullopt;
    out.push_back(static_cast<int>(n));
  }
  return out;
}

index_t count(const dims& s) {
  index_t n = 1;
  for (index_t x : s) n *= x;
  return n;
}

// The index of row-major position i of shape `out` in an array of shape `in` broadcast to it.
index_t broadcast_index(index_t i, const dims& in, const dims& out) {
  index_t src = 0, mul = 1;
  for (int a = out.size() - 1; a >= 0; --a) {
    const index_t c = i % out[a];
    i /= out[a];
    const int ai = a - (out.size() - in.size());
    if (ai >= 0) {
      if (in[ai] != 1) src += c * mul;
      mul *= in[ai];
    }
  }
  return src;
}

// One node's values over its value shape: the double-precision value, a bound on how far
// ct's float result may be from it, and — for values computed exactly by a chain of IEEE
// float operations — the float value itself, which ct must reproduce bit for bit.
struct values {
  dims shape;  // value shape (reducers keep their axes as extent 1)
  dims full;   // iteration shape (reducers keep their argument's extents)
  std::vector<double> v, e;
  std::vector<float> f;
  bool exact = false;
  std::vector<int> axes;  // reducers and normalisations: the normalised axes of the argument
};

constexpr double u = 0x1p-24;          // float's unit roundoff
constexpr double big = 1e30;           // beyond this a float chain may overflow: no bound
constexpr double tiny = 1e-36;         // absolute slack for results near the subnormal range
constexpr double transcendental = 8 * u;  // ct's documented 4 ulp, as a relative error

double finite_or_inf(double e) { return std::isnan(e) ? std::numeric_limits<double>::infinity() : e; }
// A bound, made infinite where the value itself is beyond float's comfortable range.
double bound(double e, double v) { return std::abs(v) > big || !std::isfinite(v) ? std::numeric_limits<double>::infinity() : finite_or_inf(e); }

// NaN-propagating max/min with a's NaN first and ties keeping a (ct's documented rule).
float fmax_ct(float a, float b) { return std::isnan(a) ? a : std::isnan(b) ? b : (b > a ? b : a); }
float fmin_ct(float a, float b) { return std::isnan(a) ? a : std::isnan(b) ? b : (b < a ? b : a); }

struct interpreter {
  const std::vector<node_spec>& spec;
  const std::vector<ct::tensor<float>>& leaves;
  bool fused;  // the FMA policy: a*b+c may be contracted
  std::vector<values> val;
  err error = err::none;

  // Shapes and construction errors, node by node, as ct's functions raise them while the tree
  // is built. Returns false at the first error.
  bool shapes() {
    val.resize(spec.size());
    for (std::size_t i = 0; i < spec.size(); ++i) {
      const node_spec& s = spec[i];
      values& out = val[i];
      const auto kid = [&](int j) -> values& { return val[static_cast<std::size_t>(s.kids[j])]; };
      if (s.k == kind::leaf) {
        out.shape = out.full = leaves[static_cast<std::size_t>(s.kids[0])].shape();
      } else if (static_cast<int>(s.k) <= last_unary || s.k == kind::add_scalar || s.k == kind::mul_scalar) {
        out.shape = kid(0).shape;
        out.full = kid(0).full;
      } else if (static_cast<int>(s.k) <= last_binary || s.k == kind::where) {
        const int n = s.k == kind::where ? 4 : 2;
        // where(a > b, c, d): the comparison is built first, then where over it, c and d.
        std::optional<dims> sh = kid(0).shape, fu = kid(0).full;
        for (int j = 1; j < n && sh && fu; ++j) {
          sh = broadcast(*sh, kid(j).shape);
          if (sh) fu = broadcast(*fu, kid(j).full);
        }
        if (!sh || !fu) return fail(err::shape);
        out.shape = *sh;
        out.full = *fu;
      } else {
        const values& a = kid(0);
        std::optional<std::vector<int>> ax;
        if (is_reduction(s.k) || s.k == kind::logsumexp) {
          ax = normalise(s.axes, a.shape.size());
        } else {  // softmax, log_softmax: one axis of a tensor of rank >= 1
          if (a.shape.size() > 0) ax = normalise(s.axes, a.shape.size());
        }
        if (!ax) return fail(err::axis);
        out.axes = *ax;
        out.full = a.full;
        out.shape = a.shape;
        if (s.k != kind::softmax && s.k != kind::log_softmax)
          for (int x : out.axes) out.shape[x] = 1;
      }
    }
    return true;
  }

  bool fail(err e) {
    error = e;
    return false;
  }

  // The shape ct::eval gives the root: a top-level reduction drops its axes unless keepdims.
  dims result_of(int root) const {
    const node_spec& rs = spec[static_cast<std::size_t>(root)];
    const values& rv = val[static_cast<std::size_t>(root)];
    if (!(is_reduction(rs.k) || rs.k == kind::logsumexp) || rs.keepdims) return rv.shape;
    dims result;
    for (int a = 0; a < rv.shape.size(); ++a)
      if (std::find(rv.axes.begin(), rv.axes.end(), a) == rv.axes.end()) result.push_back(rv.shape[a]);
    return result;
  }

  // The checks of one evaluation of root into a destination of shape dest_shape, in the order
  // ct's eval makes them: the destination's shape; then the reducers, in the order the tree
  // lowers (children left to right, a reducer after its argument): a reduced axis must not be
  // broadcast to another extent in the expression, and all reducers reduce the same axes of
  // the expression's shape; then a max or min over nothing, when the result has values (the
  // max is then part of it).
  bool evaluation(int root, const dims& dest_shape) {
    const dims result = result_of(root);
    if (dest_shape != result) return fail(err::shape);
    const values& rv = val[static_cast<std::size_t>(root)];
    const dims& full = rv.full;
    std::optional<std::uint32_t> mask;
    bool extreme = false;  // a max or min (softmax & co. hold a max)
    bool ok = true;
    const auto visit = [&](auto& self, int i) -> void {
      if (!ok) return;
      const node_spec& s = spec[static_cast<std::size_t>(i)];
      const int n = s.k == kind::leaf ? 0 : s.k == kind::where ? 4 : (static_cast<int>(s.k) >= first_binary && static_cast<int>(s.k) <= last_binary) ? 2 : 1;
      for (int j = 0; j < n; ++j) self(self, s.kids[j]);
      if (!ok || !(is_reduction(s.k) || is_norm(s.k))) return;
      const values& a = val[static_cast<std::size_t>(s.kids[0])];
      const int lead = full.size() - a.shape.size();
      std::uint32_t m = 0;
      for (int x : val[static_cast<std::size_t>(i)].axes) {
        if (a.shape[x] != full[lead + x]) {
          ok = fail(err::shape);
          return;
        }
        m |= 1u << (lead + x);
      }
      if (mask && *mask != m) {
        ok = fail(err::axis);
        return;
      }
      mask = m;
      extreme = extreme || s.k == kind::max || s.k == kind::min || is_norm(s.k);
    };
    visit(visit, root);
    if (!ok) return false;
    if (mask && extreme && count(result) > 0) {
      index_t reduced = 1;
      for (int a = 0; a < full.size(); ++a)
        if (*mask & (1u << a)) reduced *= full[a];
      if (reduced == 0) return fail(err::empty);
    }
    return true;
  }

  // ---- values ----
  void compute() {
    for (std::size_t i = 0; i < spec.size(); ++i) compute_node(i);
  }

  void compute_node(std::size_t i) {
    const node_spec& s = spec[i];
    values& out = val[i];
    const index_t n = count(out.shape);
    out.v.assign(static_cast<std::size_t>(n), 0);
    out.e.assign(static_cast<std::size_t>(n), 0);
    out.f.assign(static_cast<std::size_t>(n), 0);
    const auto kid = [&](int j) -> const values& { return val[static_cast<std::size_t>(s.kids[j])]; };
    const auto at = [&](const values& x, index_t p) { return static_cast<std::size_t>(broadcast_index(p, x.shape, out.shape)); };
    const int k = static_cast<int>(s.k);
    if (s.k == kind::leaf) {
      const ct::tensor<float>& t = leaves[static_cast<std::size_t>(s.kids[0])];
      for (index_t p = 0; p < n; ++p) {
        index_t off = 0, q = p;
        for (int a = t.shape().size() - 1; a >= 0; --a) {
          off += (q % t.shape()[a]) * t.strides()[a];
          q /= t.shape()[a];
        }
        out.f[static_cast<std::size_t>(p)] = t.data()[off];
        out.v[static_cast<std::size_t>(p)] = t.data()[off];
      }
      out.exact = true;
      return;
    }
    if (k <= last_unary || s.k == kind::add_scalar || s.k == kind::mul_scalar) {
      const values& a = kid(0);
      out.exact = a.exact && (is_exact_unary(s.k) || s.k == kind::add_scalar || s.k == kind::mul_scalar);
      for (index_t p = 0; p < n; ++p) {
        const auto j = static_cast<std::size_t>(p);
        const double x = a.v[j], ex = a.e[j];
        const float fx = a.f[j];
        const float c = s.scalar;
        double r = 0, er = 0;
        float fr = 0;
        switch (s.k) {
          case kind::neg: r = -x; er = ex; fr = -fx; break;
          case kind::abs: r = std::abs(x); er = ex; fr = std::abs(fx); break;
          case kind::square: r = x * x; er = 2 * std::abs(x) * ex + ex * ex + u * r; fr = fx * fx; break;
          case kind::relu:  // x > 0 ? x : +0, NaN kept (docs/kernels.md: relu(-0) = +0)
            r = std::max(x, 0.0);
            er = ex;
            fr = std::isnan(fx) ? fx : fx > 0 ? fx : 0.0f;
            break;
          case kind::sqrt: {  // the generator applies it to abs(y) + c, c >= 0.25
            r = std::sqrt(x);
            const double lo = std::max(x - ex, 0.0);
            er = (std::sqrt(x + ex) - std::sqrt(lo)) + u * r;
            fr = std::sqrt(fx);
            break;
          }
          case kind::exp: r = std::exp(x); er = r * std::expm1(ex) + transcendental * r + tiny; break;
          case kind::log: {  // the generator applies it to abs(y) + 1
            r = std::log(x);
            er = (x - ex > 0 ? std::log(x) - std::log(x - ex) : std::numeric_limits<double>::infinity()) +
                 transcendental * std::abs(r) + tiny;
            break;
          }
          case kind::tanh: r = std::tanh(x); er = ex + transcendental * std::abs(r) + tiny; break;
          case kind::sigmoid: r = 1 / (1 + std::exp(-x)); er = 0.25 * ex + transcendental * r + tiny; break;
          case kind::erf: r = std::erf(x); er = 1.1284 * ex + transcendental * std::abs(r) + tiny; break;
          case kind::add_scalar: r = x + c; er = ex + u * std::abs(r); fr = fx + c; break;
          case kind::mul_scalar: r = x * c; er = ex * std::abs(c) + u * std::abs(r); fr = fx * c; break;
          default: break;
        }
        set(out, j, r, er, fr);
      }
      return;
    }
    if (k <= last_binary) {
      const values& a = kid(0);
      const values& b = kid(1);
      // Under the fused policy ct may contract a*b+c (either side of + or -) into one FMA.
      const auto is_mul = [&](int j) {
        const kind kk = spec[static_cast<std::size_t>(s.kids[j])].k;
        return kk == kind::mul || kk == kind::mul_scalar || kk == kind::square;
      };
      const bool contractible = fused && (s.k == kind::add || s.k == kind::sub) && (is_mul(0) || is_mul(1));
      out.exact = a.exact && b.exact && !contractible;
      for (index_t p = 0; p < n; ++p) {
        const auto j = static_cast<std::size_t>(p);
        const std::size_t ia = at(a, p), ib = at(b, p);
        const double x = a.v[ia], y = b.v[ib], ex = a.e[ia], ey = b.e[ib];
        const float fx = a.f[ia], fy = b.f[ib];
        double r = 0, er = 0;
        float fr = 0;
        switch (s.k) {
          case kind::add: r = x + y; er = ex + ey + u * std::abs(r); fr = fx + fy; break;
          case kind::sub: r = x - y; er = ex + ey + u * std::abs(r); fr = fx - fy; break;
          case kind::mul: r = x * y; er = ex * std::abs(y) + ey * std::abs(x) + ex * ey + u * std::abs(r); fr = fx * fy; break;
          case kind::div:  // the generator divides by abs(y) + 1
            r = x / y;
            er = (y - ey > 0 ? (ex + std::abs(r) * ey) / (y - ey) : std::numeric_limits<double>::infinity()) + u * std::abs(r);
            fr = fx / fy;
            break;
          case kind::maximum: r = std::max(x, y); er = std::max(ex, ey); fr = fmax_ct(fx, fy); break;
          case kind::minimum: r = std::min(x, y); er = std::max(ex, ey); fr = fmin_ct(fx, fy); break;
          default: break;
        }
        set(out, j, r, er, fr);
      }
      return;
    }
    if (s.k == kind::where) {
      const values& a = kid(0);
      const values& b = kid(1);
      const values& c = kid(2);
      const values& d = kid(3);
      out.exact = a.exact && b.exact && c.exact && d.exact;
      for (index_t p = 0; p < n; ++p) {
        const auto j = static_cast<std::size_t>(p);
        const std::size_t ia = at(a, p), ib = at(b, p), ic = at(c, p), id = at(d, p);
        double r, er;
        float fr;
        if (a.exact && b.exact) {  // the comparison ct makes, exactly
          const bool cond = a.f[ia] > b.f[ib];
          r = cond ? c.v[ic] : d.v[id];
          er = cond ? c.e[ic] : d.e[id];
          fr = cond ? c.f[ic] : d.f[id];
        } else {
          const bool cond = a.v[ia] > b.v[ib];
          r = cond ? c.v[ic] : d.v[id];
          er = cond ? c.e[ic] : d.e[id];
          fr = 0;
          // Too close to call: ct may take the other branch.
          if (std::abs(a.v[ia] - b.v[ib]) <= a.e[ia] + b.e[ib] || !std::isfinite(a.e[ia] + b.e[ib]))
            er = std::max(c.e[ic], d.e[id]) + std::abs(c.v[ic] - d.v[id]);
        }
        set(out, j, r, er, fr);
      }
      return;
    }
    reduce_node(s, out, kid(0));
  }

  // An exactly computed value is what ct computes, bit for bit (checked): downstream bounds
  // start from it with no error.
  static void set(values& out, std::size_t j, double r, double er, float fr) {
    if (out.exact) {
      out.v[j] = fr;
      out.e[j] = bound(0, fr);
    } else {
      out.v[j] = r;
      out.e[j] = bound(er, r);
    }
    out.f[j] = fr;
  }

  // Reductions and normalisations: the argument's positions grouped by their coordinates on
  // the axes not reduced.
  void reduce_node(const node_spec& s, values& out, const values& a) {
    out.exact = false;
    const dims& as = a.shape;
    dims gshape = as;
    for (int x : out.axes) gshape[x] = 1;
    const index_t na = count(as), ng = count(gshape);
    std::vector<index_t> group(static_cast<std::size_t>(na));
    for (index_t p = 0; p < na; ++p) {
      index_t q = p, g = 0, mul = 1;
      for (int ax = as.size() - 1; ax >= 0; --ax) {
        const index_t c = q % as[ax];
        q /= as[ax];
        if (gshape[ax] != 1) g += c * mul;  // reduced axes (extent 1 here) do not count
        mul *= gshape[ax];
      }
      group[static_cast<std::size_t>(p)] = g;
    }
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    std::vector<double> mx(static_cast<std::size_t>(ng), -inf), mn(static_cast<std::size_t>(ng), inf);
    std::vector<double> emax(static_cast<std::size_t>(ng), 0), sum(static_cast<std::size_t>(ng), 0),
        asum(static_cast<std::size_t>(ng), 0), esum(static_cast<std::size_t>(ng), 0);
    std::vector<index_t> cnt(static_cast<std::size_t>(ng), 0);
    std::vector<bool> has_nan(static_cast<std::size_t>(ng), false);
    for (index_t p = 0; p < na; ++p) {
      const auto g = static_cast<std::size_t>(group[static_cast<std::size_t>(p)]);
      const double x = a.v[static_cast<std::size_t>(p)], ex = a.e[static_cast<std::size_t>(p)];
      if (std::isnan(x)) has_nan[g] = true;
      mx[g] = std::max(mx[g], x);
      mn[g] = std::min(mn[g], x);
      emax[g] = std::max(emax[g], ex);
      sum[g] += x;
      asum[g] += std::abs(x) + ex;
      esum[g] += ex;
      ++cnt[g];
    }
    const auto gamma = [](index_t k) { return static_cast<double>(k) * u / (1 - static_cast<double>(k) * u); };
    if (is_reduction(s.k) || s.k == kind::logsumexp) {
      // Group g is the value at position g of the keep-dims shape (the same row-major order).
      for (index_t g = 0; g < ng; ++g) {
        const auto j = static_cast<std::size_t>(g);
        const auto c = cnt[j];
        double r = 0, er = 0;
        switch (s.k) {
          case kind::sum: r = sum[j]; er = esum[j] + gamma(c) * asum[j]; break;
          case kind::mean:
            r = c == 0 ? nan : sum[j] / static_cast<double>(c);
            er = c == 0 ? 0 : (esum[j] + gamma(c) * asum[j]) / static_cast<double>(c) + 2 * u * std::abs(r);
            break;
          case kind::max: r = has_nan[j] ? nan : mx[j]; er = emax[j]; break;
          case kind::min: r = has_nan[j] ? nan : mn[j]; er = emax[j]; break;
          default: {  // logsumexp: m + log(sum(exp(x - m))), m the maximum (0 when infinite)
            const double m = std::isfinite(mx[j]) ? mx[j] : 0.0;
            double se = 0, dev = 0;
            for (index_t p = 0; p < na; ++p)
              if (group[static_cast<std::size_t>(p)] == g) {
                se += std::exp(a.v[static_cast<std::size_t>(p)] - m);
                dev = std::max(dev, std::abs(a.v[static_cast<std::size_t>(p)] - m));
              }
            r = has_nan[j] ? nan : std::log(se) + m;
            // d lse / d x_j = softmax_j: the inputs' errors add at most their maximum; then the
            // rounding of x - m, of each exp, of the sum, of the log and of the final add.
            er = emax[j] + 2 * u * dev + gamma(c + 1) + transcendental * (1 + std::abs(std::log(se))) +
                 u * (std::abs(m) + std::abs(r)) + tiny;
            break;
          }
        }
        if (c == 0 && s.k == kind::sum) r = 0, er = 0;
        set(out, j, r, er, 0);
      }
      return;
    }
    // softmax and log_softmax: values at the argument's positions.
    std::vector<double> se(static_cast<std::size_t>(ng), 0), dev(static_cast<std::size_t>(ng), 0);
    for (index_t p = 0; p < na; ++p) {
      const auto g = static_cast<std::size_t>(group[static_cast<std::size_t>(p)]);
      se[g] += std::exp(a.v[static_cast<std::size_t>(p)] - mx[g]);
      dev[g] = std::max(dev[g], std::abs(a.v[static_cast<std::size_t>(p)] - mx[g]));
    }
    for (index_t p = 0; p < na; ++p) {
      const auto j = static_cast<std::size_t>(p);
      const auto g = static_cast<std::size_t>(group[j]);
      const double d = a.v[j] - mx[g];
      double r, er;
      if (s.k == kind::softmax) {
        r = std::exp(d) / se[g];
        // d s_i = s_i (d x_i - sum_j s_j d x_j): at most 2 s_i max|dx|; rounding of x - m, exp,
        // the sum and the division, each relative to s_i.
        er = r * (2 * emax[g] + 4 * u * dev[g] + gamma(cnt[g] + 2) + 2 * transcendental) + tiny;
      } else {
        const double lse = std::log(se[g]);
        r = d - lse;
        er = a.e[j] + emax[g] + 2 * u * dev[g] + gamma(cnt[g] + 1) + transcendental * (1 + std::abs(lse)) +
             u * (std::abs(d) + std::abs(r)) + tiny;
      }
      if (has_nan[g]) r = nan;
      set(out, j, r, er, 0);
    }
  }
};

// ---- the input ----------------------------------------------------------------------------

constexpr index_t extents[] = {1, 2, 3, 4, 5, 7, 8, 16, 17, 33, 64, 130, 257, 0};

// A tensor of `shape` holding quarter steps in [-4, 4] (exact in float, many ties), laid out
// as the input asks: contiguous, transposed, every other element, reversed, or broadcast.
ct::tensor<float> make_leaf(FuzzedDataProvider& in, const dims& shape) {
  const int layout = in.ConsumeIntegralInRange(0, 4);
  std::mt19937 rng(in.ConsumeIntegral<std::uint32_t>());
  const int spread = in.ConsumeBool() ? 2 : 16;  // few distinct values: ties
  const auto fill = [&](const ct::tensor<float>& t) {
    float* p = t.data();
    for (index_t i = 0; i < t.size(); ++i)
      p[i] = static_cast<float>(static_cast<int>(rng() % static_cast<unsigned>(2 * spread + 1)) - spread) * (8.0f / static_cast<float>(4 * spread));
  };
  const int r = shape.size();
  if (layout == 1 && r >= 2) {
    dims rev = shape;
    std::reverse(rev.begin(), rev.end());
    ct::tensor<float> base(rev);
    fill(base);
    return base.transpose();
  }
  if (layout == 2 && r >= 1) {
    dims wide = shape;
    wide[r - 1] = 2 * shape[r - 1];
    ct::tensor<float> base(wide);
    fill(base);
    return base.slice(r - 1, 0, std::nullopt, 2);
  }
  if (layout == 3 && r >= 1) {
    ct::tensor<float> base(shape);
    fill(base);
    return base.slice(0, std::nullopt, std::nullopt, -1);
  }
  if (layout == 4 && r >= 1) {
    dims src = shape;
    const int a = in.ConsumeIntegralInRange(0, r - 1);
    if (src[a] > 1) src[a] = 1;
    ct::tensor<float> base(src);
    fill(base);
    return base.broadcast_to(shape);
  }
  ct::tensor<float> t(shape);
  fill(t);
  return t;
}

// The shape of one leaf: the expression's base shape with some leading axes dropped and some
// extents 1 (broadcasting), or now and then another extent (likely a shape error).
dims leaf_shape(FuzzedDataProvider& in, const dims& base) {
  const int drop = in.ConsumeIntegralInRange(0, 3) == 0 ? in.ConsumeIntegralInRange(0, base.size()) : 0;
  dims s;
  for (int a = drop; a < base.size(); ++a) {
    const int c = in.ConsumeIntegralInRange(0, 9);
    s.push_back(c == 0 ? 1 : c == 1 ? extents[in.ConsumeIntegralInRange(0, 12)] : base[a]);
  }
  return s;
}

bool same(float a, float b) { return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0; }

// Element i (row-major) of a tensor or view.
float element(const ct::tensor<float>& t, index_t i) {
  index_t off = 0;
  for (int a = t.shape().size() - 1; a >= 0; --a) {
    off += (i % t.shape()[a]) * t.strides()[a];
    i /= t.shape()[a];
  }
  return t.data()[off];
}

err classify(const ct::error& e) {
  if (dynamic_cast<const ct::empty_reduction_error*>(&e)) return err::empty;
  if (dynamic_cast<const ct::axis_error*>(&e)) return err::axis;
  if (dynamic_cast<const ct::shape_error*>(&e)) return err::shape;
  return err::none;  // another ct::error: never expected here
}

const char* const kind_names[] = {"leaf", "neg", "abs", "square", "relu", "sqrt", "exp", "log", "tanh", "sigmoid",
                                   "erf", "add", "sub", "mul", "div", "maximum", "minimum", "add_scalar", "mul_scalar",
                                   "where", "sum", "mean", "max", "min", "softmax", "log_softmax", "logsumexp"};

// CT_FUZZ_VERBOSE=1 prints each input's tree (for replaying a crash input).
void describe(const std::vector<node_spec>& spec, const std::vector<ct::tensor<float>>& leaves, bool fused,
              const ct::tensor<float>& dest) {
  if (std::getenv("CT_FUZZ_VERBOSE") == nullptr) return;
  std::fprintf(stderr, "fma %s; destination %s strides %s\n", fused ? "fused" : "separate", dest.shape().str().c_str(),
               dest.strides().str().c_str());
  for (std::size_t i = 0; i < spec.size(); ++i) {
    const node_spec& s = spec[i];
    std::fprintf(stderr, "  %zu: %s", i, kind_names[static_cast<int>(s.k)]);
    if (s.k == kind::leaf) {
      const auto& t = leaves[static_cast<std::size_t>(s.kids[0])];
      std::fprintf(stderr, " shape %s strides %s", t.shape().str().c_str(), t.strides().str().c_str());
    } else {
      for (int k : s.kids)
        if (k >= 0) std::fprintf(stderr, " %d", k);
      if (s.k == kind::add_scalar || s.k == kind::mul_scalar) std::fprintf(stderr, " c=%g", static_cast<double>(s.scalar));
      if (is_reduction(s.k) || is_norm(s.k)) std::fprintf(stderr, " axes %s%s", s.axes.str().c_str(), s.keepdims ? " keepdims" : "");
    }
    std::fprintf(stderr, "\n");
  }
}

[[noreturn]] void defect(const char* what) {
  std::fprintf(stderr, "expr_fuzz: %s\n", what);
  __builtin_trap();
}

// Builds node i of the spec with ct's public functions.
any_expr build(const node_spec& s, const std::vector<any_expr>& built, const std::vector<ct::tensor<float>>& leaves) {
  using namespace ct;
  const auto kid = [&](int j) -> const any_expr& { return built[static_cast<std::size_t>(s.kids[j])]; };
  switch (s.k) {
    case kind::leaf: return any_expr(leaves[static_cast<std::size_t>(s.kids[0])]);
    case kind::neg: return any_expr(-kid(0));
    case kind::abs: return any_expr(ct::abs(kid(0)));
    case kind::square: return any_expr(ct::square(kid(0)));
    case kind::relu: return any_expr(ct::relu(kid(0)));
    case kind::sqrt: return any_expr(ct::sqrt(kid(0)));
    case kind::exp: return any_expr(ct::exp(kid(0)));
    case kind::log: return any_expr(ct::log(kid(0)));
    case kind::tanh: return any_expr(ct::tanh(kid(0)));
    case kind::sigmoid: return any_expr(ct::sigmoid(kid(0)));
    case kind::erf: return any_expr(ct::erf(kid(0)));
    case kind::add: return any_expr(kid(0) + kid(1));
    case kind::sub: return any_expr(kid(0) - kid(1));
    case kind::mul: return any_expr(kid(0) * kid(1));
    case kind::div: return any_expr(kid(0) / kid(1));
    case kind::maximum: return any_expr(ct::maximum(kid(0), kid(1)));
    case kind::minimum: return any_expr(ct::minimum(kid(0), kid(1)));
    case kind::add_scalar: return any_expr(kid(0) + s.scalar);
    case kind::mul_scalar: return any_expr(kid(0) * s.scalar);
    case kind::where: return any_expr(ct::where(kid(0) > kid(1), kid(2), kid(3)));
    case kind::sum: return any_expr(ct::sum(kid(0), s.axes, s.keepdims));
    case kind::mean: return any_expr(ct::mean(kid(0), s.axes, s.keepdims));
    case kind::max: return any_expr(ct::max(kid(0), s.axes, s.keepdims));
    case kind::min: return any_expr(ct::min(kid(0), s.axes, s.keepdims));
    case kind::softmax: return any_expr(ct::softmax(kid(0), static_cast<int>(s.axes[0])));
    case kind::log_softmax: return any_expr(ct::log_softmax(kid(0), static_cast<int>(s.axes[0])));
    case kind::logsumexp: return any_expr(ct::logsumexp(kid(0), s.axes, s.keepdims));
  }
  defect("unknown node kind");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const bool fused = in.ConsumeBool();
  ct::fma_scope fma(fused ? ct::fma_policy::fused : ct::fma_policy::separate);

  // The base shape: rank 0 to 3, at most 4096 positions.
  const int rank = in.ConsumeIntegralInRange(0, 3);
  dims base;
  for (int a = 0; a < rank; ++a) base.push_back(extents[in.ConsumeIntegralInRange(0, 13)]);
  while (count(base) > 4096) base[static_cast<int>(std::max_element(base.begin(), base.end()) - base.begin())] /= 2;
  // The reduced axes most reducers use (counted from the end, so they fit operands of lower
  // rank too); the others pick their own, which may break the one-set-of-axes rule.
  const index_t usual_axis = rank == 0 ? 0 : -1 - in.ConsumeIntegralInRange(0, rank - 1);

  std::vector<ct::tensor<float>> leaves;
  std::vector<node_spec> spec;
  const int nleaves = in.ConsumeIntegralInRange(1, 4);
  for (int i = 0; i < nleaves; ++i) {
    dims shape = leaf_shape(in, base);
    // (another extent may make a leaf large: at most 4096 elements, like the base shape)
    while (count(shape) > 4096) shape[static_cast<int>(std::max_element(shape.begin(), shape.end()) - shape.begin())] /= 2;
    leaves.push_back(make_leaf(in, shape));
    node_spec s;
    s.kids[0] = i;
    spec.push_back(s);
  }
  // Operations; each child is a recent node more often than an old one (deeper trees), and
  // the inputs of the safe forms are built too: sqrt(abs(y) + c), log(abs(y) + 1), x / (abs(y) + 1).
  const auto pick = [&]() {
    const int n = static_cast<int>(spec.size());
    return in.ConsumeBool() ? n - 1 : in.ConsumeIntegralInRange(0, n - 1);
  };
  // ct's nodes hold their children by value, so a shared sub-expression is a copy and the
  // tree ct lowers is the expanded one (x + x, nested twelve times, lowers 4096 leaves): the
  // expanded size stays under 256 nodes, a child that would pass it is replaced by a leaf.
  // The normalisations hold their argument up to four times (softmax: twice in each exp(x -
  // max(x))); logsumexp, once a composite holding it five times, is one reducer now. They
  // all still count it five times: a bound, and the corpus keeps generating the same trees.
  std::vector<int> expanded(static_cast<std::size_t>(nleaves), 1);
  const auto add = [&](node_spec s) {
    const int copies = is_norm(s.k) ? 5 : 1;
    int size = 1;
    for (int& k : s.kids)
      if (s.k != kind::leaf && k >= 0) {
        if (size + copies * expanded[static_cast<std::size_t>(k)] > 256) k %= nleaves;
        size += copies * expanded[static_cast<std::size_t>(k)];
      }
    spec.push_back(std::move(s));
    expanded.push_back(size);
    return static_cast<int>(spec.size()) - 1;
  };
  const auto shifted_abs = [&](int x, float c) {
    node_spec a;
    a.k = kind::abs;
    a.kids[0] = x;
    node_spec p;
    p.k = kind::add_scalar;
    p.kids[0] = add(a);
    p.scalar = c;
    return add(p);
  };
  const int nops = in.ConsumeIntegralInRange(1, 12);
  for (int i = 0; i < nops && in.remaining_bytes() > 0; ++i) {
    node_spec s;
    const int choice = in.ConsumeIntegralInRange(0, static_cast<int>(kind::logsumexp));
    s.k = static_cast<kind>(choice == 0 ? static_cast<int>(kind::add) : choice);
    const int c = static_cast<int>(s.k);
    if (c <= last_unary) {
      s.kids[0] = pick();
      if (s.k == kind::sqrt) s.kids[0] = shifted_abs(s.kids[0], in.ConsumeBool() ? 0.25f : 1.0f);
      if (s.k == kind::log) s.kids[0] = shifted_abs(s.kids[0], 1.0f);
    } else if (c <= last_binary) {
      s.kids[0] = pick();
      s.kids[1] = pick();
      if (s.k == kind::div) s.kids[1] = shifted_abs(s.kids[1], 1.0f);
    } else if (s.k == kind::add_scalar || s.k == kind::mul_scalar) {
      s.kids[0] = pick();
      s.scalar = static_cast<float>(in.ConsumeIntegralInRange(-8, 8)) * 0.25f;
    } else if (s.k == kind::where) {
      for (int& k : s.kids) k = pick();
    } else {
      s.kids[0] = pick();
      s.keepdims = in.ConsumeBool();
      const int how = in.ConsumeIntegralInRange(0, 7);
      if (s.k == kind::softmax || s.k == kind::log_softmax) {
        s.axes = dims{how < 6 ? usual_axis : static_cast<index_t>(in.ConsumeIntegralInRange(-4, 3))};
      } else if (how < 5) {
        s.axes = dims{usual_axis};
      } else if (how == 5) {
        s.axes = dims{};  // every axis
      } else {
        const int n = in.ConsumeIntegralInRange(1, 3);
        for (int j = 0; j < n; ++j) s.axes.push_back(in.ConsumeIntegralInRange(-4, 3));
      }
    }
    add(s);
  }
  const int root = static_cast<int>(spec.size()) - 1;

  interpreter ref{spec, leaves, fused, {}};
  bool valid = ref.shapes();
  // The destination: the result's shape (as the interpreter sees it), sometimes another one.
  const int dest_kind = in.ConsumeIntegralInRange(0, 9);
  dims dest_shape = valid ? ref.result_of(root) : dims{};
  if (dest_kind == 0) dest_shape.push_back(2);
  if (valid) valid = ref.evaluation(root, dest_shape);
  const dims result = dest_shape;
  // A transposed destination now and then: ct writes any strided view.
  ct::tensor<float> dest;
  if (dest_kind == 1 && dest_shape.size() >= 2) {
    dims rev = dest_shape;
    std::reverse(rev.begin(), rev.end());
    dest = ct::tensor<float>(rev).transpose();
  } else {
    dest = ct::tensor<float>(dest_shape);
  }
  for (index_t i = 0; i < dest.size(); ++i) dest.data()[i] = -1234.5f;  // (contiguous storage either way)
  const ct::tensor<float> before = dest.clone();

  describe(spec, leaves, fused, dest);
  // ct: build, then evaluate serially.
  err got = err::none;
  std::vector<any_expr> built;
  try {
    for (const node_spec& s : spec) built.push_back(build(s, built, leaves));
    ct::eval(built.back(), dest);
  } catch (const ct::error& e) {
    got = classify(e);
    if (got == err::none) defect("a ct::error of an unexpected class");
  }
  if (!valid || got != err::none) {
    if (valid) defect("ct rejected an expression the rules accept");
    if (got == err::none) defect("ct accepted an expression the rules reject");
    if (got != ref.error) defect("ct raised another error class than the rules give");
    for (index_t i = 0; i < dest.size(); ++i)
      if (!same(element(dest, i), element(before, i))) defect("a rejected evaluation changed its destination");
    return 0;
  }

  // The values, within their bounds; exact chains bit for bit.
  ref.compute();
  const values& rv = ref.val[static_cast<std::size_t>(root)];
  if (count(result) != static_cast<index_t>(rv.v.size())) defect("interpreter: result size");
  for (index_t i = 0; i < count(result); ++i) {
    const auto j = static_cast<std::size_t>(i);
    const float got_v = element(dest, i);
    if (rv.exact) {
      if (!same(got_v, rv.f[j])) {
        std::fprintf(stderr, "element %lld: ct %a, exact %a\n", static_cast<long long>(i), static_cast<double>(got_v), static_cast<double>(rv.f[j]));
        defect("an exactly computed value differs");
      }
      continue;
    }
    const double want = rv.v[j], tol = 2 * rv.e[j] + 4 * u * std::abs(want) + tiny;
    if (std::isnan(want)) {
      if (!std::isnan(got_v) && std::isfinite(rv.e[j])) defect("NaN expected");
      continue;
    }
    if (!std::isfinite(tol)) continue;
    if (!(std::abs(static_cast<double>(got_v) - want) <= tol)) {
      std::fprintf(stderr, "element %lld: ct %.9g, reference %.17g, bound %.3g\n", static_cast<long long>(i),
                   static_cast<double>(got_v), want, tol);
      defect("a value is outside its error bound");
    }
  }

  // The same bits under an executor: uneven ranges, run last to first.
  const int pieces = in.ConsumeIntegralInRange(1, 5);
  ct::executor uneven = [pieces](index_t n, ct::range_callback cb) {
    std::vector<std::pair<index_t, index_t>> r;
    index_t at = 0;
    for (int k = 0; k < pieces && at < n; ++k) {
      const index_t len = k + 1 == pieces ? n - at : std::max<index_t>(1, (n - at) / (pieces - k + 1));
      r.emplace_back(at, at + len);
      at += len;
    }
    if (at < n) r.emplace_back(at, n);
    for (auto it = r.rbegin(); it != r.rend(); ++it) cb(it->first, it->second);
  };
  ct::tensor<float> again(dest.shape());
  {
    ct::executor_scope scope(uneven);
    ct::eval(built.back(), again);
  }
  for (index_t i = 0; i < again.size(); ++i)
    if (!same(element(again, i), element(dest, i))) defect("an executor changed the result's bits");
  return 0;
}
