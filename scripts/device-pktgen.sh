#!/bin/bash
# Runs on the device machine (16 cores, no NIC for DPDK) with .carry/pg
# carried (scripts/device-pktgen-pack.sh): Pktgen-DPDK -> flowgate and
# Pktgen-DPDK -> dpdk-testpmd io (the rig's ceiling) over net_memif, through
# pktgen-scripts/pktgen_vs_dut.sh, generator and DUT on disjoint CPUs.
# Priority order (PLAN, default all): steady-1m at workers 1,2,4,8 (with
# flowgate-swrss too), imix-1m, syn-flood (flood mode), new-flows, churn,
# then 10M flows (steady, IMIX).  No run starts past BUDGET seconds (default
# 420) after the start; each one that ran is a JSON, the rest are listed.
# Writes $OUT/pktgen-json.tar.gz (bench/results/pktgen-device-*.json),
# $OUT/logs.tar.xz (each run's Pktgen and DUT output), $OUT/env.txt.
# Unpacked outside /tmp: EAL refuses a plugin directory (-d) under a
# world-writable folder.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
W=${PG_DIR:-/root/fgpg}
rm -rf $W && mkdir -p $W/bin
tar -C $W -xJf .carry/pg/bins.tar.xz || exit 1
tar -C $W -xJf .carry/pg/libs.tar.xz || exit 1
for b in pktgen dpdk-testpmd flowgate fgctl fg-pcapgen; do
	plug=""; [ $b = dpdk-testpmd ] && plug="-d $W/pmds"
	printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/lib exec %s/%s %s "$@"\n' $W $W $b "$plug" > $W/bin/$b
	chmod +x $W/bin/$b
done
# HUGEPAGES=0 (a dry run elsewhere): leave them, give EAL="--no-huge -m 3072"
if [ "${HUGEPAGES:-32768}" != 0 ]; then
	echo ${HUGEPAGES:-32768} > /proc/sys/vm/nr_hugepages
	mkdir -p /dev/hugepages; mountpoint -q /dev/hugepages || mount -t hugetlbfs nodev /dev/hugepages
fi
# CPUs: generator and DUT on disjoint halves (dut_lib.sh split_cpus)
# shellcheck source=pktgen-scripts/dut_lib.sh
. pktgen-scripts/dut_lib.sh
read -r GEN DUT < <(split_cpus)
{ lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Core|Socket|L3|MHz'; grep -E 'Huge|MemTotal' /proc/meminfo
  echo "gen-cpus $GEN dut-cpus $DUT"; echo "commit $(cat .carry/pg/commit)"; uname -r; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
DL=$((T0 + ${BUDGET:-420}))
RES=$W/results; LOGS=$W/logs; mkdir -p $RES $LOGS
pvd() {
	pktgen-scripts/pktgen_vs_dut.sh --pktgen $W/bin/pktgen --flowgate $W/bin/flowgate \
		--testpmd $W/bin/dpdk-testpmd --fgctl $W/bin/fgctl --pcapgen $W/bin/fg-pcapgen \
		--gen-cpus "$GEN" --dut-cpus "$DUT" --seconds ${SECS:-3} --tag device \
		--out-dir $RES --log-dir $LOGS --tmp $W-tmp ${EAL:+--eal "$EAL"} --deadline $DL "$@" 2>&1 | tee -a "$OUT/run.log"
}
WK=${WORKERS:-1,2,4,8}
for p in ${PLAN:-steady imix flood newflows churn steady10m imix10m}; do
	case $p in
	steady) pvd --scenarios steady-1m --workers $WK --dut testpmd,flowgate,flowgate-swrss ;;
	imix) pvd --scenarios imix-1m --workers $WK ;;
	flood) pvd --scenarios syn-flood --workers $WK --fg-args "--flood-rate 125000" ;;
	newflows) pvd --scenarios new-flows --workers $WK --warmup 0 ;;
	churn) pvd --scenarios churn --workers $WK ;;
	steady10m) pvd --scenarios steady-1m --flows 10000000 --workers $WK --warmup 3 ;;
	imix10m) pvd --scenarios imix-1m --flows 10000000 --workers $WK --warmup 3 ;;
	w12) pvd --scenarios steady-1m --workers 12 ;;
	esac
done
tar -C $RES -czf "$OUT/pktgen-json.tar.gz" .
tar -C $LOGS -cJf "$OUT/logs.tar.xz" .
echo "device-pktgen: $(ls $RES | wc -l) results in $(( $(date +%s) - T0 )) s"
