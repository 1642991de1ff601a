#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Spoofed ACK and SYN floods against a small conntrack (issue 9, defect 2;
real handshakes since issue 34).

    test_ct_flood.py BUILD_DIR

One flowgate on net_pcap, one worker, --ct-capacity 1024, a DSR (IPIP) and
a NAT service.  The input is fed through a FIFO round by round (the
machinery of test_invariants.py: Checker.start / round), so the test
reads each round's output before it writes the next one, as real
endpoints would:

  A  200 NAT and 100 DSR clients open real connections.  NAT: the client's
     SYN (random ISN); the backend's SYN-ACK (from the backend to the
     local address and the NAT port the SYN left on; it acks the client's
     ISN + 1, its own ISN random); the client's ACK (acking the backend's
     ISN + 1) and a data segment.  DSR: SYN, ACK, data, and, once 2.2 s
     have passed since the SYN (the probation's pickup_ms, 2 s: a wait for
     the rule, not an asserted bound), more data: 4 packets over 2 s, so
     the flows are assured (conntrack/ct.h, "Assured").
  B  spoofed ACKs, one per random tuple: 4000 to the DSR VIP, 4000 to the NAT VIP
  C  spoofed SYNs: 3000 to the DSR VIP, 300 to the NAT VIP
  D  100 new NAT clients after the floods, full handshakes as in A
  E  one data segment from every client of A and D

