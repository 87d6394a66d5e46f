// bench/expr/bench_expr.cpp — the fused expression engine against its peers and against
// the memory-bandwidth bound, all in one process and one run.
//
// Names are <workload>/<implementation>_<threads>t:
//   ct_1t      ct, no executor bound (the calling thread only)
//   ct_2t      ct with ct::asio_executor(pool, 2) bound (a boost::asio::thread_pool of one
//              thread plus the calling thread)
//   ct_2t_linger  the same with asio_options::linger = 100 µs: the helper polls for the
//              next call instead of going back to sleep in the pool
//   ct_2t_split   (muladd) ct_2t inside a ct::split_elementwise_scope: the opt-in split of
//              elementwise expressions over the bound executor
//   naive_1t   a straightforward C++ loop, compiled with the project's flags
//   eigen_*    Eigen Tensor, compiled with the project's flags (x86-64 baseline: SSE2)
//   eigen_native_*  the same Eigen source compiled with -march=native
//              (DefaultDevice for 1t, ThreadPoolDevice over Eigen::ThreadPool(2) for 2t)
//   onednn_*   oneDNN primitives; its CPU runtime is OpenMP, threads set with omp_set_num_threads
//   bound/read_<N>MiB       xor-reduction of N MiB (vectorised; bytes = N)
//   bound/copy_<N>MiB       std::memcpy of N MiB (bytes = 2N)
//   bound/copy_loop_<N>MiB  a vectorised copy loop with ordinary stores (bytes = 2N)
//   bound/read3_write1_64MiB  d = a ^ b ^ c over 64 MiB each: the stream shape of a*b+c
//   bound/read3_write1_64MiB_2t  the same split in halves over two threads (the caller and a
//              one-thread Asio pool): the bound of a*b+c over two workers
//   machine_{start,end}/compute_1t, _2t  fixed register-only work on one thread, or split
//              over two (the caller and a one-thread Asio pool), first and last in the run:
//              the two-core speed-up this shared machine actually offered
// Every benchmark reports bytes/s with bytes = input bytes read + output bytes written, and
// real (wall-clock) time. Before running, every implementation is validated once against a
// double-precision reference (set CT_BENCH_NO_VALIDATE=1 to skip); failures print WARNING.
//
// Run: bench_expr --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//        --benchmark_out=bench_expr.json --benchmark_out_format=json
// (default --benchmark_min_time=0.2; a full run takes about three minutes), then
// bench/expr/summarize.py bench_expr.json prints the tables and goal ratios.
#include <benchmark/benchmark.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "ct/asio.hpp"
#include "ct/ct.hpp"
#include "../support/both_halves.hpp"
#include "../support/machine_context.hpp"
#include "eigen_peer.hpp"

#if CT_BENCH_HAVE_DNNL
#include <dnnl.hpp>
#endif
#if CT_BENCH_HAVE_OMP
#include <omp.h>
#endif

namespace {

using ct::index_t;
constexpr index_t MiB = 1024 * 1024;

// ---------------------------------------------------------------------------------------
// Harness

using runner = std::function<void()>;

struct variant {
  std::string impl;          // e.g. "ct_2t"
  int threads = 1;
  bool ct_executor = false;  // bind ct::asio_executor(pool, threads) around the calls
  std::function<runner()> prepare;  // untimed set-up (pools, primitives); returns the timed call
  std::chrono::microseconds linger{0};  // asio_options::linger of that executor
  bool split = false;  // also ct::split_elementwise_scope (elementwise workloads: "ct_2t_split")
};

struct check_result {
  std::string error;  // empty when the output matches the reference
  double worst = 0;   // largest |error| / tolerance seen
};

struct workload {
  std::string name;
  double bytes = 0;  // per call: input bytes read + output bytes written
  benchmark::TimeUnit unit = benchmark::kMillisecond;
  std::function<void()> poison;                          // overwrite the output before a validation run
  std::function<check_result()> check;                   // output against the double reference
  std::function<std::vector<unsigned char>()> snapshot;  // output bytes (ct determinism check)
  std::function<void()> release;                         // drop the reference after validation
  std::vector<variant> variants;
};

// Threads for one benchmark (or validation run) of a variant: the Asio pool and executor
// binding for ct_2t. Other implementations manage their own threads in prepare().
class thread_setup {
 public:
  explicit thread_setup(const variant& v) {
    if (v.ct_executor) {
      pool_.emplace(static_cast<std::size_t>(v.threads - 1));
      ct::asio_options options;
      options.linger = v.linger;
      scope_.emplace(ct::asio_executor(*pool_, v.threads, options));
    }
    if (v.split) split_.emplace();
  }
  ~thread_setup() {
    split_.reset();
    scope_.reset();
    if (pool_) pool_->join();
  }
  thread_setup(const thread_setup&) = delete;
  thread_setup& operator=(const thread_setup&) = delete;

 private:
  std::optional<boost::asio::thread_pool> pool_;
  std::optional<ct::executor_scope> scope_;
  std::optional<ct::split_elementwise_scope> split_;
};

void set_omp_threads([[maybe_unused]] int threads) {
#if CT_BENCH_HAVE_OMP
  omp_set_num_threads(threads);
#endif
}

double now(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

std::string shape_name(index_t rows, index_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

// ---------------------------------------------------------------------------------------
// Comparison against a double reference

check_result compare(const float* got, const std::vector<double>& ref, double rtol, double atol) {
  check_result res;
  index_t bad = 0, worst_i = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double e = std::fabs(static_cast<double>(got[i]) - ref[i]);
    const double tol = atol + rtol * std::fabs(ref[i]);
    const double ratio = e / tol;
    if (!(e <= tol)) ++bad;
    if (!(ratio <= res.worst)) {  // also catches NaN
      res.worst = std::isnan(ratio) ? std::numeric_limits<double>::infinity() : ratio;
      worst_i = static_cast<index_t>(i);
    }
  }
  if (bad > 0) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%lld of %zu values outside |err| <= %g + %g*|ref|; worst at %lld: got %.9g, want %.9g",
                  static_cast<long long>(bad), ref.size(), atol, rtol, static_cast<long long>(worst_i),
                  static_cast<double>(got[worst_i]), ref[static_cast<std::size_t>(worst_i)]);
    res.error = buf;
  }
  return res;
}

