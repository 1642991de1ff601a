// SPDX-License-Identifier: BSD-3-Clause
/* Passes every packet (e2e-xdp-mode): on a veth's peer, native XDP on the
 * veth can transmit (XDP_TX reaches the peer's XDP receive queue). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	(void)ctx;
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
