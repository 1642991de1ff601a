#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# End-to-end through flowgate-xdp: real TCP from the client namespace to
# the DSR VIPs (IPIP v4, GUE v4, IP6IP6), flowgate-xdp in generic XDP mode
# on the balancer's veth, backends decapsulating with fg-decap (TC), the
# same network and HTTP stubs as the DPDK e2e test (scripts/netns-setup.sh).
# Asserts: every connection answered by a backend with the right reply
# (load_client.py checks each one), spread of weights 1:2:3 (a binomial
# test, check_run.py), each connection on exactly one backend; fgctl flows
# count / list / get and stats answer from flowgate-xdp with the flows and
# counters of the run; the backends' fg-decap counters saw the traffic;
# flowgate-xdp exits cleanly on SIGTERM leaving the program attached
# (restarts keep the flows: e2e-xdp-restart), and `flowgate-xdp detach`
# removes it, its pinned link and maps.
# Root only (exit 77 otherwise).  Bounded: ~1-2 min.
#
#   tests/xdp/e2e_xdp.sh BUILD_DIR [N]
set -uo pipefail
. "$(dirname "$0")/../e2e/e2e_lib.sh"
e2e_begin e2e-xdp fgxdp "e2e_xdp.sh BUILD_DIR [N]" "$@"
N=${2:-${FG_E2E_N:-1500}}
FGX="$BUILD/xdp/flowgate-xdp"
FGCTL="$BUILD/control/fgctl"

e2e_need_root "network namespaces, BPF"
e2e_need_tools ip ethtool python3
for b in "$FGX" "$FGCTL" "$BUILD/xdp/fg-decap"; do
	[ -x "$b" ] || { echo "e2e-xdp: FAIL: $b is not built"; exit 1; }
done
e2e_sweep

