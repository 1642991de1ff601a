#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Health checks end to end (issue 4): flowgate in the balancer namespace of
# the netns-setup.sh network, two services over the three backend
# namespaces, checked every 200 ms (fall 3, rise 2, timeout 150 ms):
#   dsr4 10.99.100.1:80 dsr-ipip, health http GET /health, on_fail keep
#   nat4 10.99.100.2:80 nat,      health tcp,              on_fail reset
# Steps: traffic to both (every backend gets flows); stop backend 2's
# server -> `fgctl health --json` shows it down on both services within
# interval x fall + margin; dsr4 keeps b2's tracked flows, nat4 has none
# left (reset); traffic while down: every connection succeeds and b2's
# new_flows counters do not move; restart the server -> up within
# interval x rise + margin; traffic: b2 serves connections again.
#
# Margins (this runs on a loaded 2-core VM): down must be seen within
# interval x fall + timeout + 1000 ms = 1750 ms of the kill, up within
# interval x rise + 1000 ms = 1400 ms of the server listening again.  The
# measured times are printed.  Root only (77 otherwise); bounded (~1 min).
#
#   tests/e2e/health.sh BUILD_DIR
set -uo pipefail
BUILD=$(cd "${1:?usage: health.sh BUILD_DIR}" && pwd)
HERE=$(cd "$(dirname "$0")/../.." && pwd)
P=fghc$$
RUN=$(mktemp -d /tmp/flowgate-health.XXXXXX)
FGCTL="$BUILD/control/fgctl"
INTERVAL=200 FALL=3 RISE=2 TIMEOUT=150 MARGIN=1000
N=${FG_HEALTH_N:-300}

[ "$(id -u)" = 0 ] || { echo "health: needs root (network namespaces)"; exit 77; }
for t in ip tc python3 clang; do
	command -v $t >/dev/null || { echo "health: $t missing"; exit 77; }
done

FG_PID=
cleanup() {
	[ -n "$FG_PID" ] && kill -TERM "$FG_PID" 2>/dev/null
	sleep 0.5
	"$HERE/scripts/netns-teardown.sh" "$P"
	if [ -n "${FG_E2E_KEEP:-}" ]; then echo "health: logs kept in $RUN"; else rm -rf "$RUN"; fi
	rm -rf "/var/run/dpdk/$P"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail=0
die() { echo "health: FAIL: $*"; [ -f "$RUN/flowgate.log" ] && tail -20 "$RUN/flowgate.log"; exit 1; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
ctl() { "$FGCTL" -s "$RUN/ctl.sock" "$@"; }

clang -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu \
	-c "$HERE/tests/e2e/fg_decap.bpf.c" -o "$RUN/fg_decap.o" || exit 1
"$HERE/scripts/netns-setup.sh" "$P" "$RUN/fg_decap.o" >/dev/null || exit 1

stub_start() { # i
	: > "$RUN/stub$1.out"
	ip netns exec "$P-b$1" python3 "$HERE/tests/e2e/http_stub.py" --name "gpu$1" \
		--log "$RUN/b$1.log" >> "$RUN/stub$1.out" 2>&1 &
	echo $! > "$RUN/stub$1.pid"
	for _ in $(seq 100); do grep -q listening "$RUN/stub$1.out" && return 0; sleep 0.05; done
	die "stub $1 did not start"
}
for i in 1 2 3; do : > "$RUN/b$i.log"; stub_start $i; done

cat > "$RUN/flowgate.conf" <<EOF
control_socket "$RUN/ctl.sock";
conntrack { capacity 65536; }
port net_af_packet0 { local 10.99.0.1; }
neighbour 10.99.0.11 02:00:00:99:00:11;
neighbour 10.99.0.12 02:00:00:99:00:12;
neighbour 10.99.0.13 02:00:00:99:00:13;
service dsr4 10.99.100.1:80/tcp {
    mode dsr-ipip;
    on_fail keep;
    health http { path /health; expect 200; interval ${INTERVAL}ms; timeout ${TIMEOUT}ms; rise $RISE; fall $FALL; }
    backend 10.99.0.11; backend 10.99.0.12; backend 10.99.0.13;
}
service nat4 10.99.100.2:80/tcp {
    mode nat;
    on_fail reset;
    health tcp { interval ${INTERVAL}ms; timeout ${TIMEOUT}ms; rise $RISE; fall $FALL; }
    backend 10.99.0.11; backend 10.99.0.12; backend 10.99.0.13;
}
EOF
ip netns exec "$P-lb" "$BUILD/dataplane/flowgate" --no-huge -m 512 \
	--file-prefix "$P" -l 0,1 --no-pci --vdev=net_af_packet0,iface=lb0 -- \
	-c "$RUN/flowgate.conf" > "$RUN/flowgate.log" 2>&1 &
FG_PID=$!
for _ in $(seq 200); do
	grep -q "flowgate: running" "$RUN/flowgate.log" && break
	kill -0 "$FG_PID" 2>/dev/null || die "flowgate exited"
	sleep 0.1
done
grep -q "flowgate: running" "$RUN/flowgate.log" || die "flowgate did not start"

# state of backend 10.99.0.12 on both services: "up up", "down down", ...
b2_state() {
	ctl --json health 2>/dev/null | python3 -c '
import json, sys
try:
    h = json.load(sys.stdin)
except ValueError:
    print("?"); sys.exit()
st = {b["service"].split()[0]: b["state"] for b in h["backends"] if b["backend"].startswith("10.99.0.12")}
print(" ".join(st.get(s, "?") for s in ("dsr4", "nat4")))'
}
wait_b2() { # want ("up up"/"down down") limit_ms t0_ms -> prints elapsed
	local want=$1 limit=$2 t0=$3 s
	while :; do
		s=$(b2_state)
		[ "$s" = "$want" ] && { echo $(( $(now_ms) - t0 )); return 0; }
		[ $(( $(now_ms) - t0 )) -gt $(( limit + 3000 )) ] && { echo "never ($s)"; return 1; }
		sleep 0.02
	done
}
traffic() { # label -> all connections must succeed
	for vip in 10.99.100.1 10.99.100.2; do
		ip netns exec "$P-c" timeout 60 python3 "$HERE/tests/e2e/load_client.py" "$vip" \
			-n "$N" -c 16 --timeout 5 -o "$RUN/res.json" > /dev/null
		python3 - "$RUN/res.json" "$1 $vip" "$N" <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1]))
