#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Sweeps `flowgate-bench inference` (issue 39): for each trace, offered
load and keep-alive, every scheduler (maglev, lc, maglev-load,
l7-least-loaded) on the same trace and connections (medians of 3 runs).
Writes the rows as JSON, a plot of TTFT p99 per scheduler (one panel per
trace and keep-alive, load on the x axis), and the compact table between
the inference markers of RESULTS.md.

    inference_sweep.py --fgb BUILD/bench/flowgate-bench --out RES/inference.json
        [--traces DIR] [--plot RES/plots/inference_ttft_p99.png] [--md bench/RESULTS.md]
        [--loads 0.5,0.8,0.9] [--keepalives 1,8,32] [--workers 4x1.0,2x0.5]

Traces: DIR/AzureLLMInferenceTrace_{conv,code}.csv (default
bench/results/traces); a missing one is said, never replaced.
"""
import argparse
import json
import os
import subprocess
import sys

BEGIN, END = "<!-- inference:begin -->", "<!-- inference:end -->"
SCHEDS = ["maglev", "lc", "maglev-load", "l7-least-loaded"]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(a, path, load, keep):
    cmd = [a.fgb, "inference", "--trace", path, "--scheduler", "all", "--load", load,
           "--keepalive", keep, "--workers", a.workers, "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode or not r.stdout.strip():
        raise RuntimeError(f"{' '.join(cmd)}: rc {r.returncode}: {r.stderr}")
    shown = os.path.relpath(path, ROOT) if path.startswith(ROOT) else path
    rows = json.loads(r.stdout)
    for o in rows:
        o["command"] = " ".join(["flowgate-bench"] + cmd[1:3] + [shown] + cmd[4:])
    return rows


def plot(rows, out, traces, keeps):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("inference_sweep: no matplotlib (python3-matplotlib): plot skipped", file=sys.stderr)
        return
    fig, axes = plt.subplots(len(traces), len(keeps), figsize=(4 * len(keeps), 3.2 * len(traces)),
                             squeeze=False)
    for i, t in enumerate(traces):
        for j, k in enumerate(keeps):
            ax = axes[i][j]
            for s in SCHEDS:
                pts = sorted((r["load"], r["ttft_p99_ms"] / 1000) for r in rows
                             if r["trace"] == t and r["keepalive"] == k and r["scheduler"] == s)
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=s)
            ax.set_yscale("log")
            ax.set_title(f"{t.replace('AzureLLMInferenceTrace_', '').replace('.csv', '')}, keepalive {k:g}",
                         fontsize=9)
            ax.set_xlabel("offered load")
            ax.set_ylabel("TTFT p99 (s, log)")
            ax.grid(True, which="both", alpha=0.3)
            if i == 0 and j == 0:
                ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=100)


def table(rows, traces, loads, keeps):
    by = {(r["trace"], r["load"], r["keepalive"], r["scheduler"]): r for r in rows}
    t = ["| trace | load | keepalive | TTFT p99 ms: maglev / lc / maglev-load / l7 | "
         "maglev-load vs maglev, vs l7 | e2e p99 s: maglev-load / l7 | moved |",
         "|---|---|---|---|---|---|---|"]
    for tr in traces:
        for ld in loads:
            for k in keeps:
                g = [by.get((tr, ld, k, s)) for s in SCHEDS]
                if not all(g):
                    continue
                m, lc, ml, l7 = g
                t.append(f"| {tr.replace('AzureLLMInferenceTrace_', '').replace('.csv', '')} "
                         f"| {ld:.1f} | {k:g} | {m['ttft_p99_ms']:.0f} / {lc['ttft_p99_ms']:.0f} / "
                         f"**{ml['ttft_p99_ms']:.0f}** / {l7['ttft_p99_ms']:.0f} | "
                         f"{ml['ttft_p99_ms'] / m['ttft_p99_ms']:.3f}, "
                         f"{ml['ttft_p99_ms'] / l7['ttft_p99_ms']:.2f} | "
                         f"{ml['e2e_p99_ms'] / 1000:.1f} / {l7['e2e_p99_ms'] / 1000:.1f} | "
                         f"{ml['moved_connections']} |")
    r0 = rows[0]
    cmd = r0["command"]
    for flag, val in (("--load", f"{r0['load']:.1f}"), ("--keepalive", f"{r0['keepalive']:g}")):
        cmd = cmd.replace(f"{flag} {val}", f"{flag} {flag[2:].upper()}", 1)
    t.append("")
    t.append(f"Command per row: `{cmd.replace('_conv.csv', '_TRACE.csv')}` (medians of "
             f"{r0['runs']} runs, seeds {r0['seed']}..{r0['seed'] + r0['runs'] - 1}; raw "
             "`results/inference.json`, plot `results/plots/inference_ttft_p99.png`).")
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fgb", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--traces", default=os.path.join(ROOT, "bench/results/traces"))
    ap.add_argument("--plot")
    ap.add_argument("--md")
    ap.add_argument("--loads", default="0.5,0.8,0.9")
    ap.add_argument("--keepalives", default="1,8,32")
    ap.add_argument("--workers", default="4x1.0,2x0.5")
    a = ap.parse_args()
    rows, traces = [], []
    for name in ("conv", "code"):
        path = os.path.join(a.traces, f"AzureLLMInferenceTrace_{name}.csv")
        if not os.path.exists(path):
            print(f"inference_sweep: {path} absent (scripts/fetch-llm-traces.sh): skipped",
                  file=sys.stderr)
            continue
        traces.append(os.path.basename(path))
        for load in a.loads.split(","):
            for keep in a.keepalives.split(","):
                rows += run(a, path, load, keep)
    if not rows:
        print("inference_sweep: no trace: nothing measured", file=sys.stderr)
        return 1
    with open(a.out, "w") as f:
        json.dump(rows, f, indent=1)
    loads = sorted({r["load"] for r in rows})
    keeps = sorted({r["keepalive"] for r in rows})
    if a.plot:
        plot(rows, a.plot, traces, keeps)
    if a.md:
        md = open(a.md).read()
        if BEGIN in md and END in md:
            head, rest = md.split(BEGIN, 1)
            _, tail = rest.split(END, 1)
            md = head + BEGIN + "\n" + "\n".join(table(rows, traces, loads, keeps)) + "\n" + END + tail
            open(a.md, "w").write(md)
        else:
            print("inference_sweep: no inference markers in " + a.md, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
