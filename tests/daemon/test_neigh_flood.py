#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Spoofed ARP against the neighbour table (issue 9, defect 4).

    test_neigh_flood.py BUILD_DIR

One flowgate on net_pcap, one worker, a NAT service whose backend is a
static neighbour and on-link clients (no gateway: a client's MAC must be
resolved).  One pcap, in order:

  1. 5,000 ARP requests for our local address from 5,000 spoofed senders
     (answered, never learned), plus ARP replies nobody asked for
  2. a new NAT client's SYN, and the backend's SYN-ACK to it: the client's
     MAC is unknown, so the balancer asks (ARP request) and drops it
     (no_neighbor)
  3. the client's ARP reply to that request (64 packets later)
  4. 60 rounds of 500 more spoofed requests + a SYN-ACK retransmit: once
     the main lcore has published the learned entry (a few ms: a few
     rounds), every retransmit reaches the client

Before the fix the spoofed requests filled the table (4,096 entries, never
aged), the client was never learned and every SYN-ACK was dropped
(no_neighbor), with neigh_learn_full 0.
"""
import os
import shutil
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgdaemon import Daemon  # noqa: E402
from pktgen import eth, ip, ipv4, mac, tcp  # noqa: E402

LB, NH = "02:00:00:00:00:01", "02:00:00:00:00:fe"
BE_MAC, CL_MAC = "02:00:00:00:00:b1", "02:00:00:00:05:05"
LOCAL, VIP, BE, CLIENT = "10.0.0.1", "10.100.0.3", "10.1.0.1", "10.0.5.5"
SYN, ACK = 0x02, 0x10
FLAGS = [
    "--ct-capacity", "1024", "--mbufs", "16383",
    "--port-mac", f"0,{LB}",
    "--local", LOCAL,
    "--neigh", f"{BE},{BE_MAC}",
    "--service", f"{VIP}:80/tcp,mode=nat,name=nat", "--backend", BE,
]


def arp(op, smac, sip, tmac, tip, dst=None):
    body = struct.pack("!HHBBH", 1, 0x0800, 6, 4, op) + mac(smac) + ip(sip) + \
        mac(tmac) + ip(tip)
    return eth(dst or ("ff:ff:ff:ff:ff:ff" if op == 1 else LB), smac, 0x0806, body)


def spoofed_requests(first, n):
    out = []
    for i in range(first, first + n):
        out.append(arp(1, f"02:66:00:{i >> 16 & 255:02x}:{i >> 8 & 255:02x}:{i & 255:02x}",
                       f"10.9.{i >> 8 & 255}.{i & 255}" if i < 65536 else
                       f"10.8.{i >> 8 & 255}.{i & 255}", "00:00:00:00:00:00", LOCAL))
    return out


def main():
    build = os.path.abspath(sys.argv[1])
    frames = spoofed_requests(0, 5000)
    # unsolicited replies: not learned either
    frames += [arp(2, "02:77:00:00:00:%02x" % i, f"10.0.7.{i}", LB, LOCAL) for i in range(1, 51)]
    c, v, b, l = ip(CLIENT), ip(VIP), ip(BE), ip(LOCAL)
    frames.append(eth(LB, CL_MAC, 0x0800, ipv4(c, v, 6, tcp(c, v, 40000, 80, SYN, seq=7))))
    # NAT port 1024: one worker hands NAT ports out from 1024
    synack = [eth(LB, BE_MAC, 0x0800, ipv4(b, l, 6, tcp(b, l, 80, 1024, SYN | ACK,
                                                        seq=9000 + r, ack=8)))
              for r in range(61)]
    frames.append(synack[0])
    # the reply comes a round trip later: in a later RX burst (a worker
    # handles a burst's ARP before its flows)
    frames += spoofed_requests(70000, 64)
    frames.append(arp(2, CL_MAC, CLIENT, LB, LOCAL))
    rounds = 60
    for r in range(rounds):
        frames += spoofed_requests(5000 + r * 500, 500)
        frames.append(synack[r + 1])

    errs = []

    def expect(cond, what):
        if not cond:
            errs.append(what)
            print("FAIL:", what)

    work = tempfile.mkdtemp(prefix="flowgate-neigh.")
    try:
        d = Daemon(build, work, "nf", frames, FLAGS)
        with d:
            st = d.wait_rx(len(frames))
        out = d.output()
        asked = [f for f in out if f[12:14] == b"\x08\x06" and f[21] == 1
                 and f[38:42] == c]
        expect(asked, "no ARP request for the client")
        got = []   # SYN-ACK rounds that reached the client
        for f in out:
            if f[:6] == mac(CL_MAC) and f[12:14] == b"\x08\x00" and f[23] == 6 \
                    and f[30:34] == c:
                got.append(struct.unpack("!I", f[38:42])[0] - 9000)
        print(f"SYN-ACK rounds that reached the client: {got}")
        expect(got and got[0] <= rounds - 10,
               f"the client was not learned within {rounds - 10} rounds: {got}")
        if got:
            expect(got == list(range(got[0], rounds + 1)),
                   f"SYN-ACKs after the first lost: {got}")
        t = st["total"]
        print("neigh_learned", t.get("neigh_learned"), "neigh_unsolicited",
              t.get("neigh_unsolicited"), "neigh_table_full", t.get("neigh_table_full"),
              "no_neighbor", t["drops_by_reason"].get("no_neighbor"))
        expect(t.get("neigh_learned", 99) <= 2,
               f"neigh_learned {t.get('neigh_learned')}: spoofed senders were learned")
        expect(t.get("neigh_unsolicited", 0) >= 50,
               f"neigh_unsolicited {t.get('neigh_unsolicited')}, expected >= 50")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"neighbours under spoofed ARP: {'FAIL' if errs else 'ok'} "
          f"({len(frames)} packets, {len(errs)} failures)")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
