#!/usr/bin/env python3
"""Ratios of ct's matmul benchmarks to their peers, from one bench_matmul JSON file.

usage: summarize.py build/bench/results/bench_matmul.json

Uses the median aggregates (run with --benchmark_repetitions=N). Rates are GFLOPS for
products and GB/s of matrix read for matrix-vector products; a ratio > 1 means ct is faster.
"""
import json
import sys


def load(path):
    with open(path) as f:
        data = json.load(f)
    rates, cpu_rates = {}, {}
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = b["run_name"] if "run_name" in b else b["name"]
        name = name.replace("/real_time", "")
        rate = b.get("GFLOPS", b.get("GBps"))
        if "GBps" in b:
            rate = b["GBps"]
        rates[name] = rate
        # The same rate measured by the calling thread's CPU time: on a shared, loaded machine
        # this is the fairer number for one-thread runs (it does not count time the thread
        # was descheduled). Meaningless for two-thread runs (the helper's CPU is not counted).
        if rate is not None and b.get("cpu_time"):
            cpu_rates[name] = rate * b["real_time"] / b["cpu_time"]
    return data.get("context", {}), rates, cpu_rates


def main():
    context, r, rc = load(sys.argv[1])
    print(f"host: {context.get('host_name', '?')}, {context.get('num_cpus', '?')} CPUs, "
          f"{context.get('mhz_per_cpu', '?')} MHz, load {context.get('load_avg', '?')}")
    rows = []

    def ratio(label, num, den, goal=None):
        a, b = r.get(num), r.get(den)
        if a is None or b is None:
            rows.append((label, "n/a", "", "", ""))
            return
        q = a / b
        one_thread = "_2t" not in num and "_2t" not in den
        qc = f"{rc[num] / rc[den]:.3f}" if one_thread and num in rc and den in rc else "-"
        verdict = "" if goal is None else ("meets" if q >= goal else "MISSES")
        rows.append((label, f"{q:.3f}", qc, f"{a:.1f} / {b:.1f}", f"{verdict} (goal >= {goal})" if goal else ""))

    peak32, peak64 = r.get("BM_fma_peak_f32"), r.get("BM_fma_peak_f64")
    if peak32:
        rows.append(("FMA peak f32 / f64 (GFLOPS, one core, real / cpu time)", f"{peak32:.1f}",
                     f"{rc.get('BM_fma_peak_f32', 0):.1f}", f"{peak64 or 0:.1f} / {rc.get('BM_fma_peak_f64', 0):.1f}", ""))
    # Goals of issue 21 (one thread unless stated): sgemm 1024³ and 4096³ >= 0.97x oneDNN and
    # >= 0.92 of the FMA peak, two workers >= 1.85x one, batched >= 0.95x oneDNN, sgemv >= 1.0x
    # the best of OpenBLAS and Eigen.
    for n in (256, 1024, 2048, 4096):
        goal_dnnl = 0.97 if n in (1024, 2048, 4096) else None
        goal_2t = 1.85 if n in (1024, 2048, 4096) else None
        goal_peak = 0.92 if n in (1024, 4096) else None
        ratio(f"sgemm {n}: ct 1t / oneDNN 1t", f"BM_sgemm_ct_1t/{n}", f"BM_sgemm_dnnl_1t/{n}", goal_dnnl)
        ratio(f"sgemm {n}: ct 1t / OpenBLAS 1t", f"BM_sgemm_ct_1t/{n}", f"BM_sgemm_openblas_1t/{n}")
        ratio(f"sgemm {n}: ct 1t / Eigen 1t", f"BM_sgemm_ct_1t/{n}", f"BM_sgemm_eigen_1t/{n}")
        ratio(f"sgemm {n}: ct 2t / ct 1t", f"BM_sgemm_ct_2t/{n}", f"BM_sgemm_ct_1t/{n}", goal_2t)
        ratio(f"sgemm {n}: ct 2t / OpenBLAS 2t", f"BM_sgemm_ct_2t/{n}", f"BM_sgemm_openblas_2t/{n}")
        ratio(f"sgemm {n}: ct 1t / FMA peak", f"BM_sgemm_ct_1t/{n}", "BM_fma_peak_f32", goal_peak)
        ratio(f"sgemm {n}: oneDNN 1t / FMA peak", f"BM_sgemm_dnnl_1t/{n}", "BM_fma_peak_f32")
    ratio("batched 64x128^3: ct 1t / oneDNN 1t", "BM_batched_ct_1t", "BM_batched_dnnl_1t", 0.95)
    ratio("batched 64x128^3: ct 1t / OpenBLAS 1t", "BM_batched_ct_1t", "BM_batched_openblas_1t")
    ratio("batched 64x128^3: ct 1t / Eigen 1t", "BM_batched_ct_1t", "BM_batched_eigen_1t")
    ratio("batched 64x128^3: ct 2t / ct 1t", "BM_batched_ct_2t", "BM_batched_ct_1t")
    for m, k in ((4096, 4096), (11008, 4096)):
        best = max((f"BM_sgemv_openblas_1t/{m}/{k}", f"BM_sgemv_eigen_1t/{m}/{k}"),
                   key=lambda name: r.get(name) or 0)
        ratio(f"sgemv {m}x{k}: ct 1t / best of OpenBLAS, Eigen 1t ({best.split('_')[2]})",
              f"BM_sgemv_ct_1t/{m}/{k}", best, 1.0)
        ratio(f"sgemv {m}x{k}: ct 2t / ct 1t", f"BM_sgemv_ct_2t/{m}/{k}", f"BM_sgemv_ct_1t/{m}/{k}")
    ratio("dgemm 1024: ct 1t / OpenBLAS 1t", "BM_dgemm_ct_1t/1024", "BM_dgemm_openblas_1t/1024", 0.9)
    ratio("dgemm 1024: ct 1t / Eigen 1t", "BM_dgemm_ct_1t/1024", "BM_dgemm_eigen_1t/1024")
    ratio("dgemm 1024: ct 2t / ct 1t", "BM_dgemm_ct_2t/1024", "BM_dgemm_ct_1t/1024")
    ratio("dgemm 1024: ct 2t / OpenBLAS 2t", "BM_dgemm_ct_2t/1024", "BM_dgemm_openblas_2t/1024")
    ratio("dgemm 1024: ct 1t / FMA peak f64", "BM_dgemm_ct_1t/1024", "BM_fma_peak_f64")

    width = max(len(x[0]) for x in rows)
    print(f"{'':{width}}   real    cpu  (real-time rates, ct / peer)")
    for label, q, qc, detail, verdict in rows:
        print(f"{label:{width}}  {q:>6} {qc:>6}  {detail:<16} {verdict}")


if __name__ == "__main__":
    main()
