#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# `make demo`: flowgate balancing real TCP traffic to three "GPU worker"
# namespaces, in one command.
#
#   scripts/demo.sh BUILD_DIR
#
# Builds the namespace network (scripts/netns-setup.sh), starts the HTTP
# inference stubs and flowgate on net_af_packet (scripts/netns-flowgate.sh),
# shows one real response from each backend, sends FG_DEMO_N (1000) requests
# through each of five VIPs (DSR IPIP, DSR GUE, NAT; IPv4 and IPv6), then,
# while a few connections are held open, the flow table (ESTABLISHED flows)
# and the per-backend counters through fgctl, and tears everything down.
# Exits 0 only if at least 99% of the requests succeeded.  About a minute on
# a 2-core machine.
#
# Memory: flowgate runs with --no-huge -m 512 (see netns-flowgate.sh): the
# port is net_af_packet on a veth, which copies every packet through the
# kernel anyway, so hugepages would not make it faster; the demo reserves
# none (make bench does, for the benchmarks that need them).
#
# Everything is named after fgdemo<PID> (namespaces, /tmp/flowgate-fgdemo<PID>,
# the EAL prefix): two demos at once do not meet, and what a killed demo
# left is removed by the next one (netns-teardown.sh --sweep).
set -uo pipefail
BUILD=$(cd "${1:-build}" && pwd)
HERE=$(cd "$(dirname "$0")/.." && pwd)
P=fgdemo$$
RUN=/tmp/flowgate-$P
N=${FG_DEMO_N:-1000}
T0=$(date +%s)

fail() { echo; echo "demo: FAIL: $*"; exit 1; }
[ "$(id -u)" = 0 ] || fail "run as root (network namespaces)"
for t in ip ethtool curl python3 clang; do
	command -v $t >/dev/null || fail "$t is not installed (scripts/install-deps.sh installs it)"
done
for b in dataplane/flowgate control/fgctl; do
	[ -x "$BUILD/$b" ] || fail "$BUILD/$b is not built (make demo builds it)"
done
FGCTL="$BUILD/control/fgctl"

HOLD=
cleanup() {
	[ -n "$HOLD" ] && kill "$HOLD" 2>/dev/null
	[ -f "$RUN/flowgate.pid" ] && kill -TERM "$(cat "$RUN/flowgate.pid")" 2>/dev/null && sleep 1
	"$HERE/scripts/netns-teardown.sh" "$P" || echo "demo: could not remove everything of $P (see above)"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
# leftovers of demos and tests that were killed (their owner PID is gone);
# a demo running now is left alone
"$HERE/scripts/netns-teardown.sh" --sweep
mkdir -p "$RUN"

step() { printf '\n\033[1m== %s\033[0m  [%d s]\n' "$*" $(( $(date +%s) - T0 )); }

step "memory: --no-huge -m 512, no hugepages reserved"
echo "flowgate takes 512 MiB of ordinary memory: its port is net_af_packet on a veth, which copies"
echo "every packet through the kernel, so hugepages would not make it faster (make bench reserves them)"

step "network: client, balancer (flowgate on net_af_packet), 3 GPU workers, one L2 segment"
[ -x "$BUILD/xdp/fg-decap" ] || fail "no $BUILD/xdp/fg-decap (the worker-side decap): build first"
"$HERE/scripts/netns-setup.sh" "$P" "$BUILD/xdp/fg-decap" || fail "network setup (see the line above)"

step "flowgate: 5 services, backends gpu1..3 weighted 1:2:3"
"$HERE/scripts/netns-flowgate.sh" "$P" "$BUILD" "$RUN" || fail "flowgate did not start (see above)"
grep '^flowgate:' "$RUN/flowgate.log"

step "one request at a time through the NAT VIP until each backend answered:  curl -X POST http://10.99.100.2/v1/infer"
seen=""
for i in $(seq 40); do
	resp=$(ip netns exec "$P-c" curl -s -m 3 -X POST -d "{\"prompt\":\"hello gpu, request $i\"}" http://10.99.100.2/v1/infer)
	w=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["worker"])' "$resp" 2>/dev/null) \
		|| fail "request $i: no answer from a backend (curl printed '${resp}')"
	case " $seen " in *" $w "*) ;; *) seen="$seen $w"; echo "$w answered: $resp" ;; esac
	[ "$(echo $seen | wc -w)" = 3 ] && break
done
[ "$(echo $seen | wc -w)" = 3 ] || fail "only$seen answered 40 requests"

