#!/bin/bash
# Builds the statically linked GPU test and benchmark here (Debian, DPDK
# static) and packs them with the shared libraries ldd still lists (glibc
# excluded) into .carry/gpu/ (git-ignored), for scripts/device-gpu.sh on the
# device machine (Ubuntu, no DPDK).  Usage: scripts/device-gpu-pack.sh [builddir]
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build-gpu-static}
[ -f "$B/build.ninja" ] || meson setup "$B" --buildtype=release \
	-Db_lto=true -Dstatic_dpdk=true -Dgpu=enabled
# the daemon side too: flowgate --gpu through the fixtures and the
# CPU-vs-GPU comparison (tests/daemon), laid out as a build tree
D="dataplane/flowgate control/fgctl tests/fixtures/fg-fixtures-pcap bench/tools/fg-pcapgen"
ninja -C "$B" tests/gpu/test_gpu tests/gpu/test_gpu_mbuf bench/flowgate-bench $D
rm -rf .carry/gpu && mkdir -p .carry/gpu/lib .carry/gpu/stage/build
for b in tests/gpu/test_gpu tests/gpu/test_gpu_mbuf bench/flowgate-bench; do
	strip -o ".carry/gpu/stage/$(basename $b)" "$B/$b"
done
for b in $D; do
	mkdir -p ".carry/gpu/stage/build/$(dirname $b)"
	strip -o ".carry/gpu/stage/build/$b" "$B/$b"
done
ldd "$B/bench/flowgate-bench" "$B/tests/gpu/test_gpu" "$B/tests/gpu/test_gpu_mbuf" \
	$(printf "$B/%s " $D) | awk '/=> \//{print $3}' |
	sort -u | grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
	xargs -r -I{} cp -L {} .carry/gpu/lib/
tar -C .carry/gpu/stage -c test_gpu test_gpu_mbuf flowgate-bench build | xz -T2 -2 > .carry/gpu/bins.tar.xz
rm -rf .carry/gpu/stage
git rev-parse HEAD > .carry/gpu/commit
du -sh .carry/gpu; ls .carry/gpu/lib
