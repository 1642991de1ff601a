#!/usr/bin/env bash
# daemon_latency.sh: flowgate-bench latency through the real daemon.
# flowgate-bench latency measures its ring baseline, then opens a net_memif
# server port; this script then starts flowgate as the memif client
# (one-armed: DSR-encapsulated packets go back out of the same port to a
# static neighbour), and the bench sweeps 10/50/80/95% of the max rate again
# through flowgate.  Prints the bench's JSON (baseline + dut_result).
#
#   daemon_latency.sh --build BUILD [--scenario steady-1m] [--seconds 2]
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build="$ROOT/build" scn=steady-1m secs=2
while (($#)); do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --scenario) scn=$2; shift 2 ;;
    --seconds) secs=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "daemon_latency: unknown option $1" >&2; exit 2 ;;
  esac
done
fg="$build/dataplane/flowgate" fgb="$build/bench/flowgate-bench"
[[ -x "$fg" ]] || { printf '{"status":"not available","reason":"flowgate daemon not built (%s)"}\n' "$fg"; exit 3; }
sock="/tmp/fg-lat-memif-$$.sock" out="/tmp/fg-lat-$$.json" log="/tmp/fg-lat-$$.log"
rm -f "$sock"
# latency: main lcore 1 = generator + sink, lcore 0 = ring forwarder (idle
# during the DUT sweep); flowgate: worker on lcore 0, main on lcore 1.
"$fgb" latency --scenario "$scn" --scenario-dir "$ROOT/bench/scenarios" --seconds "$secs" --json \
  --dut vdev --wait-link 20 --eal "-l 0-1 --main-lcore 1 --file-prefix fg-lat-gen-$$ --log-level=*:warning --no-pci" \
  --vdev "net_memif0,role=server,socket=$sock" >"$out" 2>"$log" &  # EAL: --no-pci (in --eal)
bpid=$!
# net_memif uses an abstract socket by default (no file): wait for the
# bench to say it has opened the port instead.
up=0
for _ in $(seq 1 1200); do
  grep -q 'waiting up to' "$log" 2>/dev/null && { up=1; break; }
  kill -0 "$bpid" 2>/dev/null || break
  sleep 0.1
done
if ((!up)); then
  wait "$bpid"; cat "$out"; tail -3 "$log" >&2; rm -f "$out" "$log"; exit 1
fi
"$fg" -l 0-1 --main-lcore 1 --file-prefix "fg-lat-dut-$$" --log-level='*:warning' \
  --no-pci --vdev "net_memif0,role=client,socket=$sock" -- --workers 1 --socket "/tmp/fg-lat-ctl-$$.sock" \
  --ct-capacity 2097152 \
  --service 10.100.0.1:80/tcp,mode=dsr-ipip --backend 10.200.0.11 --backend 10.200.0.12 --backend 10.200.0.13 \
  --service 10.100.0.2:80/tcp,mode=dsr-gue --backend 10.200.0.11 --backend 10.200.0.12 --backend 10.200.0.13 \
  --service 10.100.0.3:80/tcp,mode=nat --backend 10.200.0.11:8080 --backend 10.200.0.12:8080 \
  --service '[fd00:100::1]:80/tcp,mode=dsr-ipip' --backend fd00:200::11 --backend fd00:200::12 \
  --local 10.200.0.2,port=0 --local fd00:200::2,port=0 --local 10.100.0.254,port=0 \
  --gateway 10.200.0.1,port=0 --gateway fd00:200::1,port=0 \
  --neigh 10.200.0.1,02:00:00:00:00:01,port=0 --neigh fd00:200::1,02:00:00:00:00:01,port=0 \
  --port-mac 0,02:00:00:00:00:02 </dev/null >"$log.fg" 2>&1 &
fpid=$!
wait "$bpid"; rc=$?
kill -INT "$fpid" 2>/dev/null; wait "$fpid" 2>/dev/null
cat "$out"
grep '^latency:' "$log" >&2
tail -5 "$log.fg" >&2; grep -E 'rx_packets|tx_packets|new_flows|drop ' "$log.fg" >&2
rm -f "$out" "$log" "$log.fg" "$sock" "/tmp/fg-lat-ctl-$$.sock"
exit $rc
