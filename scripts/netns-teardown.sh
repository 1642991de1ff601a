#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Removes every namespace of a flowgate test network (see netns-setup.sh)
# and kills what still runs in them.  Safe to call twice.
P=${1:?usage: netns-teardown.sh PREFIX}
for ns in $(ip netns list | awk '{print $1}' | grep -E "^$P-(sw|lb|c|b[0-9]+)$"); do
	for pid in $(ip netns pids "$ns" 2>/dev/null); do kill "$pid" 2>/dev/null; done
done
sleep 0.3
for ns in $(ip netns list | awk '{print $1}' | grep -E "^$P-(sw|lb|c|b[0-9]+)$"); do
	for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
	ip netns del "$ns" 2>/dev/null
done
exit 0