check_result compare_exact(const std::int64_t* got, const std::vector<std::int64_t>& ref) {
  check_result res;
  index_t bad = 0, first = -1;
  for (std::size_t i = 0; i < ref.size(); ++i)
    if (got[i] != ref[i]) {
      if (first < 0) first = static_cast<index_t>(i);
      ++bad;
    }
  if (bad > 0) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "%lld of %zu indices differ; first at %lld: got %lld, want %lld", static_cast<long long>(bad),
                  ref.size(), static_cast<long long>(first), static_cast<long long>(got[first]),
                  static_cast<long long>(ref[static_cast<std::size_t>(first)]));
    res.error = buf;
    res.worst = std::numeric_limits<double>::infinity();
  }
  return res;
}

template <class T>
std::vector<unsigned char> bytes_of(const ct::tensor<T>& t) {
  const auto* p = reinterpret_cast<const unsigned char*>(t.data());
  return {p, p + t.size() * static_cast<index_t>(sizeof(T))};
}

template <class T>
void poison(const ct::tensor<T>& t) {
  if constexpr (std::is_floating_point_v<T>) t.fill(std::numeric_limits<T>::quiet_NaN());
  else t.fill(T(-1));
}

// ---------------------------------------------------------------------------------------
// Peers: Eigen (two builds) and oneDNN

struct eigen_api {
  const char* tag;
  void* (*make)(int);
  void (*destroy)(void*);
  const char* (*describe)();
  void (*softmax)(void*, const float*, float*, long, long);
  void (*log_softmax)(void*, const float*, float*, long, long);
  void (*layer_norm)(void*, const float*, const float*, const float*, float*, long, long, float);
  void (*logsumexp)(void*, const float*, float*, long, long);
  void (*argmax)(void*, const float*, std::int64_t*, long, long);
  void (*sum_last)(void*, const float*, float*, long, long);
  void (*sum_first)(void*, const float*, float*, long, long);
  void (*muladd)(void*, const float*, const float*, const float*, float*, long);
};

#define CT_EIGEN_API(NS, TAG)                                                                                  \
  eigen_api {                                                                                                  \
    TAG, &NS::make, &NS::destroy, &NS::describe, &NS::softmax, &NS::log_softmax, &NS::layer_norm, &NS::logsumexp, \
        &NS::argmax, &NS::sum_last, &NS::sum_first, &NS::muladd                                               \
  }

const std::vector<eigen_api>& eigen_apis() {
  static const std::vector<eigen_api> apis = {
#if CT_BENCH_EIGEN_BASE
      CT_EIGEN_API(eigen_base, "eigen"),
#endif
#if CT_BENCH_EIGEN_NATIVE
      CT_EIGEN_API(eigen_native, "eigen_native"),
#endif
  };
  return apis;
}

using eigen_call = std::function<void(const eigen_api&, void*)>;

void add_eigen(workload& w, const eigen_call& call) {
  for (const eigen_api& api : eigen_apis())
    for (int t : {1, 2})
      w.variants.push_back({std::string(api.tag) + "_" + std::to_string(t) + "t", t, false, [&api, call, t] {
                              std::shared_ptr<void> ctx(api.make(t), api.destroy);
                              return runner([ctx, &api, call] { call(api, ctx.get()); });
                            }});
}

#if CT_BENCH_HAVE_DNNL
namespace dn = dnnl;
using dt = dn::memory::data_type;
using tag = dn::memory::format_tag;

dn::engine& dnnl_engine() {
  static dn::engine e(dn::engine::kind::cpu, 0);
  return e;
}
dn::memory::desc md2(index_t r, index_t c) { return dn::memory::desc({r, c}, dt::f32, tag::ab); }
dn::memory::desc md1(index_t n) { return dn::memory::desc({n}, dt::f32, tag::a); }
dn::memory mem(const dn::memory::desc& d, const void* p) { return dn::memory(d, dnnl_engine(), const_cast<void*>(p)); }

std::string& dnnl_impl_log() {
  static std::string s;
  return s;
}

runner dnnl_runner(const dn::primitive& p, const dn::primitive_desc_base& pd,
                   std::unordered_map<int, dn::memory> args) {
  dnnl_impl_log() = pd.impl_info_str();
  dn::stream s(dnnl_engine());
  return [p, args = std::move(args), s]() mutable {
    p.execute(s, args);
    s.wait();
  };
}

// The builder runs after the OpenMP thread count is set (oneDNN sizes some kernels then).
void add_onednn(workload& w, const std::function<runner()>& build) {
  for (int t : {1, 2})
    w.variants.push_back({"onednn_" + std::to_string(t) + "t", t, false, [t, build] {
                            set_omp_threads(t);
                            return build();
                          }});
}
#endif

variant ct_variant(int threads, const std::function<void()>& f) {
  return {"ct_" + std::to_string(threads) + "t", threads, threads > 1, [f] { return runner(f); }};
}
variant naive_variant(const std::function<void()>& f) { return {"naive_1t", 1, false, [f] { return runner(f); }}; }

// ---------------------------------------------------------------------------------------
// Naive loops (single thread, project flags)

void naive_softmax(const float* x, float* y, index_t rows, index_t cols) {
  for (index_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float m = -std::numeric_limits<float>::infinity();
    for (index_t j = 0; j < cols; ++j) m = std::max(m, xr[j]);
    float s = 0;
    for (index_t j = 0; j < cols; ++j) {
      yr[j] = std::exp(xr[j] - m);
      s += yr[j];
    }
    const float inv = 1.0f / s;
    for (index_t j = 0; j < cols; ++j) yr[j] *= inv;
  }
}

void naive_log_softmax(const float* x, float* y, index_t rows, index_t cols) {
  for (index_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float m = -std::numeric_limits<float>::infinity();
    for (index_t j = 0; j < cols; ++j) m = std::max(m, xr[j]);
    float s = 0;
    for (index_t j = 0; j < cols; ++j) s += std::exp(xr[j] - m);
    const float ls = std::log(s);
    for (index_t j = 0; j < cols; ++j) yr[j] = xr[j] - m - ls;
  }
}

void naive_layer_norm(const float* x, const float* w, const float* b, float* y, index_t rows, index_t cols, float eps) {
  for (index_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float s = 0;
    for (index_t j = 0; j < cols; ++j) s += xr[j];
    const float mean = s / static_cast<float>(cols);
    float v = 0;
    for (index_t j = 0; j < cols; ++j) v += (xr[j] - mean) * (xr[j] - mean);
    const float rstd = 1.0f / std::sqrt(v / static_cast<float>(cols) + eps);
    for (index_t j = 0; j < cols; ++j) yr[j] = (xr[j] - mean) * rstd * w[j] + b[j];
  }
}

