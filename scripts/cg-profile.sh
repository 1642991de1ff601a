#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Where a worker's instructions and cache misses go, per packet and by
# stage, in `flowgate-bench dataplane`'s measured window (issue 17's
# profile).  Runs the bench under valgrind's callgrind with its cache
# simulator; the bench dumps callgrind's counters when the window opens
# and again when it closes (FGB_HAVE_CALLGRIND): the second dump is the
# window, without the warm-up that opened the flows.  Counts, not cycles:
# this VM has no PMU (`perf stat -e instructions` is "not supported"), and counts
# are the same for a binary and its traffic whatever else runs.  The
# cache is valgrind's model of this machine's L1d and last level, not
# the hardware's: L1d as valgrind reads it from this CPU, the last level
# modelled as 32 MiB 16-way (CG_LL=size,assoc,line; this VM reports a
# 264 MiB L3 that no server has).  DLmr (last-level read misses) is what
# costs ~100 ns each.
#
#   scripts/cg-profile.sh [BENCH] [flowgate-bench dataplane options...]
#   e.g. scripts/cg-profile.sh build/bench/flowgate-bench --flows 1000000 --mode dsr-ipip
# Stages: self cost of each function, grouped by name (and by library for
# the drivers, whose symbols are stripped).
set -euo pipefail
cd "$(dirname "$0")/.."
# EAL under valgrind maps no hugepages (as scripts/cg-ipp.sh)
export FG_BENCH_MEM=${FG_BENCH_MEM:---no-huge -m 4096 --no-shconf}
BIN=${1:-build/bench/flowgate-bench}; shift || true
T=$(mktemp -d /tmp/cg-profile.XXXXXX); trap 'rm -rf "$T"' EXIT
valgrind --tool=callgrind --cache-sim=yes --LL="${CG_LL:-33554432,16,64}" --callgrind-out-file="$T/cg.out" \
	"$BIN" dataplane "$@" --seconds "${SECS:-2}" --no-baselines --json > "$T/res" 2> "$T/err" ||
	{ tail -20 "$T/err" >&2; exit 1; }
win=$(grep -l '^desc: Trigger: Client Request: window' "$T"/cg.out* | head -1)
[ -n "$win" ] || { echo "cg-profile: no window dump (bench built without valgrind/callgrind.h?)" >&2; exit 1; }
cp "$win" "$T/win"
callgrind_annotate --inclusive=no --threshold=100 "$win" > "$T/ann" 2>/dev/null
[ -n "${CG_KEEP:-}" ] && cp "$T/ann" "$CG_KEEP"
python3 - "$T/res" "$T/ann" <<'PY'
import json, re, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
pk = r["rx_mpps"] * r["seconds"] * 1e6
stages = [  # (stage, regex on "file:function [object]")
    ("RX (net_pcap driver)", r"librte_net_pcap"),
    ("TX (net_null driver)", r"librte_net_null"),
    ("mbuf pool", r"librte_mempool|rte_mempool|rte_pktmbuf"),
    ("parse", r"fg_pkt_parse"),
    ("signature", r"fg_pkt_sig|fg_rss"),
    ("conntrack lookup", r"ct_lookup|librte_hash"),
    ("state update", r"ct_update|ct_touch|ct_tcp_next"),
    ("flow decisions", r"fg_flow_|fg_lb_|fg_place|fg_neigh"),
    ("rewrite", r"fg_xlate"),
    ("housekeeping", r"housekeeping|ct_expire|ct_shard_poll|rte_rcu|ct_mbox"),
    ("worker loop, burst glue, TX buffer", r"fg_worker_"),
]
ev = None; rows = {}; col = None; total = None
for line in open(sys.argv[2]):
    line = line.rstrip("\n")
    if line.startswith("Events shown:"):
        ev = line.split(":", 1)[1].split()
        continue
    if ev and "file:function" in line:
        col = line.index("file:function")
        continue
    if ev is None or not line.strip() or line.startswith("-"):
        continue
    head, name = (line[:col], line[col:].strip()) if col else (line, "")
    if "PROGRAM TOTALS" in line:
        head, name = line.replace("PROGRAM TOTALS", ""), "PROGRAM TOTALS"
    toks = re.sub(r"\(\s*[\d.]+%\)", " ", head).split()
    if not all(t == "." or re.fullmatch(r"[\d,]+", t) for t in toks):
        continue
    vals = [0 if t == "." else int(t.replace(",", "")) for t in toks]
    if len(vals) != len(ev):
        continue
    if "PROGRAM TOTALS" in line:
        total = vals
        continue
    if col is None:
        continue
    # frames still on the stack when the window was dumped (the thread's
    # entry, the worker loop) are listed with the whole window's cost
    if total and vals[0] >= 0.99 * total[0]:
        continue
    st = next((s for s, rx in stages if re.search(rx, name)), "other")
    acc = rows.setdefault(st, [0] * len(ev))
    for i, v in enumerate(vals):
        acc[i] += v
want = [e for e in ("Ir", "D1mr", "D1mw", "DLmr", "DLmw") if e in ev]
print(f"cg-profile: {r['mode']}, {r['flows']} flows, order {r.get('order')}, "
      f"{int(pk)} packets in the window; per packet:")
print("| stage | " + " | ".join(want) + " |")
print("|---|" + "---:|" * len(want))
tot = [0] * len(ev)
for s in [s for s, _ in stages] + ["other"]:
    if s not in rows:
        continue
    v = rows[s]
    tot = [a + b for a, b in zip(tot, v)]
    print(f"| {s} | " + " | ".join(f"{v[ev.index(e)] / pk:.2f}" for e in want) + " |")
print("| **total** | " + " | ".join(f"**{total[ev.index(e)] / pk:.2f}**" for e in want) + " |")
if abs(tot[0] - total[0]) > 0.02 * total[0]:
    print(f"(the stages add up to {tot[0] / pk:.1f} Ir: the rest is below the listing's threshold "
          "or the self cost of the frames on the stack)")
PY
