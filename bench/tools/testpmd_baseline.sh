#!/usr/bin/env bash
# testpmd_baseline.sh: the framework ceiling every flowgate figure is read
# against: dpdk-testpmd io forwarding on the same virtual devices, one
# forwarding core, measured over a few seconds.  Prints one JSON object.
#
#   testpmd_baseline.sh [--pcap FILE] [--seconds N] [--lcores 0-1]
#                       [--mbufs N] [--file-prefix P]
#
# Without --pcap: net_null -> net_null (both ports generate and sink; the
# figure is the sum over both ports).  With --pcap: net_pcap replaying FILE
# from memory (infinite_rx=1) -> net_null (no-rx=1), i.e. the same source
# flowgate-bench dataplane and scripts/bench.sh use for the scenarios.
set -euo pipefail
pcap="" secs=5 lcores="0-1" mbufs="" prefix="fg-tpbase-$$"
while (($#)); do
  case "$1" in
    --pcap) pcap=$2; shift 2 ;;
    --seconds) secs=$2; shift 2 ;;
    --lcores) lcores=$2; shift 2 ;;
    --mbufs) mbufs=$2; shift 2 ;;
    --file-prefix) prefix=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "testpmd_baseline: unknown option $1" >&2; exit 2 ;;
  esac
done
command -v dpdk-testpmd >/dev/null || { echo '{"status":"not available","reason":"dpdk-testpmd not installed"}'; exit 3; }
[[ "$secs" =~ ^[0-9]+$ ]] && ((secs >= 2)) || { echo "testpmd_baseline: --seconds must be an integer >= 2" >&2; exit 2; }

eal=(-l "$lcores" --file-prefix "$prefix" --log-level='*:warning')
app=(--forward-mode=io --nb-cores=1 --stats-period 1)
if [[ -n "$pcap" ]]; then
  [[ -r "$pcap" ]] || { echo "testpmd_baseline: cannot read $pcap" >&2; exit 2; }
  # one mbuf per pcap packet is held by net_pcap's infinite_rx ring, plus
  # what the queues need; small data room: the frames are short.
  read -r n maxlen < <(python3 - "$pcap" <<'PY'
import struct, sys
f = open(sys.argv[1], 'rb'); f.read(24); m = 0; n = 0
while True:
    h = f.read(16)
    if len(h) < 16: break
    cap = struct.unpack('<IIII', h)[2]; m = max(m, cap); n += 1; f.seek(cap, 1)
print(n, m)
PY
)
  room=$(( maxlen > 1900 ? maxlen + 128 : 2176 ))
  (( maxlen <= 128 )) && room=256
  eal+=(--no-pci --vdev "net_pcap0,rx_pcap=$pcap,infinite_rx=1" --vdev "net_null0,no-rx=1")
  app+=(--total-num-mbufs="${mbufs:-$(( n + 32768 ))}" --mbuf-size="$room")
  src="net_pcap infinite_rx ($(basename "$pcap")) -> net_null"
else
  eal+=(--no-pci --vdev net_null0 --vdev net_null1)
  src="net_null <-> net_null"
fi
log=$(mktemp /tmp/fg-testpmd.XXXXXX)
trap 'rm -f "$log"' EXIT
# The pcap is loaded into mbufs at start; give it time on top of the window.
timeout -s INT $((secs + 5)) dpdk-testpmd "${eal[@]}" -- "${app[@]}" </dev/null >"$log" 2>&1 || true
python3 - "$log" "$src" "$secs" <<'PY'
import json, re, statistics, sys
log, src, secs = open(sys.argv[1], errors='replace').read(), sys.argv[2], int(sys.argv[3])
blocks = log.split('Port statistics')[1:]
sums = []
for b in blocks:
    pps = [int(x) for x in re.findall(r'Rx-pps:\s+(\d+)', b)]
    if pps:
        sums.append(sum(pps))
steady = [s for s in sums if s > 0][1:]        # drop the first (partial) second
if not steady:
    err = [l for l in log.splitlines() if 'rror' in l or 'annot' in l or 'fail' in l][:3]
    print(json.dumps({"status": "failed", "source": src, "reason": " | ".join(err) or "no stats"}))
    sys.exit(1)
steady = steady[:secs]
print(json.dumps({"bench": "testpmd-io", "source": src, "forward_cores": 1,
                  "testpmd_io_mpps": round(statistics.median(steady) / 1e6, 3),
                  "samples_mpps": [round(s / 1e6, 3) for s in steady]}))
PY
