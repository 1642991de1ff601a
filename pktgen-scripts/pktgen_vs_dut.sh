#!/usr/bin/env bash
# pktgen_vs_dut.sh: drive a scenario from Pktgen-DPDK into flowgate (and into
# dpdk-testpmd io forwarding as the ceiling) over net_memif on one host.
#
#   pktgen-scripts/pktgen_vs_dut.sh --pktgen /path/to/pktgen --build build \
#       [--scenarios steady-1m,syn-flood,...] [--seconds 5] [--mode pcap|range]
#       [--dut flowgate,testpmd] [--zero-copy] [--out-dir bench/results]
#
# For each scenario: fg-pcapgen writes the pcap (pcap mode), the DUT starts
# as the memif *server* (its own --file-prefix), Pktgen starts as the memif
# client (--single-file-segments, its own --file-prefix) and runs
# run_scenario.lua headless.  Whatever the DUT sends back on the memif port
# (flowgate: the encapsulated / NATed packets, via a static neighbour whose
# MAC is Pktgen's) is Pktgen's RX: dut_mpps = Pktgen's RX rate.
# Writes <out-dir>/pktgen-<scenario>.json (read by fg_results.py report).
# Pktgen itself is not part of flowgate: build it yourself (README.md).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PKTGEN=${PKTGEN:-} BUILD="$ROOT/build" SCNS="" SECS=5 MODE=pcap DUTS="testpmd,flowgate" ZC=0
OUT="$ROOT/bench/results" TMP=${BENCH_TMP:-/tmp/flowgate-bench}
while (($#)); do
  case "$1" in
    --pktgen) PKTGEN=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --scenarios) SCNS=$2; shift 2 ;;
    --seconds) SECS=$2; shift 2 ;;
    --mode) MODE=$2; shift 2 ;;
    --dut) DUTS=$2; shift 2 ;;
    --zero-copy) ZC=1; shift ;;
    --out-dir) OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "pktgen_vs_dut: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
[[ -x "$PKTGEN" ]] || { echo "pktgen_vs_dut: --pktgen PATH to a Pktgen-DPDK 23.03 binary is required" >&2; exit 2; }
[[ "$MODE" == pcap || "$MODE" == range ]] || { echo "pktgen_vs_dut: --mode pcap|range" >&2; exit 2; }
[[ -n "$SCNS" ]] || SCNS=$(cd "$ROOT/bench/scenarios" && ls *.scn | sed 's/\.scn$//' | paste -sd,)
PCAPGEN="$BUILD/bench/tools/fg-pcapgen"; [[ -x "$PCAPGEN" ]] || PCAPGEN="$BUILD/bench-tools/fg-pcapgen"
if [[ ! -x "$PCAPGEN" ]]; then
  mkdir -p "$BUILD/bench-tools" && cc -O2 -o "$BUILD/bench-tools/fg-pcapgen" "$ROOT/bench/tools/fg_pcapgen.c" || exit 1
  PCAPGEN="$BUILD/bench-tools/fg-pcapgen"
fi
mkdir -p "$OUT" "$TMP"
sock="/tmp/fg-pg-memif-$$.sock"
zc=""; ((ZC)) && zc=",zero-copy=yes"

# Same services as bench/tools/daemon_scenario.sh, one-armed on memif port 0.
FG_SVC=(--service 10.100.0.1:80/tcp,mode=dsr-ipip --backend 10.200.0.11 --backend 10.200.0.12 --backend 10.200.0.13
  --service 10.100.0.2:80/tcp,mode=dsr-gue --backend 10.200.0.11 --backend 10.200.0.12 --backend 10.200.0.13
  --service 10.100.0.3:80/tcp,mode=nat --backend 10.200.0.11:8080 --backend 10.200.0.12:8080 --backend 10.200.0.13:8080
  --service '[fd00:100::1]:80/tcp,mode=dsr-ipip' --backend fd00:200::11 --backend fd00:200::12 --backend fd00:200::13
  --local 10.200.0.2,port=0 --local fd00:200::2,port=0 --local 10.100.0.254,port=0
  --gateway 10.200.0.1,port=0 --gateway fd00:200::1,port=0
  --neigh 10.200.0.1,02:00:00:00:00:01,port=0 --neigh fd00:200::1,02:00:00:00:00:01,port=0
  --port-mac 0,02:00:00:00:00:02)

