#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A TCP segment of a NAT flow the balancer does not know (lost in a
restart, or on another node) gets an RST back (issue 34), through the
real daemon.

    test_nat_rst.py BUILD_DIR

Run 1, one flowgate on net_pcap with a NAT service per family:
  - a data segment with ACK (seq S, ack A) of an unknown flow -> one RST
    from VIP:80 to the client, seq A, flag RST (RFC 793 reset generation)
  - a FIN without ACK (seq S, 10 bytes) -> RST|ACK, seq 0, ack S + 11
  - IPv6: a data segment with ACK -> RST, seq A
  - an RST of an unknown flow -> nothing (never an RST for an RST)
  each counted as nat_not_syn; the RSTs as nat_rst_sent.  The expected
  frames are built by pktgen.py (own checksum code), byte for byte.
Run 2, --icmp-rate 1: 400 data segments of unknown flows; the RSTs that
  leave are at most the limiter's burst (10) + 1 a second the daemon ran
  (measured around it, an upper bound), and every segment is an RST or
  icmp_ratelimited.
"""
import os
import shutil
import struct
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgdaemon import Daemon  # noqa: E402
from pktgen import csum, eth, ip, ipv4, ipv6  # noqa: E402

LB, CL = "02:00:00:00:00:01", "02:00:00:00:00:aa"
SYN, FIN, RST, PSH, ACK = 0x02, 0x01, 0x04, 0x08, 0x10
FLAGS = [
    "--ct-capacity", "1024", "--mbufs", "2047",
    "--port-mac", f"0,{LB}", "--local", "10.0.0.1", "--local", "fd00::1",
    "--gateway", "10.0.0.254", "--neigh", f"10.0.0.254,{CL}",
    "--service", "10.100.0.3:80/tcp,mode=nat,name=nat4", "--backend", "10.1.0.1",
    "--service", "[fd00:100::3]:80/tcp,mode=nat,name=nat6", "--backend", "[fd00:1::1]",
]
BURST = 10    # FG_ICMP_BURST


def seg(src, dst, sport, dport, flags, payload=b"", seq=0, ack=0, win=8192):
    """a TCP segment with its checksum (pktgen's tcp() has a fixed window)"""
    h = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, win, 0, 0) + payload
    pseudo = src + dst + (struct.pack("!BBH", 0, 6, len(h)) if len(src) == 4
                          else struct.pack("!IxxxB", len(h), 6))
    return h[:16] + struct.pack("!H", csum(pseudo + h)) + h[18:]


def v4(s, d, l4, out=False):
    if out:   # the RST: TTL 64, id 0, no DF (fg_xlate_tcp_rst)
        return eth(CL, LB, 0x0800, ipv4(s, d, 6, l4, ident=0, df=False))
    return eth(LB, CL, 0x0800, ipv4(s, d, 6, l4))


def v6(s, d, l4, out=False):
    return eth(CL, LB, 0x86DD, ipv6(s, d, 6, l4)) if out else eth(LB, CL, 0x86DD,
                                                                   ipv6(s, d, 6, l4))


def run1(build, work, errs):
    c4, vip4 = ip("192.0.2.10"), ip("10.100.0.3")
    c6, vip6 = ip("2001:db8::10"), ip("fd00:100::3")
    data = b"d" * 100
    ins = [
        v4(c4, vip4, seg(c4, vip4, 40000, 80, PSH | ACK, data, seq=7000, ack=0x89abcdef)),
        v4(c4, vip4, seg(c4, vip4, 40001, 80, FIN, b"f" * 10, seq=0xfffffff8)),
        v6(c6, vip6, seg(c6, vip6, 40002, 80, PSH | ACK, data, seq=1, ack=123456)),
        v4(c4, vip4, seg(c4, vip4, 40003, 80, RST | ACK, seq=5, ack=6)),
    ]
    want = [
        ("v4 data", v4(vip4, c4, seg(vip4, c4, 80, 40000, RST, seq=0x89abcdef, win=0), True)),
        ("v4 FIN", v4(vip4, c4, seg(vip4, c4, 80, 40001, RST | ACK, seq=0,
                                    ack=(0xfffffff8 + 11) & 0xffffffff, win=0), True)),
        ("v6 data", v6(vip6, c6, seg(vip6, c6, 80, 40002, RST, seq=123456, win=0), True)),
    ]
    with Daemon(build, work, "rst", ins, FLAGS) as d:
        st = d.wait_rx(len(ins))
    got = d.output()
    for name, fr in want:
        if fr not in got:
            near = [g for g in got if len(g) == len(fr)]
            errs.append(f"{name}: no such RST out; want {fr.hex()}, got "
                        f"{[g.hex() for g in near]}")
    if len(got) != len(want):
        errs.append(f"{len(got)} frames out, want {len(want)} (no RST for an RST)")
    t = st["total"]
    by = t["drops_by_reason"]
    if by.get("nat_not_syn") != len(ins):
        errs.append(f"nat_not_syn {by.get('nat_not_syn')}, want {len(ins)}")
    if t.get("nat_rst_sent") != len(want):
        errs.append(f"nat_rst_sent {t.get('nat_rst_sent')}, want {len(want)}")


def run2(build, work, errs):
    n = 400
    c4, vip4 = ip("192.0.2.10"), ip("10.100.0.3")
    ins = [v4(c4, vip4, seg(c4, vip4, 20000 + i, 80, PSH | ACK, b"x", seq=i, ack=1))
           for i in range(n)]
    t0 = time.monotonic()
    with Daemon(build, work, "flood", ins, FLAGS + ["--icmp-rate", "1"]) as d:
        st = d.wait_rx(n)
    ran = time.monotonic() - t0
    got = d.output()
    t = st["total"]
    sent = t.get("nat_rst_sent", 0)
    bound = BURST + int(ran) + 1
    print(f"flood: {n} segments, {sent} RSTs, {len(got)} frames out, "
          f"{t.get('icmp_ratelimited')} rate-limited; the daemon ran {ran:.1f} s (bound {bound})")
    if len(got) != sent or sent == 0 or sent > bound:
        errs.append(f"flood: {sent} RSTs counted, {len(got)} out; want 1..{bound}")
    if sent + t.get("icmp_ratelimited", 0) != n:
        errs.append(f"flood: RSTs {sent} + icmp_ratelimited {t.get('icmp_ratelimited')} != {n}")
    if t["drops_by_reason"].get("nat_not_syn") != n:
        errs.append(f"flood: nat_not_syn {t['drops_by_reason'].get('nat_not_syn')}, want {n}")


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    build = os.path.abspath(sys.argv[1])
    errs = []
    work = tempfile.mkdtemp(prefix="flowgate-natrst.")
    try:
        run1(build, work, errs)
        run2(build, work, errs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for e in errs:
        print("FAIL:", e)
    print(f"RSTs for unknown NAT flows: {'FAIL' if errs else 'ok'}")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
