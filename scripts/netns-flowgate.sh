#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Starts the HTTP stubs in the backend namespaces and flowgate in the
# balancer namespace of a network built by netns-setup.sh, with the
# standard test services (weights 1:2:3):
#
#   dsr4 10.99.100.1:80 dsr-ipip   nat4 10.99.100.2:80 nat   gue4 10.99.100.3:80 dsr-gue
#   dsr6 [fd99:100::1]:80 dsr-ipip  nat6 [fd99:100::2]:80 nat
#
#   scripts/netns-flowgate.sh PREFIX BUILD_DIR RUN_DIR [extra flowgate options]
#
# FG_WORKERS=2 runs two workers on this 2-core machine (EAL --lcores maps
# main lcore 0 to cpu 0 and workers 1, 2 to cpus 1 and 1), net_af_packet with
# one queue pair per worker and software RSS dispatch between them.
#
# Writes RUN_DIR/flowgate.log, RUN_DIR/flowgate.pid, RUN_DIR/ctl.sock,
# RUN_DIR/bN.log (connections each backend served).  Returns once flowgate
# runs, or fails after 60 s (a busy machine starts it slowly).  EAL file prefix: PREFIX (telemetry:
# dpdk-telemetry.py -f PREFIX).
set -euo pipefail
P=${1:?usage}; BUILD=${2:?usage}; RUN=${3:?usage}; shift 3
HERE=$(cd "$(dirname "$0")/.." && pwd)
FG="$BUILD/dataplane/flowgate"
[ -x "$FG" ] || { echo "netns-flowgate: $FG not built" >&2; exit 1; }
mkdir -p "$RUN"

# the stubs once per RUN_DIR: a second call (another flowgate) keeps them
if [ ! -e "$RUN/stubs.started" ]; then
	for i in 1 2 3; do
		: > "$RUN/b$i.log"
		ip netns exec "$P-b$i" python3 "$HERE/tests/e2e/http_stub.py" --name "gpu$i" \
			--log "$RUN/b$i.log" > "$RUN/stub$i.out" 2>&1 &
	done
	touch "$RUN/stubs.started"
fi

args=(--ct-capacity 65536 -s "$RUN/ctl.sock" --local 10.99.0.1 --local fd99::1)
for i in 1 2 3; do
	args+=(--neigh "10.99.0.1$i,02:00:00:99:00:1$i" --neigh "fd99::1$i,02:00:00:99:00:1$i")
done
svc() { # spec mode name family
	args+=(--service "$1,mode=$2,name=$3")
	for i in 1 2 3; do
		if [ "$4" = 6 ]; then args+=(--backend "fd99::1$i,weight=$i"); else args+=(--backend "10.99.0.1$i,weight=$i"); fi
	done
}
svc 10.99.100.1:80 dsr-ipip dsr4 4
svc 10.99.100.2:80 nat nat4 4
svc 10.99.100.3:80 dsr-gue gue4 4
svc '[fd99:100::1]:80' dsr-ipip dsr6 6
svc '[fd99:100::2]:80' nat nat6 6

# main lcore 0 (control), worker lcore 1; af_packet on the veth
W=${FG_WORKERS:-1}
case "$W" in
1) lcores=(-l 0,1) ;;
2) lcores=(--lcores=0@0,1@1,2@1) ;;
*) echo "netns-flowgate: FG_WORKERS must be 1 or 2" >&2; exit 2 ;;
esac
ip netns exec "$P-lb" "$FG" --no-huge -m 512 --file-prefix "$P" "${lcores[@]}" \
	--no-pci --vdev="net_af_packet0,iface=lb0,qpairs=$W" -- "${args[@]}" "$@" \
	> "$RUN/flowgate.log" 2>&1 &
echo $! > "$RUN/flowgate.pid"
for _ in $(seq 600); do   # 60 s: a guard against a hang, not a bound
	grep -q "flowgate: running" "$RUN/flowgate.log" 2>/dev/null && break
	kill -0 "$(cat "$RUN/flowgate.pid")" 2>/dev/null || { cat "$RUN/flowgate.log" >&2; exit 1; }
	sleep 0.1
done
grep -q "flowgate: running" "$RUN/flowgate.log" || { echo "netns-flowgate: flowgate did not start" >&2; cat "$RUN/flowgate.log" >&2; exit 1; }
# stubs listening? (python's start-up is slow on a busy machine: 30 s)
for i in 1 2 3; do
	for _ in $(seq 300); do grep -q listening "$RUN/stub$i.out" && break; sleep 0.1; done
	grep -q listening "$RUN/stub$i.out" || { echo "netns-flowgate: FAIL: the HTTP stub of $P-b$i does not listen: $(tail -3 "$RUN/stub$i.out")" >&2; exit 1; }
done
