#!/bin/bash
# Packs what the device machine (no DPDK, no TRex) needs for
# scripts/device-trex.sh into .carry/trex/ (git-ignored): a static flowgate
# (DPDK static, no CUDA) and fgctl, dpdk-testpmd with the DPDK shared
# libraries and the PMDs it loads as plugins (net_memif, mempool ring), the
# TRex tree you built (pktgen-scripts/trex/build-trex.sh): _t-rex-64, the
# shared libraries it loads, its Python client and the external_libs the
# client imports; every shared library ldd lists (glibc excluded); and this
# checkout's generator scripts and scenarios (src.tar.xz), so the device
# runs these very scripts whatever checkout it was sent.
# Usage: scripts/device-trex-pack.sh TREX_DIR [builddir]
set -euo pipefail
cd "$(dirname "$0")/.."
TX=${1:?usage: device-trex-pack.sh TREX_DIR [builddir]}
B=${2:-build-static}
[ -x "$TX/_t-rex-64" ] || { echo "device-trex-pack: no $TX/_t-rex-64" >&2; exit 2; }
[ -f "$B/build.ninja" ] || meson setup "$B" --buildtype=release \
	-Db_lto=true -Dstatic_dpdk=true -Dgpu=disabled -Dtests=false
ninja -C "$B" dataplane/flowgate control/fgctl
out=.carry/trex
rm -rf "$out" && mkdir -p "$out/lib" "$out/pmds" "$out/stage" "$out/trex/automation/trex_control_plane"
strip -o "$out/stage/flowgate" "$B/dataplane/flowgate"
cp "$B/control/fgctl" /usr/bin/dpdk-testpmd "$out/stage/"
pmdir=/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0
# not librte_bus_vdev: testpmd links it (lib/); a second copy loaded as a
# plugin registers a second vdev bus with no driver on it
for p in librte_net_memif.so.23 librte_mempool_ring.so.23; do
	cp -L "$pmdir/$p" "$out/pmds/${p%.23}"   # EAL -d DIR loads *.so only
done
t=$out/trex
strip -o "$t/_t-rex-64" "$(readlink -f "$TX/_t-rex-64")"
cp -rL "$TX/automation/trex_control_plane/interactive" "$t/automation/trex_control_plane/"
mkdir -p "$t/external_libs"
for l in texttable-0.8.4 pyyaml-3.11 scapy-2.4.3 pyzmq-ctypes simpy-3.0.10 trex-openssl dpkt-1.9.1 repoze; do
	cp -rL "$TX/external_libs/$l" "$t/external_libs/"
done
find "$t" -name __pycache__ -prune -exec rm -rf {} +
# TRex's own libraries (libzmq, ...) next to it, as its so/ folder
mkdir -p "$t/so"
LD_LIBRARY_PATH="$TX/so/x86_64:$TX/so${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$TX/_t-rex-64" |
	awk '/=> \//{print $3}' | grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
	xargs -r -I{} cp -L {} "$t/so/"
{ ldd "$out"/stage/* "$out"/pmds/*.so 2>/dev/null || true; } |
	awk '/=> \//{print $3}' | sort -u |
	grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
	xargs -r -I{} cp -L {} "$out/lib/"
tar -C "$out/stage" -c . | xz -T2 -6 > "$out/bins.tar.xz"
tar -C "$out" -c lib pmds | xz -T2 -2 > "$out/libs.tar.xz"
tar -C "$out" -c trex | xz -T2 -6 > "$out/trex.tar.xz"
tar -c pktgen-scripts bench/scenarios bench/tools/fg_results.py scripts/device-trex.sh | xz -T2 > "$out/src.tar.xz"
rm -rf "${out:?}/stage" "${out:?}/lib" "${out:?}/pmds" "${out:?}/trex"
git rev-parse HEAD > "$out/commit"
git status --porcelain -- pktgen-scripts scripts/device-trex.sh >> "$out/commit"
du -sh "$out"
