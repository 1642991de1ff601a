#!/bin/bash
# Runs on the device machine (16 cores) with .carry/scale carried: multi-core
# scaling of flowgate's worker pipeline (one RX port and one conntrack shard
# per worker, as with one NIC queue per core), uniform order, with the
# testpmd io and l3fwd EM baselines in the runs of one worker: testpmd and
# l3fwd come prebuilt in the pack (`flowgate-bench l3fwd` for l3fwd, whose
# sizes FG_L3FWD_BIN's .params records) because the device has no DPDK.
# Unpacked outside /tmp: EAL refuses a plugin directory (-d) under a
# world-writable one, which made every earlier device testpmd baseline fail.
#
#   scripts/device-scaling.sh 1m    1M flows: one worker before/after (the
#                                   pack's flowgate-bench-before is the
#                                   commit in before.commit), 2-15 workers,
#                                   IMIX, NAT
#   scripts/device-scaling.sh 10m   10M flows: 1, 8, 14, 15 workers, IMIX
#   scripts/device-scaling.sh 1m-before   the before build at 2-15 workers
#   scripts/device-scaling.sh ab    1M flows, 1 and 14 workers, before and
#                                   after interleaved, 3 rounds (ROUNDS=N)
#   scripts/device-scaling.sh nat-ab  nat, 1M flows, 1 and 14 workers,
#                                   before and after interleaved (ROUNDS=N)
#   scripts/device-scaling.sh ct    flowgate-bench conntrack at 1M and 10M
#                                   flows (the table against rte_hash)
#   scripts/device-scaling.sh profile   cycles per packet by stage
#                                   (--profile), 1K and 1M flows, 1 and 14
#                                   workers, 2 rounds
# Writes $OUT/scaling-PHASE.jsonl (one line per run, "tag" added) and
# $OUT/env.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
PHASE=${1:?usage: device-scaling.sh PHASE: 1m, 1m-before, ab, nat-ab, 10m, ct or profile}
C=$PWD/.carry/scale
W=/root/fgscale
rm -rf $W && mkdir -p $W
tar -C $W -xJf $C/bins.tar.xz && tar -C $W -xJf $C/libs.tar.xz
export LD_LIBRARY_PATH=$W/lib
export FG_TESTPMD=$W/dpdk-testpmd FG_TESTPMD_EAL="-d $W/pmds" FG_L3FWD_EAL="-d $W/pmds"
echo 20000 > /proc/sys/vm/nr_hugepages
mkdir -p /dev/hugepages; mountpoint -q /dev/hugepages || mount -t hugetlbfs nodev /dev/hugepages
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{ lscpu | grep -E 'Model name|^CPU\(s\)|L3|MHz|Thread|Core|Socket|NUMA'; grep -E 'Huge' /proc/meminfo; echo "after $(cat $C/commit)";
  echo "before $(cat $C/before.commit)"; } > "$OUT/env.txt" 2>&1
export FG_BENCH_VERBOSE=1
run() { # TAG L3FWD_BIN BENCH ARGS...
	local tag=$1 l3=$2 bin=$3; shift 3
	echo "== $tag $*" >&2
	FG_L3FWD_BIN=$l3 timeout 170 "$bin" "$@" 2>>"$OUT/stderr.txt" | tail -1 |
		sed "s|^{|{\"tag\":\"$tag\",|" | tee -a "$OUT/scaling-$PHASE.jsonl"
}
A=$W/flowgate-bench-before B=$W/flowgate-bench L64=$W/l3fwd-64 LIM=$W/l3fwd-imix
# the before build (1398c27) predates --no-baselines and l3fwd: its runs
# skip testpmd by the option it has (BEFORE_NB=--no-baselines for a before
# build that has l3fwd, as an A/B of two recent builds needs)
NB=${BEFORE_NB:---no-testpmd}
if [ "$PHASE" = 1m ]; then
	for r in 1 2 3; do
		run before "" $A dataplane --flows 1000000 --mode dsr-ipip --workers 1 --seconds 3 $NB --json
		run after $L64 $B dataplane --flows 1000000 --mode dsr-ipip --workers 1 --seconds 3 --json
	done
	for w in 2 4 8 14 15; do
		run after "" $B dataplane --flows 1000000 --mode dsr-ipip --workers $w --seconds 3 --no-baselines --json
	done
	run after $LIM $B dataplane --flows 1000000 --mode dsr-ipip --workers 1 --seconds 3 --imix --json
	run after "" $B dataplane --flows 1000000 --mode dsr-ipip --workers 14 --seconds 3 --imix --no-baselines --json
	run after $L64 $B dataplane --flows 1000000 --mode nat --workers 1 --seconds 3 --json
	run after "" $B dataplane --flows 1000000 --mode nat --workers 14 --seconds 3 --no-baselines --json
