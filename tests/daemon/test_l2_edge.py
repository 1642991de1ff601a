#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Jumbo frames, foreign VLAN tags, services without a backend (issue 9,
defect 8, dataplane parts).

    test_l2_edge.py BUILD_DIR

One flowgate on net_pcap, port MTU 1500 (mbufs of 2 KiB), untagged port,
a DSR service and a TCP + a UDP service whose every backend is drained:

  1. a 9014-byte frame to the DSR VIP: more than one mbuf, dropped as
     frame_too_long (was no_headroom)
  2. a SYN to the DSR VIP tagged VLAN 100: dropped as vlan_foreign (was
     forwarded with the tag kept, into VLAN 100 behind the backend)
  3. a SYN to the drained TCP service: dropped as no_backend, and the
     client gets a RST|ACK from the VIP (was: silence until its timeout)
  4. a datagram to the drained UDP service: no_backend, and ICMP port
     unreachable from the VIP
  5. an untagged SYN to the DSR VIP: forwarded (the port works)

Expected frames are built here (pktgen.py, own checksums).  Accounting:
rx = forwarded + drops, tx = forwarded + generated.
"""
import os
import shutil
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgdaemon import Daemon  # noqa: E402
from pktgen import csum, eth, ip, ipv4, mac, tcp  # noqa: E402

LB, CL, NH = "02:00:00:00:00:01", "02:00:00:00:00:aa", "02:00:00:00:00:fe"
FLAGS = [
    "--ct-capacity", "1024", "--mbufs", "4095",
    "--port-mac", f"0,{LB}", "--local", "10.0.0.1", "--gateway", "10.0.0.254",
    "--neigh", f"10.0.0.254,{NH}",
    "--service", "10.100.0.1:80/tcp,mode=dsr-ipip,name=dsr", "--backend", "10.1.0.1",
    "--service", "10.100.0.5:80/tcp,mode=dsr-ipip,name=gone",
    "--backend", "10.1.0.1,drained", "--backend", "10.1.0.2,drained",
    "--service", "10.100.0.5:53/udp,mode=nat,name=gone-udp", "--backend", "10.1.0.1,drained",
]


def udp(src, dst, sport, dport, payload):
    u = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    c = csum(src + dst + struct.pack("!BBH", 0, 17, len(u)) + u)
    return u[:6] + struct.pack("!H", c or 0xFFFF) + u[8:]


def vlan_eth(dst, src, vid, ethertype, payload):
    fr = mac(dst) + mac(src) + struct.pack("!HHH", 0x8100, vid, ethertype) + payload
    return fr + b"\0" * max(0, 64 - len(fr))


def main():
    build = os.path.abspath(sys.argv[1])
    c, dsr, gone = ip("192.0.2.10"), ip("10.100.0.1"), ip("10.100.0.5")
    jumbo = eth(LB, CL, 0x0800, ipv4(c, dsr, 6, tcp(c, dsr, 40000, 80, 0x18, b"j" * 8960)))
    tagged = vlan_eth(LB, CL, 100, 0x0800, ipv4(c, dsr, 6, tcp(c, dsr, 40001, 80, 0x02)))
    syn = eth(LB, CL, 0x0800, ipv4(c, gone, 6, tcp(c, gone, 40002, 80, 0x02, seq=5000)))
    dgram_l3 = ipv4(c, gone, 17, udp(c, gone, 40003, 53, b"q" * 30))
    dgram = eth(LB, CL, 0x0800, dgram_l3)
    ok = eth(LB, CL, 0x0800, ipv4(c, dsr, 6, tcp(c, dsr, 40004, 80, 0x02)))
    frames = [jumbo, tagged, syn, dgram, ok]

    rst = struct.pack("!HHIIBBHHH", 80, 40002, 0, 5001, 5 << 4, 0x14, 0, 0, 0)
    rst = rst[:16] + struct.pack("!H", csum(gone + c + struct.pack("!BBH", 0, 6, 20) + rst)) \
        + rst[18:]
    want_rst = eth(CL, LB, 0x0800, ipv4(gone, c, 6, rst, ident=0, df=False))
    body = struct.pack("!BBHI", 3, 3, 0, 0) + dgram_l3
    body = body[:2] + struct.pack("!H", csum(body)) + body[4:]
    want_unreach = eth(CL, LB, 0x0800, ipv4(gone, c, 1, body, ident=0, df=False))

    errs = []

    def expect(cond, what):
        if not cond:
            errs.append(what)
            print("FAIL:", what)

    work = tempfile.mkdtemp(prefix="flowgate-l2.")
    try:
        d = Daemon(build, work, "l2", frames, FLAGS)
        with d:
            st = d.wait_rx(len(frames))
        out = d.output()
        expect(want_rst in out, "no RST|ACK from the VIP for the SYN to the drained service")
        expect(want_unreach in out, "no ICMP port unreachable for the UDP datagram")
        fwd = [f for f in out if f[:6] == mac(NH)]
        expect(len(fwd) == 1 and fwd[0][12:14] == b"\x08\x00" and fwd[0][23] == 4,
               f"forwarded: {[f[:40].hex() for f in fwd]}, expected the untagged SYN in IPIP")
        expect(len(out) == 3, f"{len(out)} frames out, expected 3")
        t = st["total"]
        dr = {k: v for k, v in t["drops_by_reason"].items() if v}
        print("drops:", dr, "no_backend_rst", t.get("no_backend_rst"),
              "no_backend_unreach", t.get("no_backend_unreach"))
        expect(dr == {"frame_too_long": 1, "vlan_foreign": 1, "no_backend": 2},
               f"drops {dr}, expected frame_too_long 1, vlan_foreign 1, no_backend 2")
        expect(t.get("no_backend_rst") == 1 and t.get("no_backend_unreach") == 1,
               "no_backend_rst / no_backend_unreach")
        gen = t.get("no_backend_rst", 0) + t.get("no_backend_unreach", 0)
        expect(t["rx_packets"] == len(frames) and
               t["rx_packets"] == t["tx_packets"] - gen + t["drops"],
               f"accounting: rx {t['rx_packets']} tx {t['tx_packets']} generated {gen} "
               f"drops {t['drops']}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"jumbo / VLAN / no backend: {'FAIL' if errs else 'ok'} ({len(errs)} failures)")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
