/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The daemon's own per-worker counters (fg_worker::dc), next to pkt/'s
 * fg_counters.h (which the XDP twin shares): declared once, named once
 * (fg_worker_setup.c), read by fg_stats.c, fg_metrics.c and fgctl.
 */
#ifndef FLOWGATE_FG_DP_COUNTERS_H
#define FLOWGATE_FG_DP_COUNTERS_H

/** Daemon-only counters that are not (yet) in fg_counters.h. */
#define FG_DP_COUNTER_LIST(X) \
	X(backend_gone_fwd,  "packets of flows whose backend left the config, sent to its last address") \
	X(backend_gone_drop, "packets of flows whose backend left the config, dropped (on_fail=reset)") \
	X(service_gone,      "packets of flows whose service left the config, dropped") \
	X(nat_rst_sent,      "NAT: RSTs sent for TCP segments of flows the balancer does not know (the segment counts as nat_not_syn; --icmp-rate limits them)") \
	X(tombstone_evicted, "packets of flows whose removed backend the table no longer holds (more than FG_TOMBSTONE_MAX removed backends with flows), dropped as no_backend") \
	X(arp_requests,      "ARP requests / neighbour solicitations sent for unknown next hops") \
	X(neigh_learned,     "neighbour entries learned from ARP / NDP") \
	X(neigh_learn_full,  "learned neighbour not posted: learn ring full") \
	X(neigh_table_full,  "neighbour not learned: the table holds FG_NEIGH_MAX entries") \
	X(neigh_unsolicited, "ARP replies / neighbour advertisements for addresses nobody solicited (not learned)") \
	X(neigh_locked,      "ARP replies / neighbour advertisements with another MAC for an address answered less than FG_NEIGH_LOCKTIME_MS ago (not learned)") \
	X(arp_ratelimited,   "ARP requests / neighbour solicitations for unknown addresses not sent: the port's FG_SOLICIT_RATE was spent") \
	X(tx_flushes,        "TX buffer flushes by the 100 us timer") \
	X(watch_dropped,     "flows watch events dropped: event ring full (watcher too slow)") \
	X(host_to_wire,      "--host-tap: packets from the host kernel's TAP sent out of their port") \
	X(host_ring_full,    "--host-tap: packets for the host dropped, ring to the main lcore full") \
	X(ct_hit_relookup,   "hits looked up again: an insert earlier in the burst evicted or deleted an entry (the hit may have lost its slot)") \
	X(frag_follow,       "first fragments that (re)armed a fragment-follow entry for their flow's later fragments") \
	X(frag_follow_fail,  "first fragments whose fragment-follow entry could not be inserted (table full / flood; or their IP ID unreadable: never expected)") \
	X(second_chance,     "--second-chance: packets of picked-up flows sent with the previous Maglev owner as a GUE hint") \
	X(idle_sleeps,       "--idle-sleep: empty polls after which the worker slept") \
	X(gpu_packets,       "--gpu: packets parsed and hashed by the GPU batch path") \
	X(gpu_fallback,      "--gpu: packets the CPU parsed instead (multi-segment, GPU error or GPU path stopped)") \
	X(gpu_stale,         "--gpu: new flows whose GPU Maglev answer predates the service table (recomputed on the CPU)") \
	X(gpu_table_uploads, "--gpu: service / Maglev tables uploaded to the GPU after a config change") \
	X(gpu_errors,        "--gpu: GPU bursts that failed (the burst ran on the CPU)")

enum fg_dp_counter {
#define FG_X(n, d) FG_DC_##n,
	FG_DP_COUNTER_LIST(FG_X)
#undef FG_X
	FG_DC_MAX
};
extern const char *const fg_dp_counter_names[FG_DC_MAX];

#endif /* FLOWGATE_FG_DP_COUNTERS_H */