void naive_logsumexp(const float* x, float* y, index_t rows, index_t cols) {
  for (index_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float m = -std::numeric_limits<float>::infinity();
    for (index_t j = 0; j < cols; ++j) m = std::max(m, xr[j]);
    float s = 0;
    for (index_t j = 0; j < cols; ++j) s += std::exp(xr[j] - m);
    y[r] = m + std::log(s);
  }
}

void naive_argmax(const float* x, std::int64_t* y, index_t rows, index_t cols) {
  for (index_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    index_t best = 0;
    for (index_t j = 1; j < cols; ++j)
      if (xr[j] > xr[best]) best = j;
    y[r] = best;
  }
}

void naive_sum_last(const float* x, float* y, index_t rows, index_t cols) {
  for (index_t r = 0; r < rows; ++r) {
    float s = 0;
    for (index_t j = 0; j < cols; ++j) s += x[r * cols + j];
    y[r] = s;
  }
}

void naive_sum_first(const float* x, float* y, index_t rows, index_t cols) {
  for (index_t j = 0; j < cols; ++j) y[j] = 0;
  for (index_t r = 0; r < rows; ++r)
    for (index_t j = 0; j < cols; ++j) y[j] += x[r * cols + j];
}

void naive_muladd(const float* a, const float* b, const float* c, float* y, index_t n) {
  for (index_t i = 0; i < n; ++i) y[i] = a[i] * b[i] + c[i];
}

// ---------------------------------------------------------------------------------------
// Workloads

struct matrix_data {
  index_t rows = 0, cols = 0;
  ct::tensor<float> x, y;
  std::vector<double> ref;
};

// causal: row r keeps its first 1 + r * cols / rows elements and the rest are -inf (an
// attention score matrix under a causal mask, about half of it masked).
workload make_softmax(index_t rows, index_t cols, bool log, benchmark::TimeUnit unit, std::uint64_t seed,
                      bool causal = false) {
  auto d = std::make_shared<matrix_data>();
  d->rows = rows;
  d->cols = cols;
  d->x = ct::random_uniform<float>({rows, cols}, seed, -4.0f, 4.0f);
  if (causal)
    for (index_t r = 0; r < rows; ++r)
      for (index_t j = 1 + r * cols / rows; j < cols; ++j) d->x.data()[r * cols + j] = -INFINITY;
  d->y = ct::tensor<float>({rows, cols});
  workload w;
  w.name = std::string(log ? "log_softmax_" : causal ? "softmax_causal_" : "softmax_") + shape_name(rows, cols);
  w.bytes = 2.0 * static_cast<double>(rows * cols) * 4;
  w.unit = unit;
  w.poison = [d] { poison(d->y); };
  w.snapshot = [d] { return bytes_of(d->y); };
  w.release = [d] { std::vector<double>().swap(d->ref); };
  w.check = [d, log] {
    if (d->ref.empty()) {
      d->ref.resize(static_cast<std::size_t>(d->rows * d->cols));
      for (index_t r = 0; r < d->rows; ++r) {
        const float* xr = d->x.data() + r * d->cols;
        double m = -INFINITY, s = 0;
        for (index_t j = 0; j < d->cols; ++j) m = std::max(m, static_cast<double>(xr[j]));
        for (index_t j = 0; j < d->cols; ++j) s += std::exp(xr[j] - m);
        for (index_t j = 0; j < d->cols; ++j)
          d->ref[static_cast<std::size_t>(r * d->cols + j)] = log ? xr[j] - m - std::log(s) : std::exp(xr[j] - m) / s;
      }
    }
    return log ? compare(d->y.data(), d->ref, 1e-4, 1e-5) : compare(d->y.data(), d->ref, 1e-4, 1e-10);
  };
  for (int t : {1, 2})
    w.variants.push_back(ct_variant(t, [d, log] {
      if (log) ct::eval(ct::log_softmax(d->x, -1), d->y);
      else ct::eval(ct::softmax(d->x, -1), d->y);
    }));
  w.variants.push_back(naive_variant([d, log] {
    if (log) naive_log_softmax(d->x.data(), d->y.data(), d->rows, d->cols);
    else naive_softmax(d->x.data(), d->y.data(), d->rows, d->cols);
  }));
  add_eigen(w, [d, log](const eigen_api& api, void* ctx) {
    (log ? api.log_softmax : api.softmax)(ctx, d->x.data(), d->y.data(), d->rows, d->cols);
  });
#if CT_BENCH_HAVE_DNNL
  add_onednn(w, [d, log] {
    auto md = md2(d->rows, d->cols);
    dn::softmax_v2_forward::desc desc(dn::prop_kind::forward_inference,
                                      log ? dn::algorithm::softmax_log : dn::algorithm::softmax_accurate, md, md, 1);
    dn::softmax_v2_forward::primitive_desc pd(desc, dnnl_engine());
    return dnnl_runner(dn::softmax_v2_forward(pd), pd, {{DNNL_ARG_SRC, mem(md, d->x.data())}, {DNNL_ARG_DST, mem(md, d->y.data())}});
  });
#endif
  return w;
}

