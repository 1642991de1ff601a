#!/usr/bin/env bash
# daemon_scenario.sh: one scenario through the real flowgate daemon.
# net_pcap replays the scenario's pcap from memory (infinite_rx=1) into port
# 0, flowgate (1 worker) balances it out of port 1 (net_null), and the rate
# is read from the daemon's own counters (fgctl --json stats) over a window,
# after a warm-up that lets the first pass insert the flows.
# Prints one JSON object.
#
#   daemon_scenario.sh --build BUILD --scenario FILE.scn --pcap FILE.pcap
#                      [--seconds N] [--lcores 0-1] [--file-prefix P]
#
# The services are the bench/demo VIPs (DSR-IPIP 10.100.0.1:80, GUE
# 10.100.0.2:80, NAT 10.100.0.3:80, IPv6 [fd00:100::1]:80), 3 backends each.
set -uo pipefail
build="" scn="" pcap="" secs=4 lcores="0-1" prefix="fg-bench-scn-$$"
while (($#)); do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --scenario) scn=$2; shift 2 ;;
    --pcap) pcap=$2; shift 2 ;;
    --seconds) secs=$2; shift 2 ;;
    --lcores) lcores=$2; shift 2 ;;
    --file-prefix) prefix=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "daemon_scenario: unknown option $1" >&2; exit 2 ;;
  esac
done
fg="$build/dataplane/flowgate" ctl="$build/control/fgctl"
[[ -x "$fg" ]] || { printf '{"status":"not available","reason":"flowgate daemon not built (%s)"}\n' "$fg"; exit 3; }
[[ -x "$ctl" ]] || { printf '{"status":"not available","reason":"fgctl not built (%s)"}\n' "$ctl"; exit 3; }
[[ -r "$scn" && -r "$pcap" ]] || { echo "daemon_scenario: need --scenario and --pcap files" >&2; exit 2; }

# scenario values the daemon needs: flows (conntrack size) and pcap size (mbufs)
read -r name flows fp npk maxlen < <(python3 - "$scn" "$pcap" <<'PY'
import struct, sys
kv = {}
for l in open(sys.argv[1]):
    l = l.strip()
    if l and not l.startswith('#') and '=' in l:
        k, v = (x.strip() for x in l.split('=', 1)); kv[k] = v.split('#')[0].strip().strip('"')
f = open(sys.argv[2], 'rb'); f.read(24); n = m = 0
while True:
    h = f.read(16)
    if len(h) < 16: break
    c = struct.unpack('<IIII', h)[2]; n += 1; m = max(m, c); f.seek(c, 1)
fl = kv.get('flows', '1000').upper().replace('K', '000').replace('M', '000000')
print(kv.get('name', 'unnamed'), int(float(fl)), int(kv.get('flow_packets', '0')), n, m)
PY
)
# Table: 2 x the scenario's concurrent flows (power of two, >= 64K): steady
# scenarios run at <= 50% fill, and a spoofed SYN storm (distinct sources
# beyond the legitimate flows) overflows it as a real one would.  A replayed
# pcap repeats its tuples, so for flow_packets = 1 (every packet a new
# connection) the table is kept at 64K, far below the pcap's distinct SYNs:
# every replayed SYN then misses and is inserted (evicting an unassured
# entry) or counted as untracked, as fresh connections would be.
if (( fp == 1 )); then cap=65536
else cap=65536; while (( cap < 2 * flows )); do cap=$((cap * 2)); done; fi
mbufs=$(( npk + 65536 ))
sock="/tmp/$prefix.sock" log="/tmp/$prefix.log"
svc=(--service 10.100.0.1:80/tcp,mode=dsr-ipip --backend 10.200.0.11 --backend 10.200.0.12 --backend 10.200.0.13
     --service 10.100.0.2:80/tcp,mode=dsr-gue --backend 10.200.0.11 --backend 10.200.0.12 --backend 10.200.0.13
     --service 10.100.0.3:80/tcp,mode=nat --backend 10.200.0.11:8080 --backend 10.200.0.12:8080 --backend 10.200.0.13:8080
     --service '[fd00:100::1]:80/tcp,mode=dsr-ipip' --backend fd00:200::11 --backend fd00:200::12 --backend fd00:200::13
     --local 10.200.0.2,port=1 --local fd00:200::2,port=1 --local 10.100.0.254,port=1
     --gateway 10.200.0.1,port=1 --gateway fd00:200::1,port=1
     --neigh 10.200.0.1,02:00:00:00:00:01,port=1 --neigh fd00:200::1,02:00:00:00:00:01,port=1
     --port-mac 0,02:00:00:00:00:02)
cmd=("$fg" -l "$lcores" --file-prefix "$prefix" --log-level='*:warning'
     --no-pci --vdev "net_pcap0,rx_pcap=$pcap,infinite_rx=1" --vdev "net_null0,no-rx=1" --
     --workers 1 --socket "$sock" --ct-capacity "$cap" --mbufs "$mbufs" "${svc[@]}")
"${cmd[@]}" </dev/null >"$log" 2>&1 &
pid=$!
cleanup() { kill -INT "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -f "$sock"; }
trap cleanup EXIT

stats() { "$ctl" -s "$sock" --json stats 2>/dev/null; }
up=0
for _ in $(seq 1 600); do
  kill -0 "$pid" 2>/dev/null || break
  if s=$(stats) && [[ "$s" == *rx_packets* ]]; then up=1; break; fi
  sleep 0.1
done
if ((!up)); then
  reason=$(grep -iE 'error|cannot|fail|invalid' "$log" | head -2 | tr '"\n' "' ")
  printf '{"status":"failed","reason":"daemon did not come up: %s"}\n' "${reason:-see $log}"
  exit 1
fi
sleep 1                      # warm-up: first pass over the pcap inserts the flows
s0=$(stats); t0=$(date +%s.%N)
sleep "$secs"
s1=$(stats); t1=$(date +%s.%N)
cleanup; trap - EXIT
python3 - "$s0" "$s1" "$t0" "$t1" "$name" "$cap" "$npk" "$log" <<'PY'
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
a = a.get('data', a); b = b.get('data', b)
dt = float(sys.argv[4]) - float(sys.argv[3])
ta, tb = a['total'], b['total']
d = lambda k: tb.get(k, 0) - ta.get(k, 0)
drops = {k: tb['drops_by_reason'][k] - ta['drops_by_reason'].get(k, 0)
         for k in tb.get('drops_by_reason', {}) if tb['drops_by_reason'][k] - ta['drops_by_reason'].get(k, 0)}
print(json.dumps({
    "bench": "daemon-scenario", "scenario": sys.argv[5], "workers": b.get('workers'),
    "source": "net_pcap infinite_rx -> flowgate -> net_null", "window_s": round(dt, 2),
    "mpps": round(d('rx_packets') / dt / 1e6, 3), "tx_mpps": round(d('tx_packets') / dt / 1e6, 3),
    "new_flows_per_s": round(d('new_flows') / dt), "ct_untracked_per_s": round(d('ct_untracked') / dt),
    "drops_per_s": round(d('drops') / dt), "drops_by_reason": drops,
    "ct_capacity": int(sys.argv[6]), "pcap_packets": int(sys.argv[7])}))
PY
