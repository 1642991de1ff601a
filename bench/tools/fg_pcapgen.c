/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fg-pcapgen: write a scenario's packets to a pcap, for replay by
 * net_pcap (rx_pcap=FILE,infinite_rx=1), Pktgen-DPDK (-s P:FILE) or
 * tcpreplay.  Packet i is fg_scen_packet(scenario, i); see fg_scen.h.
 *
 *   fg-pcapgen bench/scenarios/steady-1m.scn -o /tmp/steady-1m.pcap
 *   fg-pcapgen SCN -o FILE [--packets N] [--set key=value]... [--quiet]
 *   fg-pcapgen SCN -o FILE --split Q   (Q files FILE.q0.pcap ... by connection,
 *                                       one per generator queue: Pktgen -s P:F0,F1,..)
 *   fg-pcapgen SCN --show        (print the parsed scenario as JSON)
 */
#include <getopt.h>
#include <time.h>

#include "fg_scen.h"

struct pcap_file_hdr {
	uint32_t magic;
	uint16_t major, minor;
	int32_t thiszone;
	uint32_t sigfigs, snaplen, linktype;
};

struct pcap_rec_hdr {
	uint32_t sec, usec, caplen, len;
};

static void usage(FILE *o)
{
	fprintf(o,
		"usage: fg-pcapgen SCENARIO.scn (-o OUT.pcap | --show)\n"
		"                  [--packets N] [--set key=value]... [--split Q] [--quiet]\n"
		"  -o FILE        write the pcap (timestamps 1 us apart)\n"
		"  --packets N    number of packets (default: scenario's pcap_packets,\n"
		"                 else flows x flow_packets plus flood share)\n"
		"  --set k=v      override a scenario key (repeatable)\n"
		"  --split Q      write Q files OUT.q0.pcap .. OUT.q<Q-1>.pcap (OUT without\n"
		"                 .pcap), packet to file (connection %% Q): one per generator\n"
		"                 queue, every packet of a connection in one, in order\n"
		"  --show         print the parsed scenario as JSON and exit\n");
}

static void show(const struct fg_scen *s)
{
	char v4[INET_ADDRSTRLEN], v6[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET, &s->vip4, v4, sizeof(v4));
	inet_ntop(AF_INET6, s->vip6, v6, sizeof(v6));
	printf("{\"name\":\"%s\",\"mode\":\"%s\",\"vip4\":\"%s\",\"vip6\":\"%s\","
	       "\"vport\":%u,\"proto\":%u,\"pkt_size\":%u,\"imix_avg\":%.1f,"
	       "\"flows\":%" PRIu64 ",\"flow_packets\":%u,\"syn_flood_share\":%.6f,"
	       "\"ipv6_share\":%.6f,\"duration_s\":%.3f,\"rate_pct\":%.3f,"
	       "\"pcap_packets\":%" PRIu64 "}\n",
	       s->name, s->mode, v4, v6, s->vport, s->proto, s->pkt_size,
	       s->imix_seq_n ? ({
		       double a = 0;
		       for (uint32_t k = 0; k < s->imix_seq_n; k++)
			       a += s->imix_seq[k];
		       a / s->imix_seq_n;
	       }) : (double)s->pkt_size,
	       s->flows, s->flow_packets, s->flood_ppm / 1e6, s->v6_ppm / 1e6,
	       s->duration_s, s->rate_pct, fg_scen_pcap_packets(s));
}

#define FG_PCAPGEN_MAX_SPLIT 64

/* Opens the nq output files (nq = 1: OUT itself; else OUT.q<k>.pcap with a
 * trailing ".pcap" of OUT dropped) and writes their pcap headers. */
static int open_outs(const char *out, unsigned int nq, FILE **fs, char names[][4096])
{
	size_t n = strlen(out);

	if (n > 5 && !strcmp(out + n - 5, ".pcap"))
		n -= 5;
	for (unsigned int q = 0; q < nq; q++) {
		struct pcap_file_hdr h = {0xa1b2c3d4, 2, 4, 0, 0, 65535, 1};

		if (nq == 1)
			snprintf(names[q], 4096, "%s", out);
		else
			snprintf(names[q], 4096, "%.*s.q%u.pcap", (int)n, out, q);
		fs[q] = fopen(names[q], "wb");
		if (fs[q] == NULL || fwrite(&h, sizeof(h), 1, fs[q]) != 1) {
			fprintf(stderr, "fg-pcapgen: %s: %s\n", names[q], strerror(errno));
			while (fs[q] == NULL && q > 0)
				q--;
			for (unsigned int k = 0; k <= q; k++)
				if (fs[k] != NULL)
					fclose(fs[k]);
			return -1;
		}
		setvbuf(fs[q], NULL, _IOFBF, 1 << 22);
	}
	return 0;
}

/* Writes packets 0..npkts-1 of the scenario; packet i to file
 * (its connection % nq), so a connection's packets stay in one file, in
 * order. */
