/// \file
/// An operation selector that sends large float32 / float64 matrix products to a system CBLAS
/// (OpenBLAS, BLIS, MKL, …): ct::cblas_selector. The only ct header that includes `<cblas.h>`;
/// libct neither includes nor links a BLAS: a program using this header links one itself
/// (Debian libopenblas-dev: `pkg-config --cflags --libs openblas`, meson
/// `dependency('openblas')`).
///
/// The selector keeps ct's execution contract: it partitions the product's rows itself through
/// ct::parallel_for, so the executor you bound is still the only source of threads, and each
/// callback calls the BLAS on its rows. The BLAS must therefore not start threads of its own:
/// link a single-threaded BLAS, or set it to one thread (OpenBLAS: OPENBLAS_NUM_THREADS=1 or
/// openblas_set_num_threads(1); see cblas_options::single_threaded_openblas). Rows are cut into
/// fixed blocks of cblas_options::rows_per_group rows, whatever the executor, so the result is
/// the same for every executor and worker count — the bits are the BLAS's, not ct's.
#pragma once
#include <cblas.h>

#include <algorithm>
#include <string>

#include "ct/core/error.hpp"
#include "ct/exec/parallel_for.hpp"
#include "ct/select/selector.hpp"

/// OpenBLAS's thread-count control, declared weak: null unless the linked BLAS is OpenBLAS.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace ct {

/// Tuning of ct::cblas_selector.
struct cblas_options {
  /// Products with fewer multiply-adds (m·n·k) than this are declined (ct computes them): for
  /// small products the BLAS call and packing cost more than they save.
  double min_multiply_adds = 64.0 * 64.0 * 64.0;
  /// Rows of the result per group handed to ct::parallel_for (>= 1). Fixed, so that the
  /// result does not depend on the executor. Each group is one BLAS call, which packs the
  /// whole right operand again: measured on one core for 1024³ (docs/performance.md), groups
  /// of 64 rows ran at 0.89x of one BLAS call for the whole product, 128 at 0.94x, 256 at
  /// 0.95x. Fewer, larger groups give an executor fewer pieces to balance.
  index_t rows_per_group = 256;
  /// Call openblas_set_num_threads(1) when the selector is created, if the linked BLAS is
  /// OpenBLAS (found at link time as a weak symbol): the executor is the only source of threads.
  bool single_threaded_openblas = true;
};

namespace detail {

/// The CBLAS layout of one rank-2 operand: unit stride along columns (no transpose) or along
/// rows (transposed), with a positive leading dimension of at least the inner extent.
struct blas_layout {
  bool ok = false;
  CBLAS_TRANSPOSE trans = CblasNoTrans;
  int ld = 0;
};

inline blas_layout blas_layout_of(const operand_view& v) {
  blas_layout l;
  const index_t rows = v.shape[0], cols = v.shape[1], rs = v.strides[0], cs = v.strides[1];
  const index_t limit = 1 << 30;  // CBLAS takes int sizes
  if (rows >= limit || cols >= limit) return l;
  if ((cs == 1 || cols == 1) && rs >= std::max<index_t>(cols, 1) && rs < limit) {
    l = {true, CblasNoTrans, static_cast<int>(rs)};
  } else if ((rs == 1 || rows == 1) && cs >= std::max<index_t>(rows, 1) && cs < limit) {
    l = {true, CblasTrans, static_cast<int>(cs)};
  }
  return l;
}

template <class T>
void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const T* a, int lda, const T* b, int ldb,
               T* c, int ldc) {
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
  else
    cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, ldc);
}

template <class T>
kernel blas_kernel(const cblas_options& o, blas_layout la, blas_layout lb) {
  return kernel{[o, la, lb](const call_info& call, const target& out) {
    const operand_view &av = call.operands[0], &bv = call.operands[1];
    const index_t m = av.shape[0], k = av.shape[1], n = bv.shape[1];
    const T* a = static_cast<const T*>(av.data);
    const T* b = static_cast<const T*>(bv.data);
    T* c = static_cast<T*>(out.data);  // staged: row-major, contiguous
    const index_t groups = (m + o.rows_per_group - 1) / o.rows_per_group;
    parallel_for(groups, [&](index_t g0, index_t g1) {
      for (index_t g = g0; g < g1; ++g) {
        const index_t r0 = g * o.rows_per_group, r1 = std::min(m, r0 + o.rows_per_group);
        const T* ar = a + r0 * av.strides[0];  // row r0 of a (a transposed view has row stride 1)
        blas_gemm<T>(la.trans, lb.trans, static_cast<int>(r1 - r0), static_cast<int>(n), static_cast<int>(k), ar, la.ld,
                     b, lb.ld, c + r0 * n, static_cast<int>(n));
      }
    });
  }};
}

}  // namespace detail

/// A selector for operation::matmul that accepts rank-2 float32 × float32 → float32 and
/// float64 × float64 → float64 products of at least options.min_multiply_adds multiply-adds
/// whose operands each have unit stride along one axis (row-major or transposed views), and
/// declines everything else (ct computes it). Register it with
/// `ct::add_selector(ct::operation::matmul, ct::cblas_selector())`, or bind it for a scope
/// with ct::selector_scope. ct::error for invalid options.
inline selector cblas_selector(cblas_options options = {}) {
  if (options.rows_per_group < 1)
    throw error("ct::cblas_selector: rows_per_group must be >= 1, got " + std::to_string(options.rows_per_group));
  if (options.single_threaded_openblas && ::openblas_set_num_threads) ::openblas_set_num_threads(1);
  return [options](const call_info& call) -> kernel {
    if (call.op != operation::matmul || call.operands.size() != 2) return {};
    const operand_view &a = call.operands[0], &b = call.operands[1];
    if (a.encoding || b.encoding || a.shape.size() != 2 || b.shape.size() != 2) return {};
    const dtype t = a.type;
    if ((t != dtype::f32 && t != dtype::f64) || b.type != t || call.destination.type != t) return {};
    const double macs = static_cast<double>(a.shape[0]) * static_cast<double>(a.shape[1]) * static_cast<double>(b.shape[1]);
    if (macs < options.min_multiply_adds || macs == 0) return {};
    const detail::blas_layout la = detail::blas_layout_of(a), lb = detail::blas_layout_of(b);
    if (!la.ok || !lb.ok) return {};
    return t == dtype::f32 ? detail::blas_kernel<float>(options, la, lb) : detail::blas_kernel<double>(options, la, lb);
  };
}

}  // namespace ct
