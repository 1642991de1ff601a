#!/usr/bin/env bash
# build-trex.sh SRC: builds TRex v3.08 (a trex-core source tree you checked
# out yourself, cisco-system-traffic-generator/trex-core tag v3.08; nothing
# is downloaded here) for trex_vs_dut.sh: the optimized image _t-rex-64
# only (--no-old --targets=_t-rex-64, not the debug and the -o images).
# Two edits to SRC (idempotent), for GCC 12 (Debian 12), which stops the
# build with
#   src/rpc-server/trex_rpc_cmd_api.h: error: dangling pointer to an
#   unnamed temporary may be used [-Werror=dangling-pointer=]
#   external_libs/json/jsoncpp.cpp (Json::Reader::readValue): error:
#   'v.Json::Value::value_' may be used uninitialized [-Werror=maybe-uninitialized]
#   (the same in src/astf/astf_db.cpp, CTcpServerInfo's copy constructor)
# 1. linux_dpdk/ws_main.py's gcc_flags get -Wno-dangling-pointer after -Werror;
# 2. those two files start with a pragma that turns -Wmaybe-uninitialized
#    off (not a flag for all: that recompiles every C++ unit).
# And one fix to the DPDK TRex bundles: its net_memif TX
# (src/dpdk/drivers/net/memif/rte_eth_memif.c, eth_memif_tx) sets
# MEMIF_DESC_FLAG_NEXT on a descriptor but never clears it when the slot is
# reused, so once mbufs of two pools share a burst (IMIX: one pool per size)
# a stale NEXT chains unrelated packets on the receiver and the ring stalls
# (TRex's DP core then hangs in send_burst and its watchdog kills it).
# 3. each descriptor's flags are cleared where eth_memif_tx takes it.
# configure is what ran here (`--no-mlx --no-bnxt`; waf reads the next word
# as --no-mlx's value, so the mlx5/bnxt PMDs are still built).
# JOBS (default: all CPUs) is waf's -j.  Prints the TRex folder for
# trex_vs_dut.sh --trex (SRC/scripts: _t-rex-64, so/, automation/,
# external_libs/) on success.  About 640 compile units: ~10 minutes on 16
# cores, ~45 minutes on 2 busy ones.
set -euo pipefail
SRC=${1:?usage: build-trex.sh SRC}
[[ -f "$SRC/linux_dpdk/ws_main.py" && -d "$SRC/scripts/automation" ]] || { echo "build-trex: $SRC is no trex-core tree" >&2; exit 2; }
grep -q "v3.08" "$SRC/VERSION" 2>/dev/null ||
	echo "build-trex: warning: $SRC/VERSION is $(cat "$SRC/VERSION" 2>/dev/null); v3.08 is what was tried" >&2
ws="$SRC/linux_dpdk/ws_main.py"
grep -q "'-Wno-dangling-pointer'" "$ws" ||
	sed -i "s/^\( *\)'-Werror',$/&\n\1'-Wno-dangling-pointer',/" "$ws"
for f in external_libs/json/jsoncpp.cpp src/astf/astf_db.cpp; do
	grep -q 'ignored "-Wmaybe-uninitialized"' "$SRC/$f" ||
		sed -i '1i #pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  /* GCC 12 (build-trex.sh) */' "$SRC/$f"
done
mf="$SRC/src/dpdk/drivers/net/memif/rte_eth_memif.c"
grep -q 'build-trex.sh: no stale NEXT flag' "$mf" ||
	perl -0pi -e 's/(next_in_chain1:\n\t\t\td0 = &ring->desc\[slot & mask\];\n)/$1\t\t\td0->flags = 0;\t\/* build-trex.sh: no stale NEXT flag *\/\n/;
		s/(\t\t\tsaved_slot = slot;\n\t\t\td0 = &ring->desc\[slot & mask\];\n)(\t\t\tdst_off = 0;)/$1\t\t\td0->flags = 0;\t\/* build-trex.sh: no stale NEXT flag *\/\n$2/' "$mf"
[[ $(grep -c 'build-trex.sh: no stale NEXT flag' "$mf") == 2 ]] || { echo "build-trex: $mf: memif TX fix did not apply" >&2; exit 1; }
cd "$SRC/linux_dpdk"
[[ -d build_dpdk/c4che ]] || ./b configure --no-mlx --no-bnxt >&2
./b build --no-old --no-ver --targets=_t-rex-64 -j "${JOBS:-$(nproc)}" >&2
[[ -x "$SRC/scripts/_t-rex-64" ]] || ln -sf ../linux_dpdk/build_dpdk/linux_dpdk/_t-rex-64 "$SRC/scripts/_t-rex-64"
echo "$SRC/scripts"
