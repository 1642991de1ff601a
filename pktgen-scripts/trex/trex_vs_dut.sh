#!/usr/bin/env bash
# trex_vs_dut.sh: TRex (STL, software mode) into flowgate and into
# dpdk-testpmd io forwarding (the ceiling of the rig) over net_memif on one
# host: forwarded rate at the most TRex offers, then latency (TRex latency
# streams, HDR histogram) at shares of flowgate's forwarded rate.
#
#   pktgen-scripts/trex/trex_vs_dut.sh --trex DIR [--build build]
#       [--scenarios steady-1m,imix-1m,...] [--flows 1000000,10000000]
#       [--workers 1,2,4] [--seconds 3] [--warmup 1] [--max-mpps 40]
#       [--lat-pcts 10,50,90] [--lat-pps 10000] [--dut flowgate,testpmd]
#       [--gen-cpus 0-7] [--dut-cpus 8-15] [--eal "--no-huge -m 2048"]
#       [--trex-mem 2048] [--fg-args "..."] [--flowgate BIN] [--testpmd BIN]
#       [--fgctl BIN] [--python python3] [--tag device]
#       [--out-dir bench/results] [--tmp DIR] [--deadline EPOCH] [--log-dir DIR]
#
# DIR is a TRex v3.x tree: an unpacked release (trex-core/scripts has the
# same layout) with _t-rex-64, so/, automation/ and external_libs/ (build
# one with pktgen-scripts/trex/build-trex.sh; nothing is downloaded here).
# For each scenario (x --flows, established scenarios only) and each worker
# count N, for each DUT in order: the DUT starts as the memif server with N
# RX/TX queues (pktgen-scripts/dut_lib.sh); TRex starts as the memif client
# (trex_cfg.yaml: interfaces ['--vdev=net_memif0,role=client,...', 'dummy'] --no-pci,
# so TRex runs EAL with --no-pci --no-huge) with N TX cores, one-armed: port
# 0 sends and counts what the DUT sends back (the sink).  trex_run.py then
# measures (1) the scenario at --max-mpps for --seconds: offered = port 0's
# TX rate, forwarded = its RX rate; (2) for each of --lat-pcts percent of
# *flowgate's* forwarded rate at that N (so list flowgate first), the
# scenario at that rate plus a --lat-pps latency stream: p50/p99/p99.9/max.
# Writes <out-dir>/trex-[<tag>-]<label>-<dut>-w<N>.json (generator, dut,
# scenario, workers, offered_mpps, forwarded_mpps, ratio_to_testpmd, loss,
# lat_p50_us, lat_p99_us, lat_p999_us at the middle latency step, and every
# step under "latency").  A failed run is recorded as such; the rest go on.
# Cores: TRex's master and latency threads on the first two --gen-cpus, its
# N TX cores on the next ones (fewer if the list is short: trex_tx_cores in
# the JSON; low-end mode, every thread on one CPU, with 2 CPUs or fewer);
# the DUT as in pktgen_vs_dut.sh.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TREX="" BUILD="$ROOT/build" SCNS="steady-1m" SECS=3 WARM=1 DUTS="flowgate,testpmd" FLOWS="" WORKERS=1
MAXMPPS=40 LATPCTS="10,50,90" LATPPS=10000 TREXMEM=2048 PY=python3
OUT="$ROOT/bench/results" TMP=${BENCH_TMP:-/tmp/flowgate-bench} GEN_CPUS=0-1 DUT_CPUS=0-1 EAL="" FG_ARGS=""
TAG="" DEADLINE=0 LOGDIR="" FG_BIN="" TP_BIN="" FGCTL=""
# shellcheck source=pktgen-scripts/dut_lib.sh
. "$ROOT/pktgen-scripts/dut_lib.sh"
while (($#)); do
  dut_opt "$@"; n=$?; ((n)) && { shift "$n"; continue; }
  case "$1" in
    --trex) TREX=$2; shift 2 ;;
    --max-mpps) MAXMPPS=$2; shift 2 ;;
    --lat-pcts) LATPCTS=$2; shift 2 ;;
    --lat-pps) LATPPS=$2; shift 2 ;;
    --trex-mem) TREXMEM=$2; shift 2 ;;
    --python) PY=$2; shift 2 ;;
    -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
    *) echo "trex_vs_dut: unknown option $1" >&2; exit 2 ;;
  esac