Asserted: every packet of A, D and E leaves exactly once (NAT: on the
client's own local port towards the backend, the SYN-ACK back to the
client from the VIP; DSR: to the backend); A's and D's flows are listed
ESTABLISHED by `fgctl --json flows list --state ESTABLISHED`; the NAT ACK
flood took no entry (drops nat_not_syn = 4000; the RSTs the balancer sends
back for them, nat_rst_sent, are all in the output, to spoofed clients
only); no packet of D was refused (ct_full / ct_flood).  Before the issue
9 fix every spoofed ACK made an assured ESTABLISHED entry (two for NAT):
the table filled with them and D's clients were refused.  Unassured
entries (a DSR handshake on probation, SYN_SENT, spoofed pickups) are what
the floods evict, so A's flows must have earned their assurance first.
"""
import argparse
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgdaemon import HANG_S  # noqa: E402
from test_invariants import FILLER, A, Checker, Svc, frame, ip4, l4seg  # noqa: E402

SYN, ACK, RST, PSH = 0x02, 0x10, 0x04, 0x08
DSR_VIP, NAT_VIP = A("10.100.0.1"), A("10.100.0.3")
DSR_BE, NAT_BE, LOCAL = A("10.1.0.2"), A("10.1.0.1"), A("10.0.0.1")
SERVICES = [Svc(("dsr", "10.100.0.1", 80, 6, "dsr-ipip", [DSR_BE])),
            Svc(("nat", "10.100.0.3", 80, 6, "nat", [NAT_BE]))]
ROUND = 2000        # inputs per round at most (test_invariants' size)
PROBATION_S = 2.2   # > pickup_ms (2000, the daemon's default)
# spoofed sequence numbers; real ISNs keep clear of them
SPOOF_SEQ = ((0x40000000, 8000), (0x50000000, 3300))


def tcp_frame(src, dst, sport, dport, flags, seq, ack, payload=b""):
    return frame(ip4(src, dst, 6, l4seg(6, src, dst, sport, dport, payload, flags, seq, ack)))


def parse_out(fr):
    """An IPv4 TCP output frame (IPIP: the inner packet) as a dict, or None
    (ARP, other protocols)."""
    if len(fr) < 34 or fr[12:14] != b"\x08\x00":
        return None
    o = {"dst": fr[30:34], "src": fr[26:30], "encap": fr[23] == 4}
    l3 = 14
    if o["encap"]:
        l3 += (fr[14] & 15) * 4
    if fr[l3 + 9] != 6:
        return None
    end = l3 + struct.unpack_from("!H", fr, l3 + 2)[0]     # without Ethernet padding
    o["isrc"], o["idst"] = fr[l3 + 12:l3 + 16], fr[l3 + 16:l3 + 20]
    l4 = l3 + (fr[l3] & 15) * 4
    if end > len(fr) or end < l4 + 20:
        return None
    o["sport"], o["dport"], o["seq"], o["ack"] = struct.unpack_from("!HHII", fr, l4)
    o["flags"] = fr[l4 + 13]
    o["payload"] = bytes(fr[l4 + (fr[l4 + 12] >> 4) * 4:end])
    return o


def key(o):
    return o["seq"], o["ack"], o["flags"], o["payload"]


class Client:
    """One real TCP client and, for NAT, the backend's side of its
    connection: each endpoint's sequence numbers as its TCP keeps them."""

    def __init__(self, k, addr, port, vip, rnd, taken):
        self.k, self.addr, self.port, self.vip = k, addr, port, vip
        self.nat = vip == NAT_VIP
        self.isn = self._isn(rnd, taken)
        self.bisn = self._isn(rnd, taken)   # the server's (DSR: never seen)
        self.cnxt, self.bnxt = self.isn, self.bisn
        self.nat_port = None                # from the output of its SYN
        self.bport = None
        self.sent = []                      # (key, what) of every packet it must see leave

    @staticmethod
    def _isn(rnd, taken):
        while True:
            x = rnd.randrange(1 << 32)
            if x not in taken and not any(0 <= (x - b) % (1 << 32) < n + 64
                                          for b, n in SPOOF_SEQ):
                taken.add(x)
                return x

    def desc(self):
        return (f"{'NAT' if self.nat else 'DSR'} client {self.k} "
                f"({'.'.join(map(str, self.addr))}:{self.port})")

    def _out(self, fr, what):
        o = parse_out(fr)
        self.sent.append((key(o), what))
        return fr

    def syn(self):
        fr = tcp_frame(self.addr, self.vip, self.port, 80, SYN, self.isn, 0)
        self.cnxt = (self.isn + 1) & 0xFFFFFFFF
        return self._out(fr, "SYN")

    def syn_ack(self):
        """the backend's SYN-ACK, to the local address and NAT port"""
        fr = tcp_frame(NAT_BE, LOCAL, self.bport, self.nat_port, SYN | ACK, self.bisn, self.cnxt)
        self.bnxt = (self.bisn + 1) & 0xFFFFFFFF
        return self._out(fr, "SYN-ACK")

    def ack(self):
        if not self.nat:
            self.bnxt = (self.bisn + 1) & 0xFFFFFFFF   # the server's, unseen
        return self._out(tcp_frame(self.addr, self.vip, self.port, 80, ACK, self.cnxt, self.bnxt),
                         "ACK")

    def data(self, what):
        pay = f"{what} {self.k}".encode()
        fr = tcp_frame(self.addr, self.vip, self.port, 80, PSH | ACK, self.cnxt, self.bnxt, pay)
        self.cnxt = (self.cnxt + len(pay)) & 0xFFFFFFFF
        return self._out(fr, what)


class Feed(Checker):
    """test_invariants' daemon on a FIFO, fed round by round; the output
    frames are kept as they are (this test's inputs carry no tags)."""

    def __init__(self, build):
        super().__init__(argparse.Namespace(build=build), "ctf", 1, SERVICES, 9, 1024, set())
        self.got = []
        self.ctl = self.fd = self.p = None

    def check_output(self, fr):
        self.outputs += 1
        self.got.append(fr)

    def feed(self, frames):
        st = None
        for i in range(0, len(frames), ROUND):
            st = self.round(frames[i:i + ROUND])
        return st

    def close_input(self):
        """EOF on the FIFO: worker 0 polls again instead of blocking in
        its read, so requests it must answer (flows list) get answered."""
        os.close(self.fd)
        self.fd = None

    def fgctl(self, *args):
        fgctl = os.path.join(self.a.build, "control", "fgctl")
        return subprocess.run([fgctl, "-s", self.sock] + list(args), capture_output=True,
                              text=True, timeout=HANG_S)


