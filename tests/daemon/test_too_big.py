#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Oversize packets get ICMP frag-needed / packet-too-big (issue 9, defect 3).

    test_too_big.py BUILD_DIR

One flowgate on net_pcap, port MTU 1500 (the clients' MTU), a GUE, an
IPIP and a NAT service, --icmp-rate 5 (bucket of FG_ICMP_BURST = 10).

  1. a 1500-byte client packet (DF) to the GUE VIP: 1528 encapsulated, so
     encap_too_big, and the client gets frag-needed with MTU 1472 from the
     VIP, quoting its packet (576 bytes in all)
  2. an IPv6 1500-byte packet to the IPIP6 VIP: packet-too-big 1460
  3. a 1500-byte packet without DF to the IPIP VIP: encap_too_big, no ICMP
  4. a NAT client's SYN (and 40 packets to an unknown VIP, dropped), then
     30 segments of 1540 bytes (DF): larger than
     the egress MTU, so mtu_exceeded, and frag-needed 1500 to the client,
     until the rate limit: 10 errors in all, the rest icmp_ratelimited

Expected frames are built here (pktgen.py, own checksums).  Every input is
accounted: rx = forwarded + drops, and tx = forwarded + icmp_too_big_sent.
Before the fix there was no ICMP at all and NAT sent the oversize
segments on (the port would drop them, silently).
"""
import os
import shutil
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgdaemon import Daemon  # noqa: E402
from pktgen import csum, eth, ip, ipv4, ipv6, tcp  # noqa: E402

LB, CL, NH = "02:00:00:00:00:01", "02:00:00:00:00:aa", "02:00:00:00:00:fe"
FLAGS = [
    "--ct-capacity", "1024", "--mbufs", "4095", "--mtu", "1500", "--icmp-rate", "5",
    "--port-mac", f"0,{LB}",
    "--local", "10.0.0.1", "--local", "fd00::1",
    "--gateway", "10.0.0.254", "--gateway", "fd00::fe",
    "--neigh", f"10.0.0.254,{NH}", "--neigh", f"fd00::fe,{NH}",
    "--service", "10.100.0.2:80/tcp,mode=dsr-gue,name=gue", "--backend", "10.1.0.1",
    "--service", "10.100.0.1:80/tcp,mode=dsr-ipip,name=ipip", "--backend", "10.1.0.1",
    "--service", "[fd00:100::1]:80/tcp,mode=dsr-ipip,name=ipip6", "--backend", "[fd00:1::1]",
    "--service", "10.100.0.3:80/tcp,mode=nat,name=nat", "--backend", "10.1.0.1",
]


def frag_needed(vip, client, orig_l3, mtu):
    q = orig_l3[:576 - 28]
    body = struct.pack("!BBHHH", 3, 4, 0, 0, mtu) + q
    body = body[:2] + struct.pack("!H", csum(body)) + body[4:]
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(body), 0, 0, 64, 1, 0, vip, client)
    hdr = hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:]
    return eth(CL, LB, 0x0800, hdr + body)


def ptb(vip, client, orig_l3, mtu):
    q = orig_l3[:1280 - 48]
    body = struct.pack("!BBHI", 2, 0, 0, mtu) + q
    ph = vip + client + struct.pack("!IxxxB", len(body), 58)
    body = body[:2] + struct.pack("!H", csum(ph + body)) + body[4:]
    return eth(CL, LB, 0x86DD, ipv6(vip, client, 58, body))


def main():
    build = os.path.abspath(sys.argv[1])
    c, c6 = ip("192.0.2.10"), ip("2001:db8::10")
    gue, ipip, nat, v6 = ip("10.100.0.2"), ip("10.100.0.1"), ip("10.100.0.3"), ip("fd00:100::1")
    frames, want = [], []
    l3 = ipv4(c, gue, 6, tcp(c, gue, 40000, 80, 0x18, b"g" * 1460))        # 1500
    frames.append(eth(LB, CL, 0x0800, l3))
    want.append(frag_needed(gue, c, l3, 1472))
    l3 = ipv6(c6, v6, 6, tcp(c6, v6, 40001, 80, 0x18, b"s" * 1440))        # 1500
    frames.append(eth(LB, CL, 0x86DD, l3))
    want.append(ptb(v6, c6, l3, 1460))
    l3 = ipv4(c, ipip, 6, tcp(c, ipip, 40002, 80, 0x18, b"n" * 1460), df=False)
    frames.append(eth(LB, CL, 0x0800, l3))                                 # no ICMP
    frames.append(eth(LB, CL, 0x0800, ipv4(c, nat, 6, tcp(c, nat, 40003, 80, 0x02))))
    # a worker takes a burst's IPv4 packets before its IPv6 ones: keep the
    # NAT segments out of this burst, or they take the IPv6 error's token
    n_fill = 40
    u = ip("10.100.0.99")
    frames += [eth(LB, CL, 0x0800, ipv4(c, u, 6, tcp(c, u, 1000 + i, 80, 0x02)))
               for i in range(n_fill)]
    n_big = 30
    for i in range(n_big):
        l3 = ipv4(c, nat, 6, tcp(c, nat, 40003, 80, 0x18, b"b" * 1500, seq=2000 + i))  # 1540
        frames.append(eth(LB, CL, 0x0800, l3))
        if i < 8:   # 10 tokens: 2 above, 8 here
            want.append(frag_needed(nat, c, l3, 1500))

    errs = []

    def expect(cond, what):
        if not cond:
            errs.append(what)
            print("FAIL:", what)

    work = tempfile.mkdtemp(prefix="flowgate-toobig.")
    try:
        d = Daemon(build, work, "tb", frames, FLAGS)
        with d:
            st = d.wait_rx(len(frames))
        out = d.output()
        icmp = [f for f in out if f[:6] == bytes.fromhex("0200000000aa")]
        other = [f for f in out if f[:6] != bytes.fromhex("0200000000aa")]
        for k, w in enumerate(want):
            expect(w in icmp, f"expected ICMP {k} ({len(w)} B) not sent")
        expect(len(icmp) == len(want), f"{len(icmp)} ICMP errors sent, expected {len(want)}")
        expect(len(other) == 1, f"{len(other)} frames forwarded, expected 1 (the NAT SYN)")
        t = st["total"]
        dr = t["drops_by_reason"]
        print("drops:", {k: v for k, v in dr.items() if v}, "icmp_too_big_sent",
              t.get("icmp_too_big_sent"), "icmp_ratelimited", t.get("icmp_ratelimited"))
        expect(dr.get("encap_too_big") == 3, f"encap_too_big {dr.get('encap_too_big')}, expected 3")
        expect(dr.get("mtu_exceeded") == n_big, f"mtu_exceeded {dr.get('mtu_exceeded')}")
        expect(dr.get("unknown_vip") == n_fill, f"unknown_vip {dr.get('unknown_vip')}")
        expect(t.get("icmp_too_big_sent") == len(want), f"icmp_too_big_sent {t.get('icmp_too_big_sent')}")
        expect(t.get("icmp_ratelimited") == n_big - 8, f"icmp_ratelimited {t.get('icmp_ratelimited')}")
        expect(t["rx_packets"] == len(frames), "rx_packets")
        expect(t["rx_packets"] == t["tx_packets"] - t.get("icmp_too_big_sent", 0) + t["drops"],
               f"accounting: rx {t['rx_packets']} != tx {t['tx_packets']} - generated "
               f"{t.get('icmp_too_big_sent')} + drops {t['drops']}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"ICMP too big: {'FAIL' if errs else 'ok'} ({len(frames)} packets, {len(errs)} failures)")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
