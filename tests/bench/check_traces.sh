#!/bin/sh
# check_traces.sh SOURCE_ROOT FLOWGATE_BENCH
# The committed Azure LLM inference traces (bench/results/traces): their
# checksums hold, the fuzz seed excerpt is the conv trace's head,
# `flowgate-bench inference --trace` reads every row of both, and refuses
# a copy with one row broken, naming that row's line.
set -eu
root=$1 fgb=$2
dir=$root/bench/results/traces
(cd "$dir" && sha256sum -c --quiet SHA256SUMS)
head -n 40 "$dir/AzureLLMInferenceTrace_conv.csv" |
  cmp - "$root/tests/bench/trace_seeds/azure_conv_head.csv"
for t in conv:19366 code:8819; do
  f=$dir/AzureLLMInferenceTrace_${t%%:*}.csv
  "$fgb" inference --trace "$f" --scheduler maglev-load --runs 1 | grep -q "(${t##*:} requests)" ||
    { echo "check_traces: $f: not ${t##*:} requests" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed '1000s/,[0-9]*\(\r*\)$/,12x\1/' "$dir/AzureLLMInferenceTrace_conv.csv" > "$tmp/bad.csv"
if "$fgb" inference --trace "$tmp/bad.csv" --runs 1 2> "$tmp/err"; then
  echo "check_traces: a broken row was accepted" >&2; exit 1
fi
grep -q "bad.csv:1000: GeneratedTokens '12x'" "$tmp/err" ||
  { echo "check_traces: wanted line 1000 refused, got:" >&2; cat "$tmp/err" >&2; exit 1; }
echo "traces: checksums, excerpt, 19366 + 8819 rows read, a broken row refused at its line"