total=0 ok=0
for vip in 10.99.100.1 10.99.100.3 fd99:100::1 10.99.100.2 fd99:100::2; do
	case $vip in 10.99.100.1) what="DSR IPIP" ;; 10.99.100.3) what="DSR GUE" ;;
	             fd99:100::1) what="DSR IP6IP6" ;; *) what="NAT" ;; esac
	step "$N TCP connections (one POST each) to $vip ($what)"
	rm -f "$RUN/res.json"
	ip netns exec "$P-c" timeout 40 python3 "$HERE/tests/e2e/load_client.py" "$vip" \
		-n "$N" -c 32 --timeout 5 --max-failures 50 --deadline 30 -o "$RUN/res.json" > "$RUN/client.out" 2>&1
	if ! r=$(python3 - "$RUN/res.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
pw = "  ".join(f"{k} {v}" for k, v in sorted(r["per_worker"].items()))
print(f"{r['ok']} {r['ok'] + r['failed']}")
msg = f"{r['ok']}/{r['ok'] + r['failed']} succeeded in {r['seconds']} s;  per backend: {pw}"
if r["failed"]:
    msg += f"\nfailures: {r['errors']}; first: {r['first_failures']}"
if r.get("stopped"):
    msg += f"\nstopped early: {r['stopped']}"
print(msg)
PY
	); then
		echo "no result from the client:"; tail -5 "$RUN/client.out"
		total=$(( total + N )); continue
	fi
	set -- $(head -1 <<< "$r")
	ok=$(( ok + $1 )); total=$(( total + $2 ))
	tail -n +2 <<< "$r"
done

step "holding 4 connections open per VIP, to show ESTABLISHED flows"
ip netns exec "$P-c" python3 - > "$RUN/hold.out" 2>&1 <<'PY' &
import socket, sys, time
socks = []
for vip in ("10.99.100.1", "10.99.100.3", "fd99:100::1", "10.99.100.2", "fd99:100::2"):
    fam = socket.AF_INET6 if ":" in vip else socket.AF_INET
    for _ in range(4):
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.settimeout(3)
        try:
            s.connect((vip, 80))
            socks.append(s)
        except OSError as e:
            print(f"hold: {vip}: {e}", flush=True)
print(f"hold: {len(socks)} open", flush=True)
time.sleep(120)
PY
HOLD=$!
for _ in $(seq 300); do grep -q "open" "$RUN/hold.out" && break; sleep 0.1; done
cat "$RUN/hold.out"
sleep 0.3

step "flow table:  fgctl flows list --state ESTABLISHED --limit 20"
"$FGCTL" -s "$RUN/ctl.sock" flows list --state ESTABLISHED --limit 20 || fail "fgctl flows list"
step "fgctl flows count --per-core"
"$FGCTL" -s "$RUN/ctl.sock" flows count --per-core || fail "fgctl flows count"
step "per-backend counters:  fgctl --json stats (all of it: fgctl stats)"
"$FGCTL" -s "$RUN/ctl.sock" --json stats > "$RUN/stats.json" || fail "fgctl stats: $(head -c 300 "$RUN/stats.json")"
python3 - "$RUN/stats.json" <<'PY' || fail "fgctl stats printed no per-backend counters"
import json, sys
st = json.load(open(sys.argv[1]))
print(f"{'service':8s} {'backend':12s} {'weight':>6s} {'state':>6s} {'new_flows':>10s} {'packets':>9s}")
for s in st["services"]:
    for b in s["backends"]:
        print(f"{s['name']:8s} {b['addr']:12s} {b['weight']:6d} {b['state']:>6s} {b['new_flows']:10d} {b['packets']:9d}")
t = st["total"]
print(f"total: rx {t['rx_packets']} tx {t['tx_packets']} new_flows {t['new_flows']} drops {t['drops']} "
      f"{ {k: v for k, v in t['drops_by_reason'].items() if v} }")
PY
kill "$HOLD" 2>/dev/null; HOLD=

step "stop flowgate (SIGTERM): final counters"
kill -TERM "$(cat "$RUN/flowgate.pid")"
for _ in $(seq 300); do grep -q "stopped cleanly" "$RUN/flowgate.log" && break; sleep 0.1; done
grep -q "stopped cleanly" "$RUN/flowgate.log" || echo "demo: flowgate did not say it stopped cleanly"
rm -f "$RUN/flowgate.pid"
sed -n '/final counters/,/^  service/p' "$RUN/flowgate.log" | grep -vE ' 0$' | head -30

echo
pct=$(python3 -c "print(f'{100 * $ok / max($total, 1):.2f}')")
if [ "$total" -gt 0 ] && [ $(( ok * 100 )) -ge $(( total * 99 )) ]; then
	echo "demo: PASS: $ok/$total requests succeeded ($pct%, at least 99% needed) in $(( $(date +%s) - T0 )) s; namespaces removed on exit"
	exit 0
fi
echo "demo: FAIL: $ok/$total requests succeeded ($pct%, at least 99% needed); namespaces removed on exit"
exit 1
