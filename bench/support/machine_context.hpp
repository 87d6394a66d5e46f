// bench/support/machine_context.hpp — every benchmark program includes this: it adds the CPU
// (ct::this_machine(): name, family, model, caches), the SIMD target and the tuning in force
// (ct::current_tuning(), with CT_TUNING applied) and the GEMM blocking it gives to the context
// Google Benchmark prints before the results and writes into the JSON, so a number can always
// be tied to its machine and parameters (docs/tuning.md).
#pragma once
#include <benchmark/benchmark.h>

#include <string>

#include "ct/ct.hpp"

namespace ct_bench {

inline bool add_machine_context() {
  const ct::machine_description& m = ct::this_machine();
  benchmark::AddCustomContext("ct_cpu", ct::describe(m));
  benchmark::AddCustomContext("ct_simd_target", ct::simd_target_name());
  const ct::tuning& t = ct::current_tuning();
  benchmark::AddCustomContext("ct_tuning", ct::describe(t));
  std::string blocking;
  for (bool f64 : {false, true}) {
    const ct::gemm_blocking g = ct::gemm_blocking_for(t, f64);
    blocking += std::string(f64 ? " f64" : "f32") + " MRxNR " + std::to_string(g.mr) + "x" + std::to_string(g.nr) +
                " KC " + std::to_string(g.kc) + " MC " + std::to_string(g.mc) + " NC " + std::to_string(g.nc);
  }
  benchmark::AddCustomContext("ct_gemm_blocking", blocking);
  return true;
}

// Registered before main runs (before benchmark::Initialize prints the context).
inline const bool machine_context_added = add_machine_context();

}  // namespace ct_bench
