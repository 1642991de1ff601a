#!/bin/bash
# Runs on the device machine (16 cores, quiet) with two packs carried, made
# by scripts/device-scaling-pack.sh on two commits: .carry/ab/A (before) and
# .carry/ab/B (after).  Runs `flowgate-bench dataplane --flows 1000000` for
# every mode, conntrack hits and --new-flows, alternating A and B ROUNDS
# times so that drift on the machine hits both alike; writes one JSON line
# per run to $OUT/ab.jsonl (with "build": "A"|"B") and $OUT/env.txt.
# The comparison (median per mode, B/A) is printed by bench/tools/fg_ab.py.
#
# PAIRED=1 runs A and B at the same time on two disjoint core sets
# (swapped every round), so that what the host's neighbours do to memory
# bandwidth and clocks hits both samples of a pair alike; fg_ab.py then
# also prints the median of the per-pair ratios.  On the shared device
# hosts, sequential samples of one binary spread by up to 2x, which no
# number of rounds turns into a 5% answer; pairs cancel most of it.
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
CORES=2-5
# issue 17: the bench measures flows in --order (uniform by default) and runs
# testpmd and l3fwd baselines unless --no-baselines; a build from before
# knows neither and measures in creation order, so A and B both run in
# creation order then (ORDER picks it when both know --order).
knows_order() { LD_LIBRARY_PATH=$W/$1/lib $W/$1/flowgate-bench dataplane --help 2>&1 | grep -q -- --order; }
if knows_order A && knows_order B; then ORDER=${ORDER:-uniform}; else ORDER=creation; fi
dp_opts() {   # dp_opts A|B: no baselines, the same order on both builds
	if knows_order "$1"; then echo "--no-baselines --order $ORDER"; else echo --no-testpmd; fi
}
run() {   # run LABEL ARGS...: LABEL A or B, or S (B with a /metrics scraper)
	local v=$1 bin=$1; shift
	[ "$v" = S ] && bin=B
	# shellcheck disable=SC2046 # dp_opts gives separate words
	set -- "$@" $(dp_opts $bin)
	echo "== $v $*" >&2
	LD_LIBRARY_PATH=$W/$bin/lib timeout 120 taskset -c $CORES $W/$bin/flowgate-bench "$@" \
		2>>"$OUT/stderr.txt" | tail -1 |
		sed "s/^{/{\"build\":\"$v\",\"cores\":\"$CORES\",\"pair\":${PAIR:-0},\"args\":\"$*\",/" |
		tee -a "$OUT/ab.jsonl"
}
if [ -n "${PAIRED:-}" ]; then
	PAIR=0
	for r in $(seq "$ROUNDS"); do
		for mode in ${MODES:-dsr-ipip dsr-gue nat}; do
			for k in ${KINDS:-hits new-flows}; do
				PAIR=$((PAIR + 1))
				args="dataplane --flows 1000000 --mode $mode --seconds ${SECS:-3} $([ $k = new-flows ] && echo --new-flows) --json"
				if ((r % 2)); then ca=2-5 cb=8-11; else ca=8-11 cb=2-5; fi
				CORES=$ca run A $args & CORES=$cb run B $args & wait
			done
		done
	done
	exit 0
fi
# MODES, KINDS (hits new-flows) narrow a rerun
for r in $(seq "$ROUNDS"); do
	for mode in ${MODES:-dsr-ipip dsr-gue nat}; do
		for v in A B; do
			for k in ${KINDS:-hits new-flows}; do
				run $v dataplane --flows 1000000 --mode $mode --seconds 3 \
					$([ $k = new-flows ] && echo --new-flows) --json
			done
		done
	done
done
# issue 15: what scraping /metrics every 100 ms costs the dataplane (B with a
# scraper thread, label S, against B without; same binary, alternated)
if [ -n "${SCRAPE-1}" ]; then
	for r in $(seq "$ROUNDS"); do
		run B dataplane --flows 1000000 --mode dsr-ipip --seconds 3 --json
		run S dataplane --flows 1000000 --mode dsr-ipip --seconds 3 --scrape-ms 100 --json
	done
fi