workload make_layer_norm(index_t rows, index_t cols, benchmark::TimeUnit unit, std::uint64_t seed) {
  struct data : matrix_data {
    ct::tensor<float> w, b;
  };
  constexpr float eps = 1e-5f;
  auto d = std::make_shared<data>();
  d->rows = rows;
  d->cols = cols;
  d->x = ct::random_uniform<float>({rows, cols}, seed, -2.0f, 3.0f);
  d->w = ct::random_uniform<float>({cols}, seed + 1, 0.5f, 1.5f);
  d->b = ct::random_uniform<float>({cols}, seed + 2, -0.5f, 0.5f);
  d->y = ct::tensor<float>({rows, cols});
  workload w;
  w.name = "layer_norm_" + shape_name(rows, cols);
  w.bytes = 2.0 * static_cast<double>(rows * cols) * 4 + 2.0 * static_cast<double>(cols) * 4;
  w.unit = unit;
  w.poison = [d] { poison(d->y); };
  w.snapshot = [d] { return bytes_of(d->y); };
  w.release = [d] { std::vector<double>().swap(d->ref); };
  w.check = [d] {
    if (d->ref.empty()) {
      d->ref.resize(static_cast<std::size_t>(d->rows * d->cols));
      for (index_t r = 0; r < d->rows; ++r) {
        const float* xr = d->x.data() + r * d->cols;
        double s = 0, v = 0;
        for (index_t j = 0; j < d->cols; ++j) s += xr[j];
        const double mean = s / static_cast<double>(d->cols);
        for (index_t j = 0; j < d->cols; ++j) v += (xr[j] - mean) * (xr[j] - mean);
        const double rstd = 1.0 / std::sqrt(v / static_cast<double>(d->cols) + eps);
        for (index_t j = 0; j < d->cols; ++j)
          d->ref[static_cast<std::size_t>(r * d->cols + j)] = (xr[j] - mean) * rstd * d->w.data()[j] + d->b.data()[j];
      }
    }
    return compare(d->y.data(), d->ref, 1e-4, 1e-4);
  };
  for (int t : {1, 2}) w.variants.push_back(ct_variant(t, [d] { ct::eval(ct::layer_norm(d->x, -1, eps, d->w, d->b), d->y); }));
  w.variants.push_back(naive_variant(
      [d] { naive_layer_norm(d->x.data(), d->w.data(), d->b.data(), d->y.data(), d->rows, d->cols, eps); }));
  add_eigen(w, [d](const eigen_api& api, void* ctx) {
    api.layer_norm(ctx, d->x.data(), d->w.data(), d->b.data(), d->y.data(), d->rows, d->cols, eps);
  });
#if CT_BENCH_HAVE_DNNL
  add_onednn(w, [d] {
    auto md = md2(d->rows, d->cols);
    dn::layer_normalization_forward::desc desc(dn::prop_kind::forward_inference, md, eps,
                                               dn::normalization_flags::use_scale | dn::normalization_flags::use_shift);
    dn::layer_normalization_forward::primitive_desc pd(desc, dnnl_engine());
    std::unordered_map<int, dn::memory> args = {{DNNL_ARG_SRC, mem(md, d->x.data())},
                                                {DNNL_ARG_DST, mem(md, d->y.data())},
                                                {DNNL_ARG_SCALE, mem(md1(d->cols), d->w.data())},
                                                {DNNL_ARG_SHIFT, mem(md1(d->cols), d->b.data())}};
    if (pd.mean_desc().get_size() != 0) {  // statistics outputs, if this implementation wants them
      args.emplace(DNNL_ARG_MEAN, dn::memory(pd.mean_desc(), dnnl_engine()));
      args.emplace(DNNL_ARG_VARIANCE, dn::memory(pd.variance_desc(), dnnl_engine()));
    }
    return dnnl_runner(dn::layer_normalization_forward(pd), pd, std::move(args));
  });
#endif
  return w;
}

// Row reductions of a rows x cols matrix: logsumexp, sum over the last axis or over axis 0.
enum class row_op { logsumexp, sum_last, sum_first };

workload make_reduction(row_op op, index_t rows, index_t cols, std::uint64_t seed) {
  auto d = std::make_shared<matrix_data>();
  d->rows = rows;
  d->cols = cols;
  const bool lse = op == row_op::logsumexp;
  d->x = lse ? ct::random_uniform<float>({rows, cols}, seed, -4.0f, 4.0f) : ct::random_uniform<float>({rows, cols}, seed, -1.0f, 1.0f);
  const index_t out = op == row_op::sum_first ? cols : rows;
  d->y = ct::tensor<float>({out});
  workload w;
  w.name = std::string(lse ? "logsumexp_rows_" : op == row_op::sum_last ? "sum_last_axis_" : "sum_axis0_") + shape_name(rows, cols);
  w.bytes = static_cast<double>(rows * cols) * 4 + static_cast<double>(out) * 4;
  w.poison = [d] { poison(d->y); };
  w.snapshot = [d] { return bytes_of(d->y); };
  w.release = [d] { std::vector<double>().swap(d->ref); };
  w.check = [d, op] {
    if (d->ref.empty()) {
      const float* x = d->x.data();
      if (op == row_op::sum_first) {
        d->ref.assign(static_cast<std::size_t>(d->cols), 0.0);
        for (index_t r = 0; r < d->rows; ++r)
          for (index_t j = 0; j < d->cols; ++j) d->ref[static_cast<std::size_t>(j)] += x[r * d->cols + j];
      } else {
        d->ref.resize(static_cast<std::size_t>(d->rows));
        for (index_t r = 0; r < d->rows; ++r) {
          const float* xr = x + r * d->cols;
          double m = -INFINITY, s = 0;
          if (op == row_op::logsumexp) {
            for (index_t j = 0; j < d->cols; ++j) m = std::max(m, static_cast<double>(xr[j]));
            for (index_t j = 0; j < d->cols; ++j) s += std::exp(xr[j] - m);
            d->ref[static_cast<std::size_t>(r)] = m + std::log(s);
          } else {
            for (index_t j = 0; j < d->cols; ++j) s += xr[j];
            d->ref[static_cast<std::size_t>(r)] = s;
          }
        }
      }
    }
    // Sums of 4096 values in [-1, 1] (|partial sums| ~ 40): 4e-3 allows a sequential float sum.
    return op == row_op::logsumexp ? compare(d->y.data(), d->ref, 1e-5, 1e-5) : compare(d->y.data(), d->ref, 1e-5, 4e-3);
  };
  for (int t : {1, 2})
    w.variants.push_back(ct_variant(t, [d, op] {
      if (op == row_op::logsumexp) ct::eval(ct::logsumexp(d->x, -1), d->y);
      else if (op == row_op::sum_last) ct::eval(ct::sum(d->x, -1), d->y);
      else ct::eval(ct::sum(d->x, 0), d->y);
    }));
  w.variants.push_back(naive_variant([d, op] {
    if (op == row_op::logsumexp) naive_logsumexp(d->x.data(), d->y.data(), d->rows, d->cols);
    else if (op == row_op::sum_last) naive_sum_last(d->x.data(), d->y.data(), d->rows, d->cols);
    else naive_sum_first(d->x.data(), d->y.data(), d->rows, d->cols);
  }));
  add_eigen(w, [d, op](const eigen_api& api, void* ctx) {
    auto f = op == row_op::logsumexp ? api.logsumexp : op == row_op::sum_last ? api.sum_last : api.sum_first;
    f(ctx, d->x.data(), d->y.data(), d->rows, d->cols);
  });
#if CT_BENCH_HAVE_DNNL
  if (op != row_op::logsumexp)  // oneDNN has no logsumexp primitive
    add_onednn(w, [d, op] {
      auto src = md2(d->rows, d->cols);
      auto dst = op == row_op::sum_last ? md2(d->rows, 1) : md2(1, d->cols);
      dn::reduction::desc desc(dn::algorithm::reduction_sum, src, dst, 0.0f, 0.0f);
      dn::reduction::primitive_desc pd(desc, dnnl_engine());
      return dnnl_runner(dn::reduction(pd), pd, {{DNNL_ARG_SRC, mem(src, d->x.data())}, {DNNL_ARG_DST, mem(dst, d->y.data())}});
    });
#endif
  return w;
}

