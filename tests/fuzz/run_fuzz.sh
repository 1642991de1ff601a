#!/bin/sh
# run_fuzz.sh FUZZER FIXTURE_TOOL WORKDIR [SECONDS]
# Generates the seed corpus from the packet fixtures, then runs the
# libFuzzer target on it for SECONDS (default 30).  Longer run:
#   build-fuzz/tests/fuzz/fuzz_pkt -max_total_time=3600 CORPUS SEEDS
set -eu
fuzzer=$1; fixtool=$2; work=$3; secs=${4:-30}
rm -rf "$work/seed" "$work/pcap"
mkdir -p "$work/corpus"
"$fixtool" "$work/pcap" --corpus "$work/seed" >/dev/null
# -error_exitcode=1: libFuzzer's own status for a finding is 77, which
# meson reads as a skip; the input that failed is left in $work
exec "$fuzzer" -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 \
	-error_exitcode=1 -artifact_prefix="$work/" \
	-print_final_stats=1 "$work/corpus" "$work/seed"
