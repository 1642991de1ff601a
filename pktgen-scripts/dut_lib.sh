# shellcheck shell=bash
# dut_lib.sh: the device under test for the generator scripts
# (pktgen_vs_dut.sh, trex/trex_vs_dut.sh), sourced by them.  The DUT is the
# net_memif *server* on SOCK, one-armed (it sends back out of port 0):
#   testpmd    dpdk-testpmd io forwarding, the ceiling of the rig
#   flowgate   the daemon with the services of bench/tools/daemon_scenario.sh,
#              software RSS off (each flow reaches one queue, as a NIC's
#              RSS would); flowgate-swrss: --sw-rss on
# Uses: TP_BIN FG_BIN DUT_CPUS EAL_A (array) FG_A (array).

# dut_opt OPTION [VALUE]: the options both generator scripts take (the
# scenarios and their run, the DUT, where things go): sets its variable
# and returns the words it used, 2 (0: not one of these).  Each script
# sets their defaults before its option loop and reads its own options.
# shellcheck disable=SC2034 # the variables are the sourcing script's
dut_opt() {
  case "$1" in
    --build) BUILD=$2 ;; --scenarios) SCNS=$2 ;; --flows) FLOWS=$2 ;;
    --workers) WORKERS=$2 ;; --seconds) SECS=$2 ;; --warmup) WARM=$2 ;;
    --dut) DUTS=$2 ;; --gen-cpus) GEN_CPUS=$2 ;; --dut-cpus) DUT_CPUS=$2 ;;
    --eal) EAL=$2 ;; --fg-args) FG_ARGS=$2 ;; --flowgate) FG_BIN=$2 ;;
    --testpmd) TP_BIN=$2 ;; --fgctl) FGCTL=$2 ;; --tag) TAG=$2 ;;
    --out-dir) OUT=$2 ;; --tmp) TMP=$2 ;; --deadline) DEADLINE=$2 ;;
    --log-dir) LOGDIR=$2 ;;
    *) return 0 ;;
  esac
  return 2
}