workload make_argmax(index_t rows, index_t cols, std::uint64_t seed) {
  struct data {
    index_t rows, cols;
    ct::tensor<float> x;
    ct::tensor<std::int64_t> y;
    std::vector<std::int64_t> ref;
  };
  auto d = std::make_shared<data>();
  d->rows = rows;
  d->cols = cols;
  d->x = ct::random_uniform<float>({rows, cols}, seed, -4.0f, 4.0f);
  d->y = ct::tensor<std::int64_t>({rows});
  workload w;
  w.name = "argmax_rows_" + shape_name(rows, cols);
  w.bytes = static_cast<double>(rows * cols) * 4 + static_cast<double>(rows) * 8;
  w.poison = [d] { poison(d->y); };
  w.snapshot = [d] { return bytes_of(d->y); };
  w.release = [d] { std::vector<std::int64_t>().swap(d->ref); };
  w.check = [d] {
    if (d->ref.empty()) {
      d->ref.resize(static_cast<std::size_t>(d->rows));
      naive_argmax(d->x.data(), d->ref.data(), d->rows, d->cols);  // exact: first index of the maximum
    }
    return compare_exact(d->y.data(), d->ref);
  };
  for (int t : {1, 2}) w.variants.push_back(ct_variant(t, [d] { ct::eval(ct::argmax(d->x, -1), d->y); }));
  w.variants.push_back(naive_variant([d] { naive_argmax(d->x.data(), d->y.data(), d->rows, d->cols); }));
  add_eigen(w, [d](const eigen_api& api, void* ctx) { api.argmax(ctx, d->x.data(), d->y.data(), d->rows, d->cols); });
  return w;  // oneDNN has no argmax primitive
}

workload make_muladd(index_t n, std::uint64_t seed) {
  struct data {
    index_t n;
    ct::tensor<float> a, b, c, y;
    std::vector<double> ref;
  };
  auto d = std::make_shared<data>();
  d->n = n;
  d->a = ct::random_uniform<float>({n}, seed, -1.0f, 1.0f);
  d->b = ct::random_uniform<float>({n}, seed + 1, -1.0f, 1.0f);
  d->c = ct::random_uniform<float>({n}, seed + 2, -1.0f, 1.0f);
  d->y = ct::tensor<float>({n});
  workload w;
  w.name = "muladd_" + std::to_string(n / MiB) + "M";
  w.bytes = 4.0 * static_cast<double>(n) * 4;
  w.poison = [d] { poison(d->y); };
  w.snapshot = [d] { return bytes_of(d->y); };
  w.release = [d] { std::vector<double>().swap(d->ref); };
  w.check = [d] {
    if (d->ref.empty()) {
      d->ref.resize(static_cast<std::size_t>(d->n));
      for (index_t i = 0; i < d->n; ++i)
        d->ref[static_cast<std::size_t>(i)] = static_cast<double>(d->a.data()[i]) * d->b.data()[i] + d->c.data()[i];
    }
    return compare(d->y.data(), d->ref, 2e-7, 2e-7);
  };
  for (int t : {1, 2}) w.variants.push_back(ct_variant(t, [d] { ct::eval(d->a * d->b + d->c, d->y); }));
  // Opted in to split elementwise evaluation (settings::split_elementwise): 64 boxes over the pool.
  w.variants.push_back(ct_variant(2, [d] { ct::eval(d->a * d->b + d->c, d->y); }));
  w.variants.back().impl = "ct_2t_split";
  w.variants.back().split = true;
  w.variants.push_back(naive_variant([d] { naive_muladd(d->a.data(), d->b.data(), d->c.data(), d->y.data(), d->n); }));
  add_eigen(w, [d](const eigen_api& api, void* ctx) { api.muladd(ctx, d->a.data(), d->b.data(), d->c.data(), d->y.data(), d->n); });
#if CT_BENCH_HAVE_DNNL
  add_onednn(w, [d] {  // binary multiply with a binary-add post-op: one pass
    auto md = md1(d->n);
    dn::post_ops po;
    po.append_binary(dn::algorithm::binary_add, md);
    dn::primitive_attr attr;
    attr.set_post_ops(po);
    dn::binary::desc desc(dn::algorithm::binary_mul, md, md, md);
    dn::binary::primitive_desc pd(desc, attr, dnnl_engine());
    return dnnl_runner(dn::binary(pd), pd,
                       {{DNNL_ARG_SRC_0, mem(md, d->a.data())},
                        {DNNL_ARG_SRC_1, mem(md, d->b.data())},
                        {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, mem(md, d->c.data())},
                        {DNNL_ARG_DST, mem(md, d->y.data())}});
  });
#endif
  return w;
}

