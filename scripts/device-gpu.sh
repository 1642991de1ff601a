#!/bin/bash
# Runs on the device machine (one call of the `run` tool, carry .carry/gpu):
# correctness (>= 10M random frames + fixtures, both launch modes, frames in
# host and GPU memory), compute-sanitizer memcheck + racecheck + synccheck,
# and flowgate-bench gpu --json.  Logs and JSON go to $OUT.
#   run: bash scripts/device-gpu.sh            (carry: [".carry/gpu"])
# Env: FG_RANDOM (default 10000000), FG_SKIP_BENCH=1, FG_SKIP_SAN=1.
set -uo pipefail
OUT=${OUT:-/tmp/fg-out}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
C=.carry/gpu
W=/tmp/fg-gpu
mkdir -p $W
tar -C $W -xJf $C/bins.tar.xz || { echo "no $C/bins.tar.xz: run scripts/device-gpu-pack.sh here first"; exit 1; }
export LD_LIBRARY_PATH=$PWD/$C/lib
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || echo)
summary=$OUT/summary.txt
{
	echo "commit: $(cat $C/commit 2>/dev/null)"
	echo "date: $(date -u +%FT%TZ)"
	nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
	echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) x $(nproc)"
	echo "kernel: $(uname -r)"
} | tee $summary

rc_all=0
step() { # name, command...
	local name=$1; shift
	local t0=$(date +%s.%N)
	"$@" > "$OUT/$name.log" 2>&1
	local rc=$?
	local dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{print b-a}')
	printf '%-22s rc=%-3s %6.1fs  %s\n' "$name" "$rc" "$dt" "$(tail -n1 "$OUT/$name.log")" | tee -a $summary
	[ $rc -eq 0 ] || rc_all=1
	return $rc
}

step test_gpu $W/test_gpu --random "${FG_RANDOM:-10000000}" --fixtures tests/fixtures
grep -E "^(fixtures|random) " "$OUT/test_gpu.log" | tee -a $summary
if [ -z "${FG_SKIP_SAN:-}" ] && [ -n "$SAN" ]; then
	step san_memcheck "$SAN" --tool memcheck --leak-check full --error-exitcode 9 \
		$W/test_gpu --random 20000 --timeout-us 60000000
	step san_racecheck "$SAN" --tool racecheck --error-exitcode 9 \
		$W/test_gpu --random 3000 --timeout-us 120000000
	step san_synccheck "$SAN" --tool synccheck --error-exitcode 9 \
		$W/test_gpu --random 3000 --timeout-us 120000000
	grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" $OUT/san_*.log | tee -a $summary
elif [ -z "$SAN" ]; then
	echo "compute-sanitizer not found" | tee -a $summary
fi
if [ -z "${FG_SKIP_BENCH:-}" ]; then
	step bench_table $W/flowgate-bench gpu --seconds 0.15
	cat "$OUT/bench_table.log"
	step bench_json $W/flowgate-bench gpu --json --seconds 0.15
	cp "$OUT/bench_json.log" "$OUT/bench_gpu.json"
fi
echo "overall rc=$rc_all" | tee -a $summary
exit $rc_all
