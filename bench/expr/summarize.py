#!/usr/bin/env python3
"""Markdown tables and goal ratios from one bench_expr JSON file.

usage: summarize.py build/bench/results/bench_expr.json

Uses the median aggregates (run with --benchmark_repetitions=N
--benchmark_report_aggregates_only=true). Every benchmark reports wall-clock time; bytes are
input bytes read + output bytes written, GB = 1e9 bytes. Besides wall-clock ("real") rates,
the tables give rates by the calling thread's CPU time ("cpu"): on a shared, loaded machine
that is the fairer number for one-thread runs (it does not count time the thread was
descheduled); it is meaningless for two-thread runs and is not shown for them.
"""
import json
import sys

# Workloads: (name, bound used for "% of bound", goal vs best peer 1t, large?)
WORKLOADS = [
    ("softmax_4096x4096", "copy_64MiB", 2.0, True),
    ("log_softmax_4096x4096", "copy_64MiB", None, True),
    ("layer_norm_8192x1024", "copy_32MiB", 1.0, True),
    ("logsumexp_rows_4096x4096", "read_64MiB", 5.0, True),
    ("argmax_rows_4096x4096", "read_64MiB", 2.0, True),
    ("sum_last_axis_4096x4096", "read_64MiB", 1.0, True),
    ("sum_axis0_4096x4096", "read_64MiB", 1.0, True),
    ("muladd_16M", "read3_write1_64MiB", None, True),
    ("softmax_256x1024", "copy_1MiB", None, False),
    ("layer_norm_512x512", "copy_1MiB", None, False),
    ("softmax_4x16", None, None, False),
]
CACHE_RESIDENT = ["softmax_256x1024", "layer_norm_512x512"]
TINY = "softmax_4x16"


def load(path):
    with open(path) as f:
        data = json.load(f)
    med, cv = {}, {}
    for b in data["benchmarks"]:
        if b.get("run_type") != "aggregate":
            continue
        name = b["run_name"].replace("/real_time", "").replace("/manual_time", "")
        scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
        if b["aggregate_name"] == "median":
            real, cpu = b["real_time"] * scale, b["cpu_time"] * scale
            nbytes = b.get("bytes_per_second", 0.0) * real
            med[name] = {"real": real, "cpu": cpu, "bytes": nbytes}
        elif b["aggregate_name"] == "cv":
            cv[name] = b["real_time"]
    return data.get("context", {}), med, cv


def fmt_t(s):
    return f"{s * 1e3:.2f} ms" if s >= 1e-3 else f"{s * 1e6:.2f} µs"


