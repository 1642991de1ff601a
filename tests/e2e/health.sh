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
# Detection is asserted in check rounds, from the checker's own counters
# (`fgctl health --json`: successes, failures per service and backend), not
# in milliseconds measured from outside, so a busy machine cannot fail it:
#   down: at most 1 check succeeds after the kill (one in flight), then
#         `fall` failures mark it down: down within fall + 1 rounds;
#   up:   at most 1 check fails after the server listens again (one in
#         flight), then `rise` successes mark it up: up within rise + 1.
# "After" counts from a snapshot of the counters (`fgctl --json health`)
# taken right after the kill / once the server listens.
# The waits give up after fall + 10 (rise + 10) rounds of the checker's,
# and a 120 s guard only against a hang.  Wall-clock times are printed, not
# asserted.  Root only (77 otherwise).
#
#   tests/e2e/health.sh BUILD_DIR
set -uo pipefail
. "$(dirname "$0")/../e2e/e2e_lib.sh"
e2e_begin health fghc "health.sh BUILD_DIR" "$@"
FGCTL="$BUILD/control/fgctl"
INTERVAL=200 FALL=3 RISE=2 TIMEOUT=150
N=${FG_HEALTH_N:-300}

e2e_need_root "network namespaces"
e2e_need_tools ip tc ethtool python3 clang
e2e_sweep