elif [ "$PHASE" = ab ]; then
	# before/after in one run, 1 and 14 workers, interleaved: after in
	# uniform order (the issue's) and in creation order (the before
	# build's only order); ROUNDS=N for more than 3 rounds
	for r in $(seq "${ROUNDS:-3}"); do
		for w in 1 14; do
			run before "" $A dataplane --flows 1000000 --mode dsr-ipip --workers $w --seconds 3 $NB --json
			run after "" $B dataplane --flows 1000000 --mode dsr-ipip --workers $w --seconds 3 --no-baselines --json
			run after-creation "" $B dataplane --flows 1000000 --mode dsr-ipip --workers $w --seconds 3 --order creation --no-baselines --json
		done
	done
elif [ "$PHASE" = nat-ab ]; then
	# NAT before/after in one run, 1 and 14 workers, interleaved
	# (BEFORE_SRC a build whose NAT table held both directions, as session
	# 13's); ROUNDS=N for more than 3 rounds
	for r in $(seq "${ROUNDS:-3}"); do
		for w in 1 14; do
			run before "" $A dataplane --flows 1000000 --mode nat --workers $w --seconds 3 --no-baselines --json
			run after "" $B dataplane --flows 1000000 --mode nat --workers $w --seconds 3 --no-baselines --json
		done
	done
elif [ "$PHASE" = profile ]; then
	# cycles per packet by stage (flowgate-bench dataplane --profile)
	for r in 1 2; do
		for w in 1 14; do
			for f in 1000 1000000; do
				run after "" $B dataplane --flows $f --mode dsr-ipip --workers $w --seconds 3 --no-baselines --profile --json
			done
		done
		run after "" $B dataplane --flows 1000000 --mode nat --workers 1 --seconds 3 --no-baselines --profile --json
	done
elif [ "$PHASE" = ct ]; then
	run after "" $B conntrack --flows 1000000 --json
	run after "" $B conntrack --flows 10000000 --json
elif [ "$PHASE" = 1m-before ]; then
	for w in 2 4 8 14 15; do
		run before "" $A dataplane --flows 1000000 --mode dsr-ipip --workers $w --seconds 3 $NB --json
	done
	run before "" $A dataplane --flows 1000000 --mode nat --workers 1 --seconds 3 $NB --json
else
	run after $L64 $B dataplane --flows 10000000 --mode dsr-ipip --workers 1 --seconds 3 --json
	for w in 8 14 15; do
		run after "" $B dataplane --flows 10000000 --mode dsr-ipip --workers $w --seconds 3 --no-baselines --json
	done
	# no baselines: testpmd cannot allocate 10M full-size mbufs in the
	# device's 40 GB of hugepages (the 64 B run above has both)
	run after "" $B dataplane --flows 10000000 --mode dsr-ipip --workers 1 --seconds 3 --imix --no-baselines --json
	run after "" $B dataplane --flows 10000000 --mode dsr-ipip --workers 14 --seconds 3 --imix --no-baselines --json
fi
