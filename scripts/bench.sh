#!/usr/bin/env bash
# scripts/bench.sh BUILD_DIR [--quick] [--only LIST] [--no-report]
#
# What `make bench` runs: every benchmark that fits this machine (target:
# < 30 minutes on 2 cores), each figure next to the baseline measured in the
# same run.  Writes bench/results/*.json, bench/results/plots/*.png and
# regenerates the generated tables of bench/RESULTS.md.
#
#   --quick        smallest sizes only (a few minutes; smoke test of the rig)
#   --only LIST    comma list of steps: machine,testpmd,scenarios,conntrack,
#                  dataplane,control,latency,daemon,inference,generators,report
#   --no-report    do not rewrite RESULTS.md / plots
#
# A sub-benchmark that is not built is recorded as "not available" (never a
# made-up figure).  GPU and multi-core figures come from the device machine
# (bench/results/device/*.json) and are not rerun here.
# Environment: BENCH_TMP (pcaps, default /tmp/flowgate-bench),
#              BENCH_LCORES (default 0-1), PKTGEN (a Pktgen-DPDK 23.03
#              binary; default: pktgen in PATH), TREX (a TRex v3 folder
#              with _t-rex-64, pktgen-scripts/trex/build-trex.sh): the
#              generator steps run only if they are there.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${1:-build}
shift || true
QUICK=0 ONLY="" REPORT=1
while (($#)); do
  case "$1" in
    --quick) QUICK=1; shift ;;
    --only) ONLY=",$2,"; shift 2 ;;
    --no-report) REPORT=0; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
RES="$ROOT/bench/results"
TMP=${BENCH_TMP:-/tmp/flowgate-bench}
LCORES=${BENCH_LCORES:-0-1}
FGB="$BUILD/bench/flowgate-bench"
DAEMON="$BUILD/dataplane/flowgate"
# Debian's python3 has python3-matplotlib; a pyenv/venv python3 first in
# PATH may not.
PYTHON=${PYTHON:-$( [[ -x /usr/bin/python3 ]] && echo /usr/bin/python3 || echo python3)}
PY="$PYTHON $ROOT/bench/tools/fg_results.py"
mkdir -p "$RES" "$TMP"
T0=$(date +%s)

want() { [[ -z "$ONLY" || "$ONLY" == *",$1,"* ]]; }
say() { printf '[bench %4ds] %s\n' $(( $(date +%s) - T0 )) "$*"; }
# run OUT TIMEOUT CMD...: records CMD's JSON (or why there is none) in OUT
run() { local out=$1 to=$2; shift 2; $PY run --out "$RES/$out" --timeout "$to" -- "$@"; }

if [[ ! -x "$FGB" ]]; then
  echo "bench.sh: $FGB not found; build first (make build, or meson setup $BUILD && ninja -C $BUILD)" >&2
  exit 1
fi
if [[ $(id -u) -eq 0 ]] && ! grep -q '^HugePages_Total: *[1-9]' /proc/meminfo; then
  "$ROOT/scripts/hugepages.sh" 1024
fi

# ---- tools: fg-pcapgen (meson target if bench/tools is wired in, else cc)
PCAPGEN="$BUILD/bench/tools/fg-pcapgen"
if [[ ! -x "$PCAPGEN" ]]; then
  PCAPGEN="$BUILD/bench-tools/fg-pcapgen"
  if [[ ! -x "$PCAPGEN" || "$ROOT/bench/tools/fg_pcapgen.c" -nt "$PCAPGEN" || "$ROOT/bench/tools/fg_scen.h" -nt "$PCAPGEN" ]]; then
    mkdir -p "$BUILD/bench-tools"
    ${CC:-cc} -O2 -march=x86-64-v2 -Wall -Wextra -Wno-unused-parameter -o "$PCAPGEN" \
      "$ROOT/bench/tools/fg_pcapgen.c" || { echo "bench.sh: cannot build fg-pcapgen" >&2; exit 1; }
  fi
fi

if ((QUICK)); then
  CT_FLOWS=(1000 100000); CT_FILLS=(0.5 0.95); DP_FLOWS=(1000 100000); TP_SECS=2; LAT_SECS=1
else
  CT_FLOWS=(1000 100000 1000000 10000000); CT_FILLS=(0.5 0.9 0.95); DP_FLOWS=(1000 100000 1000000 10000000)
  TP_SECS=4; LAT_SECS=2
