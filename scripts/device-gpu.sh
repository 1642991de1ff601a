#!/bin/bash
# Runs on the device machine (one call of the `run` tool, carry .carry/gpu):
# correctness (>= 10M random frames + fixtures, every launch variant,
# flowgate --gpu through the fixtures and against the CPU path (tests/daemon),
# frames in host and GPU memory), the GPU-memory mbuf pool test,
# compute-sanitizer memcheck + racecheck + synccheck, and
# flowgate-bench gpu --json.  Writes 4 files to $OUT (the tool returns 8 at
# most): summary.txt, test.log, san.log, bench_gpu.json.
#   here:   scripts/device-gpu-pack.sh
#   device: bash scripts/device-gpu.sh          (carry: [".carry/gpu"])
# Env: FG_RANDOM (default 10000000), FG_SKIP_BENCH=1, FG_SKIP_SAN=1, FG_SKIP_DAEMON=1,
# FG_BENCH_ARGS (extra flowgate-bench gpu options, e.g. "--item-pkts 64").
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
step() { # name, logfile, seconds, command...
	local name=$1 log=$OUT/$2 lim=$3; shift 3
	local t0=$(date +%s.%N) tmp=$W/$name.log
	timeout -k 5 "$lim" "$@" > "$tmp" 2>&1
	local rc=$?
	local dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{print b-a}')
	{ echo "===== $name: $* (rc=$rc, ${dt}s)"; cat "$tmp"; } >> "$log"
	printf '%-26s rc=%-3s %6.1fs  %s\n' "$name" "$rc" "$dt" "$(tail -n1 "$tmp")" | tee -a $summary
	[ $rc -eq 0 ] || rc_all=1
	return $rc
}

step test_gpu test.log 240 $W/test_gpu --random "${FG_RANDOM:-10000000}" --fixtures tests/fixtures
grep -E "^(fixtures|random) " "$W/test_gpu.log" | tee -a $summary
step test_gpu_mbuf test.log 60 $W/test_gpu_mbuf
grep -E "^(pool|graph|persistent)" "$W/test_gpu_mbuf.log" | tee -a $summary
# the daemon: flowgate --gpu through every packet fixture (expected bytes),
# then its output against the CPU path's on fixtures + scenario traffic
# (1 and 2 workers); hugepages are not needed (--no-huge)
if [ -z "${FG_SKIP_DAEMON:-}" ]; then
	for m in graph persistent; do
		step fixtures_daemon_$m test.log 120 python3 tests/daemon/run_fixtures.py $W/build --gpu $m
	done
	step gpu_daemon test.log 300 python3 tests/daemon/test_gpu_daemon.py $W/build
	grep -E "^(ok|FAIL|input)" "$W/gpu_daemon.log" | tee -a $summary
fi
if [ -z "${FG_SKIP_SAN:-}" ] && [ -n "$SAN" ]; then
	for m in graph graph-zc persistent persistent-f1; do
		step san_memcheck_$m san.log 50 "$SAN" --tool memcheck --leak-check full --error-exitcode 9 \
			$W/test_gpu --mode $m --blocks 8 --random 20000 --timeout-us 30000000
		step san_racecheck_$m san.log 40 "$SAN" --tool racecheck --error-exitcode 9 \
			$W/test_gpu --mode $m --blocks 8 --random 2000 --timeout-us 30000000
	done
	step san_synccheck san.log 30 "$SAN" --tool synccheck --error-exitcode 9 \
		$W/test_gpu --mode graph --random 2000
	grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" $OUT/san.log | sort | uniq -c | tee -a $summary
elif [ -z "$SAN" ]; then
	echo "compute-sanitizer not found" | tee -a $summary
fi
if [ -z "${FG_SKIP_BENCH:-}" ]; then
	step bench_gpu bench.log 120 $W/flowgate-bench gpu --json --seconds 0.15 ${FG_BENCH_ARGS:-}
	tail -n1 "$W/bench_gpu.log" > "$OUT/bench_gpu.json"
	rm -f "$OUT/bench.log"
	python3 - "$OUT/bench_gpu.json" <<'PY' | tee -a $summary
import json, sys
d = json.loads(open(sys.argv[1]).read())
print("cpu: 1 core %.1f Mpps, %d threads %.1f Mpps" % (d["cpu_pps_1core"]/1e6, d["cpu_threads"], d["cpu_pps_all_cores"]/1e6))
print("%-14s %6s %9s %9s %8s %8s %9s %8s %8s %8s %8s" % ("mode","batch","kern_Mpps","gpu_Mpps","p50_us","p99_us","host_Mpps","p50_us","p99_us","span50","span99"))
for r in d["results"]:
    print("%-14s %6d %9.1f %9.1f %8.1f %8.1f %9.1f %8.1f %8.1f %8.1f %8.1f" % (r["mode"], r["batch"], r["kernel_pps"]/1e6, r["gpu_mem_pps"]/1e6, r["gpu_mem_p50_us"], r["gpu_mem_p99_us"], r["host_mem_pps"]/1e6, r["host_mem_p50_us"], r["host_mem_p99_us"], r.get("gpu_span_p50_us", 0), r.get("gpu_span_p99_us", 0)))
print({k: v for k, v in d.items() if k not in ("results",)})
PY
fi
echo "overall rc=$rc_all" | tee -a $summary
exit $rc_all
