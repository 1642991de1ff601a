// SPDX-License-Identifier: BSD-3-Clause
/*
 * e2e-ecmp: TC ingress program on the router's client-facing veth that
 * forgets the packet's hash.  Across a veth the skb keeps the hash the
 * client's TCP socket gave it (sk_txhash: random, and drawn again at every
 * retransmission timeout), and Linux's multipath with
 * fib_multipath_hash_policy=1 uses an L4 hash already present instead of
 * hashing the 5-tuple.  A real router receives the packet from a wire and
 * hashes the 5-tuple; so does this one once the hash is gone.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

SEC("tc")
int fg_nohash(struct __sk_buff *skb)
{
	bpf_set_hash_invalid(skb);
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
