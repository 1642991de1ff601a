#!/bin/sh
# The README's configuration example must stay valid: extract the fenced
# block after "A complete example" and run `fgctl config check` on it.
set -eu
readme=$1 fgctl=$2
tmp=$(mktemp /tmp/fg-readme-conf.XXXXXX)
trap 'rm -f "$tmp"' EXIT
awk '/A complete example/ {f=1} f && /^```/ {n++; next} f && n==1 {print} n==2 {exit}' "$readme" > "$tmp"
[ -s "$tmp" ] || { echo "readme_config: no example found in $readme" >&2; exit 1; }
"$fgctl" config check "$tmp"
