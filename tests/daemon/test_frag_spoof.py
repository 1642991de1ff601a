#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Spoofed first fragments do not move a client's later fragments (issue 34),
through the real daemon, IPv4 and IPv6.

    test_frag_spoof.py BUILD_DIR

A DSR IP-in-IP UDP service per family, four backends each.  Fragment-follow
entries are keyed like the kernel's reassembly, (source, destination,
protocol, IP ID): IPv4's 16-bit identification, IPv6's 32-bit fragment
header identification.  Keyed without the ID (flowgate up to 01394a6), the
last first fragment from a client's address re-pointed all its later
fragments.

1. A probe run (whole datagrams) learns which backend Maglev gives client
   X's port and each candidate attacker port.
2. The run: X sends the first fragment of datagram a (port cp); an attacker
   spoofs first fragments from X's address, ports whose backend is not X's,
   each with its own ID and payload; X's later fragments of a (three, the
   last after more spoofs) must all leave to X's first fragment's backend;
   each spoofed datagram's later fragment follows its own first fragment
   (concurrent datagrams of one address each follow theirs); a later
   fragment of a datagram whose first fragment was never seen drops as
   frag_later_untracked.
"""
import os
import shutil
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgdaemon import run_daemon  # noqa: E402
from pktgen import csum, eth, ip  # noqa: E402

LB, NH = "02:00:00:00:00:01", "02:00:00:00:00:fe"
FLAGS = [
    "--ct-capacity", "1024", "--mbufs", "2047",
    "--port-mac", "0,02:00:00:00:00:01",
    "--local", "10.0.0.1", "--local", "fd00::1",
    "--gateway", "10.0.0.254", "--gateway", "fd00::fe",
    "--neigh", "10.0.0.254,02:00:00:00:00:fe", "--neigh", "fd00::fe,02:00:00:00:00:fe",
    "--service", "10.100.0.1:53/udp,mode=dsr-ipip,name=dns4",
    "--backend", "10.1.0.1", "--backend", "10.1.0.2",
    "--backend", "10.1.0.3", "--backend", "10.1.0.4",
    "--service", "[fd00:100::1]:53/udp,mode=dsr-ipip,name=dns6",
    "--backend", "[fd00:1::1]", "--backend", "[fd00:1::2]",
    "--backend", "[fd00:1::3]", "--backend", "[fd00:1::4]",
]
CP = 40000                      # client X's port
CANDIDATES = range(41000, 41048)  # attacker ports probed
SPOOFS = 6                      # spoofed first fragments sent


class Fam:
    def __init__(self, v6):
        self.v6 = v6
        self.c = ip("2001:db8::10") if v6 else ip("192.0.2.10")
        self.vip = ip("fd00:100::1") if v6 else ip("10.100.0.1")

    def udp(self, sport, data):
        seg = struct.pack("!HHHH", sport, 53, 8 + len(data), 0) + data
        if self.v6:
            ph = self.c + self.vip + struct.pack("!IxxxB", len(seg), 17)
        else:
            ph = self.c + self.vip + struct.pack("!BBH", 0, 17, len(seg))
        c = csum(ph + seg) or 0xFFFF
        return seg[:6] + struct.pack("!H", c) + seg[8:]

    def l3(self, payload, ident, off8=0, mf=False, whole=False):
        """IP packet from X's address: a fragment (@off8 in 8-byte units,
        @mf) of datagram @ident, or a whole one."""
        if self.v6:
            if whole:
                return struct.pack("!IHBB", 0x60000000, len(payload), 17, 64) + \
                    self.c + self.vip + payload
            fh = struct.pack("!BBHI", 17, 0, off8 << 3 | int(mf), ident)
            return struct.pack("!IHBB", 0x60000000, 8 + len(payload), 44, 64) + \
                self.c + self.vip + fh + payload
        frag = 0x4000 if whole else (off8 | (0x2000 if mf else 0))
        h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), ident & 0xFFFF,
                        frag, 64, 17, 0, self.c, self.vip)
        return h[:10] + struct.pack("!H", csum(h)) + h[12:] + payload

    def frame(self, l3):
        return eth(LB, NH, 0x86DD if self.v6 else 0x0800, l3)

    def datagram(self, sport, ident, fill):
        """(first fragment, later fragment) L3 packets of one datagram:
        UDP header + 96 bytes, then 64 bytes at offset 104."""
        data = bytes([fill]) * 160
        dg = self.udp(sport, data)
        return (self.l3(dg[:104], ident, 0, True), self.l3(dg[104:], ident, 104 // 8))


def backend_of(out, inner):
    """The backend (outer destination) of the output whose inner packet is
    @inner, or None."""
    for f in out:
        if f[12:14] == b"\x08\x00" and f[14 + 9] == 4 and f[34:] == inner:
            return f[30:34]
        if f[12:14] == b"\x86\xdd" and f[14 + 6] == 41 and f[54:] == inner:
            return f[38:54]
    return None


def probe(build, work, fams):
    """Backend of each (family, port) for whole datagrams from X."""
    ins, keys = [], []
    for fa in fams:
        for p in [CP, *CANDIDATES]:
            l3 = fa.l3(fa.udp(p, b"probe"), 7, whole=True)
            ins.append(fa.frame(l3))
            keys.append((fa.v6, p, l3))
    got, _, _ = run_daemon(build, work, "probe", ins, FLAGS)
    return {(v6, p): backend_of(got, l3) for v6, p, l3 in keys}


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    build = os.path.abspath(sys.argv[1])
    fams = [Fam(False), Fam(True)]
    work = tempfile.mkdtemp(prefix="flowgate-fragspoof.")
    errs = []
    ins, checks, orphans = [], [], 0
    try:
        picks = probe(build, work, fams)
        for fa in fams:
            fam = "v6" if fa.v6 else "v4"
            mine = picks[(fa.v6, CP)]
            if mine is None:
                errs.append(f"{fam}: probe: no output for X's port")
                continue
            spoof_ports = [p for p in CANDIDATES
                           if picks[(fa.v6, p)] not in (None, mine)][:SPOOFS]
            if len(spoof_ports) < SPOOFS:
                errs.append(f"{fam}: probe: {len(spoof_ports)} attacker ports "
                            f"off X's backend, want {SPOOFS}")
                continue
            a = 0x1A2B3C4D if fa.v6 else 0x1A2B
            first, later = fa.datagram(CP, a, 0x58)
            # later fragments of datagram a: three, different bytes
            laters = [later] + [fa.l3(bytes([0x58 + k]) * 64, a, 104 // 8 + 8 * k)
                                for k in (1, 2)]
            spoofs = [fa.datagram(p, a + 1 + k, 0x30 + k)
                      for k, p in enumerate(spoof_ports)]
            half = SPOOFS // 2
            seq = [("X first", first, mine)]
            seq += [(f"spoof {k} first", s[0], picks[(fa.v6, spoof_ports[k])])
                    for k, s in enumerate(spoofs[:half])]
            seq += [("X later 1", laters[0], mine)]
            seq += [(f"spoof {k} first", s[0], picks[(fa.v6, spoof_ports[k])])
                    for k, s in enumerate(spoofs[half:], half)]
            seq += [("X later 2", laters[1], mine), ("X later 3", laters[2], mine)]
            # the attacker's own datagrams follow their own first fragments
            seq += [(f"spoof {k} later", s[1], picks[(fa.v6, spoof_ports[k])])
                    for k, s in enumerate(spoofs)]
            for name, l3, be in seq:
                ins.append(fa.frame(l3))
                checks.append((f"{fam} {name}", l3, be))
            # a datagram whose first fragment never came
            ins.append(fa.frame(fa.l3(b"\x77" * 64, a + 100, 13)))
            orphans += 1
        if not errs:
            got, stats, _ = run_daemon(build, work, "spoof", ins, FLAGS)
            for name, l3, be in checks:
                b = backend_of(got, l3)
                if b != be:
                    errs.append(f"{name}: to {b.hex() if b else 'nowhere'}, "
                                f"want {be.hex()}")
            tot = stats["total"]
            by = tot["drops_by_reason"]
            if by.get("frag_later_untracked") != orphans:
                errs.append(f"frag_later_untracked {by.get('frag_later_untracked')}, "
                            f"want {orphans}")
            if tot["drops"] != orphans:
                errs.append(f"drops {tot['drops']}, want {orphans}: "
                            f"{ {k: v for k, v in by.items() if v} }")
            if len(got) != len(checks):
                errs.append(f"{len(got)} outputs, want {len(checks)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for e in errs:
        print("FAIL:", e)
    print(f"spoofed first fragments vs a client's datagram: {len(checks) if not errs else '-'} "
          f"outputs checked, IPv4 and IPv6: {'FAIL' if errs else 'ok'}")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