PIN="$RUN/bpffs/flowgate"
cleanup() {
	e2e_term_pidfile "$RUN/fgx.pid"
	ip netns exec "$P-lb" "$FGX" detach lb0 --pin-dir "$PIN" > /dev/null 2>&1
	mountpoint -q "$RUN/bpffs" && umount "$RUN/bpffs"
	e2e_teardown
	rm -rf "$RUN"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

e2e_network
# the maps and the link are pinned in a bpffs of the test's own
mkdir -p "$RUN/bpffs" && mount -t bpf bpf "$RUN/bpffs" || { echo "e2e-xdp: FAIL: mount -t bpf on $RUN/bpffs"; exit 1; }

# On an XDP node the kernel keeps the interface: it answers ARP / ND for
# the VIPs (on lb0 here) and the XDP program takes the VIP traffic first.
nse() { ip netns exec "$P-lb" "$@"; }
# hc0 (the host side on the same segment) must not answer ARP for them:
# the client would send VIP traffic around the XDP program
nse sysctl -qw net.ipv6.conf.lb0.disable_ipv6=0 net.ipv4.conf.lb0.arp_ignore=0 \
	net.ipv6.conf.lb0.accept_dad=0 net.ipv4.conf.hc0.arp_ignore=1 || { echo "e2e-xdp: FAIL: sysctl on lb0"; exit 1; }
for v in 10.99.100.1/32 10.99.100.3/32; do
	ip -n "$P-lb" addr add "$v" dev lb0 || { echo "e2e-xdp: FAIL: VIP $v on lb0"; exit 1; }
done
ip -n "$P-lb" addr add fd99:100::1/128 dev lb0 nodad || { echo "e2e-xdp: FAIL: VIP fd99:100::1 on lb0"; exit 1; }

{ cat <<EOF
# closed DSR flows stay FIN_WAIT / CLOSE: long timeouts keep every flow of
# the run listed however slow a shared machine is (and check that the
# config's timeouts reach the XDP program)
conntrack {
    capacity 65536;
    timeout fin_wait 10m;
    timeout close 10m;
    timeout syn_sent 10m;
}
EOF
	e2e_conf_lb0 6
	e2e_conf_service dsr4 10.99.100.1:80 dsr-ipip 1 2 3
	e2e_conf_service gue4 10.99.100.3:80 dsr-gue 1 2 3
	e2e_conf_service dsr6 '[fd99:100::1]:80' dsr-ipip 1 2 3 6
} > "$RUN/xdp.conf"

e2e_stubs_start
# directly, not through nse: $! must be flowgate-xdp itself (SIGTERM below)
ip netns exec "$P-lb" "$FGX" -c "$RUN/xdp.conf" -i lb0 --mode generic -s "$RUN/ctl.sock" \
	--pin-dir "$PIN" > "$RUN/fgx.log" 2>&1 &
echo $! > "$RUN/fgx.pid"
for _ in $(seq 300); do   # 30 s: a guard against a hang, not a bound
	grep -q "flowgate-xdp: running" "$RUN/fgx.log" 2>/dev/null && break
	kill -0 "$(cat "$RUN/fgx.pid")" 2>/dev/null || { echo "e2e-xdp: FAIL: flowgate-xdp exited:"; cat "$RUN/fgx.log"; rm -f "$RUN/fgx.pid"; exit 1; }
	sleep 0.1
done
grep -q "flowgate-xdp: running on lb0 (generic XDP)" "$RUN/fgx.log" || { echo "e2e-xdp: FAIL: flowgate-xdp did not start in generic mode:"; cat "$RUN/fgx.log"; exit 1; }
e2e_stubs_wait

fail=0
ctl() { "$FGCTL" -s "$RUN/ctl.sock" "$@"; }
run() { # vip service
	local vip=$1 name=$2 rc=0
	for i in 1 2 3; do : > "$RUN/b$i.log"; done
	rm -f "$RUN/res.json"
	ip netns exec "$P-c" timeout 100 python3 "$HERE/tests/e2e/load_client.py" "$vip" \
		-n "$N" -c 32 --timeout 5 --max-failures 50 --deadline 90 -o "$RUN/res.json" \
		> "$RUN/client.out" 2>&1 || rc=$?
	[ -s "$RUN/res.json" ] || { echo "FAIL: load_client.py to $vip exited $rc without a result:"; tail -5 "$RUN/client.out"; }
	sleep 0.3
	echo -n "xdp $vip: "
	python3 "$HERE/tests/e2e/check_run.py" "$RUN/res.json" --n "$N" --dsr \
		--logs "$RUN/b1.log" "$RUN/b2.log" "$RUN/b3.log" || fail=1
	# right away: a closed DSR flow stays FIN_WAIT (30 s) after its last packet
	ctl --json flows list --service "$name" > "$RUN/list-$name.json" 2> "$RUN/list.err" \
		|| { echo "FAIL: fgctl flows list --service $name: $(cat "$RUN/list.err")"; fail=1; }
}
run 10.99.100.1 dsr4
run 10.99.100.3 gue4
run fd99:100::1 dsr6

# fgctl against flowgate-xdp: stats, flows count / list / get
ctl --json stats --per-core > "$RUN/stats.json" 2> "$RUN/stats.err" || { echo "FAIL: fgctl stats: $(cat "$RUN/stats.err")"; fail=1; }
ctl --json flows count > "$RUN/count.json" 2> "$RUN/count.err" || { echo "FAIL: fgctl flows count: $(cat "$RUN/count.err")"; fail=1; }
ctl --json flows list > "$RUN/list.json" 2> "$RUN/list.err" || { echo "FAIL: fgctl flows list: $(cat "$RUN/list.err")"; fail=1; }
for i in 1 2 3; do
	ip netns exec "$P-b$i" "$BUILD/xdp/fg-decap" status eth0 --json > "$RUN/decap$i.json" \
		|| { echo "FAIL: fg-decap status in $P-b$i"; fail=1; }
done
python3 - "$RUN" "$N" <<'PY' || fail=1
import json, sys
run, n = sys.argv[1], int(sys.argv[2])
bad = []
def load(name):
    try:
        with open(f"{run}/{name}") as f:
            txt = f.read()
        try:
            return json.loads(txt)
        except ValueError:   # streamed: one JSON value per line
            return [json.loads(l) for l in txt.splitlines() if l.strip()]
    except (OSError, ValueError) as e:
        bad.append(f"{name}: {e}")
        return None
st, cnt, lst = load("stats.json"), load("count.json"), load("list.json")
if st:
    t = st["total"]
    print(f"  stats: rx {t['rx_packets']} tx {t['tx_packets']} new_flows {t['new_flows']} "
          f"ct_hits {t['ct_hits']} host {t['host_packets']} drops {t['drops']}")
    if st.get("dataplane") != "xdp":
        bad.append("stats does not say dataplane xdp")
    # a client may reuse the port of a connection the server closed (no
    # TIME_WAIT on its side): its SYN finds the flow's entry, no new flow
    if t["new_flows"] < 0.9 * 3 * n or t["new_flows"] > 3 * n:
        bad.append(f"new_flows {t['new_flows']}: want 90-100% of {3 * n} connections")
    if t["ct_hits"] < 3 * n:
        bad.append(f"ct_hits {t['ct_hits']} < one per connection")
    flow_drops = {k: v for k, v in t["drops_by_reason"].items() if v}
    if flow_drops:
        bad.append(f"drops on the flow path: {flow_drops}")
    if sum(c["rx_packets"] for c in st["per_core"]) != t["rx_packets"]:
        bad.append("per-core rx_packets do not sum to the total")
def flows_of(doc):
    out = []
    for it in (doc if isinstance(doc, list) else [doc]) if doc is not None else []:
        if isinstance(it, dict) and "flow" in it:
            out.append(it["flow"])
        elif isinstance(it, dict) and "src" in it:
            out.append(it)
        elif isinstance(it, dict) and "flows" in it:
            out.extend(it["flows"])
    return out
# each service's flows, listed right after its run: one per distinct
# client tuple (>= 90% of the connections: port reuse, above)
for name in ("dsr4", "gue4", "dsr6"):
    fl = flows_of(load(f"list-{name}.json"))
    wrong = [f for f in fl if f.get("service") != name]
    print(f"  flows list --service {name}: {len(fl)} flows")
    if len(fl) < 0.9 * n or len(fl) > n or wrong:
        bad.append(f"{name}: {len(fl)} flows listed ({len(wrong)} of another service), want 90-100% of {n}")
    if fl and any(f.get("expires_ms", 0) < 60000 for f in fl):
        bad.append(f"{name}: a flow expires within a minute: the config's 10m timeouts did not apply")
    if fl and any(f.get("backend") in (None, "") for f in fl):
        bad.append(f"{name}: flows without a backend")
flows = flows_of(lst)
total = None
if cnt:
    c = cnt[0] if isinstance(cnt, list) else cnt
    total = c.get("total", c.get("flows"))
print(f"  at the end: flows count {total}, flows list {len(flows)}")
if total is None or abs(len(flows) - total) > 10:
    bad.append(f"flows list ({len(flows)}) and flows count ({total}) disagree")
last = flows_of(load("list-dsr6.json")) or flows
if last:
    f = last[0]
    with open(f"{run}/get.args", "w") as o:
        o.write(f"{f['src']}:{f['sport']} {f['dst']}:{f['dport']} {f['proto']}\n")
dec = 0
for i in (1, 2, 3):
    d = load(f"decap{i}.json")
    if d:
        c = d["counters"]
        dec += c["decap_ipip"] + c["decap_gue"]
        if not c["decap_gue"] or not c["decap_ipip"]:
            bad.append(f"backend {i}: fg-decap counters {c}")
print(f"  fg-decap: {dec} packets decapsulated on the backends")
for b in bad:
    print("  FAIL:", b)
sys.exit(1 if bad else 0)
PY
if [ -s "$RUN/get.args" ]; then
	read -r src dst proto < "$RUN/get.args"
	case $src in *:*:*) src="[${src%:*}]:${src##*:}"; dst="[${dst%:*}]:${dst##*:}";; esac
	case $proto in 6) proto=tcp;; 17) proto=udp;; esac
	if ctl --json flows get "$src" "$dst" "$proto" > "$RUN/get.json" 2>&1 && grep -q '"backend"' "$RUN/get.json"; then
		echo "  flows get $src $dst $proto: found"
	else
		echo "  FAIL: fgctl flows get $src $dst $proto: $(head -c 300 "$RUN/get.json")"; fail=1
	fi
	if ctl flows get 192.0.2.1:1 10.99.100.1:80 tcp > "$RUN/get404.out" 2>&1; then
		echo "  FAIL: flows get of a tuple nobody opened succeeded"; fail=1
	fi
