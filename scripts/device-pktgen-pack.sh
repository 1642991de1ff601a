#!/bin/bash
# Packs what the device machine (no DPDK, no Pktgen) needs for
# scripts/device-pktgen.sh: a static flowgate (DPDK static, no CUDA), fgctl,
# fg-pcapgen, the Pktgen-DPDK binary you built (pktgen-scripts/build-pktgen.sh
# from a Pktgen 23.03 tree of your own), dpdk-testpmd with the DPDK shared
# libraries and the PMDs it loads as plugins (net_memif, mempool ring), and
# every other shared library ldd lists (glibc excluded), into .carry/pg/
# (git-ignored).
# Usage: scripts/device-pktgen-pack.sh PKTGEN_BINARY [builddir]
set -euo pipefail
cd "$(dirname "$0")/.."
PG=${1:?usage: device-pktgen-pack.sh PKTGEN_BINARY [builddir]}
B=${2:-build-static}
[ -f "$B/build.ninja" ] || meson setup "$B" --buildtype=release \
	-Db_lto=true -Dstatic_dpdk=true -Dgpu=disabled -Dtests=false
ninja -C "$B" dataplane/flowgate control/fgctl bench/tools/fg-pcapgen
out=.carry/pg
rm -rf "$out" && mkdir -p "$out/lib" "$out/pmds" "$out/stage"
strip -o "$out/stage/flowgate" "$B/dataplane/flowgate"
strip -o "$out/stage/pktgen" "$PG"
cp "$B/control/fgctl" "$B/bench/tools/fg-pcapgen" /usr/bin/dpdk-testpmd "$out/stage/"
pmdir=/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0
# not librte_bus_vdev: testpmd links it (lib/); a second copy loaded as a
# plugin registers a second vdev bus with no driver on it
for p in librte_net_memif.so.23 librte_mempool_ring.so.23; do
	cp -L "$pmdir/$p" "$out/pmds/${p%.23}"   # EAL -d DIR loads *.so only
done
{ ldd "$out"/stage/* "$out"/pmds/*.so 2>/dev/null || true; } |
	awk '/=> \//{print $3}' | sort -u |
	grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
	xargs -r -I{} cp -L {} "$out/lib/"
tar -C "$out/stage" -c . | xz -T2 -6 > "$out/bins.tar.xz"
tar -C "$out" -c lib pmds | xz -T2 -2 > "$out/libs.tar.xz"
rm -rf "${out:?}/stage" "${out:?}/lib" "${out:?}/pmds"
git rev-parse HEAD > "$out/commit"
du -sh "$out"