static int write_pcaps(const struct fg_scen *s, const char *out, uint64_t npkts,
		       unsigned int nq, bool quiet)
{
	static uint8_t frame[FG_SCEN_FRAME_MAX];
	static char names[FG_PCAPGEN_MAX_SPLIT][4096];
	FILE *fs[FG_PCAPGEN_MAX_SPLIT] = {0};
	uint64_t bytes = 0, nv6 = 0, nflood = 0, nsyn = 0;
	struct timespec t0, t1;
	int rc = 0;

	if (open_outs(out, nq, fs, names) < 0)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t i = 0; i < npkts && rc == 0; i++) {
		struct fg_scen_pkt_info info;
		struct pcap_rec_hdr r;
		int len = fg_scen_packet(s, i, frame, sizeof(frame), &info);
		FILE *f;

		if (len < 0) {
			fprintf(stderr, "fg-pcapgen: packet %" PRIu64 ": %s\n", i, strerror(-len));
			rc = -1;
			break;
		}
		f = fs[info.conn % nq];
		r.sec = (uint32_t)(i / 1000000);
		r.usec = (uint32_t)(i % 1000000);
		r.caplen = r.len = (uint32_t)len;
		if (fwrite(&r, sizeof(r), 1, f) != 1 || fwrite(frame, (size_t)len, 1, f) != 1) {
			fprintf(stderr, "fg-pcapgen: %s: write failed: %s\n",
				names[info.conn % nq], strerror(errno));
			rc = -1;
		}
		bytes += (uint64_t)len;
		nv6 += info.v6;
		nflood += info.flood;
		nsyn += !!(info.tcp_flags & FG_TCP_SYN);
		if (!quiet && (i & 0xfffff) == 0xfffff)
			fprintf(stderr, "\rfg-pcapgen: %" PRIu64 "/%" PRIu64 " packets", i + 1, npkts);
	}
	for (unsigned int q = 0; q < nq; q++) {
		if (fclose(fs[q]) != 0 && rc == 0) {
			fprintf(stderr, "fg-pcapgen: %s: %s\n", names[q], strerror(errno));
			rc = -1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (rc == 0 && !quiet)
		fprintf(stderr, "%sfg-pcapgen: %s%s: %" PRIu64 " packets (%" PRIu64
			" IPv6, %" PRIu64 " spoofed SYN, %" PRIu64 " SYN), %" PRIu64
			" frame bytes, %.2f s\n", npkts >= 0x100000 ? "\n" : "", out,
			nq > 1 ? " (split)" : "", npkts, nv6, nflood, nsyn, bytes,
			(double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"out", required_argument, NULL, 'o'},
		{"packets", required_argument, NULL, 'n'},
		{"set", required_argument, NULL, 's'},
		{"show", no_argument, NULL, 'S'},
		{"quiet", no_argument, NULL, 'q'},
		{"split", required_argument, NULL, 'Q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct fg_scen s;
	char err[256];
	const char *out = NULL, *path;
	uint64_t npkts = 0, nq64 = 1;
	unsigned int nq = 1;
	bool do_show = false, quiet = false;
	char *sets[64];
	int nsets = 0, c;

	while ((c = getopt_long(argc, argv, "o:n:s:SqQ:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'n':
			if (fg_scen__u64(optarg, 1, 1ull << 32, &npkts) < 0) {
				fprintf(stderr, "fg-pcapgen: bad --packets '%s'\n", optarg);
				return 2;
			}
			break;
		case 's':
			if (nsets == 64 || strchr(optarg, '=') == NULL) {
				fprintf(stderr, "fg-pcapgen: bad --set '%s' (key=value)\n", optarg);
				return 2;
			}
			sets[nsets++] = optarg;
			break;
		case 'Q':
			if (fg_scen__u64(optarg, 1, FG_PCAPGEN_MAX_SPLIT, &nq64) < 0) {
				fprintf(stderr, "fg-pcapgen: bad --split '%s' (1..%d)\n",
					optarg, FG_PCAPGEN_MAX_SPLIT);
				return 2;
			}
			nq = (unsigned int)nq64;
			break;
		case 'S': do_show = true; break;
		case 'q': quiet = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1 || (out == NULL && !do_show)) {
		usage(stderr);
		return 2;
	}
	path = argv[optind];
	if (fg_scen_load(path, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "fg-pcapgen: %s\n", err);
		return 1;
	}
	for (int k = 0; k < nsets; k++) {
		char *eq = strchr(sets[k], '=');

		*eq = '\0';
		if (fg_scen_set(&s, sets[k], eq + 1, err, sizeof(err)) < 0) {
			fprintf(stderr, "fg-pcapgen: --set: %s\n", err);
			return 1;
		}
		*eq = '=';
	}
	if (fg_scen_finish(&s, err, sizeof(err)) < 0) {
		fprintf(stderr, "fg-pcapgen: %s\n", err);
		return 1;
	}
	if (do_show) {
		show(&s);
		return 0;
	}
	if (npkts == 0)
		npkts = fg_scen_pcap_packets(&s);
	return write_pcaps(&s, out, npkts, nq, quiet) < 0 ? 1 : 0;
}