fi

# config verbs against flowgate-xdp: drain gpu1 of dsr4, its new
# connections go to gpu2/gpu3 only (Maglev rebuilt, swapped in)
ctl service list > "$RUN/svc.out" 2>&1 && grep -q dsr4 "$RUN/svc.out" \
	|| { echo "FAIL: fgctl service list: $(head -c 300 "$RUN/svc.out")"; fail=1; }
if ctl backend drain dsr4 10.99.0.11 > "$RUN/drain.out" 2>&1; then
	for i in 1 2 3; do : > "$RUN/b$i.log"; done
	rm -f "$RUN/res.json"
	ip netns exec "$P-c" timeout 100 python3 "$HERE/tests/e2e/load_client.py" 10.99.100.1 \
		-n 300 -c 16 --timeout 5 --max-failures 20 --deadline 90 -o "$RUN/res.json" \
		> "$RUN/client.out" 2>&1
	sleep 0.3
	python3 - "$RUN" <<'PY' || fail=1
import json, sys
run = sys.argv[1]
res = json.load(open(f"{run}/res.json"))
n1 = sum(1 for _ in open(f"{run}/b1.log"))
ok = res["ok"] == 300 and not res["failed"] and n1 == 0
print(f"  after fgctl backend drain dsr4 10.99.0.11: {res['ok']}/300 ok, per backend {res['per_worker']}, gpu1 {n1}")
if not ok:
    print("  FAIL: a drained backend got new connections, or connections failed")
