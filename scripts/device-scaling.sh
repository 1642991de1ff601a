#!/bin/bash
# Runs on the device machine (16 cores) with .carry/scale carried: multi-core
# scaling of flowgate's worker pipeline (one RX port and one conntrack shard
# per worker, as with one NIC queue per core), 1M flows in total, 64 B and
# IMIX, plus the testpmd io ceiling on one core and the conntrack bench
# (--no-l3fwd: the pack carries testpmd, not the compiler and DPDK examples
# the l3fwd baseline builds from).
# Writes $OUT/scaling.jsonl and $OUT/env.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
C=$PWD/.carry/scale
W=/tmp/fgscale
rm -rf $W && mkdir -p $W
tar -C $W -xJf $C/bins.tar.xz && tar -C $W -xJf $C/libs.tar.xz
export LD_LIBRARY_PATH=$W/lib
export FG_TESTPMD=$W/dpdk-testpmd FG_TESTPMD_EAL="-d $W/pmds"
echo 16384 > /proc/sys/vm/nr_hugepages
mkdir -p /dev/hugepages; mountpoint -q /dev/hugepages || mount -t hugetlbfs nodev /dev/hugepages
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{ lscpu | grep -E 'Model name|^CPU\(s\)|L3|MHz'; grep -E 'Huge' /proc/meminfo; cat $C/commit; } > "$OUT/env.txt" 2>&1
B=$W/flowgate-bench
export FG_BENCH_VERBOSE=1
run() { echo "== $*" >&2; timeout 120 "$B" "$@" 2>>"$OUT/stderr.txt" | tail -1 | tee -a "$OUT/scaling.jsonl"; }
run dataplane --flows 1000000 --mode dsr-ipip --workers 1 --seconds 3 --no-l3fwd --json
for w in 2 4 8 14; do
	run dataplane --flows 1000000 --mode dsr-ipip --workers $w --seconds 3 --no-baselines --json
done
run dataplane --flows 1000000 --mode dsr-ipip --workers 1 --seconds 3 --imix --no-l3fwd --json
run dataplane --flows 1000000 --mode dsr-ipip --workers 14 --seconds 3 --imix --no-baselines --json
run dataplane --flows 1000000 --mode nat --workers 1 --seconds 3 --no-baselines --json
run dataplane --flows 1000000 --mode nat --workers 8 --seconds 3 --no-baselines --json
run dataplane --flows 1000000 --mode dsr-ipip --new-flows --seconds 3 --no-baselines --json
run conntrack --flows 1000000 --json
