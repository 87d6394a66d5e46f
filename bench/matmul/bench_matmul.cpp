// bench/matmul/bench_matmul.cpp — ct::matmul beside its peers, in one run.
//
// Reported counters: GFLOPS (2*M*N*K per product) for products, GB/s (matrix bytes read)
// for matrix-vector products. "1t" = one thread, "2t" = two threads (ct: ct::asio_executor
// over a boost::asio::thread_pool, caller + 1 helper; OpenBLAS: openblas_set_num_threads(2)).
// BM_fma_peak_* is a register-only FMA loop: the single-core ceiling of this machine.
// Peers are compiled in when found (CT_BENCH_HAVE_OPENBLAS / EIGEN / DNNL).
// Ratios: bench/matmul/summarize.py over the JSON output (docs/performance.md).
#include <benchmark/benchmark.h>

#include <boost/asio/thread_pool.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ct/asio.hpp"
#include "ct/ct.hpp"
#include "../support/machine_context.hpp"
#include "ct/ops/matmul.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#ifdef CT_BENCH_HAVE_OPENBLAS
#include <cblas.h>
#endif
#ifdef CT_BENCH_HAVE_EIGEN
#include <Eigen/Core>
#endif
#ifdef CT_BENCH_HAVE_DNNL
#include <dlfcn.h>

#include <dnnl.hpp>
#endif

namespace {

using ct::index_t;

// ------------------------------------------------------------------ inputs

template <class T>
const ct::tensor<T>& input(const ct::dims& shape, std::uint64_t seed) {
  static std::map<std::pair<std::string, std::uint64_t>, ct::tensor<T>> cache;
  auto key = std::make_pair(shape.str(), seed);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, ct::random_uniform<T>(shape, seed, ct::to_element<T>(-1), ct::to_element<T>(1))).first;
  return it->second;
}

boost::asio::thread_pool& helper_pool() {
  static boost::asio::thread_pool pool(1);  // the caller is the second worker
  return pool;
}

