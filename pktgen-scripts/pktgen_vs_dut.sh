#!/usr/bin/env bash
# pktgen_vs_dut.sh: drive scenarios from Pktgen-DPDK into flowgate and into
# dpdk-testpmd io forwarding (the ceiling of the rig) over net_memif on one
# host, for a list of worker counts.
#
#   pktgen-scripts/pktgen_vs_dut.sh --pktgen /path/to/pktgen [--build build]
#       [--scenarios steady-1m,syn-flood,...] [--flows 1000000,10000000]
#       [--workers 1,2,4,8] [--seconds 5] [--warmup 1] [--mode pcap|range]
#       [--dut testpmd,flowgate[,flowgate-swrss]] [--zero-copy]
#       [--gen-cpus 0-7] [--dut-cpus 8-15] [--eal "--no-huge -m 2048"]
#       [--fg-args "..."] [--flowgate BIN] [--testpmd BIN] [--pcapgen BIN]
#       [--fgctl BIN] [--tag device] [--out-dir bench/results] [--tmp DIR]
#       [--deadline EPOCH] [--log-dir DIR]
#
# For each scenario (x --flows override, established scenarios only) and
# each worker count N: fg-pcapgen writes N pcaps, one per generator queue,
# every connection's packets in one of them (pcap mode); the DUT starts as
# the memif *server* with N RX/TX queues (flowgate --workers N, testpmd
# --nb-cores N); Pktgen starts as the memif client with N lcores, each
# sending its pcap on its own queue and counting what comes back on it (the
# sink), and runs run_scenario.lua headless.  One-armed: the DUT sends back
# out of the same memif port (flowgate: encapsulated / NATed packets to a
# static neighbour whose MAC Pktgen takes in promiscuous mode), so
# forwarded = Pktgen's RX rate, offered = its TX rate.
#
# Cores: lcore k of a process runs on CPU k mod len of its list (main
# lcore = first CPU); give disjoint lists so generator and DUT do not share
# (the defaults, 0-1 for both, suit a 2-core box and measure nothing).
# DUT flowgate: software RSS off (each flow reaches one queue, as a NIC's
# RSS would: the pcaps are split by connection); flowgate-swrss: --sw-rss on.
# Writes <out-dir>/pktgen-[<tag>-]<scenario>[-<flows>]-<dut>-w<N>.json per
# run (generator, dut, scenario, workers, offered_mpps, forwarded_mpps,
# ratio_to_testpmd, loss, ...), and with workers 1 and the scenario's flows
# also <out-dir>/pktgen-<scenario>.json (the summary bench/RESULTS.md's
# scenario table reads).  A failed run is recorded as such; the rest go on.
# --deadline EPOCH: start no run after that time (skipped ones are listed).
# --log-dir DIR: keep each run's Pktgen and DUT output there.
# Pktgen itself is not part of flowgate: build it yourself (README.md,
# build-pktgen.sh).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PKTGEN=${PKTGEN:-} BUILD="$ROOT/build" SCNS="" SECS=5 WARM=1 MODE=pcap DUTS="testpmd,flowgate" ZC=0
OUT="$ROOT/bench/results" TMP=${BENCH_TMP:-/tmp/flowgate-bench} FLOWS="" WORKERS=1
GEN_CPUS=0-1 DUT_CPUS=0-1 EAL="" FG_ARGS="" TAG="" DEADLINE=0 LOGDIR=""
FG_BIN="" TP_BIN="" PCAPGEN="" FGCTL=""
# shellcheck source=pktgen-scripts/dut_lib.sh
. "$ROOT/pktgen-scripts/dut_lib.sh"
while (($#)); do
  dut_opt "$@"; n=$?; ((n)) && { shift "$n"; continue; }
  case "$1" in
    --pktgen) PKTGEN=$2; shift 2 ;;
    --mode) MODE=$2; shift 2 ;;
    --zero-copy) ZC=1; shift ;;
    --pcapgen) PCAPGEN=$2; shift 2 ;;
    -h|--help) sed -n '2,40p' "$0"; exit 0 ;;
    *) echo "pktgen_vs_dut: unknown option $1" >&2; exit 2 ;;
  esac
done
dut_paths
[[ -x "$PKTGEN" ]] || { echo "pktgen_vs_dut: --pktgen PATH to a Pktgen-DPDK 23.03 binary is required" >&2; exit 2; }
[[ "$MODE" == pcap || "$MODE" == range ]] || { echo "pktgen_vs_dut: --mode pcap|range" >&2; exit 2; }
[[ -n "$SCNS" ]] || SCNS=$(cd "$ROOT/bench/scenarios" && ls *.scn | sed 's/\.scn$//' | paste -sd,)
if [[ -z "$PCAPGEN" ]]; then
  PCAPGEN="$BUILD/bench/tools/fg-pcapgen"; [[ -x "$PCAPGEN" ]] || PCAPGEN="$BUILD/bench-tools/fg-pcapgen"
  if [[ ! -x "$PCAPGEN" ]]; then
    mkdir -p "$BUILD/bench-tools" && cc -O2 -o "$BUILD/bench-tools/fg-pcapgen" "$ROOT/bench/tools/fg_pcapgen.c" || exit 1
    PCAPGEN="$BUILD/bench-tools/fg-pcapgen"
  fi