ok = r.get("ok", r.get("succeeded", 0))
print(f"  {sys.argv[2]}: {ok}/{sys.argv[3]} connections ok")
sys.exit(0 if ok == int(sys.argv[3]) else 1)
PY
	done
	sleep 0.3
}
b2_new_flows() {
	ctl --json stats 2>/dev/null | python3 -c '
import json, sys
st = json.load(sys.stdin)
print(" ".join(str(b["new_flows"]) for s in st["services"] for b in s["backends"]
               if b["addr"] == "10.99.0.12"))'
}
b2_flows() { # service -> tracked flows on 10.99.0.12
	ctl --json flows list --service "$1" --backend 10.99.0.12 2>/dev/null | python3 -c '
import json, sys
v = json.load(sys.stdin)
if isinstance(v, dict):
    v = v.get("flows", v.get("count", []))
print(v if isinstance(v, int) else len(v))'
}
client_conns() { grep -c "^10.99.0.2 " "$RUN/b$1.log"; }

echo "health: step 1: all up, traffic to every backend"
s=$(b2_state); [ "$s" = "up up" ] || die "backend 2 not up at start: $s"
traffic before
c=$(client_conns 2); [ "$c" -gt 0 ] || { echo "  FAIL: backend 2 got no connections before the stop"; fail=1; }
keep_before=$(b2_flows dsr4); reset_before=$(b2_flows nat4)
echo "  backend 2: $c connections, tracked flows dsr4 $keep_before nat4 $reset_before"

echo "health: step 2: stop backend 2's server"
t0=$(now_ms); kill -TERM "$(cat "$RUN/stub2.pid")"
limit=$(( INTERVAL * FALL + TIMEOUT + MARGIN ))
el=$(wait_b2 "down down" "$limit" "$t0") || { echo "  FAIL: backend 2 not marked down: $el"; fail=1; }
echo "  marked down after $el ms (limit $limit = interval x fall + timeout + margin)"
case "$el" in ''|*[!0-9]*) ;; *) [ "$el" -le "$limit" ] || { echo "  FAIL: too slow"; fail=1; } ;; esac
keep_after=$(b2_flows dsr4); reset_after=$(b2_flows nat4)
echo "  tracked flows on backend 2 after down: dsr4 (keep) $keep_after, nat4 (reset) $reset_after"
[ "$keep_after" -gt 0 ] 2>/dev/null || { echo "  FAIL: on_fail keep lost backend 2's flows"; fail=1; }
[ "$reset_after" = 0 ] || { echo "  FAIL: on_fail reset left backend 2's flows"; fail=1; }
nf0=$(b2_new_flows)
traffic down
nf1=$(b2_new_flows)
echo "  backend 2 new_flows (dsr4 nat4) before $nf0, after traffic while down $nf1"
[ "$nf0" = "$nf1" ] || { echo "  FAIL: new flows reached backend 2 while down"; fail=1; }

echo "health: step 3: restart backend 2's server"
stub_start 2; t1=$(now_ms)
limit=$(( INTERVAL * RISE + MARGIN ))
el=$(wait_b2 "up up" "$limit" "$t1") || { echo "  FAIL: backend 2 not marked up: $el"; fail=1; }
echo "  marked up after $el ms (limit $limit = interval x rise + margin)"
case "$el" in ''|*[!0-9]*) ;; *) [ "$el" -le "$limit" ] || { echo "  FAIL: too slow"; fail=1; } ;; esac
c0=$(client_conns 2)
traffic after
c1=$(client_conns 2)
echo "  backend 2 connections from the client: $c0 -> $c1"
[ "$c1" -gt "$c0" ] || { echo "  FAIL: no new flows reach backend 2 after it came back"; fail=1; }
ctl health | sed 's/^/  /' | head -8

kill -TERM "$FG_PID"
for _ in $(seq 50); do kill -0 "$FG_PID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$FG_PID" 2>/dev/null; then
	echo "  FAIL: flowgate did not stop on SIGTERM"; fail=1; kill -KILL "$FG_PID"
else
	grep -q "flowgate: stopped cleanly" "$RUN/flowgate.log" || { echo "  FAIL: unclean stop"; fail=1; }
fi
FG_PID=
grep "flowgate: health" "$RUN/flowgate.log" | sed 's/^/  /'
[ $fail = 0 ] && echo "health: PASS" || { echo "health: FAIL"; tail -20 "$RUN/flowgate.log"; }
exit $fail
