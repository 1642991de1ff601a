#!/usr/bin/env bash
# fgctl against the real flowgate daemon on virtual devices (no namespaces):
# net_pcap replays 10,000 established flows into a DSR-IPIP service, out to
# net_null.  Every verb with --json parsed and checked by python3, error
# cases with their exit codes, bad input on the socket while the dataplane
# runs, and per-connection consistency under churn: 100 random backend
# add/del/weight/drain operations while traffic runs, then no tracked flow
# may have changed backend.
#
#   daemon_cli.sh FLOWGATE FGCTL FG_PCAPGEN WORKDIR
# Root needed (DPDK EAL); exit 77 (skip) otherwise.
set -u
FG=$1 CTL=$2 GEN=$3 WORK=$4
(( EUID == 0 )) || { echo "SKIP: needs root for the DPDK EAL"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: needs python3"; exit 77; }
rm -rf "$WORK"; mkdir -p "$WORK"
SOCK="$WORK/fg.sock" LOG="$WORK/flowgate.log" PFX="fgc-e2e-$$"
FLOWS=10000
fails=0
ok()   { echo "ok   $*"; }
bad()  { echo "FAIL $*"; fails=$((fails + 1)); }

cat > "$WORK/t.scn" <<SCN
name = control-e2e
mode = dsr-ipip
vip4 = 10.100.0.1
vport = 80
proto = tcp
pkt_size = 64
flows = $FLOWS
flow_packets = 0
syn_flood_share = 0
ipv6_share = 0
SCN
"$GEN" "$WORK/t.scn" -o "$WORK/t.pcap" --quiet || { echo "fg-pcapgen failed"; exit 1; }

cat > "$WORK/fg.conf" <<CONF
control_socket $SOCK;
port net_pcap0 { }
port net_null0 {
    local 10.200.0.2;
    local fd00:200::2;
    gateway 10.200.0.1;
}
neighbour 10.200.0.1 02:00:00:00:00:01 port net_null0;
service web 10.100.0.1:80/tcp {
    mode dsr-ipip;
    backend 10.200.0.11 weight 100;
    backend 10.200.0.12 weight 100;
    backend 10.200.0.13 weight 100;
    backend 10.200.0.14 weight 100;
}
service api 10.100.0.3:443/tcp {
    mode nat;
    backend 10.200.0.21:8443;
}
service [fd00:100::1]:80/tcp {
    mode dsr-ipip;
    backend [fd00:200::11];
}
CONF

"$FG" -l 0-1 --no-huge -m 1024 --file-prefix "$PFX" --log-level='*:warning' \
    --no-pci --vdev "net_pcap0,rx_pcap=$WORK/t.pcap,infinite_rx=1" --vdev net_null0,no-rx=1 -- \
    -c "$WORK/fg.conf" --workers 1 --ct-capacity 65536 --mbufs 32768 </dev/null >"$LOG" 2>&1 &
DPID=$!
cleanup() { kill -INT "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; }
trap cleanup EXIT

c() { "$CTL" -s "$SOCK" "$@"; }
# j EXPECTED_RC PYTHON_ASSERTION -- fgctl args: stdout must be JSON (d)
j() {
  local want=$1 check=$2; shift 3
  local out rc
  out=$(c --json "$@" 2>"$WORK/err"); rc=$?
  if (( rc != want )); then bad "fgctl $* -> exit $rc, expected $want: $(head -c 300 "$WORK/err")"; return; fi
  if printf '%s' "$out" | python3 -c "import json,sys; d=json.load(sys.stdin); assert $check, repr(d)[:300]" 2>"$WORK/perr"; then
    ok "fgctl --json $*"
  else
    bad "fgctl --json $*: $(tail -1 "$WORK/perr")"
  fi
}
# e EXPECTED_RC STDERR_SUBSTRING -- fgctl args (human mode)
e() {
  local want=$1 sub=$2; shift 3
  c "$@" >/dev/null 2>"$WORK/err"; local rc=$?
  if (( rc == want )) && grep -qF -- "$sub" "$WORK/err"; then ok "fgctl $* -> $rc"
  else bad "fgctl $* -> $rc (want $want, '$sub'): $(head -c 300 "$WORK/err")"; fi
}

for _ in $(seq 1 300); do
  kill -0 "$DPID" 2>/dev/null || { echo "daemon died:"; tail -20 "$LOG"; exit 1; }
  c ping >/dev/null 2>&1 && break
  sleep 0.1
done
# the replay's flows are ACKs only: picked up mid-stream, they are PICKUP
# until each has sent 4 packets over 2 s (conntrack/ct.h, "Assured"), then
# ESTABLISHED; wait for that (a guard against a hang, not a bound)
for _ in $(seq 1 600); do
  n=$(c --json flows list --state ESTABLISHED | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))' 2>/dev/null)
  (( ${n:-0} >= FLOWS )) && break
  sleep 0.1
done
(( ${n:-0} >= FLOWS )) && ok "daemon up, $n flows tracked and ESTABLISHED" || { bad "only ${n:-0} flows ESTABLISHED"; exit 1; }

# ---- every verb --------------------------------------------------------------
j 0 'd["protocol"] == 1' -- ping
j 0 'len(d) == 3 and d[0]["name"] == "web" and len(d[0]["backends"]) == 4' -- service list
j 0 'd["mode"] == "dsr-gue" and d["sched"] == "lc"' -- service add 10.100.0.9:80/tcp --mode dsr-gue --sched lc
j 0 'd["service"] == "10.100.0.9:80/tcp"' -- service del 10.100.0.9:80/tcp
j 0 'len(d) == 1 and len(d[0]["backends"]) == 4' -- backend list web
j 0 'd["weight"] == 7' -- backend add web 10.200.0.15 --weight 7
j 0 'd["weight"] == 9' -- backend weight web 10.200.0.15 9
j 0 'd["drained"] is True' -- backend drain web 10.200.0.15
j 0 'd["drained"] is False' -- backend undrain web 10.200.0.15
j 0 'd["addr"] == "10.200.0.15"' -- backend del web 10.200.0.15
j 0 "len(d) == $FLOWS and all(f['backend'] for f in d)" -- flows list
j 0 'len(d) == 5' -- flows list --limit 5
j 0 "len(d) == $FLOWS" -- flows list --service web --state ESTABLISHED --core 0
j 0 'len(d) > 0 and all(f["backend"] == "10.200.0.12" for f in d)' -- flows list --backend 10.200.0.12
j 0 'len(d) == 0' -- flows list --service api
t=$(c --json flows list --limit 1 | python3 -c 'import json,sys; f=json.load(sys.stdin)[0]; print("%s:%s %s:%s" % (f["src"], f["sport"], f["dst"], f["dport"]))')
j 0 'len(d) == 1 and d[0]["state"] == "ESTABLISHED"' -- flows get $t tcp
j 0 "d['total'] >= $FLOWS and len(d['per_core']) == 1" -- flows count --per-core
j 0 '"total" in d and d["total"]["rx_packets"] > 0' -- stats
j 0 '"per_core" in d' -- stats --per-core --service web
j 0 '"text" in d and "service web 10.100.0.1:80/tcp" in d["text"]' -- config show
j 0 'd["services"] == 3' -- config check "$WORK/fg.conf"
j 0 'd["applied"] is True and d["services"] == 3' -- config apply "$WORK/fg.conf"
j 0 'd["deleted"] == 0' -- flows delete --service api
# health / watch answer (ok, or a clear "not running / not supported" error)
out=$(c --json health 2>&1); rc=$?
if (( rc == 0 )) || [[ "$out" == *"not running"* ]]; then ok "fgctl health (rc $rc)"; else bad "fgctl health: $out"; fi
out=$(timeout 2 "$CTL" -s "$SOCK" --json flows watch 2>&1); rc=$?
if (( rc == 124 )) || [[ "$out" == *"not supported"* ]]; then ok "fgctl flows watch (rc $rc)"; else bad "fgctl flows watch: $out"; fi

# ---- error cases ---------------------------------------------------------------
e 1 "already exists" -- service add 10.100.0.1:80/tcp
e 1 "no service" -- backend add nosuch 10.200.0.30
e 1 "already in service" -- backend add web 10.200.0.11
e 1 "cannot change the destination port" -- backend add web 10.200.0.30:8080
e 1 "is not in service" -- backend drain web 10.9.9.9
e 1 "no tracked flow" -- flows get 1.2.3.4:5 10.100.0.1:80 tcp
e 2 "VIP:PORT/PROTO" -- service add 10.100.0.1/tcp
e 2 "--all" -- flows delete
e 2 "0..65535" -- backend weight web 10.200.0.11 70000
printf 'service 10.100.0.1:80/tcp {\n mode warp;\n backend 10.200.0.11 weight x;\n}\n' > "$WORK/bad.conf"
e 1 "bad.conf:2: mode" -- config apply "$WORK/bad.conf"
e 1 "bad.conf:3: backend weight" -- config check "$WORK/bad.conf"
j 0 'len(d) == 3 and len(d[0]["backends"]) == 4' -- service list   # unchanged

# ---- bad input on the socket while traffic runs -----------------------------
before=$(c --json stats | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"]["rx_packets"])')
python3 - "$SOCK" <<'PY'
import os, random, socket, sys, time
path = sys.argv[1]
def conn():
    s = socket.socket(socket.AF_UNIX); s.connect(path); s.settimeout(3); return s
random.seed(1)
s = conn(); s.sendall(bytes(random.getrandbits(8) for _ in range(4096)).replace(b"\n", b"x") + b"\n")
assert b'"ok":false' in s.recv(4096); s.close()
s = conn(); s.sendall(b'{"v":7,"id":1,"cmd":"ping"}\n'); assert b"unsupported protocol version" in s.recv(4096); s.close()
s = conn(); s.sendall(b'{"v":1,"id":1,"cmd":"ping"'); s.close()                  # truncated
s = conn(); s.sendall(b"a" * (1 << 20) + b"b" * 4096 + b"\n")                      # oversized
assert b"exceeds" in s.recv(4096); s.close()
slow = conn(); slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)        # never reads
for _ in range(500):
    try: slow.sendall(b'{"v":1,"id":1,"cmd":"config.show"}\n')
    except OSError: break
s = conn(); s.sendall(b'{"v":1,"id":9,"cmd":"ping"}\n'); assert b'"id":9,"ok":true' in s.recv(65536); s.close()
slow.close()
PY
(( $? == 0 )) && ok "hostile clients answered or dropped, others served" || bad "hostile clients"
# the replay goes on: rx grows (polled, 60 s hang guard: a loaded machine
# may not run the worker for a while)
for _ in $(seq 600); do
  after=$(c --json stats | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"]["rx_packets"])')
  (( after > before )) && break
  sleep 0.1
done
(( after > before )) && kill -0 "$DPID" && ok "dataplane kept forwarding ($before -> $after rx)" || bad "dataplane stalled"

# ---- per-connection consistency under churn ---------------------------------
snap() { c --json flows list | python3 -c '
import json,sys
for f in json.load(sys.stdin): print("%s:%s %s" % (f["src"], f["sport"], f["backend_id"]))' | sort; }
snap > "$WORK/before"
RANDOM=4242
added=()
for i in $(seq 1 100); do
  op=$((RANDOM % 5)) b="10.200.0.$((11 + RANDOM % 4))"
  case $op in
    0) nb="10.200.1.$((RANDOM % 200 + 1))"; c backend add web "$nb" --weight $((RANDOM % 200 + 1)) >/dev/null 2>&1 && added+=("$nb") ;;
    1) if ((${#added[@]})); then k=$((RANDOM % ${#added[@]})); c backend del web "${added[$k]}" >/dev/null 2>&1; unset 'added[k]'; added=("${added[@]}"); fi ;;
    2) c backend weight web "$b" $((RANDOM % 300)) >/dev/null 2>&1 ;;
    3) c backend drain web "$b" >/dev/null 2>&1 ;;
    4) c backend undrain web "$b" >/dev/null 2>&1 ;;
  esac
done
sleep 0.3
snap > "$WORK/after"
moved=$(join "$WORK/before" "$WORK/after" | awk '$2 != $3' | wc -l)
kept=$(join "$WORK/before" "$WORK/after" | wc -l)
if (( moved == 0 && kept >= FLOWS * 99 / 100 )); then ok "PCC: 100 backend operations, $kept flows tracked, 0 changed backend"
else bad "PCC: $moved of $kept tracked flows changed backend"; fi

# ---- config save: the running config survives a restart ---------------------
c backend weight web 10.200.0.12 42 >/dev/null 2>&1
c config show > "$WORK/shown.conf"
j 0 'd["saved"].endswith("/saved.conf") and d["bytes"] > 0' -- config save "$WORK/saved.conf"
cmp -s "$WORK/saved.conf" "$WORK/shown.conf" && grep -q "backend 10.200.0.12 weight 42" "$WORK/saved.conf" \
  && ok "config save FILE writes what config show prints (weight 42 included)" || bad "config save FILE differs from config show"
j 0 'd["saved"] == "'"$WORK"'/fg.conf"' -- config save
cmp -s "$WORK/fg.conf" "$WORK/shown.conf" && ok "config save with no FILE replaces the -c file" \
  || bad "config save: the -c file is not the running config"
j 0 'd["services"] == 3' -- config check "$WORK/fg.conf"
ls "$WORK"/*.fgctl-* >/dev/null 2>&1 && bad "config save left a temp file" || ok "config save left no temp file"
e 1 "config save" -- config save /nonexistent-dir/x.conf

if (( fails )); then echo "$fails check(s) failed; daemon log: $LOG"; exit 1; fi
echo "all checks passed"
