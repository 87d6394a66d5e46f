// ct/ops/matmul.hpp — matrix products with NumPy's matmul semantics, and ct::dot.
//
//   ct::tensor<T> ct::matmul(a, b)        a new row-major tensor holding a @ b
//   void          ct::matmul(a, b, out)   writes a @ b into an existing tensor or view
//   T             ct::dot(x, y)           the scalar product of two vectors
//
// T is float, double, int32 or int64, the same for every operand (mixing element types
// does not compile). Shapes follow numpy.matmul: a 1-D left operand is a row vector and a
// 1-D right operand a column vector (the added axis is dropped from the result), operands of
// rank > 2 are stacks of matrices whose leading (batch) axes broadcast against each other.
// Operands and destination may be any strided view (transposed, sliced, wrapped).
//
// Scheduling (docs/matmul.md, CONTRACT §4): matrix and batched products have one group per
// output row (batch-then-row order), matrix-vector and vector-matrix products one group per
// output element, dot products one group. Every output element is accumulated by one
// callback in an order fixed by the shapes, so results are bitwise identical under any
// executor and partition (for a given backend and FMA policy).
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "ct/core/dims.hpp"
#include "ct/core/error.hpp"
#include "ct/core/storage.hpp"
#include "ct/core/tensor.hpp"
#include "ct/exec/parallel_for.hpp"
#include "ct/exec/settings.hpp"
#include "ct/ops/matmul_kernels.hpp"

