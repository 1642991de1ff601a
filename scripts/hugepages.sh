#!/usr/bin/env bash
# Reserves N 2 MiB hugepages (default 1024) and mounts hugetlbfs on
# /dev/hugepages if needed.  Only `make bench` needs them: tests and the
# demo run DPDK with --no-huge.  Exits 1 with the reason when a step fails.
set -u
want=${1:-1024}
fail() { echo "hugepages: FAIL: $*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || fail "not root: cannot reserve $want hugepages (run as root, or use --no-huge)"
have=$(cat /proc/sys/vm/nr_hugepages)
if (( have < want )); then
  echo "$want" > /proc/sys/vm/nr_hugepages 2>/dev/null || fail "cannot write /proc/sys/vm/nr_hugepages"
  have=$(cat /proc/sys/vm/nr_hugepages)
  (( have >= want )) || fail "only $have of $want 2 MiB pages could be reserved (memory too small or fragmented: $(grep MemAvailable /proc/meminfo))"
fi
if ! mountpoint -q /dev/hugepages; then
  mkdir -p /dev/hugepages || fail "cannot create /dev/hugepages"
  mount -t hugetlbfs nodev /dev/hugepages || fail "cannot mount hugetlbfs on /dev/hugepages"
fi
echo "hugepages: $have 2 MiB pages reserved, hugetlbfs on /dev/hugepages"
