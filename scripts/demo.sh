#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# `make demo`: flowgate balancing real TCP traffic to three "GPU worker"
# namespaces, in one command.
#
#   scripts/demo.sh BUILD_DIR
#
# Builds the namespace network (scripts/netns-setup.sh), starts the HTTP
# inference stubs and flowgate on net_af_packet (scripts/netns-flowgate.sh),
# sends a few thousand real requests through five VIPs (DSR IPIP, DSR GUE,
# NAT; IPv4 and IPv6), then shows the flow table and per-backend counters
# through fgctl (or DPDK telemetry when fgctl is not built) and tears
# everything down.  Bounded to < 2 minutes.
set -uo pipefail
BUILD=$(cd "${1:-build}" && pwd)
HERE=$(cd "$(dirname "$0")/.." && pwd)
P=fgdemo
RUN=$(mktemp -d /tmp/flowgate-demo.XXXXXX)
N=${FG_DEMO_N:-1000}

[ "$(id -u)" = 0 ] || { echo "demo: run as root (network namespaces)"; exit 1; }
cleanup() {
	[ -f "$RUN/flowgate.pid" ] && kill -TERM "$(cat "$RUN/flowgate.pid")" 2>/dev/null && sleep 1
	"$HERE/scripts/netns-teardown.sh" "$P"
	rm -rf "$RUN" "/var/run/dpdk/$P"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
"$HERE/scripts/netns-teardown.sh" "$P"   # leftovers of an interrupted run

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "network: client, balancer (flowgate on net_af_packet), 3 GPU workers, one L2 segment"
clang -O2 -target bpf -I/usr/include/x86_64-linux-gnu \
	-c "$HERE/tests/e2e/fg_decap.bpf.c" -o "$RUN/fg_decap.o" || exit 1
"$HERE/scripts/netns-setup.sh" "$P" "$RUN/fg_decap.o" || exit 1

step "flowgate: 5 services, backends gpu1..3 weighted 1:2:3"
"$HERE/scripts/netns-flowgate.sh" "$P" "$BUILD" "$RUN" || exit 1
grep '^flowgate:' "$RUN/flowgate.log"

step "one request:  curl -X POST http://10.99.100.1/v1/infer"
ip netns exec "$P-c" curl -s -m 3 -X POST -d '{"prompt":"hello gpu"}' http://10.99.100.1/v1/infer; echo

for vip in 10.99.100.1 10.99.100.3 fd99:100::1 10.99.100.2 fd99:100::2; do
	step "$N TCP connections to $vip"
	ip netns exec "$P-c" timeout 60 python3 "$HERE/tests/e2e/load_client.py" "$vip" \
		-n "$N" -c 32 --timeout 5
done

FGCTL="$BUILD/control/fgctl"
if [ -x "$FGCTL" ]; then
	step "flow table:  fgctl flows list --limit 15"
	"$FGCTL" -s "$RUN/ctl.sock" flows list --limit 15
	step "fgctl flows count --per-core"
	"$FGCTL" -s "$RUN/ctl.sock" flows count --per-core
	step "per-backend counters:  fgctl stats"
	"$FGCTL" -s "$RUN/ctl.sock" stats
else
	step "fgctl not built: DPDK telemetry (dpdk-telemetry.py -f $P)"
	for c in /flowgate/ct /flowgate/backends; do
		echo "$c" | dpdk-telemetry.py -f "$P" 2>/dev/null | python3 -m json.tool | head -60
	done
fi

step "stop flowgate (SIGTERM): final counters"
kill -TERM "$(cat "$RUN/flowgate.pid")"
for _ in $(seq 50); do grep -q "stopped cleanly" "$RUN/flowgate.log" && break; sleep 0.1; done
rm -f "$RUN/flowgate.pid"
sed -n '/final counters/,$p' "$RUN/flowgate.log"
echo; echo "demo: done (namespaces removed on exit)"