// Softmax and layer norm of a bfloat16 matrix into a bfloat16 result: half the bytes of the
// float32 workloads of the same shape, which run in the same process for the bound fractions.
// Peer: oneDNN's bf16 primitives (float32 arithmetic inside, like ct).
workload make_bf16_row_op(bool layer_norm, index_t rows, index_t cols, benchmark::TimeUnit unit, std::uint64_t seed) {
  struct data {
    index_t rows = 0, cols = 0;
    ct::tensor<ct::bfloat16> x, y, w, b;
    std::vector<double> ref;
  };
  constexpr float eps = 1e-5f;
  auto d = std::make_shared<data>();
  d->rows = rows;
  d->cols = cols;
  d->x = ct::eval(ct::cast<ct::bfloat16>(ct::random_uniform<float>({rows, cols}, seed, -4.0f, 4.0f)));
  d->w = ct::eval(ct::cast<ct::bfloat16>(ct::random_uniform<float>({cols}, seed + 1, 0.5f, 1.5f)));
  d->b = ct::eval(ct::cast<ct::bfloat16>(ct::random_uniform<float>({cols}, seed + 2, -0.5f, 0.5f)));
  d->y = ct::tensor<ct::bfloat16>({rows, cols});
  workload w;
  w.name = std::string(layer_norm ? "layer_norm_bf16_" : "softmax_bf16_") + shape_name(rows, cols);
  w.bytes = 2.0 * static_cast<double>(rows * cols) * 2;
  w.unit = unit;
  w.poison = [d] { d->y.fill(ct::bfloat16(std::numeric_limits<float>::quiet_NaN())); };
  w.snapshot = [d] { return bytes_of(d->y); };
  w.release = [d] { std::vector<double>().swap(d->ref); };
  w.check = [d, layer_norm] {
    const index_t n = d->rows * d->cols;
    if (d->ref.empty()) {
      d->ref.resize(static_cast<std::size_t>(n));
      for (index_t r = 0; r < d->rows; ++r) {
        std::vector<double> xr(static_cast<std::size_t>(d->cols));
        for (index_t j = 0; j < d->cols; ++j) xr[static_cast<std::size_t>(j)] = static_cast<double>(d->x(r, j));
        double m = -INFINITY, s = 0, v = 0;
        if (layer_norm) {
          for (double e : xr) s += e;
          m = s / static_cast<double>(d->cols);
          for (double e : xr) v += (e - m) * (e - m);
          const double rstd = 1.0 / std::sqrt(v / static_cast<double>(d->cols) + static_cast<double>(ct::bfloat16(eps)));
          for (index_t j = 0; j < d->cols; ++j)
            d->ref[static_cast<std::size_t>(r * d->cols + j)] =
                (xr[static_cast<std::size_t>(j)] - m) * rstd * static_cast<double>(d->w(j)) + static_cast<double>(d->b(j));
        } else {
          for (double e : xr) m = std::max(m, e);
          for (double e : xr) s += std::exp(e - m);
          for (index_t j = 0; j < d->cols; ++j)
            d->ref[static_cast<std::size_t>(r * d->cols + j)] = std::exp(xr[static_cast<std::size_t>(j)] - m) / s;
        }
      }
    }
    std::vector<float> got(static_cast<std::size_t>(n));
    for (index_t i = 0; i < n; ++i) got[static_cast<std::size_t>(i)] = static_cast<float>(d->y.data()[i]);
    return compare(got.data(), d->ref, 0x1p-8 * 1.01, layer_norm ? 1e-4 : 1e-10);  // one bf16 rounding
  };
  for (int t : {1, 2})
    w.variants.push_back(ct_variant(t, [d, layer_norm] {
      const ct::bfloat16 e(eps);
      if (layer_norm) ct::eval(ct::layer_norm(d->x, -1, e, d->w, d->b), d->y);
      else ct::eval(ct::softmax(d->x, -1), d->y);
    }));
#if CT_BENCH_HAVE_DNNL
  add_onednn(w, [d, layer_norm] {
    auto md = dn::memory::desc({d->rows, d->cols}, dt::bf16, tag::ab);
    if (!layer_norm) {
      dn::softmax_v2_forward::desc desc(dn::prop_kind::forward_inference, dn::algorithm::softmax_accurate, md, md, 1);
      dn::softmax_v2_forward::primitive_desc pd(desc, dnnl_engine());
      return dnnl_runner(dn::softmax_v2_forward(pd), pd, {{DNNL_ARG_SRC, mem(md, d->x.data())}, {DNNL_ARG_DST, mem(md, d->y.data())}});
    }
    // oneDNN takes float32 scale and shift with bf16 data.
    auto ws = std::make_shared<ct::tensor<float>>(ct::eval(ct::cast<float>(d->w)));
    auto bs = std::make_shared<ct::tensor<float>>(ct::eval(ct::cast<float>(d->b)));
    dn::layer_normalization_forward::desc desc(dn::prop_kind::forward_inference, md, eps,
                                               dn::normalization_flags::use_scale | dn::normalization_flags::use_shift);
    dn::layer_normalization_forward::primitive_desc pd(desc, dnnl_engine());
    std::unordered_map<int, dn::memory> args = {{DNNL_ARG_SRC, mem(md, d->x.data())},
                                                {DNNL_ARG_DST, mem(md, d->y.data())},
                                                {DNNL_ARG_SCALE, mem(md1(d->cols), ws->data())},
                                                {DNNL_ARG_SHIFT, mem(md1(d->cols), bs->data())}};
    if (pd.mean_desc().get_size() != 0) {
      args.emplace(DNNL_ARG_MEAN, dn::memory(pd.mean_desc(), dnnl_engine()));
      args.emplace(DNNL_ARG_VARIANCE, dn::memory(pd.variance_desc(), dnnl_engine()));
    }
    runner r = dnnl_runner(dn::layer_normalization_forward(pd), pd, std::move(args));
    return runner([r, ws, bs]() mutable { r(); });
  });
#endif
  return w;
}

// ---------------------------------------------------------------------------------------
// Bandwidth bounds (single thread)

// The bounds' buffers come from the allocator of ct's tensors (ct/core/storage.hpp: from 4 MiB
// on, 2 MiB aligned with the huge-page advice), so a bound and the workloads it bounds read
// memory mapped the same way.
struct storage_free {
  std::size_t bytes = 0;
  void operator()(unsigned char* p) const { ct::detail::release_storage(p, bytes); }
};
using buffer = std::unique_ptr<unsigned char, storage_free>;

buffer make_buffer(std::size_t bytes, unsigned char fill) {
  buffer b(static_cast<unsigned char*>(ct::detail::acquire_storage(bytes)), storage_free{bytes});
  std::memset(b.get(), fill, bytes);  // touch every page before timing
  return b;
}

// Integer xor is associative, so this vectorises without -ffast-math; one clone per ISA. The
// 64 independent lanes (eight 64-byte accumulators with AVX-512) matter: a loop with one
// accumulator reads DRAM about 30% slower on this machine (more loads in flight win).
__attribute__((target_clones("avx512f", "avx2", "default"))) std::uint64_t read_xor(const std::uint64_t* p, std::size_t n) {
  constexpr std::size_t lanes = 64;
  std::uint64_t acc[lanes] = {};
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    for (std::size_t k = 0; k < lanes; ++k) acc[k] ^= p[i + k];
  for (; i < n; ++i) acc[0] ^= p[i];
  std::uint64_t r = 0;
  for (std::size_t k = 0; k < lanes; ++k) r ^= acc[k];
  return r;
}
// xor with a run-time key (0) so that the compiler cannot turn the loop into memcpy.
__attribute__((target_clones("avx512f", "avx2", "default"))) void copy_loop(std::uint64_t* dst, const std::uint64_t* src,
                                                                             std::size_t n, std::uint64_t key) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = src[i] ^ key;
}

// The stream of a*b+c: three inputs read, one output written.
__attribute__((target_clones("avx512f", "avx2", "default"))) void read3_write1(std::uint64_t* d, const std::uint64_t* a,
                                                                                const std::uint64_t* b,
                                                                                const std::uint64_t* c, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) d[i] = a[i] ^ b[i] ^ c[i];
}

