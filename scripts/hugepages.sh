#!/usr/bin/env bash
# Reserves 2 MiB hugepages and mounts hugetlbfs on /dev/hugepages if needed.
# Tests run with --no-huge; benchmarks and the demo use hugepages.
set -u
want=${1:-1024}
[[ $(id -u) -eq 0 ]] || { echo "hugepages: not root, skipping (tests use --no-huge)"; exit 0; }
have=$(cat /proc/sys/vm/nr_hugepages)
if (( have < want )); then
  echo "$want" > /proc/sys/vm/nr_hugepages 2>/dev/null || true
  have=$(cat /proc/sys/vm/nr_hugepages)
  (( have < want )) && echo "hugepages: only $have of $want 2 MiB pages could be reserved"
fi
if ! mount | grep -q 'type hugetlbfs'; then
  mkdir -p /dev/hugepages
  mount -t hugetlbfs nodev /dev/hugepages 2>/dev/null || echo "hugepages: could not mount hugetlbfs"
fi
exit 0
