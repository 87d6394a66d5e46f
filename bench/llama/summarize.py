#!/usr/bin/env python3
"""The Llama example's numbers from one bench_llama JSON file: tokens/s for the prompt and for
generation, the weight bytes a generated token reads, and the fraction of the read bound
(bound/… measured in the same run, same thread count) that generation reaches.

usage: summarize.py build/bench/results/bench_llama.json

Uses the median aggregates (run with --benchmark_repetitions=N).
"""
import json
import sys


def load(path):
    with open(path) as f:
        data = json.load(f)
    rows = {}
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = (b["run_name"] if "run_name" in b else b["name"]).replace("/real_time", "")
        rows[name] = b
    return data.get("context", {}), rows


def main():
    context, rows = load(sys.argv[1])
    print(f"host: {context.get('host_name', '?')}, {context.get('num_cpus', '?')} CPUs, "
          f"load {context.get('load_avg', '?')}")
    print(f"{'format':6} {'threads':7} {'prompt tok/s':>12} {'gen tok/s':>10} {'weight MB':>10} "
          f"{'gen GB/s':>9} {'bound GB/s':>10} {'of bound':>8}")
    for fmt in ("q8_0", "q4_0", "q4_K"):
        for t in ("1t", "2t"):
            p = rows.get(f"llama/prompt/{fmt}/128/{t}")
            g = rows.get(f"llama/generate/{fmt}/{t}")
            b = rows.get(f"llama/bound/{fmt}/{t}")
            if not (p and g and b):
                continue
            print(f"{fmt:6} {t:7} {p['tokens/s']:12.1f} {g['tokens/s']:10.1f} {g['weight_MB']:10.1f} "
                  f"{g['GB/s'] / 1e9 if g['GB/s'] > 1e6 else g['GB/s']:9.2f} "
                  f"{b['GB/s'] / 1e9 if b['GB/s'] > 1e6 else b['GB/s']:10.2f} {g['GB/s'] / b['GB/s']:8.2f}")


if __name__ == "__main__":
    main()