def main():
    build = os.path.abspath(sys.argv[1])
    rnd = random.Random(9)
    taken = set()
    errs = []

    def expect(cond, what):
        if not cond:
            errs.append(what)
            if len(errs) <= 40:
                print("FAIL:", what)

    a_cl = [Client(k, A(f"172.16.{k >> 8}.{k & 255}"), 20000 + k,
                   NAT_VIP if k < 200 else DSR_VIP, rnd, taken) for k in range(300)]
    d_cl = [Client(k, A(f"172.17.{k >> 8}.{k & 255}"), 30000 + k, NAT_VIP, rnd, taken)
            for k in range(300, 400)]
    work = tempfile.mkdtemp(prefix="flowgate-ctflood.")
    c = Feed(build)
    listed = {}
    t0 = time.monotonic()
    try:
        c.start(work)

        def handshake(cl):
            """SYN; the backend's SYN-ACK to the port the SYN left on; the
            client's ACK and data (DSR: SYN, then ACK and data)"""
            c.feed([x.syn() for x in cl])
            t_syn = time.monotonic()
            learn_nat_ports(c, cl, expect)
            nat = [x for x in cl if x.nat and x.nat_port is not None]
            dsr = [x for x in cl if not x.nat]
            c.feed([x.syn_ack() for x in nat] +
                   [f for x in dsr for f in (x.ack(), x.data("data"))])
            c.feed([f for x in nat for f in (x.ack(), x.data("data"))])
            return t_syn

        # A: real connections; DSR ones pass their probation (>= 4
        # packets over >= pickup_ms) before the floods
        t_syn = handshake(a_cl)
        while time.monotonic() - t_syn < PROBATION_S:
            time.sleep(PROBATION_S - (time.monotonic() - t_syn))
        # worker 0 reads its clock before it blocks in the FIFO read: the
        # first burst after the wait would carry the time it began to wait
        # (short of the probation); one burst of filler first
        c.nfill += 32
        c.write([FILLER] * 32)
        c.feed([x.data("late data") for x in a_cl if not x.nat])
        # B: spoofed ACKs, C: spoofed SYNs, one per random tuple
        spoof = []
        for i in range(8000):
            s = A(f"198.18.{rnd.randrange(256)}.{rnd.randrange(1, 255)}")
            spoof.append(tcp_frame(s, DSR_VIP if i & 1 else NAT_VIP, rnd.randrange(1024, 65535),
                                   80, ACK, SPOOF_SEQ[0][0] + i, 1))
        for i in range(3300):
            s = A(f"198.19.{rnd.randrange(256)}.{rnd.randrange(1, 255)}")
            spoof.append(tcp_frame(s, DSR_VIP if i < 3000 else NAT_VIP, rnd.randrange(1024, 65535),
                                   80, SYN, SPOOF_SEQ[1][0] + i, 0))
        c.feed(spoof)
        # D: new NAT clients after the floods; E: data from everyone
        handshake(d_cl)
        st = c.feed([x.data("more data") for x in a_cl + d_cl])
        c.close_input()
        for svc, want in (("dsr", [x for x in a_cl if not x.nat]),
                          ("nat", [x for x in a_cl + d_cl if x.nat])):
            r = c.fgctl("--json", "flows", "list", "--service", svc, "--state", "ESTABLISHED")
            if r.returncode != 0:
                expect(False, f"fgctl flows list --service {svc}: rc {r.returncode}: {r.stderr}")
                continue
            fl = json.loads(r.stdout)
            listed[svc] = {(f["src"], f["sport"]) for f in fl}
            mine = {(".".join(map(str, x.addr)), x.port) for x in want}
            expect(mine <= listed[svc],
                   f"{svc}: {len(mine - listed[svc])} of {len(mine)} client flows not listed "
                   f"ESTABLISHED ({len(fl)} listed), e.g. {sorted(mine - listed[svc])[:3]}")
    finally:
        if c.p is not None:
            c.stop()
        shutil.rmtree(work, ignore_errors=True)
    errs += c.errs

    # every packet of A, D and E left once, where its connection lives
    outs = {}
    rsts = 0
    for o in filter(None, map(parse_out, c.got)):
        if o["flags"] & RST:
            # the balancer's answer to a spoofed NAT ACK (issue 34): from
            # the VIP, to a spoofed client only
            rsts += 1
            expect(o["src"] == NAT_VIP and o["dst"][:2] == bytes((198, 18)),
                   f"RST from {o['src'].hex()} to {o['dst'].hex()}: not an answer to a spoofed ACK")
            continue
        outs.setdefault(key(o), []).append(o)
    for x in a_cl + d_cl:
        for k, what in x.sent:
            got = outs.get(k, [])
            if len(got) != 1:
                expect(False, f"{x.desc()}: {what} left {len(got)} times, expected once")
                continue
            o = got[0]
            if not x.nat:
                ok = o["encap"] and o["dst"] == DSR_BE and o["isrc"] == x.addr and \
                    o["sport"] == x.port
                where = "IPIP to the backend, from the client's port"
            elif what == "SYN-ACK":
                ok = not o["encap"] and o["src"] == NAT_VIP and o["dst"] == x.addr and \
                    (o["sport"], o["dport"]) == (80, x.port)
                where = "back to the client from the VIP:80"
            else:
                ok = not o["encap"] and o["src"] == LOCAL and o["dst"] == NAT_BE and \
                    (o["sport"], o["dport"]) == (x.nat_port, x.bport)
                where = f"to the backend on the client's NAT port {x.nat_port}"
            expect(ok, f"{x.desc()}: {what} left as {o['src'].hex()}:{o['sport']} -> "
                   f"{o['dst'].hex()}:{o['dport']} (encap {o['encap']}), expected {where}")
    drops = st["drops_by_reason"]
    print("drops:", {n: v for n, v in drops.items() if v})
    print(f"NAT RSTs: nat_rst_sent {st.get('nat_rst_sent')}, {rsts} in the output")
    expect(drops.get("nat_not_syn") == 4000,
           f"nat_not_syn {drops.get('nat_not_syn')}, expected 4000")
    expect(rsts == st.get("nat_rst_sent", 0),
           f"{rsts} RSTs in the output, nat_rst_sent {st.get('nat_rst_sent')}")
    expect(not drops.get("ct_full") and not drops.get("ct_flood"),
           f"refused: ct_full {drops.get('ct_full')} ct_flood {drops.get('ct_flood')}")
    print(f"conntrack under spoofed floods: {'FAIL' if errs else 'ok'} "
          f"({c.written} inputs in {c.rounds} rounds, {c.outputs} outputs, "
          f"{time.monotonic() - t0:.1f} s, {len(errs)} failures)")
    return 1 if errs else 0


def learn_nat_ports(c, cl, expect):
    """The NAT port (and backend port) each NAT client's SYN left on, as
    the backend would see it."""
    syn = {x.isn: x for x in cl if x.nat}
    for fr in c.got:
        o = parse_out(fr)
        if o is None or o["flags"] != SYN or o["encap"] or o["dst"] != NAT_BE:
            continue
        x = syn.get(o["seq"])
        if x is not None and o["src"] == LOCAL:
            expect(x.nat_port is None, f"{x.desc()}: its SYN left twice")
            x.nat_port, x.bport = o["sport"], o["dport"]
    for x in syn.values():
        expect(x.nat_port is not None, f"{x.desc()}: its SYN did not leave")


if __name__ == "__main__":
    sys.exit(main())
