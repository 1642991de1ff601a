#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Removes what a flowgate test network run left (see netns-setup.sh): kills
# what still runs in its namespaces, deletes them, removes its files.
#
#   scripts/netns-teardown.sh PREFIX     this run's network and files
#   scripts/netns-teardown.sh --sweep    those of every run whose owner is gone
#
# A run (demo, e2e test) names everything after PREFIX = KIND + OWNER_PID
# (KIND: fgdemo, fge2e, fghc, fgh, fgw, fgm, fgecmp, fgba, fgrs, fgxdp, fgxm, fgxr; OWNER_PID: the demo's or test's
# own PID), so two runs never share a name and a run killed by SIGKILL
# (meson's timeout) is cleaned up by the next one's --sweep:
#   namespaces  PREFIX-sw, PREFIX-lb, PREFIX-c, PREFIX-bN, PREFIX-r,
#               PREFIX-nN (e2e-ecmp's router and nodes), PREFIX-a (e2e-blind-attack's
#               attacker) (or PREFIX alone)
#               with their veths and TAPs, and the processes inside them
#   run dir     /tmp/flowgate-PREFIX (logs, control socket, pid files)
#   DPDK        /var/run/dpdk/PREFIX (EAL runtime dir, sockets),
#               /dev/hugepages/PREFIXmap_* (hugepage files)
# --sweep leaves a prefix alone while its OWNER_PID runs (not a zombie).
# Safe to call twice.  Exit status 1, with a sentence, if something could
# not be removed.
set -u
KINDS='fgdemo|fge2e|fghc|fgh|fgw|fgm|fgecmp|fgba|fgrs|fgxdp|fgxm|fgxr'
rc=0

ns_of() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$1(-(sw|lb|c|r|a|b[0-9]+|n[0-9]+))?\$"; }

teardown() { # PREFIX
	local P=$1 ns pid nss killed=0
	nss=$(ns_of "$P")
	for ns in $nss; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do kill "$pid" 2>/dev/null && killed=1; done
	done
	[ $killed = 1 ] && sleep 0.5
	for ns in $nss; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
		ip netns del "$ns" 2>/dev/null
	done
	rm -rf "/tmp/flowgate-$P" "/var/run/dpdk/$P" "/var/run/dpdk/$P"-n[0-9]*
	rm -f /dev/hugepages/"$P"map_* 2>/dev/null
	nss=$(ns_of "$P")
	if [ -n "$nss" ]; then
		echo "netns-teardown: could not delete namespaces $(echo $nss)" >&2; rc=1
	fi
	if [ -e "/tmp/flowgate-$P" ] || [ -e "/var/run/dpdk/$P" ]; then
		echo "netns-teardown: could not remove /tmp/flowgate-$P or /var/run/dpdk/$P" >&2; rc=1
	fi
}

alive() { # PID: runs (a zombie, killed but not yet reaped, does not)
	local st
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$st" ] && [ "${st%% *}" != Z ]
}

if [ "${1:-}" = --sweep ]; then
	prefixes=$( {
		ip netns list 2>/dev/null | awk '{print $1}'
		ls /tmp /var/run/dpdk 2>/dev/null | sed 's/^flowgate-//'
		ls /dev/hugepages 2>/dev/null | sed 's/map_.*//'
	} | sed 's/-\(sw\|lb\|c\|r\|a\|b[0-9]*\|n[0-9]*\)$//' | grep -E "^($KINDS)[0-9]*\$" | sort -u)
	for P in $prefixes; do
		owner=${P##*[a-z]}
		if [ -n "$owner" ] && alive "$owner"; then continue; fi
		echo "netns-teardown: removing leftovers of $P (owner ${owner:-unknown} is gone)"
		teardown "$P"
	done
	exit $rc
fi
P=${1:?usage: netns-teardown.sh PREFIX | --sweep}
teardown "$P"
exit $rc
