#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# e2e-xdp-mode: flowgate-xdp decides its attach mode honestly on a veth
# (issue 38).  lb0 is a veth whose peer (sw-lb, on the bridge) has no XDP
# program: native XDP_TX from lb0 would fail for every forwarded packet
# (the peer's xdp_tx_errors) while the program counts it as sent.
#   1. --mode auto: attaches generic and says why; real TCP forwards
#      (60 connections, every reply checked); the interface's counters
#      (fgctl stats "ports": tx_dropped, xdp_tx_errors) show no TX failure.
#   2. --mode native: exits non-zero with a sentence naming the veth peer.
#   3. An XDP program on the peer (tests/xdp/xdp_pass.bpf.c, native): now
#      --mode auto attaches native, and real TCP forwards through it.
# Root only (exit 77 otherwise, or where the kernel loads no XDP program).
#
#   tests/xdp/e2e_xdp_mode.sh BUILD_DIR
set -uo pipefail
. "$(dirname "$0")/../e2e/e2e_lib.sh"
e2e_begin e2e-xdp-mode fgxm "e2e_xdp_mode.sh BUILD_DIR" "$@"
FGX="$BUILD/xdp/flowgate-xdp"
FGCTL="$BUILD/control/fgctl"
PASS_OBJ="$BUILD/tests/xdp/xdp_pass.bpf.o"
PIN="$RUN/bpffs/fg"

e2e_need_root "network namespaces, BPF"
for b in "$FGX" "$FGCTL" "$BUILD/xdp/fg-decap" "$PASS_OBJ"; do
	[ -e "$b" ] || { echo "e2e-xdp-mode: FAIL: $b is not built"; exit 1; }
done
e2e_sweep
mkdir -p "$RUN/bpffs"

