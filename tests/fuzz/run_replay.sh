#!/bin/sh
# run_replay.sh REPLAY FIXTURE_TOOL WORKDIR: replays the fixture corpus
# (and every prefix of each input) through the fuzz target's code.
set -eu
replay=$1; fixtool=$2; work=$3
rm -rf "$work"
mkdir -p "$work"
"$fixtool" "$work/pcap" --corpus "$work/seed" >/dev/null
exec "$replay" "$work"/seed/*