sys.exit(0 if ok else 1)
PY
else
	echo "FAIL: fgctl backend drain: $(head -c 300 "$RUN/drain.out")"; fail=1
fi

pid=$(cat "$RUN/fgx.pid")
kill -TERM "$pid"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
	echo "FAIL: flowgate-xdp did not stop on SIGTERM"; fail=1; kill -KILL "$pid"
fi
rm -f "$RUN/fgx.pid"
grep -q "flowgate-xdp: stopped cleanly" "$RUN/fgx.log" || { echo "FAIL: flowgate-xdp did not exit cleanly"; tail -5 "$RUN/fgx.log"; fail=1; }
# the program outlives the daemon (its link is pinned); detach removes all
ip -n "$P-lb" link show lb0 | grep -qE 'xdpgeneric|xdpdrv|prog/xdp' \
	|| { echo "FAIL: no XDP program on lb0 after flowgate-xdp stopped: a restart would lose the flows"; fail=1; }
ip netns exec "$P-lb" "$FGX" detach lb0 --pin-dir "$PIN" > "$RUN/detach.out" 2>&1 \
	|| { echo "FAIL: flowgate-xdp detach: $(cat "$RUN/detach.out")"; fail=1; }
echo "  $(cat "$RUN/detach.out")"
if ip -n "$P-lb" link show lb0 | grep -qE 'xdpgeneric|xdpdrv|prog/xdp'; then echo "FAIL: XDP still attached to lb0 after flowgate-xdp detach"; fail=1; fi
[ -e "$PIN" ] && { echo "FAIL: $PIN left after flowgate-xdp detach: $(ls "$PIN")"; fail=1; }

[ $fail = 0 ] && echo "e2e-xdp: PASS" || { echo "e2e-xdp: FAIL"; tail -30 "$RUN/fgx.log"; }
exit $fail
