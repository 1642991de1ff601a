#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Issue 10's check: `make test` N times in a row (default 3) with a CPU hog
# (one busy loop) beside it.  Each run happens in a fresh network + mount
# namespace whose /run/netns, /run/dpdk, /dev/hugepages and /tmp are
# private, so the listings taken before and after each run (namespaces,
# links, TAP/TUN, hugepage files, DPDK runtime dirs and sockets, listening
# unix sockets, /tmp) show only what that run created or left.  Logs in
# LOGDIR (default /tmp/flowgate-hog-<PID>, outside the runs' private /tmp).
#   scripts/make-test-under-load.sh [RUNS] [LOGDIR]
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
L=${2:-/var/tmp/flowgate-hog-$$}
mkdir -p "$L"
[ "$(id -u)" = 0 ] || { echo "make-test-under-load: needs root (namespaces, mounts)"; exit 77; }
snap() {
	echo "--- namespaces (ip netns list)"; ip netns list
	echo "--- links"; ip -o link | awk -F': ' '{print $2}'
	echo "--- TAP/TUN"; ip tuntap list
	echo "--- /dev/hugepages"; find /dev/hugepages -mindepth 1
	echo "--- /run/dpdk (runtime dirs, sockets)"; find /run/dpdk -mindepth 1
	echo "--- unix sockets listening"; ss -xlnH
	echo "--- /tmp"; find /tmp -mindepth 1 -maxdepth 1
}
fails=0
for i in $(seq "$RUNS"); do
	( while :; do :; done ) & HOG=$!
	trap "kill $HOG 2>/dev/null" EXIT; trap "exit 143" TERM INT
	echo "run $i start $(date -u +%T), hog pid $HOG" | tee -a "$L/summary.txt"
	unshare --net --mount --propagation private bash -c '
		set -e
		mount -t sysfs sysfs /sys
		# the xdp / fg-decap tests load BPF, the service test reads cgroups:
		# a run without them would skip or fail for the wrong reason
		mount -t bpf bpf /sys/fs/bpf ||
			{ echo "make-test-under-load: cannot mount bpffs on /sys/fs/bpf" >&2; exit 1; }
		mount -t cgroup2 none /sys/fs/cgroup ||
			{ echo "make-test-under-load: cannot mount cgroup2 on /sys/fs/cgroup" >&2; exit 1; }
		mkdir -p /run/netns /run/dpdk /dev/hugepages
		mount -t tmpfs none /run/netns
		mount -t tmpfs none /run/dpdk
		mount -t hugetlbfs nodev /dev/hugepages
		mount -t tmpfs -o size=8g none /tmp
		ip link set lo up
		set +e
		'"$(declare -f snap)"'
		{ echo "=== before"; snap; } > "$1/run$2.before" 2>&1
		make test > "$1/run$2.log" 2>&1; rc=$?
		{ echo "=== after (rc $rc)"; snap; } > "$1/run$2.after" 2>&1
		exit $rc' hog "$L" "$i"
	rc=$?
	kill $HOG; wait $HOG 2>/dev/null
	left=$(grep -v '^---\|^===\|^lo$' "$L/run$i.after" | grep -c .)
	echo "run $i end $(date -u +%T) rc=$rc, $left entries left (see $L/run$i.after)" | tee -a "$L/summary.txt"
	(( rc == 0 && left == 0 )) || fails=$((fails + 1))
done
echo "make-test-under-load: $((RUNS - fails)) of $RUNS runs passed and left nothing"
(( fails == 0 ))
