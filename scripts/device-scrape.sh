#!/bin/bash
# Runs on the device machine (16 cores, quiet) with .carry/scale carried
# (scripts/device-scaling-pack.sh): the cost of Prometheus scraping to the
# dataplane.  `flowgate-bench dataplane --flows 1000000` per mode, without
# scraping (A) and with /metrics rendered every 100 ms (B, --scrape-ms 100),
# alternated ROUNDS times so drift hits both alike; one JSON line per run in
# $OUT/scrape.jsonl ("build": "A"|"B"), compared by bench/tools/fg_ab.py.
set -uo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
C=$PWD/.carry/scale
W=/root/fgscrape
rm -rf $W && mkdir -p $W
tar -C $W -xJf $C/bins.tar.xz && tar -C $W -xJf $C/libs.tar.xz || exit 1
export LD_LIBRARY_PATH=$W/lib
echo 16384 > /proc/sys/vm/nr_hugepages
mkdir -p /dev/hugepages; mountpoint -q /dev/hugepages || mount -t hugetlbfs nodev /dev/hugepages
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{ lscpu | grep -E 'Model name|^CPU\(s\)|L3|MHz'; grep -E 'Huge' /proc/meminfo; cat $C/commit; } > "$OUT/env.txt" 2>&1
run() {   # run A|B ARGS...
	local v=$1; shift
	echo "== $v $*" >&2
	timeout 120 taskset -c 2-5 $W/flowgate-bench "$@" 2>>"$OUT/stderr.txt" | tail -1 |
		sed "s/^{/{\"build\":\"$v\",\"args\":\"$*\",/" | tee -a "$OUT/scrape.jsonl"
}
for r in $(seq "$ROUNDS"); do
	for mode in dsr-ipip nat; do
		run A dataplane --flows 1000000 --mode $mode --seconds 3 --no-baselines --json
		run B dataplane --flows 1000000 --mode $mode --seconds 3 --no-baselines --json --scrape-ms 100
	done
done
