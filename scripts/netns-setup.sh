#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds the flowgate test network (demo and e2e): one L2 segment (a bridge
# in its own namespace) joining a client, the balancer's port and three
# backend "GPU workers".
#
#   scripts/netns-setup.sh PREFIX FG_DECAP
#
# FG_DECAP: the fg-decap binary (build/xdp/fg-decap), used when the kernel
# has no ipip/ip6tnl/fou
#
#   PREFIX-c   client     eth0 10.99.0.2/24 fd99::2/64 (MTU 1400), VIPs on-link
#   PREFIX-lb  balancer   lb0: no addresses, IPv6 off: only flowgate answers
#                         (flowgate's addresses: 10.99.0.1, fd99::1);
#                         hc0 10.99.0.254/24 fd99::254/64: the host's kernel
#                         side, source of the health checks
#   PREFIX-bN  backends   eth0 10.99.0.1N/24 fd99::1N/64, DSR VIPs on lo,
#                         arp_ignore=1/arp_announce=2, rp_filter off,
#                         DSR decapsulation (kernel ipip/ip6tnl/fou when the
#                         kernel has them, else `fg-decap attach eth0 --vip ...`)
#   PREFIX-sw  bridge br0
#
# VIPs: 10.99.100.1 (DSR IPIP), 10.99.100.2 (NAT), 10.99.100.3 (DSR GUE),
#       fd99:100::1 (DSR IP6IP6), fd99:100::2 (NAT v6).  All port 80/tcp.
# MACs are fixed (02:00:00:99:00:XX) so flowgate can get static neighbours.
#
# Exits non-zero with a sentence naming the step when one fails (the
# caller tears down with netns-teardown.sh PREFIX).  Offloads are read back
# after `ethtool -K`: a veth that keeps TX checksum offload hands flowgate
# packets with partial checksums, which the backends drop.
set -eEuo pipefail
P=${1:?usage: netns-setup.sh PREFIX FG_DECAP}
DECAP=${2:?usage: netns-setup.sh PREFIX FG_DECAP}
NB=3
trap 'echo "netns-setup: FAIL: \`$BASH_COMMAND\` exited $? (line $LINENO); the network $P is incomplete" >&2' ERR
fail() { trap - ERR; echo "netns-setup: FAIL: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "needs root (network namespaces)"
for t in ip ethtool sysctl; do
	command -v $t >/dev/null || fail "$t is not installed (scripts/install-deps.sh installs it)"
done

nse() { ip netns exec "$1" "${@:2}"; }
OFFLOADS="rx-checksumming tx-checksumming tcp-segmentation-offload generic-segmentation-offload generic-receive-offload"
nooffload() { # ns dev: checksum and segmentation offloads off, read back
	local out feats f rc=0
	# a device may refuse some feature changes (rc != 0) yet end with all
	# of them off: the read-back below decides, and names rc when it fails
	out=$(nse "$1" ethtool -K "$2" rx off tx off tso off gso off gro off 2>&1) || rc=$?
	feats=$(nse "$1" ethtool -k "$2" 2>&1) || fail "ethtool -k $2 in $1: $feats"
	for f in $OFFLOADS; do
		grep -q "^$f: off" <<< "$feats" \
			|| fail "$f still on for $2 in $1 after \`ethtool -K $2 rx off tx off tso off gso off gro off\` (exit $rc: $out): clients would send partial checksums"
	done
}

ip netns add "$P-sw"
ip -n "$P-sw" link add br0 type bridge
ip -n "$P-sw" link set br0 up
ip -n "$P-sw" link set lo up

attach() { # ns ifname mac swport
	ip netns add "$1"
	ip link add "$4" netns "$P-sw" type veth peer name "$2" netns "$1"
	ip -n "$1" link set "$2" address "$3"
	ip -n "$1" link set lo up
	ip -n "$1" link set "$2" up
	ip -n "$P-sw" link set "$4" master br0 up
	nooffload "$1" "$2"
	nooffload "$P-sw" "$4"
}

# balancer: flowgate owns lb0 through net_af_packet
attach "$P-lb" lb0 02:00:00:99:00:01 sw-lb
nse "$P-lb" sysctl -qw net.ipv6.conf.lb0.disable_ipv6=1
nse "$P-lb" sysctl -qw net.ipv4.conf.lb0.arp_ignore=8
# the balancer host's own kernel side: hc0 10.99.0.254 fd99::254, from
# which the daemon's health checker (kernel TCP, in this namespace) probes
# the backends' own addresses; lb0 stays flowgate's alone
ip link add sw-hc netns "$P-sw" type veth peer name hc0 netns "$P-lb"
ip -n "$P-lb" link set hc0 address 02:00:00:99:00:fe
nse "$P-lb" sysctl -qw net.ipv6.conf.hc0.accept_dad=0
ip -n "$P-lb" link set hc0 up
ip -n "$P-sw" link set sw-hc master br0 up
nooffload "$P-lb" hc0
nooffload "$P-sw" sw-hc
ip -n "$P-lb" addr add 10.99.0.254/24 dev hc0
ip -n "$P-lb" addr add fd99::254/64 dev hc0 nodad

# client
attach "$P-c" eth0 02:00:00:99:00:02 sw-c
ip -n "$P-c" link set eth0 mtu 1400
nse "$P-c" sysctl -qw net.ipv6.conf.eth0.accept_dad=0
ip -n "$P-c" addr add 10.99.0.2/24 dev eth0
ip -n "$P-c" addr add fd99::2/64 dev eth0 nodad
ip -n "$P-c" route add 10.99.100.0/24 dev eth0
ip -n "$P-c" -6 route add fd99:100::/64 dev eth0
nse "$P-c" sysctl -qw net.ipv4.ip_local_port_range="10000 60999"

# kernel decapsulation needs ipip, ip6tnl and fou (GUE); probe all three in
# the client namespace, else every backend decapsulates with TC BPF
kernel_tunnels=0
if ip -n "$P-c" link add fgprobe type ipip 2>/dev/null; then
	ip -n "$P-c" link del fgprobe
	if ip -n "$P-c" link add fgprobe6 type ip6tnl 2>/dev/null; then
		ip -n "$P-c" link del fgprobe6
		if ip -n "$P-c" fou add port 6080 gue 2>/dev/null; then
			ip -n "$P-c" fou del port 6080
			kernel_tunnels=1
		fi
	fi
fi
if [ $kernel_tunnels = 0 ]; then
	[ -x "$DECAP" ] || fail "no kernel ipip/ip6tnl/fou here and no fg-decap binary at $DECAP (ninja -C build xdp/fg-decap)"
fi

for i in $(seq 1 $NB); do
	ns="$P-b$i"
	attach "$ns" eth0 "02:00:00:99:00:1$i" "sw-b$i"
	nse "$ns" sysctl -qw net.ipv6.conf.eth0.accept_dad=0
	ip -n "$ns" addr add "10.99.0.1$i/24" dev eth0
	ip -n "$ns" addr add "fd99::1$i/64" dev eth0 nodad
	for v in 10.99.100.1 10.99.100.3; do ip -n "$ns" addr add "$v/32" dev lo; done
	ip -n "$ns" addr add fd99:100::1/128 dev lo
	kv=()
	for k in all default eth0 lo; do
		kv+=("net.ipv4.conf.$k.rp_filter=0" "net.ipv4.conf.$k.arp_ignore=1" "net.ipv4.conf.$k.arp_announce=2")
	done
	nse "$ns" sysctl -qw "${kv[@]}"
	if [ "$kernel_tunnels" = 1 ]; then
		ip -n "$ns" link set tunl0 up 2>/dev/null || ip -n "$ns" link add tunl0 type ipip
		ip -n "$ns" link set tunl0 up
		nse "$ns" sysctl -qw net.ipv4.conf.tunl0.rp_filter=0
		ip -n "$ns" link set ip6tnl0 up 2>/dev/null || ip -n "$ns" link add ip6tnl0 type ip6tnl mode ip6ip6
		ip -n "$ns" link set ip6tnl0 up
		ip -n "$ns" fou add port 6080 gue
	else
		nse "$ns" "$DECAP" attach eth0 --vip 10.99.100.1 --vip 10.99.100.3 \
			--vip fd99:100::1 --gue-port 6080 >/dev/null
	fi
done
echo "netns-setup: $P ready (decap: $([ $kernel_tunnels = 1 ] && echo kernel tunnels || echo fg-decap))"