namespace ct {

/// The element types the matmul family accepts.
template <class T>
concept matmul_element = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                         std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>;

namespace detail::mm {

enum class product_kind { matrix, matrix_vector, vector_matrix, vector_vector };

/// Everything matmul needs to know about one call, computed (and validated) up front.
struct plan {
  product_kind kind = product_kind::matrix;
  index_t m = 1, n = 1, k = 0;
  dims batch;          // broadcast batch shape
  index_t batches = 1;
  dims result;         // full result shape
};

inline std::string shapes_str(const dims& a, const dims& b) { return a.str() + " and " + b.str(); }

inline plan make_plan(const char* op, const dims& as, const dims& bs) {
  plan p;
  const int ra = as.size(), rb = bs.size();
  if (ra == 0 || rb == 0)
    throw shape_error(std::string("ct::") + op + ": operands must have rank >= 1, got shapes " +
                      shapes_str(as, bs));
  const index_t ka = as[ra - 1];
  const index_t kb = rb == 1 ? bs[0] : bs[rb - 2];
  if (ka != kb)
    throw shape_error(std::string("ct::") + op + ": inner dimensions differ for shapes " + shapes_str(as, bs) +
                      " (" + std::to_string(ka) + " != " + std::to_string(kb) + ")");
  p.k = ka;
  dims ab, bb;  // batch shapes
  for (int i = 0; i + 2 < ra; ++i) ab.push_back(as[i]);
  for (int i = 0; i + 2 < rb; ++i) bb.push_back(bs[i]);
  {
    int r = std::max(ab.size(), bb.size());
    p.batch = dims::filled(r, 1);
    for (int i = 0; i < r; ++i) {
      index_t ea = i < r - ab.size() ? 1 : ab[i - (r - ab.size())];
      index_t eb = i < r - bb.size() ? 1 : bb[i - (r - bb.size())];
      if (ea != eb && ea != 1 && eb != 1)
        throw shape_error(std::string("ct::") + op + ": batch dimensions of shapes " + shapes_str(as, bs) +
                          " do not broadcast");
      p.batch[i] = ea == 1 ? eb : ea;
    }
  }
  p.batches = element_count(p.batch);
  p.result = p.batch;
  if (ra >= 2) p.m = as[ra - 2];
  if (rb >= 2) p.n = bs[rb - 1];
  if (ra >= 2) p.result.push_back(p.m);
  if (rb >= 2) p.result.push_back(p.n);
  element_count(p.result);
  p.kind = ra >= 2 ? (rb >= 2 ? product_kind::matrix : product_kind::matrix_vector)
                   : (rb >= 2 ? product_kind::vector_matrix : product_kind::vector_vector);
  return p;
}

/// Maps a flat batch index (row-major over plan::batch) to the element offsets of each
/// operand's matrix, honouring broadcast (stride 0) batch axes, and to the flat index of
/// b's own batch (to find its packed copy).
struct batch_walker {
  dims shape, sa, sb, sc, bflat;  // per batch axis: extents; strides of a, b, c; b's flat-index strides
  void locate(index_t flat, index_t& oa, index_t& ob, index_t& oc, index_t& fb) const {
    oa = ob = oc = fb = 0;
    for (int i = shape.size() - 1; i >= 0; --i) {
      const index_t e = shape[i];
      const index_t x = flat % e;
      flat /= e;
      oa += x * sa[i];
      ob += x * sb[i];
      oc += x * sc[i];
      fb += x * bflat[i];
    }
  }
};

/// Cuts a callback's range of groups [start, end) — `per_batch` groups per batch, batch-major
/// — at batch boundaries and calls f(batch, first, last) for each piece (groups first..last-1
/// of that batch), so each piece is one kernel call.
template <class F>
void for_each_batch_piece(index_t start, index_t end, index_t per_batch, F&& f) {
  for (index_t g = start; g < end;) {
    const index_t batch = g / per_batch, first = g % per_batch, last = std::min(per_batch, first + (end - g));
    f(batch, first, last);
    g += last - first;
  }
}

template <class T>
batch_walker make_walker(const plan& p, const tensor<T>& a, const tensor<T>& b, const tensor<T>& c,
                         index_t& b_batches) {
  batch_walker w;
  const int r = p.batch.size();
  w.shape = p.batch;
  w.sa = w.sb = w.sc = w.bflat = dims::filled(r, 0);
  const int la = std::max(a.rank() - 2, 0), lb = std::max(b.rank() - 2, 0);
  for (int i = 0; i < r; ++i) {
    const int ia = i - (r - la), ib = i - (r - lb);
    if (ia >= 0 && a.shape()[ia] != 1) w.sa[i] = a.strides()[ia];
    if (ib >= 0 && b.shape()[ib] != 1) w.sb[i] = b.strides()[ib];
    w.sc[i] = c.strides()[i];
  }
  // Flat index over b's own batch axes (row-major), 0 along axes b broadcasts.
  b_batches = 1;
  for (int i = r - 1; i >= 0; --i) {
    const int ib = i - (r - lb);
    if (ib >= 0 && b.shape()[ib] != 1) {
      w.bflat[i] = b_batches;
      b_batches *= b.shape()[ib];
    }
  }
  return w;
}

/// Address range [lo, hi) a tensor's elements occupy (empty for empty tensors).
template <class T>
void byte_span(const tensor<T>& t, std::uintptr_t& lo, std::uintptr_t& hi) {
  lo = hi = 0;
  if (t.size() == 0) return;
  index_t first = 0, last = 0;
  for (int i = 0; i < t.rank(); ++i) {
    const index_t d = (t.shape()[i] - 1) * t.strides()[i];
    (d < 0 ? first : last) += d;
  }
  const auto base = reinterpret_cast<std::uintptr_t>(t.data());
  lo = base + static_cast<std::uintptr_t>(first * static_cast<index_t>(sizeof(T)));
  hi = base + static_cast<std::uintptr_t>((last + 1) * static_cast<index_t>(sizeof(T)));
}

/// Conservative overlap test: the address ranges intersect.
template <class T>
bool may_overlap(const tensor<T>& x, const tensor<T>& y) {
  std::uintptr_t xl, xh, yl, yh;
  byte_span(x, xl, xh);
  byte_span(y, yl, yh);
  return xl < xh && yl < yh && xl < yh && yl < xh;
}

/// Owns a 64-byte aligned array (packed B copies shared by all callbacks).
template <class T>
struct aligned_buffer {
  std::shared_ptr<void> owner;
  T* data = nullptr;
  explicit aligned_buffer(index_t count) { owner = allocate_storage<T>(count, &data); }
};

template <class T>
void run(const char* op, const plan& p, tensor<T> a, tensor<T> b, const tensor<T>& c) {
  // Destination checks first: shape, then no elements sharing memory (broadcast or
  // overlapping strides), which would make several groups write the same element.
  if (c.shape() != p.result)
    throw shape_error(std::string("ct::") + op + ": destination of shape " + c.shape().str() +
                      " does not match the result shape " + p.result.str() + " of " + shapes_str(a.shape(), b.shape()));
  if (!elements_distinct(c.shape(), c.strides()))
    throw shape_error(std::string("ct::") + op + ": destination of shape " + c.shape().str() + " and strides " +
                      c.strides().str() + " repeats elements (a broadcast or overlapping view)");
  if (c.size() == 0) return;
  // Snapshot inputs that share memory with the destination: workers write c while others
  // still read a and b.
  if (may_overlap(c, a)) a = a.clone();
  if (may_overlap(c, b)) b = b.clone();

  const int ra = a.rank(), rb = b.rank(), rc = c.rank();
  const index_t k = p.k;
  // Strides of the last two axes (vectors: the one axis; the missing axis never moves).
  const index_t ars = ra >= 2 ? a.strides()[ra - 2] : 0, acs = a.strides()[ra - 1];
  const index_t brs = rb >= 2 ? b.strides()[rb - 2] : b.strides()[0], bcs = rb >= 2 ? b.strides()[rb - 1] : 0;
  index_t b_batches = 1;
  const batch_walker w = make_walker(p, a, b, c, b_batches);
  const T* const pa = a.data();
  const T* const pb = b.data();
  T* const pc = c.data();

  switch (p.kind) {
    case product_kind::vector_vector: {
      // One group: the whole dot product runs here, the executor is never called.
      schedule(op, 1, [&](index_t, index_t) {
        *pc = dot<T>(k, pa, acs, pb, brs, current_settings());
      });
      return;
    }
    case product_kind::matrix_vector:
    case product_kind::vector_matrix: {
      // One group per output element, batch-major.
      const bool rows = p.kind == product_kind::matrix_vector;
      const index_t per_batch = rows ? p.m : p.n, ys = c.strides()[rc - 1];
      schedule(op, p.batches * per_batch, [&](index_t start, index_t end) {
        const settings s = current_settings();
        for_each_batch_piece(start, end, per_batch, [&](index_t batch, index_t e0, index_t e1) {
          index_t oa, ob, oc, fb;
          w.locate(batch, oa, ob, oc, fb);
          if (rows)
            gemv_rows<T>(k, pa + oa, ars, acs, pb + ob, brs, pc + oc, ys, e0, e1, s);
          else
            gevm_cols<T>(k, pa + oa, acs, pb + ob, brs, bcs, pc + oc, ys, e0, e1, s);
        });
      });
      return;
    }
    case product_kind::matrix: break;
  }

  const index_t m = p.m, n = p.n;
  gemm_args<T> base;
  base.m = m;
  base.n = n;
  base.k = k;
  base.ars = ars;
  base.acs = acs;
  base.brs = brs;
  base.bcs = bcs;
  base.crs = c.strides()[rc - 2];
  base.ccs = c.strides()[rc - 1];
  // B panels are packed once here, before scheduling, and then only read by the callbacks.
  const settings caller = current_settings();
  const index_t packed_size = gemm_packed_b_size<T>(k, n, brs, bcs, caller);
  std::vector<aligned_buffer<T>> packed;
  if (packed_size > 0) {
    packed.reserve(static_cast<std::size_t>(b_batches));
    // Visit b's own batches: walk b's batch axes row-major.
    const int lb = rb - 2;
    for (index_t f = 0; f < b_batches; ++f) {
      index_t off = 0, rem = f;
      for (int i = lb - 1; i >= 0; --i) {
        const index_t e = b.shape()[i];
        off += (rem % e) * b.strides()[i];
        rem /= e;
      }
      packed.emplace_back(packed_size);
      gemm_pack_b<T>(k, n, pb + off, brs, bcs, packed.back().data, caller);
    }
  }
  schedule(op, p.batches * m, [&](index_t start, index_t end) {
    const settings s = current_settings();
    for_each_batch_piece(start, end, m, [&](index_t batch, index_t r0, index_t r1) {
      index_t oa, ob, oc, fb;
      w.locate(batch, oa, ob, oc, fb);
      gemm_args<T> ga = base;
      ga.a = pa + oa;
      ga.b = pb + ob;
      ga.c = pc + oc;
      gemm_rows<T>(ga, packed.empty() ? nullptr : packed[static_cast<std::size_t>(fb)].data, r0, r1, s);
    });
  });
}

}  // namespace detail::mm

/// Writes a @ b (numpy.matmul semantics) into out, whose shape must be exactly the result
/// shape; out may be any strided view with distinct elements, and may overlap a or b (an
/// overlapping input is copied first). Throws ct::shape_error, naming the shapes, before any
/// work when the shapes do not fit. If an error occurs while computing (an executor or
/// allocation failure), out may be left partly written.
template <matmul_element T>
void matmul(const tensor<T>& a, const tensor<T>& b, const tensor<T>& out) {
  const detail::mm::plan p = detail::mm::make_plan("matmul", a.shape(), b.shape());
  detail::mm::run<T>("matmul", p, a, b, out);
}

/// a @ b (numpy.matmul semantics) as a new row-major tensor. Two vectors give a rank-0
/// tensor; use ct::dot for the plain value.
template <matmul_element T>
tensor<T> matmul(const tensor<T>& a, const tensor<T>& b) {
  const detail::mm::plan p = detail::mm::make_plan("matmul", a.shape(), b.shape());
  tensor<T> out(p.result);
  detail::mm::run<T>("matmul", p, a, b, out);
  return out;
}

/// The scalar product of two vectors of equal length (one group: always computed on the
/// calling thread, in the fixed lane order described in docs/matmul.md).
template <matmul_element T>
T dot(const tensor<T>& x, const tensor<T>& y) {
  if (x.rank() != 1 || y.rank() != 1 || x.shape()[0] != y.shape()[0])
    throw shape_error("ct::dot: needs two vectors of equal length, got shapes " + x.shape().str() + " and " +
                      y.shape().str());
  T result{};
  detail::schedule("dot", 1, [&](index_t, index_t) {
    result = detail::mm::dot<T>(x.shape()[0], x.data(), x.strides()[0], y.data(), y.strides()[0],
                                current_settings());
  });
  return result;
}

}  // namespace ct
