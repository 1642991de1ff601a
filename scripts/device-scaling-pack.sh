#!/bin/bash
# Packs what the device machine (Ubuntu, no DPDK) needs for the multi-core
# dataplane scaling run: a statically linked flowgate-bench (DPDK static,
# no CUDA), the same for BEFORE_SRC's tree if given (flowgate-bench-before,
# the one-worker before/after), dpdk-testpmd and two prebuilt l3fwd
# baselines (`flowgate-bench l3fwd`: 64 B frames up to 10M flows, IMIX up to
# 1M) with the DPDK shared libraries and the PMDs the runs use (net_pcap,
# net_null), and every other shared library ldd lists (glibc excluded),
# into .carry/scale/ (git-ignored).
# Usage: [BEFORE_SRC=<worktree of the before commit>] \
#   scripts/device-scaling-pack.sh [builddir]; then run
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
# l3fwd: a run needs mbufs >= its pcap + 65536, entries >= 1.25 x flows,
# and its mbuf size (headroom + 256 for 64 B, DPDK's default for IMIX)
hr=$(awk '/define RTE_PKTMBUF_HEADROOM/{print $3}' /usr/include/*/dpdk/rte_config.h | head -1)
# NO_L3FWD=1: a pack for scripts/device-ab.sh, which runs without baselines
if [ -z "${NO_L3FWD:-}" ]; then
	"$B/bench/flowgate-bench" l3fwd --mbufs 10100000 --mbuf-size $((hr + 256)) \
		--entries $((16 << 20)) --out "$out/stage/l3fwd-64"
	"$B/bench/flowgate-bench" l3fwd --mbufs 1100000 --mbuf-size 0 \
		--entries $((4 << 20)) --out "$out/stage/l3fwd-imix"
fi
echo none > "$out/before.commit"
if [ -n "${BEFORE_SRC:-}" ]; then
	BB=$BEFORE_SRC/build-static
	[ -f "$BB/build.ninja" ] || meson setup "$BB" "$BEFORE_SRC" --buildtype=release \
		-Dstatic_dpdk=true -Dgpu=disabled -Dtests=false
	ninja -C "$BB" bench/flowgate-bench
	strip -o "$out/stage/flowgate-bench-before" "$BB/bench/flowgate-bench"
	git -C "$BEFORE_SRC" rev-parse HEAD > "$out/before.commit"
fi
pmdir=/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0
# not librte_bus_vdev: testpmd and both PMDs link it (lib/), and a second
# copy loaded as a plugin registers a second vdev bus, on which no driver
# sits ("vdev_probe(): failed to initialize net_pcap0": every earlier
# device testpmd baseline)
for p in librte_net_pcap.so.23 librte_net_null.so.23 librte_mempool_ring.so.23; do
	cp -L "$pmdir/$p" "$out/pmds/${p%.23}"   # EAL -d DIR loads *.so only
done
{ ldd "$B/bench/flowgate-bench" /usr/bin/dpdk-testpmd "$out"/stage/l3fwd-* \
	"$out"/pmds/*.so 2>/dev/null || true; } |
	awk '/=> \//{print $3}' | sort -u |
	grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
	xargs -r -I{} cp -L {} "$out/lib/"
tar -C "$out/stage" -c . | xz -T2 -6 > "$out/bins.tar.xz"
tar -C "$out" -c lib pmds | xz -T2 -2 > "$out/libs.tar.xz"
rm -rf "$out/stage" "$out/lib" "$out/pmds"
git rev-parse HEAD > "$out/commit"
du -sh "$out"
