// What operation selectors cost a call (docs/selectors.md, docs/performance.md):
//  select/hook_none         the test every selectable call makes when no selector is
//                           registered or bound (one global, one thread-local read)
//  select/dot8_none         a whole ct::dot of 8 floats with no selector: the hook inside
//  select/dot8_declined     the same with one registered selector that declines: the
//                           description of the call is built and the selector asked
//  select/softmax_4x16_*    a small fused softmax, likewise
//  select/sgemm_1024_ct, select/sgemm_1024_cblas_rowsR   ct's GEMM and the CBLAS selector
//                           with groups of R rows, one thread (with OpenBLAS only)
#include <benchmark/benchmark.h>

#include <string>

#include "ct/ct.hpp"
#include "../support/machine_context.hpp"
#ifdef CT_BENCH_HAVE_OPENBLAS
#include "ct/select/cblas.hpp"
#endif

namespace {

ct::kernel decline(const ct::call_info&) { return {}; }

void hook_none(benchmark::State& st) {
  for (auto _ : st) benchmark::DoNotOptimize(ct::detail::selectors_possible());
}

void dot8(benchmark::State& st, bool declining) {
  auto x = ct::random_uniform<float>({8}, 1, -1.0f, 1.0f);
  ct::selector_id id{};
  if (declining) id = ct::add_selector(ct::operation::dot, decline);
  for (auto _ : st) benchmark::DoNotOptimize(ct::dot(x, x));
  if (declining) ct::remove_selector(id);
}

void softmax_small(benchmark::State& st, bool declining) {
  auto x = ct::random_uniform<float>({4, 16}, 2, -1.0f, 1.0f);
  ct::tensor<float> y({4, 16});
  ct::selector_id id{};
  if (declining) id = ct::add_selector(ct::operation::eval, decline);
  for (auto _ : st) {
    ct::eval(ct::softmax(x, -1), y);
    benchmark::DoNotOptimize(y.data());
  }
  if (declining) ct::remove_selector(id);
}

#ifdef CT_BENCH_HAVE_OPENBLAS
void sgemm(benchmark::State& st, bool blas, ct::index_t rows_per_group) {
  const ct::index_t n = 1024;
  auto a = ct::random_uniform<float>({n, n}, 3, -1.0f, 1.0f);
  auto b = ct::random_uniform<float>({n, n}, 4, -1.0f, 1.0f);
  ct::tensor<float> c({n, n});
  ct::selector_id id{};
  if (blas) {
    ct::cblas_options o;
    o.rows_per_group = rows_per_group;
    id = ct::add_selector(ct::operation::matmul, ct::cblas_selector(o));
  }
  for (auto _ : st) {
    ct::matmul(a, b, c);
    benchmark::DoNotOptimize(c.data());
  }
  if (blas) ct::remove_selector(id);
  st.counters["GFLOPS"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate,
                                             benchmark::Counter::kIs1000);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  benchmark::RegisterBenchmark("select/hook_none", hook_none);
  benchmark::RegisterBenchmark("select/dot8_none", dot8, false);
  benchmark::RegisterBenchmark("select/dot8_declined", dot8, true);
  benchmark::RegisterBenchmark("select/softmax_4x16_none", softmax_small, false);
  benchmark::RegisterBenchmark("select/softmax_4x16_declined", softmax_small, true);
#ifdef CT_BENCH_HAVE_OPENBLAS
  benchmark::RegisterBenchmark("select/sgemm_1024_ct", sgemm, false, 0)->UseRealTime()->Unit(benchmark::kMillisecond);
  for (ct::index_t rows : {64, 128, 256, 1024})
    benchmark::RegisterBenchmark(("select/sgemm_1024_cblas_rows" + std::to_string(rows)).c_str(), sgemm, true, rows)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
#endif
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
