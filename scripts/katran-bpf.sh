#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds Katran's XDP balancer object (katran/lib/bpf/balancer.bpf.c) from
# a user-supplied checkout of facebookincubator/katran, for
# `flowgate-bench xdp --katran-obj`.  Works in a temp dir: nothing of
# Katran enters this tree.
#
#   scripts/katran-bpf.sh KATRAN_CHECKOUT OUT.o
set -euo pipefail
SRC=${1:?usage: katran-bpf.sh KATRAN_CHECKOUT OUT.o}
OUT=${2:?usage: katran-bpf.sh KATRAN_CHECKOUT OUT.o}
[ -f "$SRC/katran/lib/bpf/balancer.bpf.c" ] || { echo "katran-bpf: $SRC has no katran/lib/bpf/balancer.bpf.c (a facebookincubator/katran checkout?)" >&2; exit 1; }
command -v clang >/dev/null || { echo "katran-bpf: clang is not installed (scripts/install-deps.sh)" >&2; exit 1; }
T=$(mktemp -d /tmp/katran-bpf.XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/stubs/gnu"
: > "$T/stubs/gnu/stubs-32.h"   # glibc's stubs.h asks for it under -target bpf
arch_inc=/usr/include/$(uname -m)-linux-gnu
clang -O2 -g -target bpf -I"$SRC" -I"$T/stubs" -I"$arch_inc" -D__KERNEL__ -D__BPF_TRACING__ \
	-Wno-unused-value -Wno-pointer-sign -Wno-compare-distinct-pointer-types \
	-c "$SRC/katran/lib/bpf/balancer.bpf.c" -o "$T/balancer.bpf.o" \
	|| { echo "katran-bpf: clang could not build $SRC/katran/lib/bpf/balancer.bpf.c" >&2; exit 1; }
cp "$T/balancer.bpf.o" "$OUT"
echo "katran-bpf: $OUT (from $SRC, $(git -C "$SRC" log -1 --format=%h 2>/dev/null || echo 'not a git checkout'))" >&2
