// bench/expr/eigen_peer.cpp — Eigen Tensor versions of the bench_expr workloads, written the
// way Eigen Tensor users write them (TensorFlow's softmax functor is the model for softmax:
// reductions with .eval(), broadcasting with .reshape(...).broadcast(...), y.device(d) = ...).
// Compiled once per variant with -DCT_EIGEN_NS=<namespace>; see eigen_peer.hpp.
#pragma GCC visibility push(default)
#include "eigen_peer.hpp"
CT_EIGEN_PEER_DECLARE(CT_EIGEN_NS)
#pragma GCC visibility pop

#define EIGEN_USE_THREADS
#include <memory>
#include <unsupported/Eigen/CXX11/Tensor>

namespace CT_EIGEN_NS {

namespace {

using Index = Eigen::Index;
template <class T, int R>
using map = Eigen::TensorMap<Eigen::Tensor<T, R, Eigen::RowMajor, Index>>;
template <class T, int R>
using cmap = Eigen::TensorMap<Eigen::Tensor<const T, R, Eigen::RowMajor, Index>>;
using vec = Eigen::Tensor<float, 1, Eigen::RowMajor, Index>;

struct context {
  explicit context(int threads) {
    if (threads > 1) {
      pool = std::make_unique<Eigen::ThreadPool>(threads);
      device = std::make_unique<Eigen::ThreadPoolDevice>(pool.get(), threads);
    }
  }
  std::unique_ptr<Eigen::ThreadPool> pool;
  std::unique_ptr<Eigen::ThreadPoolDevice> device;
  Eigen::DefaultDevice single;
};

template <class F>
void with_device(void* ctx, F&& f) {
  auto* c = static_cast<context*>(ctx);
  if (c->device) f(*c->device);
  else f(c->single);
}

// Index lists as in TensorFlow's softmax functor: compile-time 1s, run-time extents.
struct row_lists {
  row_lists(Index rows, Index cols) {
    batch_by_one.set(0, rows);
    one_by_class.set(1, cols);
  }
  Eigen::IndexList<Eigen::type2index<1>> along_class;
  Eigen::IndexList<Index, Eigen::type2index<1>> batch_by_one;
  Eigen::IndexList<Eigen::type2index<1>, Index> one_by_class;
};

}  // namespace

void* make(int threads) { return new context(threads); }
void destroy(void* ctx) { delete static_cast<context*>(ctx); }
const char* describe() { return Eigen::SimdInstructionSetsInUse(); }

void softmax(void* ctx, const float* xp, float* yp, long rows, long cols) {
  with_device(ctx, [&](const auto& d) {
    cmap<float, 2> x(xp, rows, cols);
    map<float, 2> y(yp, rows, cols);
    row_lists l(rows, cols);
    auto shifted = x - x.maximum(l.along_class).eval().reshape(l.batch_by_one).broadcast(l.one_by_class);
    y.device(d) = shifted.exp();
    y.device(d) = y * y.sum(l.along_class).inverse().eval().reshape(l.batch_by_one).broadcast(l.one_by_class);
  });
}

void log_softmax(void* ctx, const float* xp, float* yp, long rows, long cols) {
  with_device(ctx, [&](const auto& d) {
    cmap<float, 2> x(xp, rows, cols);
    map<float, 2> y(yp, rows, cols);
    row_lists l(rows, cols);
    auto shifted = x - x.maximum(l.along_class).eval().reshape(l.batch_by_one).broadcast(l.one_by_class);
    y.device(d) = shifted;
    y.device(d) = y - y.exp().sum(l.along_class).log().eval().reshape(l.batch_by_one).broadcast(l.one_by_class);
  });
}

void layer_norm(void* ctx, const float* xp, const float* wp, const float* bp, float* yp, long rows, long cols,
                float eps) {
  with_device(ctx, [&](const auto& d) {
    cmap<float, 2> x(xp, rows, cols);
    cmap<float, 1> w(wp, cols), b(bp, cols);
    map<float, 2> y(yp, rows, cols);
    row_lists l(rows, cols);
    Eigen::IndexList<Index, Eigen::type2index<1>> rows_by_one;
    rows_by_one.set(0, rows);
    vec mean(rows), rstd(rows);
    mean.device(d) = x.mean(l.along_class);
    auto centered = x - mean.reshape(l.batch_by_one).broadcast(l.one_by_class);
    rstd.device(d) = (centered.square().mean(l.along_class) + eps).rsqrt();
    y.device(d) = centered * rstd.reshape(l.batch_by_one).broadcast(l.one_by_class) *
                      w.reshape(l.one_by_class).broadcast(rows_by_one) +
                  b.reshape(l.one_by_class).broadcast(rows_by_one);
  });
}

void logsumexp(void* ctx, const float* xp, float* yp, long rows, long cols) {
  with_device(ctx, [&](const auto& d) {
    cmap<float, 2> x(xp, rows, cols);
    map<float, 1> y(yp, rows);
    row_lists l(rows, cols);
    vec m(rows);
    m.device(d) = x.maximum(l.along_class);
    y.device(d) = (x - m.reshape(l.batch_by_one).broadcast(l.one_by_class)).exp().sum(l.along_class).log() + m;
  });
}

void argmax(void* ctx, const float* xp, std::int64_t* yp, long rows, long cols) {
  static_assert(sizeof(Eigen::DenseIndex) == sizeof(std::int64_t));
  with_device(ctx, [&](const auto& d) {
    cmap<float, 2> x(xp, rows, cols);
    map<Eigen::DenseIndex, 1> y(reinterpret_cast<Eigen::DenseIndex*>(yp), rows);
    y.device(d) = x.argmax(1);
  });
}

void sum_last(void* ctx, const float* xp, float* yp, long rows, long cols) {
  with_device(ctx, [&](const auto& d) {
    cmap<float, 2> x(xp, rows, cols);
    map<float, 1> y(yp, rows);
    Eigen::IndexList<Eigen::type2index<1>> last;
    y.device(d) = x.sum(last);
  });
}

void sum_first(void* ctx, const float* xp, float* yp, long rows, long cols) {
  with_device(ctx, [&](const auto& d) {
    cmap<float, 2> x(xp, rows, cols);
    map<float, 1> y(yp, cols);
    Eigen::IndexList<Eigen::type2index<0>> first;
    y.device(d) = x.sum(first);
  });
}

void muladd(void* ctx, const float* ap, const float* bp, const float* cp, float* yp, long n) {
  with_device(ctx, [&](const auto& d) {
    cmap<float, 1> a(ap, n), b(bp, n), c(cp, n);
    map<float, 1> y(yp, n);
    y.device(d) = a * b + c;
  });
}

}  // namespace CT_EIGEN_NS