FG_PID= HOLD_PID=
cleanup() {
	[ -n "$HOLD_PID" ] && kill "$HOLD_PID" 2>/dev/null
	[ -n "$FG_PID" ] && kill -TERM "$FG_PID" 2>/dev/null && sleep 0.5
	e2e_teardown
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

fail=0
die() { echo "health: FAIL: $*"; [ -f "$RUN/flowgate.log" ] && tail -20 "$RUN/flowgate.log"; exit 1; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
ctl() { "$FGCTL" -s "$RUN/ctl.sock" "$@"; }

e2e_network -q

stub_start() { # i
	: > "$RUN/stub$1.out"
	ip netns exec "$P-b$1" python3 "$HERE/tests/e2e/http_stub.py" --name "gpu$1" \
		--log "$RUN/b$1.log" >> "$RUN/stub$1.out" 2>&1 &
	echo $! > "$RUN/stub$1.pid"
	for _ in $(seq 600); do grep -q listening "$RUN/stub$1.out" && return 0; sleep 0.05; done  # 30 s guard
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
for _ in $(seq 600); do   # 60 s: a guard against a hang
	grep -q "flowgate: running" "$RUN/flowgate.log" && break
	kill -0 "$FG_PID" 2>/dev/null || die "flowgate exited"
	sleep 0.1
done
grep -q "flowgate: running" "$RUN/flowgate.log" || die "flowgate did not start"

# backend 10.99.0.12 on both services, from the checker's own counters:
# "dsr4_state dsr4_successes dsr4_failures nat4_state nat4_successes nat4_failures"
b2_health() { # [FILE: a saved `fgctl --json health`]
	{ if [ -n "${1:-}" ]; then cat "$1"; else ctl --json health 2>/dev/null; fi; } | python3 -c '
import json, sys
try:
    h = json.load(sys.stdin)
    st = {b["service"].split()[0]: b for b in h["backends"] if b["backend"].startswith("10.99.0.12")}
    print(" ".join("%s %d %d" % (st[s]["state"], st[s]["successes"], st[s]["failures"])
                   for s in ("dsr4", "nat4")))
except (ValueError, KeyError, TypeError):
    print("? 0 0 ? 0 0")'
}
b2_state() { local h; h=($(b2_health)); echo "${h[0]} ${h[3]}"; }
# wait_b2 WANT ("up up"/"down down") BASE ("s1 f1 s2 f2": counters when the
# change was made) MAXROUNDS -> prints "rounds ok_after bad_after ms" per
# service when both show WANT, "never: ..." after MAXROUNDS checks without it
wait_b2() {
	local want=$1 max=$3 t0 h r1 r2
	local base=($2)
	t0=$(now_ms)
	while :; do
		h=($(b2_health))
		# checks run on each service since the change
		r1=$(( h[1] + h[2] - base[0] - base[1] )); r2=$(( h[4] + h[5] - base[2] - base[3] ))
		if [ "${h[0]} ${h[3]}" = "$want" ]; then
			echo "dsr4: $(( h[1] - base[0] )) ok $(( h[2] - base[1] )) failed; nat4: $(( h[4] - base[2] )) ok $(( h[5] - base[3] )) failed; $(( $(now_ms) - t0 )) ms"
			B2_AFTER="${h[1]} ${h[2]} ${h[4]} ${h[5]}"
			return 0
		fi
		if [ "$r1" -gt "$max" ] && [ "$r2" -gt "$max" ] || [ $(( $(now_ms) - t0 )) -gt 120000 ]; then
			echo "never: state ${h[0]} ${h[3]} after $r1 / $r2 checks"; return 1
		fi
		sleep 0.02
	done
}
# counters from a snapshot: fgctl alone (fast), parsed later, so the
# snapshot is taken right at the change (python's start-up would delay it)
b2_counters() { local h; h=($(b2_health "$1")); echo "${h[1]} ${h[2]} ${h[4]} ${h[5]}"; }
snap() { ctl --json health > "$RUN/hc-$1.json" 2>/dev/null; }
traffic() { # label -> all connections must succeed
	for vip in 10.99.100.1 10.99.100.2; do
		rm -f "$RUN/res.json"
		ip netns exec "$P-c" timeout 70 python3 "$HERE/tests/e2e/load_client.py" "$vip" \
			-n "$N" -c 16 --timeout 5 --max-failures 20 --deadline 60 -o "$RUN/res.json" > "$RUN/client.out" 2>&1
		python3 - "$RUN/res.json" "$1 $vip" "$N" <<'PY' || { fail=1; tail -3 "$RUN/client.out"; }
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    print(f"  FAIL: {sys.argv[2]}: no result from load_client.py ({e})")
    sys.exit(1)
ok = r["ok"]
print(f"  {sys.argv[2]}: {ok}/{sys.argv[3]} connections ok")
if ok != int(sys.argv[3]):
    print(f"  FAIL: errors {r['errors']}; first failing requests {r['first_failures']}"
          + (f"; stopped early: {r['stopped']}" if r.get("stopped") else ""))
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
# Step 1's connections are closed and their entries expire on their own
# timer, which a slow host can outrun; what on_fail keep must keep is shown
# on connections that stay open: 48 idle ones to dsr4, held across step 2
# (a client that never closes sends no FIN, so they stay ESTABLISHED).
ip netns exec "$P-c" python3 -c '
import socket, sys, time
held = []
for i in range(48):
    s = socket.create_connection(("10.99.100.1", 80), timeout=10)
    held.append(s)
print("held", len(held), flush=True)
time.sleep(600)' > "$RUN/hold.out" 2>&1 &
HOLD_PID=$!
for _ in $(seq 1200); do grep -q "^held" "$RUN/hold.out" && break; kill -0 $HOLD_PID 2>/dev/null || break; sleep 0.1; done  # hang guard
grep -q "^held" "$RUN/hold.out" || die "could not hold connections to dsr4: $(tail -3 "$RUN/hold.out")"
b2_est() { ctl --json flows list --service dsr4 --backend 10.99.0.12 --state ESTABLISHED 2>/dev/null |
	python3 -c 'import json, sys; print(len(json.load(sys.stdin)))'; }
held_b2=$(b2_est)
echo "  held open: 48 connections to dsr4, $held_b2 of them ESTABLISHED on backend 2"
[ "$held_b2" -gt 0 ] 2>/dev/null || { echo "  FAIL: none of 48 held connections is tracked on backend 2"; fail=1; }

echo "health: step 2: stop backend 2's server"
stub2=$(cat "$RUN/stub2.pid")
kill -TERM "$stub2"; snap kill
base=$(b2_counters "$RUN/hc-kill.json")
r=$(wait_b2 "down down" "$base" $(( FALL + 10 ))) || { echo "  FAIL: backend 2 not marked down: $r"; fail=1; }
echo "  marked down: checks since the kill: $r"
# down within fall + 1 rounds: at most one check (in flight at the kill)
# succeeded after it; then exactly `fall` failures make it down
if [ "${r#never}" = "$r" ]; then
	ok1=$(echo "$r" | awk '{print $2}'); ok2=$(echo "$r" | awk '{print $7}')
	[ "$ok1" -le 1 ] && [ "$ok2" -le 1 ] \
		&& echo "  ok: down within fall + 1 = $(( FALL + 1 )) check rounds on both services" \
		|| { echo "  FAIL: $ok1 (dsr4) / $ok2 (nat4) checks succeeded after the kill: down later than fall + 1 rounds"; fail=1; }
fi
keep_after=$(b2_est); reset_after=$(b2_flows nat4)
echo "  tracked flows on backend 2 after down: dsr4 (keep) $keep_after held open, nat4 (reset) $reset_after"
[ "$keep_after" -ge "$held_b2" ] 2>/dev/null && [ "$keep_after" -gt 0 ] \
	|| { echo "  FAIL: on_fail keep lost backend 2's flows ($held_b2 held open before, $keep_after after)"; fail=1; }
kill "$HOLD_PID" 2>/dev/null; HOLD_PID=
[ "$reset_after" = 0 ] || { echo "  FAIL: on_fail reset left backend 2's flows"; fail=1; }
nf0=$(b2_new_flows)
traffic down
nf1=$(b2_new_flows)
echo "  backend 2 new_flows (dsr4 nat4) before $nf0, after traffic while down $nf1"
[ "$nf0" = "$nf1" ] || { echo "  FAIL: new flows reached backend 2 while down"; fail=1; }

echo "health: step 3: restart backend 2's server"
stub_start 2; snap listen
base=$(b2_counters "$RUN/hc-listen.json")
r=$(wait_b2 "up up" "$base" $(( RISE + 10 ))) || { echo "  FAIL: backend 2 not marked up: $r"; fail=1; }
echo "  marked up: checks since the server listens: $r"
# up within rise + 1 rounds: at most one check (in flight) failed after the
# server listened; then `rise` successes make it up
if [ "${r#never}" = "$r" ]; then
	bad1=$(echo "$r" | awk '{print $4}'); bad2=$(echo "$r" | awk '{print $9}')
	[ "$bad1" -le 1 ] && [ "$bad2" -le 1 ] \
		&& echo "  ok: up within rise + 1 = $(( RISE + 1 )) check rounds on both services" \
		|| { echo "  FAIL: $bad1 (dsr4) / $bad2 (nat4) checks failed after the server listened: up later than rise + 1 rounds"; fail=1; }
fi
c0=$(client_conns 2)
traffic after
c1=$(client_conns 2)
echo "  backend 2 connections from the client: $c0 -> $c1"
[ "$c1" -gt "$c0" ] || { echo "  FAIL: no new flows reach backend 2 after it came back"; fail=1; }
ctl health | sed 's/^/  /' | head -8

kill -TERM "$FG_PID"
for _ in $(seq 300); do kill -0 "$FG_PID" 2>/dev/null || break; sleep 0.1; done  # 30 s guard
if kill -0 "$FG_PID" 2>/dev/null; then
	echo "  FAIL: flowgate did not stop on SIGTERM"; fail=1; kill -KILL "$FG_PID"
else
	grep -q "flowgate: stopped cleanly" "$RUN/flowgate.log" || { echo "  FAIL: unclean stop"; fail=1; }
fi
FG_PID=
grep "flowgate: health" "$RUN/flowgate.log" | sed 's/^/  /'
[ $fail = 0 ] && echo "health: PASS" || { echo "health: FAIL"; tail -20 "$RUN/flowgate.log"; }
exit $fail
