#!/bin/bash
# Issue 12 on the device machine: `flowgate-bench dataplane --flows 1000000`
# with the service on plain Maglev and on maglev-load (--sched), same binary
# (.carry/scale, made by scripts/device-scaling-pack.sh), alternated ROUNDS
# times for conntrack hits and --new-flows, so drift hits both alike.  One
# JSON line per run in $OUT/ab-mload.jsonl (with "build": "maglev" or
# "maglev-load"); bench/tools/fg_ab.py-style medians are printed at the end.
# Unpacked outside /tmp: EAL refuses a plugin directory under a
# world-writable folder.
set -uo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
W=/root/fgml
rm -rf $W && mkdir -p $W
tar -C $W -xJf .carry/scale/bins.tar.xz || exit 1
tar -C $W -xJf .carry/scale/libs.tar.xz || exit 1
echo 16384 > /proc/sys/vm/nr_hugepages
mkdir -p /dev/hugepages; mountpoint -q /dev/hugepages || mount -t hugetlbfs nodev /dev/hugepages
{ lscpu | grep -E 'Model name|^CPU\(s\)|L3|MHz'; grep -E 'Huge' /proc/meminfo
  echo "commit $(cat .carry/scale/commit)"; } > "$OUT/env-mload.txt" 2>&1
run() {   # run SCHED ARGS...
	local s=$1; shift
	echo "== $s $*" >&2
	LD_LIBRARY_PATH=$W/lib timeout 120 taskset -c 2-5 $W/flowgate-bench "$@" --sched "$s" \
		2>>"$OUT/stderr-mload.txt" | tail -1 |
		sed "s/^{/{\"build\":\"$s\",\"args\":\"$*\",/" | tee -a "$OUT/ab-mload.jsonl"
}
for r in $(seq "$ROUNDS"); do
	for mode in ${MODES:-dsr-ipip}; do
		for k in ${KINDS:-hits new-flows}; do
			for s in maglev maglev-load; do
				run $s dataplane --flows 1000000 --mode $mode --seconds 3 \
					$([ $k = new-flows ] && echo --new-flows) --no-baselines --json
			done
		done
	done
done
python3 - "$OUT/ab-mload.jsonl" <<'PY' || true
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
for nf in (False, True):
    for mode in sorted({r["mode"] for r in rows}):
        m = {}
        for s in ("maglev", "maglev-load"):
            v = [r["new_flows_mps"] / 1e6 if nf else r["mpps"] for r in rows
                 if r["build"] == s and r["new_flows"] == nf and r["mode"] == mode]
            m[s] = (statistics.median(v) if v else 0, v)
        kind = "new flows M/s" if nf else "hits Mpps"
        ratio = m["maglev-load"][0] / m["maglev"][0] if m["maglev"][0] else 0
        print(f"{mode} {kind}: maglev {m['maglev'][0]:.3f} {['%.2f' % x for x in m['maglev'][1]]} "
              f"maglev-load {m['maglev-load'][0]:.3f} {['%.2f' % x for x in m['maglev-load'][1]]} "
              f"ratio {ratio:.3f}")
PY
