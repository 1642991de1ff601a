#!/usr/bin/env bash
# build-pktgen.sh SRC [BUILDDIR]: builds Pktgen-DPDK 23.03.0 (a source tree
# you checked out yourself: tag pktgen-23.03.0; nothing is downloaded here)
# against the installed DPDK 22.11 with Lua, linked statically against DPDK
# (STATIC=0: shared), so the binary can be copied to a host without DPDK.
# Two edits to SRC (idempotent), both needed with Debian's DPDK 22.11:
#   1. app/pktgen-port-cfg.c: rte_eth_dev_set_mtu() answering -ENOTSUP
#      (net_memif, net_pcap, net_ring) is not fatal;
#   2. meson.build: dependency('libdpdk', static: true) and
#      --allow-multiple-definition (Debian's libpcap.a and librte_bpf.a both
#      define bpf_validate), only with STATIC=1.
# Prints the path of the binary (BUILDDIR/app/pktgen) on success.
set -euo pipefail
SRC=${1:?usage: build-pktgen.sh SRC [BUILDDIR]}
B=${2:-$SRC/build}
STATIC=${STATIC:-1}
[[ -f "$SRC/app/pktgen-port-cfg.c" ]] || { echo "build-pktgen: $SRC is no Pktgen-DPDK tree" >&2; exit 2; }
grep -q "pktgen-23.03" "$SRC/VERSION" 2>/dev/null || grep -q "23.03" "$SRC/VERSION" ||
	echo "build-pktgen: warning: $SRC/VERSION is $(cat "$SRC/VERSION" 2>/dev/null); 23.03.0 is what was tried" >&2
sed -i 's/if ((ret = rte_eth_dev_set_mtu(pid, pktgen.eth_mtu)) < 0)$/if ((ret = rte_eth_dev_set_mtu(pid, pktgen.eth_mtu)) < 0 \&\& ret != -ENOTSUP)/' \
	"$SRC/app/pktgen-port-cfg.c"
if ((STATIC)); then
	sed -i "s/dpdk = dependency('libdpdk', required: true)$/dpdk = dependency('libdpdk', required: true, static: true)\n\tadd_project_link_arguments('-Wl,--allow-multiple-definition', language: 'c')/" \
		"$SRC/meson.build"
fi
# lib/lua misses DPDK's include path: give it in c_args
[[ -f "$B/build.ninja" ]] || meson setup "$B" "$SRC" --buildtype=release -Denable_lua=true \
	-Dwerror=false -Dc_args="$(pkg-config --cflags-only-I libdpdk)" >&2
ninja -C "$B" ${NINJA_JOBS:+-j "$NINJA_JOBS"} >&2
echo "$B/app/pktgen"
