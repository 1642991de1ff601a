#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Summarizes an A/B run of scripts/device-ab.sh: per (mode, hits|new-flows)
the median Mpps of build A (before) and B (after), B/A, and the drops each
saw.  Usage: fg_ab.py ab.jsonl [--markdown]"""
import json
import statistics
import sys


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    runs = {}
    with open(argv[1]) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            key = (r["mode"], "new-flows" if r["new_flows"] else "hits")
            runs.setdefault(key, {}).setdefault(r["build"], []).append(r)
    md = "--markdown" in argv
    if md:
        print("| mode | traffic | A Mpps (median) | B Mpps (median) | B/A | median of pairs B/A | A samples | B samples | drops A/B |")
        print("|---|---|---:|---:|---:|---:|---|---|---|")
    worst = None
    for (mode, kind), by in sorted(runs.items()):
        a = [r["mpps"] for r in by.get("A", [])]
        b = [r["mpps"] for r in by.get("B", [])]
        if not a or not b:
            continue
        ma, mb = statistics.median(a), statistics.median(b)
        ratio = mb / ma if ma else 0
        # the machine's speed drifts between rounds: the i-th A and the
        # i-th B ran back to back, so their ratio is drift-free
        pairs = [y / x for x, y in zip(a, b) if x]
        pm = statistics.median(pairs) if pairs else 0
        worst = ratio if worst is None else min(worst, ratio)
        da = max(r["drops"] for r in by["A"])
        db = max(r["drops"] for r in by["B"])
        if md:
            print(f"| {mode} | {kind} | {ma:.3f} | {mb:.3f} | {ratio:.3f} | {pm:.3f} | "
                  f"{', '.join(f'{x:.2f}' for x in a)} | {', '.join(f'{x:.2f}' for x in b)} | {da}/{db} |")
        else:
            print(f"{mode:9s} {kind:9s} A {ma:7.3f}  B {mb:7.3f}  B/A {ratio:.3f}  "
                  f"pairs {pm:.3f} ({', '.join(f'{x:.2f}' for x in pairs)})  drops {da}/{db}")
    if worst is not None and not md:
        print(f"worst B/A: {worst:.3f}")
    # scrape cost: S (B with a /metrics scraper) against B, dsr-ipip hits
    by = runs.get(("dsr-ipip", "hits"), {})
    if by.get("S") and by.get("B"):
        mb = statistics.median(r["mpps"] for r in by["B"])
        ms = statistics.median(r["mpps"] for r in by["S"])
        print(f"scrape every 100 ms: {ms:.3f} vs {mb:.3f} Mpps without "
              f"({(1 - ms / mb) * 100:+.1f}% cost), dsr-ipip hits, medians")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