done
dut_paths
[[ -n "$TREX" && -x "$TREX/_t-rex-64" ]] || { echo "trex_vs_dut: --trex DIR of a TRex v3.x tree (with _t-rex-64) is required" >&2; exit 2; }
TREX=$(cd "$TREX" && pwd)
sock="$TMP/fg-trex-memif-$$.sock"

# trex_cores N: TRex's TX cores for N DUT workers: N, at most the
# --gen-cpus left after its master and latency threads (TRex refuses a CPU
# twice); 1 in low-end mode (fewer than 3 CPUs: every thread on the first)
trex_cores() { local c; read -ra c <<<"$(cpus "$GEN_CPUS")"
  if ((${#c[@]} < 3)); then echo 1; elif (($1 > ${#c[@]} - 2)); then echo $((${#c[@]} - 2)); else echo "$1"; fi; }

# trex_cfg N FILE: one memif port (client of the DUT) and a dummy, N TX cores
trex_cfg() {
  local n=$1 c th=() k plat; read -ra c <<<"$(cpus "$GEN_CPUS")"
  if ((${#c[@]} < 3)); then
    plat="  low_end: true
  low_end_core: ${c[0]}"
  else
    for ((k = 0; k < n; k++)); do th+=("${c[k + 2]}"); done
    plat="  platform:
    master_thread_id: ${c[0]}
    latency_thread_id: ${c[1]}
    dual_if:
      - socket: 0
        threads: [$(IFS=,; echo "${th[*]}")]"
  fi
  cat >"$2" <<YAML
- version: 2
  interfaces: ['--vdev=net_memif0,role=client,socket=$sock,socket-abstract=no', 'dummy']  # vdevs only: TRex's EAL gets --no-pci --no-huge
  port_info:
    - dest_mac: 02:00:00:00:00:02
      src_mac: 02:00:00:00:00:01
    - dest_mac: 02:00:00:00:00:01
      src_mac: 02:00:00:00:00:02
  c: $n
  limit_memory: $TREXMEM
  zmq_pub_port: $((4500 + 2 * ($$ % 1000)))
  zmq_rpc_port: $((4501 + 2 * ($$ % 1000)))
$plat
YAML
}

# run_one SCN DUT N FLOWS LAT_MPPS LOGNAME -> trex_run.py's JSON (+ "dut_stats")
run_one() {
  local scn=$1 dut=$2 n=$3 flows=$4 latm=$5 tlog="$TMP/fg-trex-$$.log" dut_log="$TMP/fg-trex-dut-$$.log"
  local ctl_sock="$TMP/fg-trex-ctl-$$.sock" cfg="$TMP/fg-trex-$$.yaml" tpid res stats=null
  local tc; tc=$(trex_cores "$n")
  dut_start "$dut" "$n" "$flows" "$sock" "$ctl_sock" "$dut_log" "fg-trex-dut-$$" || return
  trex_cfg "$tc" "$cfg"
  (cd "$TREX" && exec env LD_LIBRARY_PATH="$TREX/so/x86_64:$TREX/so${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    ./_t-rex-64 -i --cfg "$cfg" --software --hdrh --no-scapy-server --iom 0 -c "$tc" --prefix "fg-trex-$$" \
    </dev/null >"$tlog" 2>&1) &
  tpid=$!
  local targs=(--sync-port $((4501 + 2 * ($$ % 1000))) --async-port $((4500 + 2 * ($$ % 1000)))
               --trex-pid "$tpid" --scenario "$scn" --max-mpps "$MAXMPPS" --seconds "$SECS" --warmup "$WARM" --lat-pps "$LATPPS")
  [[ -n "$flows" ]] && targs+=(--flows "$flows")
  if [[ -n "$latm" ]]; then targs+=(--lat-mpps "$latm"); else targs+=(--lat-pcts "$LATPCTS"); fi
  res=$(PYTHONPATH="$TREX/automation/trex_control_plane/interactive" TREX_EXT_LIBS="$TREX/external_libs" \
    PYTHONWARNINGS=ignore timeout $((60 + 8 * (SECS + WARM + 2))) "$PY" "$ROOT/pktgen-scripts/trex/trex_run.py" \
    "${targs[@]}" 2>>"$tlog" | tail -1)
  [[ $dut == flowgate* ]] && stats=$(dut_stats "$ctl_sock")
  kill -INT "$tpid" 2>/dev/null
  for _ in $(seq 1 100); do kill -0 "$tpid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$tpid" 2>/dev/null; wait "$tpid" 2>/dev/null
  dut_stop
  [[ ${res:0:1} == '{' ]] || res="{\"status\":\"failed\",\"reason\":\"trex: $(grep -aiE 'error|cannot|fail' "$tlog" | head -2 | tr -cd '[:print:]' | tr -d '"\\' | cut -c1-200)\"}"
  # what the server said when it failed (a watchdog, an EAL error), for the record
  local tl; tl=$(grep -aE 'WATCHDOG|ERROR|PANIC|Segmentation|Illegal' "$tlog" | head -1 | tr -cd '[:print:]' | tr -d '"\\' | cut -c1-200)
  echo "${res%\}},\"trex_cores\":$tc,\"trex_log\":\"$tl\",\"dut_stats\":$stats}"
  if [[ -n "$LOGDIR" ]]; then
    mkdir -p "$LOGDIR"; mv "$tlog" "$LOGDIR/$6.trex.log"; mv "$dut_log" "$LOGDIR/$6.dut.log"; cp "$cfg" "$LOGDIR/$6.trex_cfg.yaml"
  fi
  rm -f "$tlog" "$dut_log" "$sock" "$ctl_sock" "$cfg"
}

record() { # record FILE CMD SCN LABEL FLOWS DUT N RESULT_JSON TESTPMD_JSON
  "$PY" - "$@" "$GEN_CPUS" "$DUT_CPUS" "$LATPCTS" "$ROOT/bench/tools" <<'PY'
import datetime, json, os, sys
out, cmd, scn, label, flows, dut, n, res, tp, gcpu, dcpu, pcts, tools = sys.argv[1:14]
sys.path.insert(0, tools)
def j(x):
    try: return json.loads(x) if x else None
    except json.JSONDecodeError: return {"status": "failed", "reason": x[:200]}
r, t = j(res) or {}, j(tp) or {}
try:
    import fg_results; mach = fg_results.machine_info()
except Exception:
    mach = {}
ok = r.get('status') == 'ok'
m, tm = r.get('max') or {}, t.get('max') or {}
ratio = None
if ok and dut.startswith('testpmd'):
    ratio = 1.0
elif ok and tm.get('rx_mpps'):
    ratio = round(m['rx_mpps'] / tm['rx_mpps'], 3)
loss = round(max(0.0, 1.0 - m['rx_pkts'] / m['tx_pkts']), 4) if ok and m.get('tx_pkts') else None
lat = r.get('latency') or []
pl = [p for p in pcts.split(',') if p]
for i, step in enumerate(lat):
    if i < len(pl):
        step['load_pct_of_flowgate'] = float(pl[i])
mid = lat[len(lat) // 2] if lat else {}
rec = {"generator": f"TRex {r.get('trex_version') or 'v3'} STL, software mode, fg_stl.py",
       "dut": dut, "scenario": label, "scenario_file": scn, "flows": int(flows), "workers": int(n),
       "offered_mpps": m.get('tx_mpps'), "forwarded_mpps": m.get('rx_mpps'),
       "ratio_to_testpmd": ratio, "loss": loss,
       "lat_p50_us": mid.get('lat_p50_us'), "lat_p99_us": mid.get('lat_p99_us'),
       "lat_p999_us": mid.get('lat_p999_us'), "lat_max_us": mid.get('lat_max_us'),
       "lat_load_pct_of_flowgate": mid.get('load_pct_of_flowgate'),
       "lat_background_mpps": mid.get('background_mpps'),
       "testpmd_forwarded_mpps": tm.get('rx_mpps'), "trex_tx_cores": r.get('trex_cores'),
       "status": "ok" if ok else r.get('status', 'failed'),
       "link": "net_memif (copy), TRex memif client, DUT memif server, one-armed",
       "gen_cpus": gcpu, "dut_cpus": dcpu, "command": cmd, "machine": mach,
       "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'),
       "max": m, "latency": lat, "dut_stats": r.get('dut_stats')}
if not ok:
    rec['reason'] = r.get('reason', 'not run')
    if r.get('trex_log'):
        rec['trex_log'] = r['trex_log']
json.dump(rec, open(out, 'w'), indent=1)
print(f"trex_vs_dut: {os.path.basename(out)}: {rec['status']} offered {rec['offered_mpps']} "
      f"forwarded {rec['forwarded_mpps']} Mpps ratio {ratio} loss {loss} "
      f"p50/p99/p99.9 {rec['lat_p50_us']}/{rec['lat_p99_us']}/{rec['lat_p999_us']} us", file=sys.stderr)
PY
}

IFS=, read -ra SL <<<"$SCNS"; IFS=, read -ra DL <<<"$DUTS"; IFS=, read -ra WL <<<"$WORKERS"
skipped=()
for s in "${SL[@]}"; do
  scn="$ROOT/bench/scenarios/$s.scn"
  [[ -r "$scn" ]] || { echo "trex_vs_dut: no scenario $s" >&2; continue; }
  read -r base_flows fpk flood < <(cd "$ROOT/pktgen-scripts/trex" && "$PY" -c '
import sys, fg_scenario as f; s = f.load(sys.argv[1]); print(s.flows, s.flow_packets, int(s.flood_share > 0))' "$scn")
  fl=("$base_flows")
  if [[ -n "$FLOWS" && $fpk == 0 && $flood == 0 ]]; then IFS=, read -ra fl <<<"$FLOWS"; fi
  for f in "${fl[@]}"; do
    label=$s; ((f != base_flows)) && label="$s-$f"
    for n in "${WL[@]}"; do
      if ((DEADLINE > 0 && $(date +%s) >= DEADLINE)); then skipped+=("$label/w$n"); continue; fi
      declare -A R=()
      latm=""
      for d in "${DL[@]}"; do
        echo "trex_vs_dut: $label -> $d, $n worker(s), over net_memif (${SECS} s per step)" >&2
        R[$d]=$(run_one "$scn" "$d" "$n" "$f" "$latm" "${TAG:+$TAG-}$label-$d-w$n")
        # the other DUTs' latency steps at the same rates as flowgate's
        if [[ $d == flowgate && -z "$latm" ]]; then
          latm=$("$PY" -c 'import json,sys; r=json.loads(sys.argv[1]); print(",".join(str(x["background_mpps"]) for x in r.get("latency") or []))' "${R[$d]}" 2>/dev/null)
        fi
      done
      for d in "${DL[@]}"; do
        cmd="pktgen-scripts/trex/trex_vs_dut.sh --trex TREX --scenarios $s$( ((f != base_flows)) && echo " --flows $f") --workers $n --seconds $SECS --warmup $WARM --max-mpps $MAXMPPS --lat-pcts $LATPCTS --lat-pps $LATPPS --dut $DUTS --gen-cpus $GEN_CPUS --dut-cpus $DUT_CPUS${EAL:+ --eal \"$EAL\"}${FG_ARGS:+ --fg-args \"$FG_ARGS\"}"
        record "$OUT/trex-${TAG:+$TAG-}$label-$d-w$n.json" "$cmd" "$s" "$label" "$f" "$d" "$n" "${R[$d]}" "${R[testpmd]:-}"
      done
      unset R
    done
  done
done
((${#skipped[@]})) && echo "trex_vs_dut: past --deadline, not run: ${skipped[*]}" >&2
exit 0
