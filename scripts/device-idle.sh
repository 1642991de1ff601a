#!/bin/bash
# Runs on the device machine (16 cores, quiet) with .carry/scale carried
# (scripts/device-scaling-pack.sh): what `--idle-sleep` costs a loaded
# worker.  `flowgate-bench dataplane` (the daemon's fg_worker_main on a
# saturating net_pcap replay, 1M flows) alternates runs without and with
# `--idle-sleep 200`, ROUNDS times per mode, so that drift on the machine
# hits both alike; one JSON line per run in $OUT/idle.jsonl, the medians
# (with/without per mode) in $OUT/idle.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
C=${FG_PACK:-$PWD/.carry/scale}
W=/root/fgidle     # not under /tmp: EAL refuses -d in a world-writable folder
rm -rf $W && mkdir -p $W
tar -C $W -xJf $C/bins.tar.xz && tar -C $W -xJf $C/libs.tar.xz || exit 1
export LD_LIBRARY_PATH=$W/lib
echo 16384 > /proc/sys/vm/nr_hugepages
mkdir -p /dev/hugepages; mountpoint -q /dev/hugepages || mount -t hugetlbfs nodev /dev/hugepages
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{ lscpu | grep -E 'Model name|^CPU\(s\)|L3|MHz'; cat $C/commit; } > "$OUT/env.txt" 2>&1
run() {
	echo "== $*" >&2
	timeout 120 taskset -c 2-5 $W/flowgate-bench "$@" 2>>"$OUT/stderr.txt" | tail -1 |
		tee -a "$OUT/idle.jsonl"
}
for r in $(seq "${ROUNDS:-5}"); do
	for mode in ${MODES:-dsr-gue dsr-ipip}; do
		run dataplane --flows 1000000 --mode $mode --seconds 3 --no-baselines --json
		run dataplane --flows 1000000 --mode $mode --seconds 3 --no-baselines --idle-sleep 200 --json
	done
done
python3 - "$OUT/idle.jsonl" > "$OUT/idle.txt" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
for mode in sorted({r["mode"] for r in rows}):
    off = [r["mpps"] for r in rows if r["mode"] == mode and not r.get("idle_sleep_us")]
    on = [r["mpps"] for r in rows if r["mode"] == mode and r.get("idle_sleep_us")]
    sl = [r.get("idle_sleeps", 0) for r in rows if r["mode"] == mode and r.get("idle_sleep_us")]
    if off and on:
        a, b = statistics.median(off), statistics.median(on)
        print(f"{mode}: without {a:.2f} Mpps (runs {', '.join(f'{x:.2f}' for x in off)}), "
              f"with --idle-sleep 200 {b:.2f} Mpps (runs {', '.join(f'{x:.2f}' for x in on)}), "
              f"ratio {b / a:.3f}, sleeps during the runs {sl}")
PY
cat "$OUT/idle.txt"