fi
sock="$TMP/fg-pg-memif-$$.sock"
zc=""; ((ZC)) && zc=",zero-copy=yes"

# run_one SCN_FILE DUT N FLOWS PCAPS -> Pktgen's FG_RESULT json (+ "dut_stats") on stdout
run_one() {
  local scn=$1 dut=$2 n=$3 flows=$4 pcaps=$5 pg_log="$TMP/fg-pg-$$.log" dut_log="$TMP/fg-pg-dut-$$.log"
  local ctl_sock="$TMP/fg-pg-ctl-$$.sock"
  dut_start "$dut" "$n" "$flows" "$sock" "$ctl_sock" "$dut_log" "fg-pg-dut-$$" || return
  # memif zero-copy needs Pktgen's memory in one file per segment; in copy
  # mode --huge-unlink keeps a killed Pktgen from leaving its hugepages taken
  local mem=(--huge-unlink); ((ZC)) && mem=(--single-file-segments)
  [[ " $EAL " == *" --no-huge "* ]] && mem=()
  local pgargs=(--lcores "$(lcores "$n" "$GEN_CPUS")" --main-lcore 0 -n 1 --file-prefix "fg-pg-gen-$$"
                "${mem[@]}" --log-level='*:warning' "${EAL_A[@]}"
                --no-pci --vdev "net_memif0,role=client,socket=$sock,socket-abstract=no$zc" -- -P -m "[1-$n:1-$n].0")
  [[ "$MODE" == pcap ]] && pgargs+=(-s "0:$pcaps")
  FG_SCENARIO="$scn" FG_MODE=$MODE FG_DURATION=$SECS FG_WARMUP=$WARM \
    timeout $((SECS + WARM + 120)) "$PKTGEN" "${pgargs[@]}" -f "$ROOT/pktgen-scripts/run_scenario.lua" </dev/null >"$pg_log" 2>&1
  local res; res=$(grep -a '^FG_RESULT ' "$pg_log" | tail -1 | cut -d' ' -f2-)
  local stats='null'
  [[ $dut == flowgate* ]] && stats=$(dut_stats "$ctl_sock")
  dut_stop
  [[ -n "$res" ]] || res="{\"status\":\"failed\",\"reason\":\"pktgen: $(grep -aiE -A1 'panic|cannot|error' "$pg_log" | head -2 | tr -cd '[:print:]' | tr -d '"\\' | cut -c1-200)\"}"
  echo "${res%\}},\"dut_stats\":$stats}"
  # hugepage files a killed process left (prefixes of this script only)
  awk '$3 == "hugetlbfs" {print $2}' /proc/mounts | while read -r h; do rm -f "$h"/fg-pg-gen-$$map_* "$h"/fg-pg-dut-$$map_*; done
  if [[ -n "$LOGDIR" ]]; then
    mkdir -p "$LOGDIR"; mv "$pg_log" "$LOGDIR/$6.pktgen.log"; mv "$dut_log" "$LOGDIR/$6.dut.log"
  fi
  rm -f "$pg_log" "$dut_log" "$sock" "$ctl_sock"
}

record() { # record FILE CMD SCN LABEL FLOWS DUT N RESULT_JSON TESTPMD_JSON
  python3 - "$@" "$GEN_CPUS" "$DUT_CPUS" "$MODE" "$ZC" <<'PY'
import datetime, json, os, sys
out, cmd, scn, label, flows, dut, n, res, tp, gcpu, dcpu, mode, zc = sys.argv[1:14]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(out)), '..', 'tools'))
def j(x):
    try: return json.loads(x) if x else None
    except json.JSONDecodeError: return {"status": "failed", "reason": x[:200]}
r, t = j(res) or {}, j(tp)
try:
    import fg_results; mach = fg_results.machine_info()
except Exception:
    mach = {}
ok = 'rx_mpps' in r
ratio = None
if ok and t and 'rx_mpps' in t and t['rx_mpps'] > 0 and not dut.startswith('testpmd'):
    ratio = round(r['rx_mpps'] / t['rx_mpps'], 3)
elif ok and dut.startswith('testpmd'):
    ratio = 1.0
loss = None
if ok and r.get('tx_pkts'):
    loss = round(max(0.0, 1.0 - r['rx_pkts'] / r['tx_pkts']), 4)
