#!/usr/bin/env bash
# Installs the Debian 12 packages flowgate needs, only those missing.
#
# PKGS is the one list of every package whose commands the Makefile,
# scripts/, tests/, bench/tools/, pktgen-scripts/, .ci/ and the demo run
# (besides the Essential/required packages every Debian root has).  The
# `deps` test (tests/deps/check_deps.py, first in `make test`) reads this
# list and fails, naming the command and the file, when a command those
# files run comes from a package that is not here.
#
#   ethtool      netns-setup.sh turns veth checksum/segmentation offloads off
#                (without it clients send partial checksums: every request fails)
#   debootstrap  .ci/run builds the clean Debian 12 root `make test` runs in
#   git, xz-utils  bench/tools/fg_results.py, scripts/device-*-pack.sh
#   man-db       tests/install checks the man pages (man --warnings)
#   systemd      tests/install: systemd-analyze verify of flowgate.service
#                (and systemd-run / systemctl where systemd is PID 1)
#   bpftool      xdp/meson.build: `bpftool gen skeleton` for flowgate-xdp and fg-decap
#   dpdk-doc     flowgate-bench dataplane's l3fwd baseline builds DPDK's
#                examples/l3fwd from /usr/share/dpdk/examples at run time
#                (with make, cc and pkg-config libdpdk: build-essential,
#                pkg-config, libdpdk-dev)
#   valgrind     scripts/cg-ipp.sh: instructions per packet by callgrind
#                (deterministic A/B where wall-clock samples spread too much)
#   libssl-dev   libcrypto: HMAC-SHA256 of the sync messages between nodes
#                (dataplane/fg_sync_msg.c)
#   bird2, frr   e2e-ecmp (tests/e2e/ecmp.py): BIRD 2 announces the VIPs of
#                each flowgate node, FRR (zebra, bgpd, bfdd) is the ECMP router
#   debhelper, lintian  `make deb` (dpkg-buildpackage, dh, dh_installsystemd)
#                and `make deb-check` (scripts/deb-check.sh: lintian)
set -euo pipefail
PKGS=(build-essential pkg-config meson ninja-build clang libclang-rt-14-dev
      libdpdk-dev dpdk dpdk-dev dpdk-doc libbpf-dev bpftool libelf-dev zlib1g-dev libcmocka-dev
      libpcap-dev libnuma-dev libssl-dev libsystemd-dev iproute2 iputils-ping procps
      ethtool python3 python3-matplotlib curl git xz-utils debootstrap prometheus
      man-db systemd bird2 frr valgrind debhelper lintian)
[[ ${1:-} == --list ]] && { printf '%s\n' "${PKGS[@]}"; exit 0; }
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then echo "install-deps: need root to apt-get install ${missing[*]}" >&2; exit 1; fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || echo "install-deps: apt-get update failed; trying the cached package lists" >&2
  apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    || { echo "install-deps: apt-get install of ${missing[*]} failed" >&2; exit 1; }
fi