void register_bounds() {
  static buffer src = make_buffer(64 * MiB, 1), dst = make_buffer(64 * MiB, 2);
  static buffer src2 = make_buffer(64 * MiB, 3), src3 = make_buffer(64 * MiB, 4);
  benchmark::RegisterBenchmark("bound/read3_write1_64MiB", [](benchmark::State& st) {
    const std::size_t n = static_cast<std::size_t>(64 * MiB) / 8;
    for (auto _ : st) {
      read3_write1(reinterpret_cast<std::uint64_t*>(dst.get()), reinterpret_cast<const std::uint64_t*>(src.get()),
                   reinterpret_cast<const std::uint64_t*>(src2.get()), reinterpret_cast<const std::uint64_t*>(src3.get()), n);
      benchmark::ClobberMemory();
    }
    st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) * 4 * 64 * MiB);
  })->Unit(benchmark::kMillisecond)->UseRealTime();
  // The same stream split in halves over the caller and a one-thread Asio pool: what two
  // cores can move, the bound for a*b+c split over two workers (on a machine whose single
  // core nearly fills the memory system, two cannot be twice one).
  benchmark::RegisterBenchmark("bound/read3_write1_64MiB_2t", [](benchmark::State& st) {
    const std::size_t n = static_cast<std::size_t>(64 * MiB) / 8, h = n / 2;
    auto* d = reinterpret_cast<std::uint64_t*>(dst.get());
    const auto *a = reinterpret_cast<const std::uint64_t*>(src.get()), *b = reinterpret_cast<const std::uint64_t*>(src2.get()),
               *c = reinterpret_cast<const std::uint64_t*>(src3.get());
    boost::asio::thread_pool pool(1);
    for (auto _ : st) {
      ct_bench::run_both_halves(
          pool, [&] { read3_write1(d, a, b, c, h); }, [&] { read3_write1(d + h, a + h, b + h, c + h, n - h); });
      benchmark::ClobberMemory();
    }
    pool.join();
    st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) * 4 * 64 * MiB);
  })->Unit(benchmark::kMillisecond)->UseRealTime();
  for (index_t mib : {64, 32, 1}) {
    const auto bytes = static_cast<std::size_t>(mib * MiB);
    const auto unit = mib >= 32 ? benchmark::kMillisecond : benchmark::kMicrosecond;
    const std::string suffix = "_" + std::to_string(mib) + "MiB";
    benchmark::RegisterBenchmark(("bound/read" + suffix).c_str(), [bytes](benchmark::State& st) {
      for (auto _ : st) benchmark::DoNotOptimize(read_xor(reinterpret_cast<const std::uint64_t*>(src.get()), bytes / 8));
      st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) * static_cast<std::int64_t>(bytes));
    })->Unit(unit)->UseRealTime();
    benchmark::RegisterBenchmark(("bound/copy" + suffix).c_str(), [bytes](benchmark::State& st) {
      for (auto _ : st) {
        std::memcpy(dst.get(), src.get(), bytes);
        benchmark::ClobberMemory();
      }
      st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) * 2 * static_cast<std::int64_t>(bytes));
    })->Unit(unit)->UseRealTime();
    benchmark::RegisterBenchmark(("bound/copy_loop" + suffix).c_str(), [bytes](benchmark::State& st) {
      std::uint64_t key = 0;
      benchmark::DoNotOptimize(key);
      for (auto _ : st) {
        copy_loop(reinterpret_cast<std::uint64_t*>(dst.get()), reinterpret_cast<const std::uint64_t*>(src.get()), bytes / 8, key);
        benchmark::ClobberMemory();
      }
      st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) * 2 * static_cast<std::int64_t>(bytes));
    })->Unit(unit)->UseRealTime();
  }
}

// ---------------------------------------------------------------------------------------
// Machine check

// Pure register work split in two halves, run by the calling thread alone (1t) or with one
// half posted to a one-thread Asio pool (2t): how much of a second core this shared machine
// actually gives during the run. ct_2t / ct_1t speed-ups are only meaningful next to it.
std::uint64_t spin(std::uint64_t x, std::uint64_t iters) {
  for (std::uint64_t i = 0; i < iters; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  return x;
}

void register_machine_check(const std::string& when) {
  constexpr std::uint64_t half = 400000;  // about 0.3 ms per half
  benchmark::RegisterBenchmark(("machine_" + when + "/compute_1t").c_str(), [](benchmark::State& st) {
    for (auto _ : st) {
      benchmark::DoNotOptimize(spin(1, half));
      benchmark::DoNotOptimize(spin(2, half));
    }
  })->Unit(benchmark::kMicrosecond)->UseRealTime();
  benchmark::RegisterBenchmark(("machine_" + when + "/compute_2t").c_str(), [](benchmark::State& st) {
    boost::asio::thread_pool pool(1);
    for (auto _ : st) {
      std::uint64_t mine = 0, other = 0;
      ct_bench::run_both_halves(pool, [&] { mine = spin(1, half); }, [&] { other = spin(2, half); });
      benchmark::DoNotOptimize(mine);
      benchmark::DoNotOptimize(other);
    }
    pool.join();
  })->Unit(benchmark::kMicrosecond)->UseRealTime();
  // How long a task posted to an idle one-thread Asio pool takes to start running: the part
  // of a two-worker call the helper cannot work. A call of T on one thread can then take at
  // best (T + wake) / 2 on two.
  benchmark::RegisterBenchmark(("machine_" + when + "/asio_wake").c_str(), [](benchmark::State& st) {
    boost::asio::thread_pool pool(1);
    for (auto _ : st) {
      const auto idle_until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
      while (std::chrono::steady_clock::now() < idle_until) {
      }  // the pool thread goes back to sleep, as between two ct calls
      std::atomic<std::int64_t> started{0};
      const auto t0 = std::chrono::steady_clock::now();
      boost::asio::post(pool, [&] { started.store((std::chrono::steady_clock::now() - t0).count()); });
      while (started.load() == 0) {
      }
      st.SetIterationTime(static_cast<double>(started.load()) * 1e-9);
    }
    pool.join();
  })->Unit(benchmark::kMicrosecond)->UseManualTime();
}

// ---------------------------------------------------------------------------------------

bool selected(const std::string& name, const std::string& filter) {
  if (filter.empty() || filter == "all" || filter == ".") return true;
  if (filter[0] == '-') return !std::regex_search(name, std::regex(filter.substr(1)));
  return std::regex_search(name, std::regex(filter));
}

void validate(std::vector<workload>& all, const std::string& filter) {
  for (workload& w : all) {
    std::vector<unsigned char> ct1;
    for (const variant& v : w.variants) {
      const std::string name = w.name + "/" + v.impl;
      if (!selected(name, filter) && v.impl != "ct_1t") continue;
      std::string error;
      double worst = 0, cpu_ratio = 0;
      try {
        thread_setup threads(v);
        runner r = v.prepare();
        r();  // warm-up (first-touch of temporaries, lazy thread start)
        w.poison();
        const double c0 = now(CLOCK_PROCESS_CPUTIME_ID), t0 = now(CLOCK_MONOTONIC);
        r();
        const double c1 = now(CLOCK_PROCESS_CPUTIME_ID), t1 = now(CLOCK_MONOTONIC);
        cpu_ratio = (c1 - c0) / (t1 - t0);
        check_result c = w.check();
        error = c.error;
        worst = c.worst;
        if (v.impl == "ct_1t") ct1 = w.snapshot();
        else if (v.impl.rfind("ct_2t", 0) == 0 && w.snapshot() != ct1)
          error += std::string(error.empty() ? "" : "; ") + "not bitwise identical to ct_1t (ct promises determinism)";
      } catch (const std::exception& e) {
        error = std::string("threw: ") + e.what();
      }
      if (!selected(name, filter)) continue;
      std::string note;
#if CT_BENCH_HAVE_DNNL
      if (v.impl.rfind("onednn", 0) == 0) note = "  impl " + dnnl_impl_log();
#endif
      if (error.empty())
        std::fprintf(stderr, "validate %-40s ok   max|err|/tol %.3f  cpu/wall %.2f%s\n", name.c_str(), worst, cpu_ratio,
                     note.c_str());
      else
        std::fprintf(stderr, "WARNING: validate %s: %s\n", name.c_str(), error.c_str());
    }
    w.release();
  }
}

void print_environment() {
  std::fprintf(stderr, "bench_expr: ct backend=%s fma=%s; hardware threads %u\n",
               ct::current_backend() == ct::backend::simd ? "simd" : "scalar",
               ct::current_fma() == ct::fma_policy::fused ? "fused" : "separate", std::thread::hardware_concurrency());
  for (const eigen_api& api : eigen_apis()) std::fprintf(stderr, "  %s: Eigen SIMD %s\n", api.tag, api.describe());
  if (eigen_apis().empty()) std::fprintf(stderr, "  Eigen: not available\n");
#if CT_BENCH_HAVE_DNNL
  const dnnl_version_t* v = dnnl::version();
  std::fprintf(stderr, "  oneDNN %d.%d.%d (cpu runtime %s), ISA %d\n", v->major, v->minor, v->patch,
               v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : v->cpu_runtime == DNNL_RUNTIME_THREADPOOL ? "threadpool" : "other",
               static_cast<int>(dnnl::get_effective_cpu_isa()));
#if !CT_BENCH_HAVE_OMP
  std::fprintf(stderr, "WARNING: oneDNN found but not libgomp/omp.h: onednn_1t/_2t cannot set their thread count\n");
#endif
#else
  std::fprintf(stderr, "  oneDNN: not available\n");
#endif
}

}  // namespace