def main():
    context, med, cv = load(sys.argv[1])
    gb = lambda n, k="real": med[n]["bytes"] / med[n][k] / 1e9
    one = lambda n: "_2t" not in n
    out = [f"host {context.get('host_name', '?')}, {context.get('num_cpus', '?')} CPUs, "
           f"{context.get('mhz_per_cpu', '?')} MHz; load average at start {context.get('load_avg', '?')}", ""]

    out += ["### Machine check: two-core speed-up available during the run", "",
            "Fixed register-only work done by one thread, or split over the caller and a one-thread Asio pool; "
            "2.0x means two free cores. ct_2t scaling can only be judged against this.", ""]
    for when in ("start", "end"):
        a, b = med.get(f"machine_{when}/compute_1t"), med.get(f"machine_{when}/compute_2t")
        if a and b:
            out.append(f"- {when} of run: 1t {fmt_t(a['real'])}, 2t {fmt_t(b['real'])}: speed-up {a['real'] / b['real']:.2f}x")
        w = med.get(f"machine_{when}/asio_wake")
        if w:
            out.append(f"- {when} of run: a task posted to the idle one-thread pool starts after {fmt_t(w['real'])}")
    out.append("")
    out += ["### Bandwidth bounds (one thread, same run)", "",
            "| bound | median real | GB/s real | GB/s cpu | cv |", "|---|---:|---:|---:|---:|"]
    for n in med:
        if n.startswith("bound/"):
            out.append(f"| {n} | {fmt_t(med[n]['real'])} | {gb(n):.1f} | {gb(n, 'cpu'):.1f} | {100 * cv.get(n, 0):.1f}% |")
    out.append("")

    out += ["### Every implementation (median of the repetitions)", "",
            "'x ct_1t' = this implementation's time / ct_1t's time, real (and cpu, one-thread runs only); > 1 means ct_1t is faster.", ""]
    for w, *_ in WORKLOADS:
        names = [n for n in med if n.split("/")[0] == w]
        if not names:
            continue
        base = med.get(f"{w}/ct_1t")
        out += [f"#### {w}", "", "| impl | median real | GB/s real | GB/s cpu | cv | x ct_1t real | x ct_1t cpu |",
                "|---|---:|---:|---:|---:|---:|---:|"]
        for n in names:
            m = med[n]
            rr = f"{m['real'] / base['real']:.2f}" if base else "-"
            rc = f"{m['cpu'] / base['cpu']:.2f}" if base and one(n) else "-"
            gc = f"{gb(n, 'cpu'):.2f}" if one(n) else "-"
            out.append(f"| {n.split('/')[1]} | {fmt_t(m['real'])} | {gb(n):.2f} | {gc} | {100 * cv.get(n, 0):.1f}% | {rr} | {rc} |")
        out.append("")

    out += ["### Goals (ratios from this run)", "",
            "| workload | best peer 1t | ct_1t speed-up vs best peer, real / cpu | goal | ct_1t % of bound, real / cpu | goal | ct_2t / ct_1t speed | ct_2t_linger / ct_1t |",
            "|---|---|---:|---:|---:|---:|---:|---:|"]
    for w, bound, goal, large in WORKLOADS:
        c1 = f"{w}/ct_1t"
        if c1 not in med:
            continue
        peers = [n for n in med if n.split("/")[0] == w and one(n) and not n.split("/")[1].startswith("ct_")]
        best = min(peers, key=lambda n: med[n]["real"]) if peers else None
        best_cpu = min(peers, key=lambda n: med[n]["cpu"]) if peers else None
        sp = f"{med[best]['real'] / med[c1]['real']:.2f} / {med[best_cpu]['cpu'] / med[c1]['cpu']:.2f}" if best else "-"
        if best and best_cpu != best:
            sp += f" (cpu best: {best_cpu.split('/')[1]})"
        g = f">= {goal:g}x" if goal else "-"
        pct = "-"
        if bound and f"bound/{bound}" in med:
            b = f"bound/{bound}"
            pct = f"{100 * gb(c1) / gb(b):.0f}% / {100 * gb(c1, 'cpu') / gb(b, 'cpu'):.0f}% of {bound}"
        pg = ">= 70%" if large else "-"
        c2 = f"{w}/ct_2t"
        sc = f"{med[c1]['real'] / med[c2]['real']:.2f}x" if c2 in med else "-"
        if w in CACHE_RESIDENT:
            sc += " (goal >= 1.7x"
            wake = med.get("machine_start/asio_wake")
            if wake:  # the helper starts `wake` late: at best (T + wake) / 2 on two workers
                sc += f"; at most {2 * med[c1]['real'] / (med[c1]['real'] + wake['real']):.2f}x with this wake-up"
            sc += ")"
        cl = f"{w}/ct_2t_linger"
        sl = f"{med[c1]['real'] / med[cl]['real']:.2f}x" if cl in med else "-"
        out.append(f"| {w} | {best.split('/')[1] + ' ' + fmt_t(med[best]['real']) if best else '-'} | {sp} | {g} | {pct} | {pg} | {sc} | {sl} |")
    out.append("")

    if f"{TINY}/ct_1t" in med and f"{TINY}/ct_2t" in med:
        a, b = med[f"{TINY}/ct_1t"], med[f"{TINY}/ct_2t"]
        nv = med.get(f"{TINY}/naive_1t")
        out += [f"### Per-call overhead ({TINY}: 4 groups)", "",
                f"- ct_1t {a['real'] * 1e6:.2f} µs (cpu {a['cpu'] * 1e6:.2f}), ct_2t {b['real'] * 1e6:.2f} µs"
                + (f", naive_1t {nv['real'] * 1e6:.3f} µs (cpu {nv['cpu'] * 1e6:.3f})" if nv else ""),
                f"- scheduling through the 2-worker Asio executor: ct_2t − ct_1t = {(b['real'] - a['real']) * 1e6:.2f} µs per call (goal <= 2 µs)"]
        if nv:
            out.append(f"- ct's fixed cost with no executor: ct_1t − naive_1t = {(a['real'] - nv['real']) * 1e6:.2f} µs real, "
                       f"{(a['cpu'] - nv['cpu']) * 1e6:.2f} µs cpu")
    print("\n".join(out))


if __name__ == "__main__":
    main()
