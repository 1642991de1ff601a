#!/bin/bash
# Runs on the device machine (16 cores, no NIC for DPDK) with .carry/trex
# carried (scripts/device-trex-pack.sh): TRex -> flowgate and TRex ->
# dpdk-testpmd io (the rig's ceiling) over net_memif, through
# pktgen-scripts/trex/trex_vs_dut.sh, generator and DUT on disjoint CPUs.
# Runs the scripts packed in .carry/trex/src.tar.xz (the checkout that
# packed them), unpacked outside /tmp (EAL refuses a plugin directory, -d,
# under a world-writable folder).
# Priority order (PLAN, default: steady-1m at 1 worker, at 4, imix-1m at 1,
# steady-1m at 2 and 8; steps: steadyN, steady10mN, imixN, floodN,
# newflowsN, churnN for N workers); no run starts past BUDGET seconds
# (default 120) after the start.  Writes $OUT/trex-json.tar.gz
# (bench/results/trex-device-*.json), $OUT/logs.tar.gz, $OUT/env.txt.
set -uo pipefail
T0=$(date +%s)
C=$(cd "${CARRY:-.carry/trex}" && pwd) || exit 1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
W=${TX_DIR:-/root/fgtx}
rm -rf "$W" && mkdir -p "$W/bin" "$W/src"
for t in bins libs trex; do tar -C "$W" -xJf "$C/$t.tar.xz" || exit 1; done
tar -C "$W/src" -xJf "$C/src.tar.xz" || exit 1
for b in dpdk-testpmd flowgate fgctl; do
	plug=""; [ $b = dpdk-testpmd ] && plug="-d $W/pmds"
	printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/lib exec %s/%s %s "$@"\n' "$W" "$W" $b "$plug" > "$W/bin/$b"
	chmod +x "$W/bin/$b"
done
ln -sf _t-rex-64 "$W/trex/t-rex-64"
# the DUT on hugepages (TRex on vdevs only runs EAL with --no-huge itself)
if [ "${HUGEPAGES:-16384}" != 0 ]; then
	echo "${HUGEPAGES:-16384}" > /proc/sys/vm/nr_hugepages
	mkdir -p /dev/hugepages; mountpoint -q /dev/hugepages || mount -t hugetlbfs nodev /dev/hugepages
fi
cd "$W/src" || exit 1
# shellcheck source=pktgen-scripts/dut_lib.sh
. pktgen-scripts/dut_lib.sh
read -r GEN DUT < <(split_cpus)
{ lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Core|Socket|L3|MHz'; grep -E 'Huge|MemTotal' /proc/meminfo
  echo "gen-cpus $GEN dut-cpus $DUT"; echo "commit $(cat "$C/commit")"; uname -r; python3 --version; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
DL=$((T0 + ${BUDGET:-120}))
RES=$W/results; LOGS=$W/logs; mkdir -p "$RES" "$LOGS"
tvd() {
	pktgen-scripts/trex/trex_vs_dut.sh --trex "$W/trex" --flowgate "$W/bin/flowgate" \
		--testpmd "$W/bin/dpdk-testpmd" --fgctl "$W/bin/fgctl" --gen-cpus "$GEN" --dut-cpus "$DUT" \
		--seconds "${SECS:-2}" --warmup "${WARM:-1}" --tag device --out-dir "$RES" --log-dir "$LOGS" \
		--tmp "$W-tmp" --deadline "$DL" ${EAL:+--eal "$EAL"} "$@" 2>&1 | tee -a "$OUT/run.log"
}
for p in ${PLAN:-steady1 steady4 imix1 steady2 steady8}; do
	case $p in
	steady10m*) tvd --scenarios steady-1m --flows 10000000 --workers "${p#steady10m}" ;;
	steady*) tvd --scenarios steady-1m --workers "${p#steady}" ;;
	imix*) tvd --scenarios imix-1m --workers "${p#imix}" ;;
	flood*) tvd --scenarios syn-flood --workers "${p#flood}" --fg-args "--flood-rate 125000" ;;
	newflows*) tvd --scenarios new-flows --workers "${p#newflows}" ;;
	churn*) tvd --scenarios churn --workers "${p#churn}" ;;
	esac
	# after each step: what ran comes back even if the call is cut short
	tar -C "$RES" -czf "$OUT/trex-json.tar.gz" .
	tar -C "$LOGS" -czf "$OUT/logs.tar.gz" .
done
echo "device-trex: $(ls "$RES" | wc -l) results in $(( $(date +%s) - T0 )) s"