int main(int argc, char** argv) {
  // A modest default of 0.2 s per repetition (a full run with 5 repetitions takes a few
  // minutes); --benchmark_min_time on the command line overrides it. Set here rather than
  // with ->MinTime() so that benchmark names stay short.
  std::vector<char*> args(argv, argv + argc);
  static char default_min_time[] = "--benchmark_min_time=0.2";
  bool has_min_time = false;
  for (int i = 1; i < argc; ++i) has_min_time = has_min_time || std::strncmp(argv[i], "--benchmark_min_time", 20) == 0;
  if (!has_min_time) args.insert(args.begin() + 1, default_min_time);
  int count = static_cast<int>(args.size());
  args.push_back(nullptr);
  argv = args.data();
  argc = count;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  print_environment();

  std::vector<workload> all;
  constexpr auto ms = benchmark::kMillisecond, us = benchmark::kMicrosecond;
  all.push_back(make_softmax(4096, 4096, false, ms, 11));
  all.push_back(make_softmax(4096, 4096, true, ms, 12));
  all.push_back(make_softmax(2048, 2048, false, ms, 25, true));
  all.push_back(make_layer_norm(8192, 1024, ms, 13));
  all.push_back(make_reduction(row_op::logsumexp, 4096, 4096, 14));
  all.push_back(make_argmax(4096, 4096, 15));
  all.push_back(make_reduction(row_op::sum_last, 4096, 4096, 16));
  all.push_back(make_reduction(row_op::sum_first, 4096, 4096, 17));
  all.push_back(make_muladd(16 * MiB, 18));
  all.push_back(make_softmax(256, 1024, false, us, 19));
  all.push_back(make_layer_norm(512, 512, us, 20));
  all.push_back(make_softmax(4, 16, false, us, 21));  // per-call overhead
  all.push_back(make_layer_norm(4096, 4096, ms, 22));   // the float32 twin of layer_norm_bf16
  all.push_back(make_bf16_row_op(false, 4096, 4096, ms, 23));
  all.push_back(make_bf16_row_op(true, 4096, 4096, ms, 24));
  for (workload& w : all) {  // every ct_2t also with lingering helpers, right after it
    auto it = std::find_if(w.variants.begin(), w.variants.end(), [](const variant& v) { return v.impl == "ct_2t"; });
    if (it == w.variants.end()) continue;
    variant lingering = *it;
    lingering.impl = "ct_2t_linger";
    lingering.linger = std::chrono::microseconds(100);
    w.variants.insert(it + 1, lingering);
  }

  const std::string filter = benchmark::GetBenchmarkFilter();
  if (std::getenv("CT_BENCH_NO_VALIDATE") == nullptr) validate(all, filter);
  else for (workload& w : all) w.release();

  register_machine_check("start");
  register_bounds();
  for (workload& w : all)
    for (variant& v : w.variants) {
      const workload* wp = &w;
      const variant* vp = &v;
      benchmark::RegisterBenchmark((w.name + "/" + v.impl).c_str(), [wp, vp](benchmark::State& st) {
        thread_setup threads(*vp);
        runner r;
        try {
          r = vp->prepare();
        } catch (const std::exception& e) {
          // A peer without this case on this CPU (oneDNN has no bf16 softmax without
          // AVX-512): reported as skipped, not fatal for the rest of the run.
          st.SkipWithError(("set-up failed: " + std::string(e.what())).c_str());
          return;
        }
        for (auto _ : st) {
          r();
          benchmark::ClobberMemory();
        }
        st.SetBytesProcessed(static_cast<std::int64_t>(static_cast<double>(st.iterations()) * wp->bytes));
      })->Unit(w.unit)->UseRealTime();
    }
  register_machine_check("end");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
