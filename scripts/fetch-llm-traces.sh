#!/usr/bin/env bash
# scripts/fetch-llm-traces.sh [DIR]
#
# Downloads the Azure LLM inference trace 2023 (conv and code; CC-BY 4.0,
# Azure/AzurePublicDataset, bench/results/traces/README.md) at the commit
# flowgate's figures used, into DIR (default bench/results/traces), and
# checks them against bench/results/traces/SHA256SUMS.  The files are in
# the tree already; this is how they were obtained, and how to check them.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${1:-$ROOT/bench/results/traces}
COMMIT=790921015d50dd6aae7f7e47f39ba0e235ad6b08
URL=https://raw.githubusercontent.com/Azure/AzurePublicDataset/$COMMIT/data
mkdir -p "$DIR"
for t in conv code; do
  f=AzureLLMInferenceTrace_$t.csv
  curl -fsSL --retry 3 -o "$DIR/$f.part" "$URL/$f"
  mv "$DIR/$f.part" "$DIR/$f"
done
[[ "$DIR" -ef "$ROOT/bench/results/traces" ]] || cp "$ROOT/bench/results/traces/SHA256SUMS" "$DIR/"
(cd "$DIR" && sha256sum -c SHA256SUMS)
