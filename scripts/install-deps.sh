#!/usr/bin/env bash
# Installs the Debian 12 packages flowgate needs, only those missing.
set -euo pipefail
PKGS=(build-essential pkg-config meson ninja-build clang libclang-rt-14-dev
      libdpdk-dev dpdk dpdk-dev libbpf-dev libelf-dev zlib1g-dev libcmocka-dev
      libpcap-dev libnuma-dev libsystemd-dev iproute2 iputils-ping procps
      python3 python3-matplotlib curl prometheus)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then echo "install-deps: need root to apt-get install" >&2; exit 1; fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || true
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
