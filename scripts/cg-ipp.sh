#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Instructions per packet of flowgate's packet path, counted by valgrind
# (callgrind): deterministic for a given binary and traffic, whatever else
# the machine does, where this VM's wall-clock samples of one binary spread
# by 30-170% and cannot resolve a few percent.  Collects inside
# fg_worker_burst only (and its LTO clones: fg_worker_burst*) (parse, signature, lookup, decisions, rewrite, TX
# buffering: everything but the driver's RX burst and the housekeeping
# between bursts) and divides by the packets that entered it (the bench's
# rx_total).  Hit path: use few flows (--flows 1000: the 2 warm-up packets
# per flow are ~0.1% of what a run sends; the path's instructions do not
# depend on the table's size, which only changes its cache misses).
# --new-flows: every packet is a new flow.
#
#   scripts/cg-ipp.sh BENCH_BINARY [flowgate-bench dataplane options...]
#   e.g. scripts/cg-ipp.sh build/bench/flowgate-bench --flows 1000 --mode dsr-ipip
# Prints the bench's JSON line with "cg_ir" and "ir_per_pkt" added.
# CG_FN=fg_worker_main collects the whole worker loop instead (RX, housekeeping,
# the control mailbox: what a /metrics scrape asks of a worker).
# Needs no hugepages: it runs the bench with --no-huge (FG_BENCH_MEM), as
# EAL under valgrind cannot map hugepages (with some free, the bench would
# try them and fail: "Cannot allocate VA space for memseg list").
set -euo pipefail
export FG_BENCH_MEM=${FG_BENCH_MEM:---no-huge -m 4096 --no-shconf}
BIN=${1:?usage: cg-ipp.sh BENCH_BINARY [dataplane options]}; shift
T=$(mktemp -d /tmp/cg-ipp.XXXXXX); trap 'rm -rf "$T"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$T/cg.out" --toggle-collect="${CG_FN:-fg_worker_burst*}" \
	"$BIN" dataplane "$@" --seconds "${SECS:-2}" --no-testpmd --json > "$T/res" 2> "$T/err" ||
	{ tail -20 "$T/err" >&2; exit 1; }
# a bench with window markers (FGB_HAVE_CALLGRIND) dumps at the window's
# edges: the run is the sum of every dump
ir=$(for f in "$T"/cg.out*; do sed -n 's/^summary: //p;s/^totals: //p' "$f" | head -1; done |
	awk '{s += $1} END {printf "%.0f\n", s}')
tail -1 "$T/res" | python3 -c '
import json, sys
r = json.loads(sys.stdin.read()); ir = int(sys.argv[1])
r["cg_ir"] = ir
r["ir_per_pkt"] = round(ir / r["rx_total"], 1) if r.get("rx_total") else None
print(json.dumps(r))' "$ir"