void set_flops(benchmark::State& state, double flops) {
  state.counters["GFLOPS"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
void set_bytes(benchmark::State& state, double bytes) {
  state.counters["GBps"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// ------------------------------------------------------------------ FMA peak

#if defined(__x86_64__)
// 24 independent register chains of vfmadd: enough to cover 2 pipes x 4 cycles latency.
__attribute__((target("avx512f"))) __attribute__((noinline)) float fma_loop_avx512(std::int64_t iters) {
  __m512 acc[24];
  for (int i = 0; i < 24; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
  for (std::int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 24
    for (int i = 0; i < 24; ++i) acc[i] = _mm512_fmadd_ps(acc[i], m, a);
  }
  __m512 s = acc[0];
  for (int i = 1; i < 24; ++i) s = _mm512_add_ps(s, acc[i]);
  return _mm512_reduce_add_ps(s);
}
__attribute__((target("avx512f"))) __attribute__((noinline)) double fma_loop_avx512d(std::int64_t iters) {
  __m512d acc[24];
  for (int i = 0; i < 24; ++i) acc[i] = _mm512_set1_pd(static_cast<double>(i) * 1e-3);
  const __m512d m = _mm512_set1_pd(0.999999), a = _mm512_set1_pd(1e-7);
  for (std::int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 24
    for (int i = 0; i < 24; ++i) acc[i] = _mm512_fmadd_pd(acc[i], m, a);
  }
  __m512d s = acc[0];
  for (int i = 1; i < 24; ++i) s = _mm512_add_pd(s, acc[i]);
  return _mm512_reduce_add_pd(s);
}

// The ceiling of a GEMM micro-kernel's loop on this machine: ct's 12 x 32 float shape (per
// step of k two B vectors loaded, twelve A values broadcast from memory, 24 FMAs), its panels
// (12 x 128 and 128 x 32 floats, 22 KiB) in L1, the C tile added to memory per call. The gap
// between this and BM_fma_peak_f32 is the cost of feeding the FMA units from L1 on this core
// (docs/performance.md): no GEMM with that kernel shape can run above it.
__attribute__((target("avx512f"))) __attribute__((noinline)) void l1_kernel_avx512(const float* a, const float* b,
                                                                                   float* c) {
  __m512 c0[12], c1[12];
  for (int i = 0; i < 12; ++i) c0[i] = c1[i] = _mm512_setzero_ps();
  for (int p = 0; p < 128; ++p) {
    const __m512 b0 = _mm512_loadu_ps(b + 32 * p), b1 = _mm512_loadu_ps(b + 32 * p + 16);
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) {
      const __m512 ai = _mm512_set1_ps(a[12 * p + i]);
      c0[i] = _mm512_fmadd_ps(ai, b0, c0[i]);
      c1[i] = _mm512_fmadd_ps(ai, b1, c1[i]);
    }
  }
  for (int i = 0; i < 12; ++i) {
    _mm512_storeu_ps(c + 32 * i, _mm512_add_ps(_mm512_loadu_ps(c + 32 * i), c0[i]));
    _mm512_storeu_ps(c + 32 * i + 16, _mm512_add_ps(_mm512_loadu_ps(c + 32 * i + 16), c1[i]));
  }
}
void BM_fma_l1_kernel_f32(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx512f")) return state.SkipWithError("no AVX-512");
  std::vector<float> a(12 * 128, 1e-3f), b(128 * 32, 1e-3f), c(12 * 32, 0.0f);
  constexpr int calls = 4096;
  for (auto _ : state) {
    for (int r = 0; r < calls; ++r) l1_kernel_avx512(a.data(), b.data(), c.data());
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  set_flops(state, 2.0 * 12 * 32 * 128 * calls);
}

void BM_fma_peak_f32(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx512f")) return state.SkipWithError("no AVX-512");
  const std::int64_t iters = 1 << 20;
  for (auto _ : state) {
    std::int64_t n = iters;
    benchmark::DoNotOptimize(n);  // an opaque argument: the call cannot be hoisted out
    benchmark::DoNotOptimize(fma_loop_avx512(n));
  }
  set_flops(state, 2.0 * 16 * 24 * static_cast<double>(iters));
}
void BM_fma_peak_f64(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx512f")) return state.SkipWithError("no AVX-512");
  const std::int64_t iters = 1 << 20;
  for (auto _ : state) {
    std::int64_t n = iters;
    benchmark::DoNotOptimize(n);
    benchmark::DoNotOptimize(fma_loop_avx512d(n));
  }
  set_flops(state, 2.0 * 8 * 24 * static_cast<double>(iters));
}
BENCHMARK(BM_fma_peak_f32)->UseRealTime();
BENCHMARK(BM_fma_peak_f64)->UseRealTime();
BENCHMARK(BM_fma_l1_kernel_f32)->UseRealTime();
#endif

// ------------------------------------------------------------------ ct

// a @ b into a preallocated destination, one thread or two (Asio).
template <class T>
void run_ct(benchmark::State& state, const ct::dims& as, const ct::dims& bs, int threads, double flops,
            double bytes = 0) {
  const auto& a = input<T>(as, 1);
  const auto& b = input<T>(bs, 2);
  auto c = ct::matmul(a, b);
  std::unique_ptr<ct::executor_scope> scope;
  if (threads == 2) scope = std::make_unique<ct::executor_scope>(ct::asio_executor(helper_pool(), 2));
  for (auto _ : state) {
    ct::matmul(a, b, c);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  if (flops > 0) set_flops(state, flops);
  if (bytes > 0) set_bytes(state, bytes);
}

void BM_sgemm_ct_1t(benchmark::State& s) {
  const index_t n = s.range(0);
  run_ct<float>(s, {n, n}, {n, n}, 1, 2.0 * n * n * n);
}
void BM_sgemm_ct_2t(benchmark::State& s) {
  const index_t n = s.range(0);
  run_ct<float>(s, {n, n}, {n, n}, 2, 2.0 * n * n * n);
}
void BM_batched_ct_1t(benchmark::State& s) { run_ct<float>(s, {64, 128, 128}, {64, 128, 128}, 1, 64 * 2.0 * 128 * 128 * 128); }
void BM_batched_ct_2t(benchmark::State& s) { run_ct<float>(s, {64, 128, 128}, {64, 128, 128}, 2, 64 * 2.0 * 128 * 128 * 128); }
void BM_sgemv_ct_1t(benchmark::State& s) {
  const index_t m = s.range(0), k = s.range(1);
  run_ct<float>(s, {m, k}, {k}, 1, 2.0 * m * k, 4.0 * m * k);
}
void BM_sgemv_ct_2t(benchmark::State& s) {
  const index_t m = s.range(0), k = s.range(1);
  run_ct<float>(s, {m, k}, {k}, 2, 2.0 * m * k, 4.0 * m * k);
}
// bfloat16 operands and result, float32 accumulation: compared with BM_sgemm_ct_* of the same n.
void BM_bf16gemm_ct_1t(benchmark::State& s) {
  const index_t n = s.range(0);
  run_ct<ct::bfloat16>(s, {n, n}, {n, n}, 1, 2.0 * n * n * n);
}
void BM_bf16gemm_ct_2t(benchmark::State& s) {
  const index_t n = s.range(0);
  run_ct<ct::bfloat16>(s, {n, n}, {n, n}, 2, 2.0 * n * n * n);
}
void BM_dgemm_ct_1t(benchmark::State& s) {
  const index_t n = s.range(0);
  run_ct<double>(s, {n, n}, {n, n}, 1, 2.0 * n * n * n);
}
void BM_dgemm_ct_2t(benchmark::State& s) {
  const index_t n = s.range(0);
  run_ct<double>(s, {n, n}, {n, n}, 2, 2.0 * n * n * n);
}

// ------------------------------------------------------------------ OpenBLAS

#ifdef CT_BENCH_HAVE_OPENBLAS
template <class T>
void run_blas_gemm(benchmark::State& state, index_t n, int threads) {
  openblas_set_num_threads(threads);
  const auto& a = input<T>({n, n}, 1);
  const auto& b = input<T>({n, n}, 2);
  ct::tensor<T> c({n, n});
  const int N = static_cast<int>(n);
  for (auto _ : state) {
    if constexpr (std::is_same_v<T, float>)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, a.data(), N, b.data(), N, 0.0f, c.data(), N);
    else
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0, a.data(), N, b.data(), N, 0.0, c.data(), N);
    benchmark::ClobberMemory();
  }
  openblas_set_num_threads(1);
  set_flops(state, 2.0 * n * n * n);
}
void BM_sgemm_openblas_1t(benchmark::State& s) { run_blas_gemm<float>(s, s.range(0), 1); }
void BM_sgemm_openblas_2t(benchmark::State& s) { run_blas_gemm<float>(s, s.range(0), 2); }
void BM_dgemm_openblas_1t(benchmark::State& s) { run_blas_gemm<double>(s, s.range(0), 1); }
void BM_dgemm_openblas_2t(benchmark::State& s) { run_blas_gemm<double>(s, s.range(0), 2); }

void BM_batched_openblas_1t(benchmark::State& state) {
  openblas_set_num_threads(1);
  const auto& a = input<float>({64, 128, 128}, 1);
  const auto& b = input<float>({64, 128, 128}, 2);
  ct::tensor<float> c({64, 128, 128});
  for (auto _ : state) {
    for (int i = 0; i < 64; ++i)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 128, 128, 128, 1.0f, a.data() + i * 16384, 128,
                  b.data() + i * 16384, 128, 0.0f, c.data() + i * 16384, 128);
    benchmark::ClobberMemory();
  }
  set_flops(state, 64 * 2.0 * 128 * 128 * 128);
}

void run_blas_gemv(benchmark::State& state, int threads) {
  openblas_set_num_threads(threads);
  const index_t m = state.range(0), k = state.range(1);
  const auto& a = input<float>({m, k}, 1);
  const auto& x = input<float>({k}, 2);
  ct::tensor<float> y({m});
  for (auto _ : state) {
    cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(m), static_cast<int>(k), 1.0f, a.data(),
                static_cast<int>(k), x.data(), 1, 0.0f, y.data(), 1);
    benchmark::ClobberMemory();
  }
  openblas_set_num_threads(1);
  set_flops(state, 2.0 * m * k);
  set_bytes(state, 4.0 * m * k);
}
void BM_sgemv_openblas_1t(benchmark::State& s) { run_blas_gemv(s, 1); }
void BM_sgemv_openblas_2t(benchmark::State& s) { run_blas_gemv(s, 2); }
#endif

// ------------------------------------------------------------------ Eigen (one thread)

#ifdef CT_BENCH_HAVE_EIGEN
template <class T>
using emat = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
template <class T>
using emat_out = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;

template <class T>
void run_eigen_gemm(benchmark::State& state, index_t n) {
  const auto& a = input<T>({n, n}, 1);
  const auto& b = input<T>({n, n}, 2);
  ct::tensor<T> c({n, n});
  emat<T> A(a.data(), n, n), B(b.data(), n, n);
  emat_out<T> C(c.data(), n, n);
  for (auto _ : state) {
    C.noalias() = A * B;
    benchmark::ClobberMemory();
  }
  set_flops(state, 2.0 * n * n * n);
}
void BM_sgemm_eigen_1t(benchmark::State& s) { run_eigen_gemm<float>(s, s.range(0)); }
void BM_dgemm_eigen_1t(benchmark::State& s) { run_eigen_gemm<double>(s, s.range(0)); }

void BM_batched_eigen_1t(benchmark::State& state) {
  const auto& a = input<float>({64, 128, 128}, 1);
  const auto& b = input<float>({64, 128, 128}, 2);
  ct::tensor<float> c({64, 128, 128});
  for (auto _ : state) {
    for (int i = 0; i < 64; ++i) {
      emat<float> A(a.data() + i * 16384, 128, 128), B(b.data() + i * 16384, 128, 128);
      emat_out<float> C(c.data() + i * 16384, 128, 128);
      C.noalias() = A * B;
    }
    benchmark::ClobberMemory();
  }
  set_flops(state, 64 * 2.0 * 128 * 128 * 128);
}

void BM_sgemv_eigen_1t(benchmark::State& state) {
  const index_t m = state.range(0), k = state.range(1);
  const auto& a = input<float>({m, k}, 1);
  const auto& x = input<float>({k}, 2);
  ct::tensor<float> y({m});
  emat<float> A(a.data(), m, k);
  Eigen::Map<const Eigen::VectorXf> X(x.data(), k);
  Eigen::Map<Eigen::VectorXf> Y(y.data(), m);
  for (auto _ : state) {
    Y.noalias() = A * X;
    benchmark::ClobberMemory();
  }
  set_flops(state, 2.0 * m * k);
  set_bytes(state, 4.0 * m * k);
}
#endif

// ------------------------------------------------------------------ oneDNN (one thread)

#ifdef CT_BENCH_HAVE_DNNL
// Debian's oneDNN runs on OpenMP (libgomp); pin it to one thread through the runtime that
// libdnnl already loaded, without linking OpenMP ourselves.
void dnnl_single_thread() {
  using set_fn = void (*)(int);
  static auto fn = reinterpret_cast<set_fn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  if (fn) fn(1);
}

void run_dnnl(benchmark::State& state, const dnnl::memory::dims& ad, const dnnl::memory::dims& bd,
              const dnnl::memory::dims& cd, const ct::dims& as, const ct::dims& bs, double flops) {
  dnnl_single_thread();
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  const tag t = ad.size() == 3 ? tag::abc : tag::ab;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  dnnl::memory::desc a_md(ad, dt::f32, t), b_md(bd, dt::f32, t), c_md(cd, dt::f32, t);
  const auto& a = input<float>(as, 1);
  const auto& b = input<float>(bs, 2);
  ct::tensor<float> out(ct::dims(std::vector<index_t>(cd.begin(), cd.end())));
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), eng);
  dnnl::matmul prim(pd);
  dnnl::memory am(a_md, eng, a.data()), bm(b_md, eng, b.data()), cm(c_md, eng, out.data());
  for (auto _ : state) {
    prim.execute(strm, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
    strm.wait();
    benchmark::ClobberMemory();
  }
  set_flops(state, flops);
}
void BM_sgemm_dnnl_1t(benchmark::State& s) {
  const index_t n = s.range(0);
  run_dnnl(s, {n, n}, {n, n}, {n, n}, {n, n}, {n, n}, 2.0 * n * n * n);
}
void BM_batched_dnnl_1t(benchmark::State& s) {
  run_dnnl(s, {64, 128, 128}, {64, 128, 128}, {64, 128, 128}, {64, 128, 128}, {64, 128, 128},
           64 * 2.0 * 128 * 128 * 128);
}
#endif

// ------------------------------------------------------------------ registration

// 4096³ is the large case (about 0.6 s per product at one thread): B's packed block
// and C no longer fit any cache, so it shows what the blocking does at the memory level.
void gemm_sizes(benchmark::internal::Benchmark* b) {
  for (int n : {256, 1024, 2048, 4096}) b->Arg(n);
  b->UseRealTime()->Unit(benchmark::kMillisecond);
}
void gemv_sizes(benchmark::internal::Benchmark* b) {
  b->Args({4096, 4096})->Args({11008, 4096})->UseRealTime()->Unit(benchmark::kMicrosecond);
}
void one_size(benchmark::internal::Benchmark* b) { b->UseRealTime()->Unit(benchmark::kMillisecond); }

BENCHMARK(BM_sgemm_ct_1t)->Apply(gemm_sizes);
BENCHMARK(BM_sgemm_ct_2t)->Apply(gemm_sizes);
#ifdef CT_BENCH_HAVE_DNNL
BENCHMARK(BM_sgemm_dnnl_1t)->Apply(gemm_sizes);
#endif
#ifdef CT_BENCH_HAVE_OPENBLAS
BENCHMARK(BM_sgemm_openblas_1t)->Apply(gemm_sizes);
BENCHMARK(BM_sgemm_openblas_2t)->Apply(gemm_sizes);
#endif
#ifdef CT_BENCH_HAVE_EIGEN
BENCHMARK(BM_sgemm_eigen_1t)->Apply(gemm_sizes);
#endif

BENCHMARK(BM_batched_ct_1t)->Apply(one_size);
BENCHMARK(BM_batched_ct_2t)->Apply(one_size);
#ifdef CT_BENCH_HAVE_DNNL
BENCHMARK(BM_batched_dnnl_1t)->Apply(one_size);
#endif
#ifdef CT_BENCH_HAVE_OPENBLAS
BENCHMARK(BM_batched_openblas_1t)->Apply(one_size);
#endif
#ifdef CT_BENCH_HAVE_EIGEN
BENCHMARK(BM_batched_eigen_1t)->Apply(one_size);
#endif

BENCHMARK(BM_sgemv_ct_1t)->Apply(gemv_sizes);
BENCHMARK(BM_sgemv_ct_2t)->Apply(gemv_sizes);
#ifdef CT_BENCH_HAVE_OPENBLAS
BENCHMARK(BM_sgemv_openblas_1t)->Apply(gemv_sizes);
BENCHMARK(BM_sgemv_openblas_2t)->Apply(gemv_sizes);
#endif
#ifdef CT_BENCH_HAVE_EIGEN
BENCHMARK(BM_sgemv_eigen_1t)->Apply(gemv_sizes);
#endif

BENCHMARK(BM_bf16gemm_ct_1t)->Arg(1024)->Apply(one_size);
BENCHMARK(BM_bf16gemm_ct_2t)->Arg(1024)->Apply(one_size);

BENCHMARK(BM_dgemm_ct_1t)->Arg(1024)->Apply(one_size);
BENCHMARK(BM_dgemm_ct_2t)->Arg(1024)->Apply(one_size);
#ifdef CT_BENCH_HAVE_OPENBLAS
BENCHMARK(BM_dgemm_openblas_1t)->Arg(1024)->Apply(one_size);
BENCHMARK(BM_dgemm_openblas_2t)->Arg(1024)->Apply(one_size);
#endif
#ifdef CT_BENCH_HAVE_EIGEN
BENCHMARK(BM_dgemm_eigen_1t)->Arg(1024)->Apply(one_size);
#endif

}  // namespace

BENCHMARK_MAIN();
