#!/usr/bin/python3
"""Plots for docs/performance.md from Google Benchmark JSON files (scripts/bench output).

usage: scripts/plots.py OUT_DIR RESULT.json [RESULT.json ...]

Reads the median aggregates of bench_expr, bench_matmul and bench_encoded results and writes
  OUT_DIR/peers_expr.png    ct (one thread) against each peer per fused-expression workload,
  OUT_DIR/peers_matmul.png  the same for the matmul family,
  OUT_DIR/scaling.png       throughput with two threads over one thread, ct and peers.
Every bar is a ratio of two medians measured in the same run (> 1: ct is faster, or two threads
are faster than one). The machine (lscpu model name, family, model) goes into each title, so an
image never travels without the CPU it was measured on.
"""
import json
import os
import re
import subprocess
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")  # files only; no display on a build machine
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402


def cpu_label():
    fields = {}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown CPU"
    return (f"{fields.get('Model name', '?')}, family {fields.get('CPU family', '?')} "
            f"model {fields.get('Model', '?')}, {fields.get('CPU(s)', '?')} CPUs")


# A benchmark name -> (workload, implementation, threads), or None for names that are not a
# comparison (bounds, peaks, machine probes).
PATTERNS = [
    # bench_expr: softmax_4096x4096/ct_1t, layer_norm_8192x1024/onednn_2t, .../ct_2t_linger
    (re.compile(r"^(?P<w>[a-z0-9_]+_\d+(?:x\d+)?M?)/(?P<impl>[a-z_]+?)_(?P<t>\d+)t$"), "expr"),
    # bench_matmul: BM_sgemm_ct_1t/1024, BM_sgemv_openblas_2t/4096/4096, BM_batched_ct_1t
    (re.compile(r"^BM_(?P<w>[a-z0-9]+)_(?P<impl>[a-z]+)_(?P<t>\d+)t(?P<args>(?:/\d+)*)$"), "matmul"),
    # bench_encoded: gemv/q4_K/4096x4096/1t, prompt/sgemm/128x4096x4096/2t
    (re.compile(r"^(?P<kind>gemv|prompt)/(?P<impl>[a-z0-9_]+)/(?P<w>[0-9x]+)/(?P<t>\d+)t$"), "encoded"),
]


def parse(name):
    for pattern, family in PATTERNS:
        m = pattern.match(name)
        if not m:
            continue
        g = m.groupdict()
        if family == "expr":
            return family, g["w"], g["impl"], int(g["t"])
        if family == "matmul":
            args = g["args"].strip("/").replace("/", "x")
            workload = f"{g['w']} {args}".strip()
            if workload == "batched":
                workload = "batched 64 x 128^3"  # bench_matmul's one batched size
            return family, workload, g["impl"], int(g["t"])
        return family, f"{g['kind']} {g['w']}", g["impl"], int(g["t"])
    return None


def load(paths):
    """Median real time (seconds) per (family, workload, impl, threads)."""
    times = {}
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        for b in data["benchmarks"]:
            if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
                continue
            if b.get("error_occurred") or not b.get("real_time"):
                continue  # a case a peer could not set up on this CPU (skipped by the bench)
            name = b.get("run_name", b["name"])
            for suffix in ("/real_time", "/manual_time", "/min_time:0.500"):
                name = name.replace(suffix, "")
            key = parse(name)
            if key is None:
                continue
            scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
            times[key] = b["real_time"] * scale
    return times


PEER_NAMES = {"eigen": "Eigen", "eigen_native": "Eigen (native)", "onednn": "oneDNN",
              "dnnl": "oneDNN", "openblas": "OpenBLAS", "xtensor": "xtensor", "naive": "naive loop"}