# dut_paths: after the option loop, the binaries' defaults from --build,
# the output and scratch folders made, EAL_A and FG_A split into words.
dut_paths() {
  [[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
  FG_BIN=${FG_BIN:-$BUILD/dataplane/flowgate}
  TP_BIN=${TP_BIN:-$(command -v dpdk-testpmd || true)}
  FGCTL=${FGCTL:-$BUILD/control/fgctl}
  mkdir -p "$OUT" "$TMP"
  # shellcheck disable=SC2206 # word lists on purpose
  EAL_A=($EAL) FG_A=($FG_ARGS)
}

# CPU list "0-3,8" -> "0 1 2 3 8"
cpus() { local r a b out=(); IFS=, read -ra r <<<"$1"
  for x in "${r[@]}"; do a=${x%-*} b=${x#*-}; for ((c = a; c <= b; c++)); do out+=("$c"); done; done
  echo "${out[@]}"; }
# EAL --lcores for lcores 0..n: lcore k on CPU k mod len
lcores() { local n=$1 c s=""; read -ra c <<<"$(cpus "$2")"
  for ((k = 0; k <= n; k++)); do s+="${s:+,}$k@${c[k % ${#c[@]}]}"; done; echo "$s"; }

# Same services as bench/tools/daemon_scenario.sh, one-armed on memif port 0:
# what flowgate sends goes to the gateway 02:00:00:00:00:01, the generator.
# shellcheck disable=SC2034,SC2054 # used by the sourcing script; commas inside option values
FG_SVC=(--service 10.100.0.1:80/tcp,mode=dsr-ipip --backend 10.200.0.11 --backend 10.200.0.12 --backend 10.200.0.13
  --service 10.100.0.2:80/tcp,mode=dsr-gue --backend 10.200.0.11 --backend 10.200.0.12 --backend 10.200.0.13
  --service 10.100.0.3:80/tcp,mode=nat --backend 10.200.0.11:8080 --backend 10.200.0.12:8080 --backend 10.200.0.13:8080
  --service '[fd00:100::1]:80/tcp,mode=dsr-ipip' --backend fd00:200::11 --backend fd00:200::12 --backend fd00:200::13
  --local 10.200.0.2,port=0 --local fd00:200::2,port=0 --local 10.100.0.254,port=0
  --gateway 10.200.0.1,port=0 --gateway fd00:200::1,port=0
  --neigh 10.200.0.1,02:00:00:00:00:01,port=0 --neigh fd00:200::1,02:00:00:00:00:01,port=0
  --port-mac 0,02:00:00:00:00:02)

# conntrack entries per worker: >= 1.5 x the flows a worker owns, a power of 2
ct_cap() { local per=$(( ($1 * 3 / 2 + $2 - 1) / $2 )) cap=1048576; while ((cap < per)); do cap=$((cap * 2)); done; echo $cap; }

# dut_start DUT N FLOWS SOCK CTL_SOCK LOG PREFIX: starts the DUT with N
# workers (N RX/TX queues) as the memif server on SOCK and waits until its
# port is up (a memif client that connects earlier is refused, "ID 0 not
# found", for good).  Sets DUT_PID.  On failure prints the JSON of a failed
# run on stdout and returns 1.
dut_start() {
  local dut=$1 n=$2 flows=$3 sock=$4 ctl_sock=$5 log=$6 prefix=$7 ready dl
  dl=$(lcores "$n" "$DUT_CPUS"); DUT_PID=""
  rm -f "$sock"
  case "$dut" in
    testpmd)
      [[ -x "$TP_BIN" ]] || { echo '{"status":"not available","reason":"dpdk-testpmd not found"}'; return 1; }
      "$TP_BIN" --lcores "$dl" --main-lcore 0 --file-prefix "$prefix" --log-level='*:warning' "${EAL_A[@]}" \
        --no-pci --vdev "net_memif0,role=server,socket=$sock,socket-abstract=no" -- --forward-mode=io --port-topology=loop \
        --nb-cores="$n" --rxq="$n" --txq="$n" --stats-period 1 </dev/null >"$log" 2>&1 &
      DUT_PID=$! ready='packet forwarding - ports' ;;
    flowgate|flowgate-swrss)
      [[ -x "$FG_BIN" ]] || { echo '{"status":"not available","reason":"flowgate daemon not built"}'; return 1; }
      local rss=off; [[ $dut == flowgate-swrss ]] && rss=on
      "$FG_BIN" --lcores "$dl" --main-lcore 0 --file-prefix "$prefix" --log-level='*:warning' --log-level=flowgate:notice "${EAL_A[@]}" \
        --no-pci --vdev "net_memif0,role=server,socket=$sock,socket-abstract=no" -- --workers "$n" --sw-rss "$rss" --socket "$ctl_sock" \
        --ct-capacity "$(ct_cap "$flows" "$n")" "${FG_SVC[@]}" "${FG_A[@]}" </dev/null >"$log" 2>&1 &
      DUT_PID=$! ready='flowgate: running:' ;;
    *) echo "{\"status\":\"failed\",\"reason\":\"unknown dut $dut\"}"; return 1 ;;
  esac
  for _ in $(seq 1 1200); do grep -aq "$ready" "$log" && break; kill -0 "$DUT_PID" 2>/dev/null || break; sleep 0.1; done
  if ! grep -aq "$ready" "$log" || [[ ! -S "$sock" ]]; then
    kill -9 "$DUT_PID" 2>/dev/null; wait "$DUT_PID" 2>/dev/null
    echo "{\"status\":\"failed\",\"reason\":\"$dut did not start: $(grep -aiE 'error|cannot|fail|invalid' "$log" | grep -v 'mp action' | head -1 | tr -cd '[:print:]' | tr -d '"\\' | cut -c1-150)\"}"
    return 1
  fi
}

# dut_stop: SIGINT, then SIGKILL after 10 s
dut_stop() {
  [[ -n "${DUT_PID:-}" ]] || return 0
  kill -INT "$DUT_PID" 2>/dev/null
  for _ in $(seq 1 100); do kill -0 "$DUT_PID" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$DUT_PID" 2>/dev/null; wait "$DUT_PID" 2>/dev/null; DUT_PID=""
}

# dut_stats CTL_SOCK: flowgate's per-core counters as JSON, or null
dut_stats() {
  local s=null
  if [[ -x "${FGCTL:-}" && -S "$1" ]]; then
    s=$(timeout 10 "$FGCTL" --socket "$1" --json stats --per-core 2>/dev/null | tr -d '\n')
    [[ ${s:0:1} == '{' ]] || s=null
  fi
  echo "$s"
}

# split_cpus: "GEN DUT" CPU lists for a generator and a DUT side by side:
# the generator on the first half of the physical cores, the DUT on the
# second half (their SMT siblings after them); the DUT's list starts with
# its last CPU (its main lcore, shared with lcore N when N fills the list).
split_cpus() {
  python3 - <<'PY'
import glob, re
cpus = sorted(int(re.search(r'cpu(\d+)$', p).group(1)) for p in glob.glob('/sys/devices/system/cpu/cpu[0-9]*'))
first, second = [], []
for c in cpus:
    try:
        sib = open(f'/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list').read().strip()
        s = sorted(int(x) for part in sib.split(',') for x in
                   (range(int(part.split('-')[0]), int(part.split('-')[-1]) + 1)))
    except OSError:
        s = [c]
    (first if c == s[0] else second).append(c)
h = len(first) // 2
g = first[:h] + second[:len(second) // 2]
d = first[h:] + second[len(second) // 2:]
print(','.join(map(str, g)), ','.join(map(str, d[-1:] + d[:-1])))
PY
}
