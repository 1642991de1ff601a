#!/bin/bash
# Packs what the device machine (Ubuntu, no DPDK) needs for the multi-core
# dataplane scaling run: a statically linked flowgate-bench (DPDK static,
# no CUDA), dpdk-testpmd with the DPDK shared libraries and the two PMDs the
# runs use (net_pcap, net_null), and every other shared library ldd lists
# (glibc excluded), into .carry/scale/ (git-ignored).
# Usage: scripts/device-scaling-pack.sh [builddir]; then run
# scripts/device-scaling.sh on the device with .carry/scale carried.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build-static}
[ -f "$B/build.ninja" ] || meson setup "$B" --buildtype=release \
	-Db_lto=true -Dstatic_dpdk=true -Dgpu=disabled -Dtests=false
ninja -C "$B" bench/flowgate-bench
out=.carry/scale
rm -rf "$out" && mkdir -p "$out/lib" "$out/pmds" "$out/stage"
strip -o "$out/stage/flowgate-bench" "$B/bench/flowgate-bench"
cp /usr/bin/dpdk-testpmd "$out/stage/"
pmdir=/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0
for p in librte_bus_vdev.so.23 librte_net_pcap.so.23 librte_net_null.so.23 librte_mempool_ring.so.23; do
	cp -L "$pmdir/$p" "$out/pmds/${p%.23}"   # EAL -d DIR loads *.so only
done
ldd "$B/bench/flowgate-bench" /usr/bin/dpdk-testpmd "$out"/pmds/*.so |
	awk '/=> \//{print $3}' | sort -u |
	grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
	xargs -r -I{} cp -L {} "$out/lib/"
tar -C "$out/stage" -c flowgate-bench dpdk-testpmd | xz -T2 -2 > "$out/bins.tar.xz"
tar -C "$out" -c lib pmds | xz -T2 -2 > "$out/libs.tar.xz"
rm -rf "$out/stage" "$out/lib" "$out/pmds"
git rev-parse HEAD > "$out/commit"
du -sh "$out"