rec = {"generator": "Pktgen-DPDK 23.03 " + ("pcap replay, one pcap per queue" if mode == 'pcap' else "range mode"),
       "dut": dut, "scenario": label, "scenario_file": scn, "flows": int(flows), "workers": int(n),
       "offered_mpps": r.get('tx_mpps'), "forwarded_mpps": r.get('rx_mpps'),
       "ratio_to_testpmd": ratio, "loss": loss,
       "testpmd_forwarded_mpps": (t or {}).get('rx_mpps'),
       "status": "ok" if ok else r.get('status', 'failed'),
       "link": "net_memif" + (" zero-copy" if zc == '1' else " (copy)"),
       "gen_cpus": gcpu, "dut_cpus": dcpu, "command": cmd, "machine": mach,
       "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'),
       "pktgen": {k: v for k, v in r.items() if k != 'dut_stats'}, "dut_stats": r.get('dut_stats')}
if not ok:
    rec['reason'] = r.get('reason', 'not run')
json.dump(rec, open(out, 'w'), indent=1)
print(f"pktgen_vs_dut: {os.path.basename(out)}: {rec['status']} offered {rec['offered_mpps']} "
      f"forwarded {rec['forwarded_mpps']} Mpps ratio {ratio} loss {loss}", file=sys.stderr)
PY
}

summary() { # summary FILE CMD RESULT_TESTPMD RESULT_FLOWGATE: the w1 record the RESULTS table reads
  python3 - "$@" "$MODE" "$ZC" <<'PY'
import datetime, json, os, sys
out, cmd, tp, fg, mode, zc = sys.argv[1:7]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(out)), '..', 'tools'))
def j(x):
    try: return json.loads(x) if x else None
    except json.JSONDecodeError: return {"status": "failed", "reason": x[:200]}
tp, fg = j(tp), j(fg)
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
PY
}

IFS=, read -ra SL <<<"$SCNS"; IFS=, read -ra DL <<<"$DUTS"; IFS=, read -ra WL <<<"$WORKERS"
skipped=()
for s in "${SL[@]}"; do
  scn="$ROOT/bench/scenarios/$s.scn"
  [[ -r "$scn" ]] || { echo "pktgen_vs_dut: no scenario $s" >&2; continue; }
  sflows=$("$PCAPGEN" "$scn" --show | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["flows"], d["flow_packets"], int(d["syn_flood_share"] > 0))')
  read -r base_flows fpk flood <<<"$sflows"
  fl=("$base_flows")
  # --flows: other flow counts for the established scenarios (no SYN/FIN, no flood)
  if [[ -n "$FLOWS" && $fpk == 0 && $flood == 0 ]]; then IFS=, read -ra fl <<<"$FLOWS"; fi
  for f in "${fl[@]}"; do
    label=$s; ((f != base_flows)) && label="$s-$f"
    scn_run=$scn
    if ((f != base_flows)); then
      scn_run="$TMP/$label.scn"; sed "s/^flows *=.*/flows = $f/" "$scn" >"$scn_run"
    fi
    for n in "${WL[@]}"; do
      if ((DEADLINE > 0 && $(date +%s) >= DEADLINE)); then skipped+=("$label/w$n"); continue; fi
      pcaps=""
      if [[ "$MODE" == pcap ]]; then
        "$PCAPGEN" "$scn_run" -o "$TMP/$label.pcap" --split "$n" --quiet || continue
        if ((n == 1)); then pcaps="$TMP/$label.pcap"
        else for ((q = 0; q < n; q++)); do pcaps+="${pcaps:+,}$TMP/$label.q$q.pcap"; done; fi
      fi
      declare -A R=()
      for d in "${DL[@]}"; do
        echo "pktgen_vs_dut: $label -> $d, $n worker(s), over net_memif ($MODE, ${SECS} s)" >&2
        R[$d]=$(run_one "$scn_run" "$d" "$n" "$f" "$pcaps" "${TAG:+$TAG-}$label-$d-w$n")
        cmd="pktgen-scripts/pktgen_vs_dut.sh --pktgen PKTGEN --scenarios $s$( ((f != base_flows)) && echo " --flows $f") --workers $n --seconds $SECS --warmup $WARM --mode $MODE --dut $DUTS --gen-cpus $GEN_CPUS --dut-cpus $DUT_CPUS$( ((ZC)) && echo ' --zero-copy')${EAL:+ --eal \"$EAL\"}"
        record "$OUT/pktgen-${TAG:+$TAG-}$label-$d-w$n.json" "$cmd" "$s" "$label" "$f" "$d" "$n" "${R[$d]}" "${R[testpmd]:-}"
      done
      if ((n == 1 && f == base_flows)) && [[ -z "$TAG" ]]; then
        summary "$OUT/pktgen-$s.json" "pktgen-scripts/pktgen_vs_dut.sh --pktgen PKTGEN --scenarios $s --seconds $SECS --mode $MODE --dut $DUTS" "${R[testpmd]:-}" "${R[flowgate]:-}"
      fi
      unset R
      rm -f "$TMP/$label.pcap" "$TMP/$label".q*.pcap
    done
    [[ "$scn_run" != "$scn" ]] && rm -f "$scn_run"
  done
done
((${#skipped[@]})) && echo "pktgen_vs_dut: past --deadline, not run: ${skipped[*]}" >&2
exit 0
