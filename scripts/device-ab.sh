#!/bin/bash
# Runs on the device machine (16 cores, quiet) with two packs carried, made
# by scripts/device-scaling-pack.sh on two commits: .carry/ab/A (before) and
# .carry/ab/B (after).  Runs `flowgate-bench dataplane --flows 1000000` for
# every mode, conntrack hits and --new-flows, alternating A and B ROUNDS
# times so that drift on the machine hits both alike; writes one JSON line
# per run to $OUT/ab.jsonl (with "build": "A"|"B") and $OUT/env.txt.
# The comparison (median per mode, B/A) is printed by bench/tools/fg_ab.py.
#
# Unpacked outside /tmp: EAL refuses a plugin directory (-d) under a
# world-writable folder.
set -uo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
W=/root/fgab
rm -rf $W && mkdir -p $W
for v in A B; do
	mkdir -p $W/$v
	tar -C $W/$v -xJf .carry/ab/$v/bins.tar.xz || exit 1
	tar -C $W/$v -xJf .carry/ab/$v/libs.tar.xz || exit 1
done
echo 16384 > /proc/sys/vm/nr_hugepages
mkdir -p /dev/hugepages; mountpoint -q /dev/hugepages || mount -t hugetlbfs nodev /dev/hugepages
{ lscpu | grep -E 'Model name|^CPU\(s\)|L3|MHz'; grep -E 'Huge' /proc/meminfo
  echo "A $(cat .carry/ab/A/commit)"; echo "B $(cat .carry/ab/B/commit)"; } > "$OUT/env.txt" 2>&1
run() {   # run LABEL ARGS...: LABEL A or B, or S (B with a /metrics scraper)
	local v=$1 bin=$1; shift
	[ "$v" = S ] && bin=B
	echo "== $v $*" >&2
	LD_LIBRARY_PATH=$W/$bin/lib timeout 120 taskset -c 2-5 $W/$bin/flowgate-bench "$@" \
		2>>"$OUT/stderr.txt" | tail -1 |
		sed "s/^{/{\"build\":\"$v\",\"args\":\"$*\",/" | tee -a "$OUT/ab.jsonl"
}
# MODES, KINDS (hits new-flows) narrow a rerun
for r in $(seq "$ROUNDS"); do
	for mode in ${MODES:-dsr-ipip dsr-gue nat}; do
		for v in A B; do
			for k in ${KINDS:-hits new-flows}; do
				run $v dataplane --flows 1000000 --mode $mode --seconds 3 \
					$([ $k = new-flows ] && echo --new-flows) --no-testpmd --json
			done
		done
	done
done
# issue 15: what scraping /metrics every 100 ms costs the dataplane (B with a
# scraper thread, label S, against B without; same binary, alternated)
if [ -n "${SCRAPE:-1}" ]; then
	for r in $(seq "$ROUNDS"); do
		run B dataplane --flows 1000000 --mode dsr-ipip --seconds 3 --no-testpmd --json
		run S dataplane --flows 1000000 --mode dsr-ipip --seconds 3 --no-testpmd --scrape-ms 100 --json
	done
fi