cleanup() {
	e2e_term_pidfile "$RUN/fgx.pid"
	ip netns exec "$P-lb" "$FGX" detach lb0 --pin-dir "$PIN" > /dev/null 2>&1
	mountpoint -q "$RUN/bpffs" && umount "$RUN/bpffs"
	"$HERE/scripts/netns-teardown.sh" "$P"
	rm -rf "$RUN"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

mount -t bpf bpf "$RUN/bpffs" 2>"$RUN/mount.err" || { echo "e2e-xdp-mode: skipped: no BPF filesystem: $(cat "$RUN/mount.err")"; exit 77; }
e2e_network
nse() { ip netns exec "$P-lb" "$@"; }
nse sysctl -qw net.ipv4.conf.lb0.arp_ignore=0 net.ipv4.conf.hc0.arp_ignore=1 \
	net.ipv4.conf.hc0.arp_announce=2 || { echo "e2e-xdp-mode: FAIL: sysctl on lb0"; exit 1; }
ip -n "$P-lb" addr add 10.99.100.1/32 dev lb0 || { echo "e2e-xdp-mode: FAIL: VIP on lb0"; exit 1; }

{
	e2e_conf_lb0
	e2e_conf_service dsr4 10.99.100.1:80 dsr-ipip 1 1 1
} > "$RUN/xdp.conf"
e2e_stubs_start
e2e_stubs_wait

fail=0
# start MODE LOG: flowgate-xdp in the background until "running" (0) or its exit (1)
start() {
	ip netns exec "$P-lb" "$FGX" -c "$RUN/xdp.conf" -i lb0 --mode "$1" -s "$RUN/ctl.sock" \
		--pin-dir "$PIN" > "$2" 2>&1 &
	echo $! > "$RUN/fgx.pid"
	for _ in $(seq 300); do   # 30 s: a guard against a hang, not a bound
		grep -q "flowgate-xdp: running" "$2" 2>/dev/null && return 0
		kill -0 "$(cat "$RUN/fgx.pid")" 2>/dev/null || { rm -f "$RUN/fgx.pid"; return 1; }
		sleep 0.1
	done
	return 1
}
stop() {
	local pid
	pid=$(cat "$RUN/fgx.pid")
	kill -TERM "$pid"
	for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	rm -f "$RUN/fgx.pid"
	nse "$FGX" detach lb0 --pin-dir "$PIN" > /dev/null || { echo "FAIL: flowgate-xdp detach lb0"; fail=1; }
}
traffic() { # what
	rm -f "$RUN/res.json"
	ip netns exec "$P-c" timeout 100 python3 "$HERE/tests/e2e/load_client.py" 10.99.100.1 \
		-n 60 -c 8 --timeout 5 --max-failures 10 --deadline 60 -o "$RUN/res.json" \
		> "$RUN/client.out" 2>&1
	python3 - "$RUN/res.json" "$1" <<'PY' || fail=1
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    print(f"  FAIL: {sys.argv[2]}: no client result ({e})"); sys.exit(1)
ok = r["ok"] == 60 and not r["failed"]
print(f"  {'' if ok else 'FAIL: '}{sys.argv[2]}: {r['ok']}/60 connections answered, "
      f"per backend {r['per_worker']}" + ("" if ok else f", errors {r['errors']}"))
sys.exit(0 if ok else 1)
PY
}

# 1. auto, the peer without an XDP program: generic, and why
if start auto "$RUN/auto1.log"; then
	if grep -q "running on lb0 (generic XDP)" "$RUN/auto1.log" && grep -q "veth whose peer" "$RUN/auto1.log"; then
		echo "  --mode auto, peer without XDP: $(grep -o 'attach: .*' "$RUN/auto1.log" | head -1 | cut -c1-160)"
	else
		echo "  FAIL: --mode auto on a veth whose peer has no XDP program did not fall back to generic with the reason:"; cat "$RUN/auto1.log"; fail=1
	fi
	traffic "--mode auto (generic fallback)"
	"$FGCTL" -s "$RUN/ctl.sock" --json stats > "$RUN/stats.json" || { echo "FAIL: fgctl stats"; fail=1; }
	python3 - "$RUN/stats.json" <<'PY' || fail=1
import json, sys
st = json.load(open(sys.argv[1]))
p = st["ports"][0] if st.get("ports") else None
ok = p is not None and p["name"] == "lb0" and p["xdp_tx_errors"] == 0 and p["tx_dropped"] == 0 \
    and st["attach_mode"] == "generic"
print(f"  {'' if ok else 'FAIL: '}fgctl stats: attach_mode {st.get('attach_mode')}, port {p}")
sys.exit(0 if ok else 1)
PY
	stop
else
	echo "  FAIL: --mode auto did not start:"; cat "$RUN/auto1.log"
	grep -q "cannot load the XDP program" "$RUN/auto1.log" && { echo "e2e-xdp-mode: skipped: the kernel loads no XDP program"; exit 77; }
	fail=1
fi

# 2. native, the peer without an XDP program: refused, with the cause
if start native "$RUN/native.log"; then
	echo "  FAIL: --mode native started on a veth whose peer has no XDP program:"; cat "$RUN/native.log"; fail=1
	stop
elif grep -q "native refused: lb0 is a veth whose peer" "$RUN/native.log"; then
	echo "  --mode native, peer without XDP: exit non-zero: $(grep -o 'cannot attach.*' "$RUN/native.log" | cut -c1-200)"
else
	echo "  FAIL: --mode native failed without naming the cause:"; cat "$RUN/native.log"; fail=1
fi
ip -n "$P-lb" link show lb0 | grep -qE 'xdpgeneric|xdpdrv|prog/xdp' && { echo "  FAIL: a refused start left a program on lb0"; fail=1; }

# 3. an XDP program on the peer: auto takes native, and it forwards
ip -n "$P-sw" link set dev sw-lb xdpdrv obj "$PASS_OBJ" sec xdp \
	|| { echo "e2e-xdp-mode: FAIL: attaching $PASS_OBJ to sw-lb"; exit 1; }
if start auto "$RUN/auto2.log" && grep -q "running on lb0 (native XDP)" "$RUN/auto2.log"; then
	echo "  --mode auto, peer with an XDP program: $(grep -o 'attach: .*' "$RUN/auto2.log" | head -1)"
	traffic "--mode auto (native)"
	stop
else
	echo "  FAIL: --mode auto did not attach native with an XDP program on the peer:"; cat "$RUN/auto2.log"; fail=1
	[ -f "$RUN/fgx.pid" ] && stop
fi

[ $fail = 0 ] && echo "e2e-xdp-mode: PASS" || echo "e2e-xdp-mode: FAIL"
exit $fail
