#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The host exception path (`flowgate --host-tap`), end to end in namespaces.
# flowgate owns lb0; the balancer host's kernel gets TAP fg0 with
# flowgate's own address 10.99.0.1 (and a /32 route to the client through
# fg0, so its answers cannot leave through hc0 instead).  Asserts:
#   * the client pings 10.99.0.1 (answered by the kernel through the TAP),
#   * the client opens TCP connections to a kernel server on 10.99.0.1:8022,
#   * the kernel's own neighbour resolution works (its ARP request leaves
#     through flowgate, the client's ARP reply is handed back to it),
#   * load balancing goes on meanwhile (connections through a DSR VIP),
#   * fgctl stats count host_packets and host_to_wire, no host_ring_full,
#   * flowgate stops cleanly and removes the TAP.
# Root only (skips with 77 otherwise).  Bounded: ~20 s.
#
#   tests/e2e/host.sh BUILD_DIR
set -uo pipefail
. "$(dirname "$0")/../e2e/e2e_lib.sh"
e2e_begin host fgh "host.sh BUILD_DIR" "$@"

e2e_need_root "network namespaces, TAP"
[ -c /dev/net/tun ] || { echo "host: no /dev/net/tun"; exit 77; }
e2e_need_tools ip tc ethtool python3 clang ping
e2e_sweep

cleanup() {
	[ -n "${SRV:-}" ] && kill "$SRV" 2>/dev/null
	e2e_term_pidfile "$RUN/flowgate.pid"
	e2e_teardown
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

e2e_network
if ! FG_WORKERS=1 "$HERE/scripts/netns-flowgate.sh" "$P" "$BUILD" "$RUN" --host-tap; then
	# a sandbox without TUN support: not a flowgate failure
	grep -q "host-tap: cannot create TAP" "$RUN/flowgate.log" && { echo "host: SKIP, no TAP here: $(grep 'cannot create TAP' "$RUN/flowgate.log")"; exit 77; }
	exit 1
fi
grep -q "host exception path on TAP fg0" "$RUN/flowgate.log" || { echo "FAIL: no TAP"; cat "$RUN/flowgate.log"; exit 1; }

lb() { ip netns exec "$P-lb" "$@"; }
lb ip link set fg0 up
lb ip addr add 10.99.0.1/32 dev fg0
lb ip route add 10.99.0.2/32 dev fg0 src 10.99.0.1
# the kernel's own TCP server on the balancer's address
lb python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.99.0.1", 8022)); s.listen(64)
while True:
    c, a = s.accept(); c.sendall(b"host-ssh-ok\n"); c.close()
' &
SRV=$!
# listening before the first connection (polled: python may take seconds to
# start on a loaded machine; 30 s is the hang guard)
for _ in $(seq 300); do
	lb ss -Hltn 'sport = :8022' | grep -q 8022 && break
	sleep 0.1
done

fail=0
ip netns exec "$P-c" ping -c 5 -i 0.2 -W 2 10.99.0.1 > "$RUN/ping.txt" 2>&1
grep -q " 0% packet loss" "$RUN/ping.txt" && echo "ok   ping 10.99.0.1 through the TAP: $(grep -o '[0-9]* received' "$RUN/ping.txt")" \
	|| { echo "FAIL: ping"; cat "$RUN/ping.txt"; fail=1; }
ok=$(ip netns exec "$P-c" python3 - <<'PY'
import socket
ok = 0
for i in range(20):
    try:
        s = socket.create_connection(("10.99.0.1", 8022), timeout=3)
        ok += s.recv(64).startswith(b"host-ssh-ok")
        s.close()
    except OSError:
        pass
print(ok)
PY
)
[ "$ok" = 20 ] && echo "ok   20/20 TCP connections to the kernel's server on 10.99.0.1:8022" \
	|| { echo "FAIL: $ok/20 TCP connections to the host"; fail=1; }
lb ip neigh show 10.99.0.2 dev fg0 | grep -q 02:00:00:99:00:02 \
	&& echo "ok   the kernel resolved the client through flowgate (ARP reply handed to the TAP)" \
	|| { echo "FAIL: kernel neighbour of 10.99.0.2: $(lb ip neigh show dev fg0)"; fail=1; }
ip netns exec "$P-c" timeout 40 python3 "$HERE/tests/e2e/load_client.py" 10.99.100.1 \
	-n 200 -c 8 --timeout 5 --max-failures 20 --deadline 30 -o "$RUN/res.json" > "$RUN/client.out" 2>&1
python3 "$HERE/tests/e2e/check_run.py" "$RUN/res.json" --n 200 --dsr --tolerance 10 \
	--logs "$RUN/b1.log" "$RUN/b2.log" "$RUN/b3.log" > "$RUN/check.out" \
	&& echo "ok   200/200 connections through the DSR VIP meanwhile" \
	|| { echo "FAIL: VIP traffic:"; cat "$RUN/check.out"; fail=1; }
"$BUILD/control/fgctl" -s "$RUN/ctl.sock" --json stats > "$RUN/stats.json" \
	|| { echo "FAIL: fgctl stats exited $?: $(head -c 300 "$RUN/stats.json")"; fail=1; }
python3 - "$RUN/stats.json" <<'PY' || fail=1
import json, sys
try:
    t = json.load(open(sys.argv[1]))["total"]
except (OSError, ValueError, KeyError) as e:
    print(f"FAIL: no stats from fgctl ({e!r})")
    sys.exit(1)
print(f"     host_packets {t['host_packets']}, host_to_wire {t['host_to_wire']}, "
      f"host_ring_full {t['host_ring_full']}, host_unhandled {t['drops_by_reason']['host_unhandled']}")
bad = t["host_packets"] < 25 or t["host_to_wire"] < 25 or t["host_ring_full"] != 0
print("FAIL: host counters" if bad else "ok   host counters")
sys.exit(1 if bad else 0)
PY
pid=$(cat "$RUN/flowgate.pid")
kill -TERM "$pid"
for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done  # 30 s guard
rm -f "$RUN/flowgate.pid"
grep -q "flowgate: stopped cleanly" "$RUN/flowgate.log" || { echo "FAIL: no clean stop"; tail -20 "$RUN/flowgate.log"; fail=1; }
lb ip link show fg0 >/dev/null 2>&1 && { echo "FAIL: TAP fg0 left behind"; fail=1; }
[ $fail = 0 ] && echo "host: PASS" || { echo "host: FAIL"; tail -30 "$RUN/flowgate.log"; }
exit $fail
