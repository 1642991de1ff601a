#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Spoofed ACK and SYN floods against a small conntrack (issue 9, defect 2).

    test_ct_flood.py BUILD_DIR

One flowgate on net_pcap, one worker, --ct-capacity 1024, a DSR (IPIP) and
a NAT service.  One pcap, in order:

  A  established: 200 NAT and 100 DSR clients (SYN, then the handshake's ACK)
  B  spoofed ACKs, one per random tuple: 4000 to the DSR VIP, 4000 to the NAT VIP
  C  spoofed SYNs: 3000 to the DSR VIP, 300 to the NAT VIP
  D  new clients after the floods: 100 NAT (SYN, ACK)
  E  one data segment from every client of A and D

Asserted on the output: every packet of A, D and E leaves (NAT: on one
local port per client, the port its SYN got; DSR: to one backend per
client), the NAT ACK flood took no entry (drops nat_not_syn = 4000), and
no NAT packet of D was refused (ct_full / ct_flood).  Before the fix every
spoofed ACK made an assured ESTABLISHED entry (two for NAT): the table
filled with them and D's clients were refused.
"""
import json
import os
import random
import shutil
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgdaemon import Daemon  # noqa: E402
from pktgen import eth, ip, ipv4, tcp  # noqa: E402

LB, NH = "02:00:00:00:00:01", "02:00:00:00:00:fe"
SYN, ACK, PSH = 0x02, 0x10, 0x08
DSR_VIP, NAT_VIP = "10.100.0.1", "10.100.0.3"
FLAGS = [
    "--ct-capacity", "1024", "--mbufs", "16383",
    "--port-mac", "0,02:00:00:00:00:01",
    "--local", "10.0.0.1", "--gateway", "10.0.0.254",
    "--neigh", "10.0.0.254,02:00:00:00:00:fe",
    "--neigh", "10.1.0.1,02:00:00:00:00:b1", "--neigh", "10.1.0.2,02:00:00:00:00:b2",
    "--service", f"{DSR_VIP}:80/tcp,mode=dsr-ipip,name=dsr",
    "--backend", "10.1.0.2",
    "--service", f"{NAT_VIP}:80/tcp,mode=nat,name=nat",
    "--backend", "10.1.0.1",
]


def seg(client, cport, vip, flags, seq, payload=b""):
    c, v = ip(client), ip(vip)
    return eth(LB, NH, 0x0800, ipv4(c, v, 6, tcp(c, v, cport, 80, flags, payload,
                                                    seq=seq, ack=1)))


def parse_out(fr):
    """(outer dst, tcp sport, tcp seq) of an output frame, or None (also for
    the RSTs the balancer sends back for spoofed NAT ACKs: issue 34)."""
    if len(fr) < 34 or fr[12:14] != b"\x08\x00":
        return None
    ihl = (fr[14] & 15) * 4
    proto, dst = fr[23], fr[30:34]
    l4 = 14 + ihl
    if proto == 4:           # IPIP: the inner header follows
        proto = fr[l4 + 9]
        l4 += (fr[l4] & 15) * 4
    if proto != 6 or len(fr) < l4 + 14 or fr[l4 + 13] & 0x04:
        return None
    sport, _, seq = struct.unpack("!HHI", fr[l4:l4 + 8])
    return dst, sport, seq


def main():
    build = os.path.abspath(sys.argv[1])
    rnd = random.Random(9)
    frames = []
    # client k: seq numbers k * 16 + 1 (SYN), + 2 (ACK), + 3 (data)
    clients = []   # (k, addr, port, vip)
    for k in range(300):
        vip = NAT_VIP if k < 200 else DSR_VIP
        clients.append((k, f"172.16.{k >> 8}.{k & 255}", 20000 + k, vip))
    late = [(k, f"172.17.{k >> 8}.{k & 255}", 30000 + k, NAT_VIP) for k in range(300, 400)]

    def open_(cl):
        for k, a, p, v in cl:
            frames.append(seg(a, p, v, SYN, k * 16 + 1))
        for k, a, p, v in cl:
            frames.append(seg(a, p, v, ACK, k * 16 + 2))

    open_(clients)                                                    # A
    for i in range(8000):                                             # B
        a = f"198.18.{rnd.randrange(256)}.{rnd.randrange(1, 255)}"
        frames.append(seg(a, rnd.randrange(1024, 65535), DSR_VIP if i & 1 else NAT_VIP,
                          ACK, 0x40000000 + i))
    for i in range(3300):                                             # C
        a = f"198.19.{rnd.randrange(256)}.{rnd.randrange(1, 255)}"
        frames.append(seg(a, rnd.randrange(1024, 65535), DSR_VIP if i < 3000 else NAT_VIP,
                          SYN, 0x50000000 + i))
    open_(late)                                                       # D
    for k, a, p, v in clients + late:                                 # E
        frames.append(seg(a, p, v, ACK | PSH, k * 16 + 3, b"data"))

    errs = []

    def expect(cond, what):
        if not cond:
            errs.append(what)
            print("FAIL:", what)

    work = tempfile.mkdtemp(prefix="flowgate-ctflood.")
    try:
        d = Daemon(build, work, "ctf", frames, FLAGS)
        with d:
            st = d.wait_rx(len(frames))
            # every real connection is still tracked, established (the
            # floods left as evicted or expiring pickups / SYN_SENT)
            for svc, n in (("dsr", 100), ("nat", 300)):
                r = d.fgctl("--json", "flows", "list", "--service", svc,
                            "--state", "ESTABLISHED")
                fl = json.loads(r.stdout)
                mine = {(f["src"], f["sport"]) for f in fl
                        if f["src"].startswith(("172.16.", "172.17."))}
                expect(len(mine) == n, f"{svc}: {len(mine)} client flows ESTABLISHED, "
                       f"expected {n} (of {len(fl)} listed)")
        out = [o for o in map(parse_out, d.output()) if o]
        by_seq = {}
        for dst, sport, seq in out:
            by_seq.setdefault(seq, []).append((dst, sport))
        for k, a, p, v in clients + late:
            got = [by_seq.get(k * 16 + j, []) for j in (1, 2, 3)]
            if any(len(g) != 1 for g in got):
                expect(False, f"client {k} ({a}:{p} -> {v}): packets out "
                       f"SYN/ACK/data = {[len(g) for g in got]}, expected 1/1/1")
                continue
            if v == NAT_VIP:
                expect(all(g[0] == (ip("10.1.0.1"), got[0][0][1]) for g in got),
                       f"NAT client {k}: left on {got}, expected one local port")
            else:
                expect(all(g[0][0] == ip("10.1.0.2") for g in got),
                       f"DSR client {k}: sent to {got}")
        drops = st["total"]["drops_by_reason"]
        print("drops:", {n: c for n, c in drops.items() if c})
        expect(drops.get("nat_not_syn") == 4000,
               f"nat_not_syn {drops.get('nat_not_syn')}, expected 4000")
        expect(not drops.get("ct_full") and not drops.get("ct_flood"),
               f"refused: ct_full {drops.get('ct_full')} ct_flood {drops.get('ct_flood')}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"conntrack under spoofed floods: {'FAIL' if errs else 'ok'} "
          f"({len(frames)} packets, {len(errs)} failures)")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
