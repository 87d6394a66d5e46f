// src/matmul/run.cpp — one matmul call: destination checks, input snapshots, packing of B,
// and the groups scheduled through the bound executor (CONTRACT §4: one output row of a
// matrix product, one output element of a matrix-vector product, one group for a dot).
// bfloat16 and float16 products multiply in float32 and round each result element once into
// the destination: a matrix product widens B once before scheduling and A block by block
// inside each callback (run_narrow_matrix); the vector products widen whole operands.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ct/ct.hpp"
#include "src/core/big_buffer.hpp"
#include "src/kernels/convert.hpp"
#include "src/matmul/byte_span.hpp"
#include "src/matmul/kernels.hpp"
#include "src/matmul/matmul_common.hpp"

namespace ct::detail::mm {

namespace {

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

template <class TA, class TB, class TC>
batch_walker make_walker(const plan& p, const tensor<TA>& a, const tensor<TB>& b, const tensor<TC>& c,
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

/// The element offset of batch f of b's own batch axes (row-major over all but the last two).
template <class T>
index_t own_batch_offset(const tensor<T>& b, index_t f) {
  index_t off = 0;
  for (int i = b.rank() - 3; i >= 0; --i) {
    const index_t e = b.shape()[i];
    off += (f % e) * b.strides()[i];
    f /= e;
  }
  return off;
}

/// What the piece of batch `batch`, rows [0, rows), reads and writes, for gemm_args::ahead (g:
/// the product's shape and strides; oa, ob: the current piece's A and B offsets — an operand
/// the batches broadcast is in the caches already and is left out). Spans only for unit column
/// strides and rows that do not overlap; none at all when the current piece (`current` bytes)
/// and the next one together exceed budget bytes, so that the prefetches never push the
/// current piece's own operands out of L2.
template <class T>
ahead_spans next_piece_spans(const batch_walker& w, const gemm_args<T>& g, const T* pa, const T* pb, const T* pc,
                             index_t oa, index_t ob, index_t current, index_t batch, index_t rows, std::size_t budget) {
  index_t oan, obn, ocn, fb;
  w.locate(batch, oan, obn, ocn, fb);
  constexpr index_t size = static_cast<index_t>(sizeof(T));
  const index_t a_bytes = oan != oa && g.acs == 1 && g.ars >= g.k ? ((rows - 1) * g.ars + g.k) * size : 0;
  const index_t b_bytes = obn != ob && g.bcs == 1 && g.brs >= g.n ? ((g.k - 1) * g.brs + g.n) * size : 0;
  const index_t c_bytes = g.ccs == 1 && g.crs >= g.n ? ((rows - 1) * g.crs + g.n) * size : 0;
  ahead_spans spans;
  if (static_cast<std::size_t>(current + a_bytes + b_bytes + c_bytes) > budget) return spans;
  spans.add(pa + oan, a_bytes);
  spans.add(pb + obn, b_bytes);
  spans.add(pc + ocn, c_bytes);
  return spans;
}

// B panels are packed once, before scheduling, one copy per batch of b's own (none when the
// kernels read this B in place); afterwards the callbacks only read them.
//
// With an executor bound, a packed B larger than the L2 and used by at least two row blocks
// is written with streaming stores. Every worker reads all of it, so after one shared call its
// lines sit in the other workers' caches, and writing the next call's copy through the cache
// (the thread keeps its block, big_buffer.hpp) first takes each line back from them: with two
// workers the caller's packing of sgemm 1024³'s 4 MiB B took 5% of the samples (0.69 ms a
// call, 0.24 on one thread), streamed 2%. On one thread streaming changed nothing there (the
// first pass over B reads it from memory instead of L3, a few percent of a row block's work).
template <class T>
std::vector<detail::big_buffer<T>> pack_b_batches(const tensor<T>& b, index_t k, index_t n, index_t b_batches, index_t m) {
  const int rb = b.rank();
  const index_t brs = b.strides()[rb - 2], bcs = b.strides()[rb - 1];
  const settings caller = current_settings();
  const index_t packed_size = gemm_packed_b_size<T>(k, n, brs, bcs, caller);
  std::vector<detail::big_buffer<T>> packed;
  if (packed_size == 0) return packed;
  const tuning& t = current_tuning();
  const bool stream = static_cast<bool>(current_executor()) &&
                      static_cast<std::size_t>(packed_size) * sizeof(T) > t.caches.l2 &&
                      m >= 2 * static_cast<index_t>(gemm_blocking_for(t, std::is_same_v<T, double>).mc);
  packed.reserve(static_cast<std::size_t>(b_batches));
  for (index_t f = 0; f < b_batches; ++f) {
    packed.emplace_back(packed_size);
    gemm_pack_b<T>(k, n, b.data() + own_batch_offset(b, f), brs, bcs, packed.back().data(), caller, stream);
  }
  return packed;
}

// The executor hint (range_callback::grain) for a product whose packed B (b_bytes) does not
// stay in a worker's L2 — past the tuning's gemm_b_block_bytes, one block of B panels: four row
// blocks (MC rows each). A range streams all of B from L3 or memory once per row block it
// holds, a whole one or a partial one, so many small ranges multiply that traffic: ranges of
// four rows (a two-worker pool's default chunk of a 128-row prompt) ran 128 x 4096 x 4096 on two
// workers at half the speed of one, and ranges of four micro-panels (48 rows, chunks of 64: 32
// passes over B where one worker makes 17) left sgemm 2048³ on two workers at 1.7x one. Four
// row blocks measured 47.3-51.5 ms against 53.0-54.1 there (Zen 5 guest). The bound was half
// the L3 at first, on the view that an L3-resident B is cheap to re-read; a Xeon with a 480 MiB
// L3 reads it at about 27 GB/s per core, no faster than memory, and with that bound two
// workers ran the 128-row prompt 1.3x slower than one and sgemm 4096³ at 1.56-1.71x; past half
// the L2 they ran 1.35x faster than one and 1.92x (docs/performance.md).
inline index_t gemm_range_grain(index_t b_bytes, bool f64) {
  const tuning& t = current_tuning();
  if (static_cast<std::size_t>(b_bytes) <= t.gemm_b_block_bytes) return 1;
  return 4 * static_cast<index_t>(gemm_blocking_for(t, f64).mc);
}

template <class T>
void run_typed(const char* op, const plan& p, tensor<T> a, tensor<T> b, const tensor<T>& c) {
  check_destination(op, p, a.shape(), b.shape(), c.shape(), c.strides());
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
  const std::vector<detail::big_buffer<T>> packed = pack_b_batches(b, k, n, b_batches, m);
  // Small products read in place by the SIMD kernels (a batch of them): each piece prefetches
  // the next piece's A rows, B and C rows into L2 while it runs, when both pieces fit the
  // budget of a B block.
  const bool simd = current_settings().backend == backend::simd;
  const std::size_t ahead_budget = packed.empty() && simd ? current_tuning().gemm_b_block_bytes : 0;
  schedule(op, p.batches * m, [&](index_t start, index_t end) {
    const settings s = current_settings();
    for_each_batch_piece(start, end, m, [&](index_t batch, index_t r0, index_t r1) {
      index_t oa, ob, oc, fb;
      w.locate(batch, oa, ob, oc, fb);
      gemm_args<T> ga = base;
      ga.a = pa + oa;
      ga.b = pb + ob;
      ga.c = pc + oc;
      if (ahead_budget > 0 && batch * m + r1 < end)
        ga.ahead = next_piece_spans(w, base, pa, pb, pc, oa, ob, ((r1 - r0) * (k + n) + k * n) * index_t{sizeof(T)},
                                    batch + 1, std::min(m, end - (batch + 1) * m), ahead_budget);
      gemm_rows<T>(ga, packed.empty() ? nullptr : packed[static_cast<std::size_t>(fb)].data(), r0, r1, s);
    });
  }, packed.empty() ? 1 : gemm_range_grain(k * n * static_cast<index_t>(sizeof(T)), std::is_same_v<T, double>));
}


// 16-bit values <-> float32 rows for the narrow matrix product (src/kernels/convert.hpp).
template <class T>
void widen_row(const T* x, index_t stride, float* y, index_t n, const settings& s) {
  kernels::widen_strided(std::is_same_v<T, bfloat16>, reinterpret_cast<const std::uint16_t*>(x), stride, y, n, s);
}
template <class T>
void narrow_row(const float* x, T* y, index_t stride, index_t n, const settings& s) {
  kernels::narrow_strided(std::is_same_v<T, bfloat16>, x, reinterpret_cast<std::uint16_t*>(y), stride, n, s);
}

/// Rows of A widened per block inside a callback: as many as keep the block's float32 A and
/// C near 1 MiB (an L2's worth, so the block's C stays cached across its k blocks), a
/// multiple of 12 (both targets' micro-kernel heights), 12..240.
inline index_t narrow_block_rows(index_t k, index_t n) {
  const index_t per_row = 4 * (k + n);
  const index_t rows = std::clamp<index_t>((index_t{1} << 20) / std::max<index_t>(per_row, 1), 12, 240);
  return rows / 12 * 12;
}

// A matrix product of 16-bit floats, in float32: B widened as it is packed (or, when the
// kernels read B in place, widened once into a float32 copy), then each callback widens a
// block of its A rows into its own scratch, runs the float32 kernel on the block into a
// float32 block of C, and rounds that once into the destination. Every element is the
// float32 kernel's sequential k sum of the widened operands: the same bits as widening
// everything first, without widening A, B and C through memory.
template <class T>
void run_narrow_matrix(const char* op, const plan& p, tensor<T> a, const tensor<T>& b, const tensor<T>& c) {
  if (may_overlap(c, a)) a = a.clone();  // workers write c while others still read a
  const int ra = a.rank(), rb = b.rank(), rc = c.rank();
  const index_t m = p.m, n = p.n, k = p.k;
  index_t b_batches = 1;
  const batch_walker w = make_walker(p, a, b, c, b_batches);
  const index_t brs = b.strides()[rb - 2], bcs = b.strides()[rb - 1];
  // One float32 B per batch of b's own: packed panels, or a row-major widened copy.
  const settings caller = current_settings();
  const index_t packed_size = gemm_packed_b_size<float>(k, n, n, 1, caller);
  std::vector<detail::big_buffer<float>> wide_b;
  wide_b.reserve(static_cast<std::size_t>(b_batches));
  for (index_t f = 0; f < b_batches; ++f) {
    const T* src = b.data() + own_batch_offset(b, f);
    if (packed_size > 0) {
      wide_b.emplace_back(packed_size);
      gemm_pack_b_widened(k, n, reinterpret_cast<const std::uint16_t*>(src), std::is_same_v<T, bfloat16>, brs, bcs,
                          wide_b.back().data(), caller);
    } else {
      wide_b.emplace_back(k * n);
      for (index_t q = 0; q < k; ++q) widen_row(src + q * brs, bcs, wide_b.back().data() + q * n, n, caller);
    }
  }
  const index_t ars = a.strides()[ra - 2], acs = a.strides()[ra - 1];
  const index_t crs = c.strides()[rc - 2], ccs = c.strides()[rc - 1];
  const index_t block = std::min(m, narrow_block_rows(k, n));
  const T* const pa = a.data();
  T* const pc = c.data();
  schedule(op, p.batches * m, [&](index_t start, index_t end) {
    const settings s = current_settings();
    const index_t rows = std::min(block, end - start);
    scratch<float> ablock(rows * k), cblock(rows * n);  // this callback's own
    gemm_args<float> g;
    g.n = n;
    g.k = k;
    g.ars = k;
    g.acs = 1;
    g.brs = n;
    g.bcs = 1;
    g.a = ablock.get();
    g.c = cblock.get();
    g.crs = n;
    g.ccs = 1;
    for_each_batch_piece(start, end, m, [&](index_t batch, index_t r0, index_t r1) {
      index_t oa, ob, oc, fb;
      w.locate(batch, oa, ob, oc, fb);
      const float* wb = wide_b[static_cast<std::size_t>(fb)].data();
      g.b = wb;
      for (index_t i0 = r0; i0 < r1; i0 += rows) {
        const index_t mb = std::min(rows, r1 - i0);
        for (index_t i = 0; i < mb; ++i) widen_row(pa + oa + (i0 + i) * ars, acs, ablock.get() + i * k, k, s);
        g.m = mb;
        gemm_rows<float>(g, packed_size > 0 ? wb : nullptr, 0, mb, s);
        for (index_t i = 0; i < mb; ++i) narrow_row(cblock.get() + i * n, pc + oc + (i0 + i) * crs, ccs, n, s);
      }
    });
  }, packed_size > 0 ? gemm_range_grain(packed_size * 4, false) : 1);
}

template <class T>
T dot_typed(const tensor<T>& x, const tensor<T>& y) {
  T result{};
  schedule("dot", 1, [&](index_t, index_t) {
    result = dot<T>(x.shape()[0], x.data(), x.strides()[0], y.data(), y.strides()[0], current_settings());
  });
  return result;
}

}  // namespace

template <class T>
void run(const char* op, const plan& p, tensor<T> a, tensor<T> b, const tensor<T>& c) {
  if constexpr (kind_of_v<T> == dtype_kind::storage_float) {
    check_destination(op, p, a.shape(), b.shape(), c.shape(), c.strides());
    if (c.size() == 0) return;
    if (p.kind == product_kind::matrix && p.k > 0) return run_narrow_matrix<T>(op, p, std::move(a), b, c);
    // Widened copies are new tensors, so a destination overlapping an input is safe too.
    const tensor<float> af = eval(cast<float>(a)), bf = eval(cast<float>(b));
    tensor<float> cf(c.shape());
    run_typed<float>(op, p, af, bf, cf);
    eval(cast<T>(cf), c);
  } else {
    run_typed<T>(op, p, std::move(a), std::move(b), c);
  }
}

template <class T>
T dot_call(const tensor<T>& x, const tensor<T>& y) {
  if constexpr (kind_of_v<T> == dtype_kind::storage_float) {
    return T(static_cast<double>(dot_typed<float>(eval(cast<float>(x)), eval(cast<float>(y)))));
  } else {
    return dot_typed<T>(x, y);
  }
}

// The definitions user code links against, for every matmul_element row of the type table:
// explicitly instantiating this struct for every row emits run<T> and dot_call<T> where T
// qualifies (referencing them instantiates them), and nothing for the other rows.
template <class T>
struct instantiate_for {
  static void emit() {
    if constexpr (matmul_element<T>) {
      [[maybe_unused]] volatile auto r = &run<T>;
      [[maybe_unused]] volatile auto d = &dot_call<T>;
    }
  }
};
#define CT_MM_INSTANTIATE(tag, T, name, kind) template struct instantiate_for<T>;
CT_ELEMENT_TYPES(CT_MM_INSTANTIATE)
#undef CT_MM_INSTANTIATE

}  // namespace ct::detail::mm