def compact_bars(ax, rows, order, colors, label_of, from_one):
    """Horizontal bars grouped per workload, only for the series each workload has.
    rows: (workload, series, value); order: series in legend order. Returns tick positions."""
    workloads = []
    for w, _, _ in rows:
        if w not in workloads:
            workloads.append(w)
    y, ticks, seen = 0.0, [], set()
    for w in workloads:
        here = sorted([(n, q) for rw, n, q in rows if rw == w], key=lambda t: order.index(t[0]))
        start = y
        for n, q in here:
            kwargs = {"label": label_of(n)} if n not in seen else {}
            seen.add(n)
            color = colors[order.index(n) % len(colors)]
            if from_one:
                ax.barh(y, q - 1, left=1, height=0.8, color=color, **kwargs)
            else:
                ax.barh(y, q, height=0.8, color=color, **kwargs)
            right = q >= 1 or not from_one
            ax.text(q, y, f" {q:.2f} " if right else f"{q:.2f} ", va="center", ha="left" if right else "right",
                    fontsize=8)
            y += 1
        ticks.append((start + y - 1) / 2)
        y += 0.8  # gap between workloads
    ax.set_yticks(ticks)
    ax.set_yticklabels(workloads)
    ax.set_ylim(y - 0.5, -1)
    return len(workloads), y

def peers_plot(times, family, title, path, label):
    """ct 1t time ratio against every peer's 1t time, grouped per workload."""
    by_workload = defaultdict(dict)
    for (fam, w, impl, t), s in times.items():
        if fam == family and t == 1:
            by_workload[w][impl] = s
    rows = []
    for w in sorted(by_workload):
        impls = by_workload[w]
        if "ct" not in impls:
            continue
        for impl, s in sorted(impls.items()):
            if impl != "ct" and impl in PEER_NAMES:
                rows.append((w, PEER_NAMES[impl], s / impls["ct"]))
    if not rows:
        return False
    peers = sorted({p for _, p, _ in rows})
    height = 0.24 * len(rows) + 0.2 * len({w for w, _, _ in rows}) + 1.6
    fig, ax = plt.subplots(figsize=(10, height))
    compact_bars(ax, rows, peers, plt.cm.tab10.colors, lambda p: f"vs {p}", True)
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_xscale("log")
    # Plain numbers at readable ratios instead of powers of ten.
    lo = min(min(q for _, _, q in rows) * 0.6, 0.9)  # room for the labels left of the bars
    hi = max(q for _, _, q in rows) * 1.25
    ticks = [t for t in (0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 20, 50) if lo <= t <= hi]
    ax.set_xlim(lo, hi)
    ax.xaxis.set_major_locator(matplotlib.ticker.FixedLocator(ticks))
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xlabel("peer time / ct time, one thread each (> 1: ct is faster; log scale)")
    ax.set_title(f"{title}\n{label}", fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def scaling_plot(times, path, label):
    """Two-thread over one-thread throughput for every (workload, impl) measured both ways."""
    rows = []
    for (fam, w, impl, t), s in sorted(times.items()):
        if t != 2:
            continue
        one = times.get((fam, w, impl, 1))
        if one is not None:
            name = "ct" if impl == "ct" else PEER_NAMES.get(impl, impl)
            rows.append((f"{w}", name, one / s))
    if not rows:
        return False
    names = sorted({n for _, n, _ in rows}, key=lambda n: (n != "ct", n))
    height = 0.24 * len(rows) + 0.2 * len({w for w, _, _ in rows}) + 1.6
    fig, ax = plt.subplots(figsize=(10, height))
    compact_bars(ax, rows, names, plt.cm.tab10.colors, lambda n: n, False)
    ax.axvline(1.0, color="black", linewidth=1)
    ax.axvline(2.0, color="gray", linewidth=1, linestyle="--")
    ax.set_xlim(0, max(2.2, max(q for _, _, q in rows) * 1.15))
    ax.set_xlabel("time with 1 thread / time with 2 threads (dashed: perfect scaling)")
    ax.set_title(f"Thread scaling, 1 -> 2 threads (ct: caller + one helper of a boost::asio pool)\n{label}",
                 fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out, paths = sys.argv[1], sys.argv[2:]
    os.makedirs(out, exist_ok=True)
    times = load(paths)
    label = cpu_label()
    made = []
    if peers_plot(times, "expr", "Fused expressions: ct against peers", f"{out}/peers_expr.png", label):
        made.append("peers_expr.png")
    if peers_plot(times, "matmul", "Matrix products: ct against peers", f"{out}/peers_matmul.png", label):
        made.append("peers_matmul.png")
    if scaling_plot(times, f"{out}/scaling.png", label):
        made.append("scaling.png")
    if not made:
        sys.exit("plots.py: no comparable benchmarks in " + ", ".join(paths))
    print("wrote " + ", ".join(f"{out}/{m}" for m in made))


if __name__ == "__main__":
    main()