fi
SCENARIOS=()
for f in "$ROOT"/bench/scenarios/*.scn; do SCENARIOS+=("$(basename "$f" .scn)"); done

say "flowgate benchmarks: build $BUILD, results $RES, pcaps $TMP, lcores $LCORES$( ((QUICK)) && echo ', QUICK')"

# ---- 1. machine
if want machine; then
  say "[1/8] machine description"
  $PY machine --out "$RES/machine.json"
fi

# ---- 2. framework ceiling
if want testpmd; then
  say "[2/8] framework ceiling: dpdk-testpmd io forwarding net_null <-> net_null (${TP_SECS} s)"
  run testpmd-null.json 60 "$ROOT/bench/tools/testpmd_baseline.sh" --seconds "$TP_SECS" --lcores "$LCORES"
fi

# ---- 3. scenarios: pcaps + testpmd replay ceiling (+ the daemon in step 7)
if want scenarios; then
  for s in "${SCENARIOS[@]}"; do rm -f "$RES/testpmd-$s.json"; done
  say "[3/8] scenarios: pcaps from bench/scenarios/*.scn and their testpmd replay ceiling"
  for s in "${SCENARIOS[@]}"; do
    pc="$TMP/$s.pcap"
    if [[ ! -s "$pc" || "$ROOT/bench/scenarios/$s.scn" -nt "$pc" || "$PCAPGEN" -nt "$pc" ]]; then
      say "      $s: generating $pc"
      "$PCAPGEN" "$ROOT/bench/scenarios/$s.scn" -o "$pc" --quiet || { echo "bench.sh: fg-pcapgen $s failed" >&2; continue; }
    fi
    say "      $s: testpmd io, pcap replay -> net_null"
    run "testpmd-$s.json" 90 "$ROOT/bench/tools/testpmd_baseline.sh" --pcap "$pc" --seconds "$TP_SECS" --lcores "$LCORES"
  done
fi

# ---- 4. conntrack
if want conntrack; then
  rm -f "$RES"/conntrack-*.json
  n=$(( ${#CT_FLOWS[@]} + ${#CT_FILLS[@]} )); i=0
  for f in "${CT_FLOWS[@]}"; do
    i=$((i + 1)); say "[4/8] conntrack ($i/$n): --flows $f"
    run "conntrack-$f.json" 300 "$FGB" conntrack --flows "$f" --json
  done
  fill_flows=${CT_FLOWS[2]:-${CT_FLOWS[-1]}}
  for fill in "${CT_FILLS[@]}"; do
    i=$((i + 1)); say "[4/8] conntrack ($i/$n): --flows $fill_flows --fill $fill"
    run "conntrack-$fill_flows-fill$fill.json" 300 "$FGB" conntrack --flows "$fill_flows" --fill "$fill" --json
  done
fi

# ---- 5. dataplane, one worker
if want dataplane; then
  rm -f "$RES"/dataplane-*.json
  modes=(dsr-ipip dsr-gue nat); n=$(( ${#modes[@]} * (${#DP_FLOWS[@]} + 1) )); i=0
  for m in "${modes[@]}"; do
    for f in "${DP_FLOWS[@]}"; do
      i=$((i + 1)); say "[5/8] dataplane ($i/$n): --flows $f --mode $m"
      run "dataplane-$m-$f.json" 300 "$FGB" dataplane --flows "$f" --mode "$m" --json
    done
    nf=${DP_FLOWS[2]:-${DP_FLOWS[-1]}}
    i=$((i + 1)); say "[5/8] dataplane ($i/$n): --flows $nf --mode $m --new-flows"
    run "dataplane-$m-$nf-new.json" 300 "$FGB" dataplane --flows "$nf" --mode "$m" --new-flows --json
  done
fi

# ---- 6. control plane
if want control; then
  say "[6/8] control: --flows 1000000 (flow listing, publish latency)"
  run control.json 600 "$FGB" control --flows 1000000 --json
fi

# ---- 7. latency (+ through the daemon over net_memif when it is built)
if want latency; then
  say "[7/8] latency: steady-1m at 10/50/80/95% of the measured max (ring baseline)"
  run latency-steady-1m.json 300 "$FGB" latency --scenario steady-1m \
    --scenario-dir "$ROOT/bench/scenarios" --seconds "$LAT_SECS" --json \
    --eal "-l $LCORES --no-pci --file-prefix fg-bench-lat --log-level=*:warning"
fi
if want daemon; then
  if [[ -x "$DAEMON" ]]; then
    say "[7/8] scenarios through the flowgate daemon (pcap replay -> flowgate -> net_null)"
    for s in "${SCENARIOS[@]}"; do
      [[ -s "$TMP/$s.pcap" ]] || continue
      say "      $s"
      run "scenario-$s.json" 120 "$ROOT/bench/tools/daemon_scenario.sh" --build "$BUILD" \
        --scenario "$ROOT/bench/scenarios/$s.scn" --pcap "$TMP/$s.pcap" --seconds "$TP_SECS" --lcores "$LCORES"
    done
    say "[7/8] latency through the flowgate daemon over net_memif (steady-1m)"
    run latency-steady-1m-flowgate.json 300 "$ROOT/bench/tools/daemon_latency.sh" --build "$BUILD" \
      --scenario steady-1m --seconds "$LAT_SECS"
  else
    say "[7/8] flowgate daemon not built ($DAEMON): scenario rows recorded as not available"
    for s in "${SCENARIOS[@]}"; do
      printf '{"status":"not available","reason":"flowgate daemon not built (%s)","command":""}\n' "$DAEMON" > "$RES/scenario-$s.json"
    done
  fi
fi

# ---- inference placement: the Azure LLM traces through a simulated cluster,
# seconds on any machine (issues 12, 39)
if want inference; then
  say "[inference] flowgate-bench inference: conv/code traces x load 0.5/0.8/0.9 x keepalive 1/8/32, 4 schedulers"
  mkdir -p "$RES/plots"
  $PYTHON "$ROOT/bench/tools/inference_sweep.py" --fgb "$FGB" --out "$RES/inference.json" \
    --plot "$RES/plots/inference_ttft_p99.png" $( ((REPORT)) && echo --md "$ROOT/bench/RESULTS.md" ) ||
    say "      inference sweep failed (see above)"
fi

# ---- generators: Pktgen-DPDK -> flowgate and -> testpmd io over
# net_memif, the short local versions of the device runs (issue 37)
if want generators; then
  PKTGEN=${PKTGEN:-$(command -v pktgen || true)}
  gen_eal=""; grep -q '^HugePages_Free: *[1-9]' /proc/meminfo || gen_eal="--no-huge -m 3072"
  if [[ -n "$PKTGEN" && -x "$PKTGEN" && -x "$DAEMON" ]]; then
    say "[gen] Pktgen-DPDK -> flowgate / testpmd io over net_memif, every scenario, 1 worker"
    "$ROOT/pktgen-scripts/pktgen_vs_dut.sh" --pktgen "$PKTGEN" --build "$BUILD" --workers 1 \
      --seconds "$TP_SECS" --gen-cpus "$LCORES" --dut-cpus "$LCORES" ${gen_eal:+--eal "$gen_eal"} \
      --out-dir "$RES" --tmp "$TMP" || say "      pktgen_vs_dut.sh failed (see above)"
  else
    say "[gen] Pktgen-DPDK not installed (PKTGEN) or daemon not built: skipped"
  fi
  # TRex (pktgen-scripts/trex/build-trex.sh; TREX: its folder with _t-rex-64)
  if [[ -n "${TREX:-}" && -x "$TREX/_t-rex-64" && -x "$DAEMON" ]]; then
    say "[gen] TRex -> flowgate / testpmd io over net_memif, steady-1m, 1 worker, latency at 10/50/90%"
    "$ROOT/pktgen-scripts/trex/trex_vs_dut.sh" --trex "$TREX" --build "$BUILD" --workers 1 \
      --scenarios steady-1m --seconds "$TP_SECS" --gen-cpus "$LCORES" --dut-cpus "$LCORES" \
      ${gen_eal:+--eal "$gen_eal"} --tag local --out-dir "$RES" --tmp "$TMP" || say "      trex_vs_dut.sh failed (see above)"
  else
    say "[gen] TRex not built (TREX) or daemon not built: skipped"
  fi
fi

# ---- 8. report
if ((REPORT)) && want report; then
  say "[8/8] RESULTS.md tables and plots"
  $PY report --results "$RES" --md "$ROOT/bench/RESULTS.md" --scenarios "$ROOT/bench/scenarios"
fi
say "done in $(( $(date +%s) - T0 )) s"