run_one() { # scenario dut -> prints Pktgen's FG_RESULT json (+ DUT stats) on stdout
  local s=$1 dut=$2 dpid pg_log="/tmp/fg-pg-$$.log" dut_log="/tmp/fg-pg-dut-$$.log" ctl_sock="/tmp/fg-pg-ctl-$$.sock"
  rm -f "$sock"
  case "$dut" in
    testpmd)
      dpdk-testpmd -l 0-1 --main-lcore 1 --file-prefix "fg-pg-dut-$$" --log-level='*:warning' \
        --no-pci --vdev "net_memif0,role=server,socket=$sock" -- --forward-mode=io --port-topology=loop \
        --nb-cores=1 --stats-period 1 </dev/null >"$dut_log" 2>&1 &
      dpid=$! ;;
    flowgate)
      [[ -x "$BUILD/dataplane/flowgate" ]] || { echo '{"status":"not available","reason":"flowgate daemon not built"}'; return; }
      "$BUILD/dataplane/flowgate" -l 0-1 --main-lcore 1 --file-prefix "fg-pg-dut-$$" --log-level='*:warning' \
        --no-pci --vdev "net_memif0,role=server,socket=$sock" -- --workers 1 --socket "$ctl_sock" \
        --ct-capacity 2097152 "${FG_SVC[@]}" </dev/null >"$dut_log" 2>&1 &
      dpid=$! ;;
  esac
  for _ in $(seq 1 100); do [[ -S "$sock" ]] && break; sleep 0.1; done
  local pgargs=(-l 0-1 -n 1 --file-prefix "fg-pg-gen-$$" --single-file-segments --log-level='*:warning'
                --no-pci --vdev "net_memif0,role=client,socket=$sock$zc" -- -P -m 1.0)
  [[ "$MODE" == pcap ]] && pgargs+=(-s "0:$TMP/$s.pcap")
  FG_SCENARIO="$ROOT/bench/scenarios/$s.scn" FG_MODE=$MODE FG_DURATION=$SECS \
    timeout $((SECS + 90)) "$PKTGEN" "${pgargs[@]}" -f "$ROOT/pktgen-scripts/run_scenario.lua" </dev/null >"$pg_log" 2>&1
  local res; res=$(grep -a '^FG_RESULT ' "$pg_log" | tail -1 | cut -d' ' -f2-)
  kill -INT "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null
  [[ -n "$res" ]] || res="{\"status\":\"failed\",\"reason\":\"$(grep -aiE 'panic|cannot|error' "$pg_log" | head -1 | tr -d '"\\' | cut -c1-150)\"}"
  echo "$res"
  rm -f "$pg_log" "$dut_log" "$sock" "$ctl_sock"
}

IFS=, read -ra SL <<<"$SCNS"; IFS=, read -ra DL <<<"$DUTS"
for s in "${SL[@]}"; do
  [[ -r "$ROOT/bench/scenarios/$s.scn" ]] || { echo "pktgen_vs_dut: no scenario $s" >&2; continue; }
  if [[ "$MODE" == pcap && ( ! -s "$TMP/$s.pcap" || "$ROOT/bench/scenarios/$s.scn" -nt "$TMP/$s.pcap" ) ]]; then
    "$PCAPGEN" "$ROOT/bench/scenarios/$s.scn" -o "$TMP/$s.pcap" --quiet || continue
  fi
  declare -A R=()
  for d in "${DL[@]}"; do
    echo "pktgen_vs_dut: $s -> $d over net_memif ($MODE, ${SECS} s)" >&2
    R[$d]=$(run_one "$s" "$d")
    echo "    $d: ${R[$d]}" >&2
  done
  cmd="pktgen-scripts/pktgen_vs_dut.sh --pktgen PKTGEN --scenarios $s --seconds $SECS --mode $MODE --dut $DUTS$( ((ZC)) && echo ' --zero-copy')"
  python3 - "$OUT/pktgen-$s.json" "$cmd" "$MODE" "$ZC" "${R[testpmd]:-}" "${R[flowgate]:-}" <<'PY'
import datetime, json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(sys.argv[1])), '..', 'tools'))
out, cmd, mode, zc = sys.argv[1:5]
def j(x):
    try: return json.loads(x) if x else None
    except json.JSONDecodeError: return {"status": "failed", "reason": x[:200]}
tp, fg = j(sys.argv[5]), j(sys.argv[6])
try:
    import fg_results; mach = fg_results.machine_info()
except Exception:
    mach = {}
ok = lambda r: r is not None and 'rx_mpps' in r
rec = {"command": cmd, "machine": mach,
       "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'),
       "status": "ok" if ok(tp) or ok(fg) else "failed",
       "result": {"generator": "Pktgen-DPDK 23.03 (pcap replay of the scenario)" if mode == 'pcap'
                  else "Pktgen-DPDK 23.03 range mode", "link": "net_memif" + (" zero-copy" if zc == '1' else " (copy)"),
                  "dut_mpps": fg['rx_mpps'] if ok(fg) else None,
                  "testpmd_mpps": tp['rx_mpps'] if ok(tp) else None,
                  "flowgate": fg, "testpmd": tp}}
if rec['status'] != 'ok':
    rec['reason'] = '; '.join(str((r or {}).get('reason', 'not run')) for r in (tp, fg))
json.dump(rec, open(out, 'w'), indent=1)
print(f"pktgen_vs_dut: {out}: testpmd {rec['result']['testpmd_mpps']} Mpps, flowgate {rec['result']['dut_mpps']} Mpps", file=sys.stderr)
PY
done
