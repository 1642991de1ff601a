#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# A/B of `flowgate-bench dataplane` on this machine: A and B alternate
# (A first in odd rounds, B first in even ones) so that drift hits both
# alike; one JSON line per run ("build": "A"|"B") to OUT.jsonl, then
# bench/tools/fg_ab.py prints the medians and B/A.  Run it on a quiet
# machine (nothing else building): the figures are ratios within a run.
#
#   A_BIN=old/flowgate-bench B_BIN=build/bench/flowgate-bench \
#   (a bench from before --order measures in creation order: give the newer
#   one B_ARGS="--order creation --no-l3fwd"; --order is dropped on
#   --new-flows runs) \
#   [A_ARGS=...] [B_ARGS=...] [ROUNDS=3] [MODES="dsr-ipip dsr-gue nat"] \
#   [KINDS="hits new-flows"] [FLOWS=1000000] [SECS=3] \
#   scripts/local-ab.sh OUT.jsonl
set -uo pipefail
cd "$(dirname "$0")/.."
OUTF=${1:?usage: local-ab.sh OUT.jsonl}
: "${A_BIN:?A_BIN: the A build's flowgate-bench}" "${B_BIN:?B_BIN: the B build's flowgate-bench}"
ROUNDS=${ROUNDS:-3}
run() { # LABEL BIN EXTRA ARGS...
	local v=$1 bin=$2 extra=$3; shift 3
	# a --new-flows run has no pcap, so no measured order
	[[ " $* " == *" --new-flows "* ]] && extra=$(sed -E 's/--order +[^ ]+//' <<<"$extra")
	# shellcheck disable=SC2086
	timeout 300 "$bin" dataplane "$@" $extra --no-testpmd --json 2>>"$OUTF.stderr" | tail -1 |
		sed "s|^{|{\"build\":\"$v\",\"args\":\"$* $extra\",|" | tee -a "$OUTF"
}
for r in $(seq "$ROUNDS"); do
	for mode in ${MODES:-dsr-ipip dsr-gue nat}; do
		for k in ${KINDS:-hits new-flows}; do
			args="--flows ${FLOWS:-1000000} --mode $mode --seconds ${SECS:-3}"
			[ "$k" = new-flows ] && args="$args --new-flows"
			if [ $((r % 2)) = 1 ]; then
				run A "$A_BIN" "${A_ARGS:-}" $args; run B "$B_BIN" "${B_ARGS:-}" $args
			else
				run B "$B_BIN" "${B_ARGS:-}" $args; run A "$A_BIN" "${A_ARGS:-}" $args
			fi
		done
	done
done
python3 bench/tools/fg_ab.py "$OUTF" --markdown
