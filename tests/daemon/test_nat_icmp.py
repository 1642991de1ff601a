#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""ICMP errors about full-NAT flows through the real daemon (PMTU discovery
through NAT), IPv4 and IPv6, both directions, byte for byte.

    test_nat_icmp.py BUILD_DIR

One flowgate on net_pcap with a NAT service per family (one backend each,
so the backend is known), one pcap of:

  SYN client -> VIP                    -> local:P -> backend (P = 1024 / 1026:
                                          one worker hands NAT ports out from 1024)
  SYN-ACK backend -> local:P           -> VIP -> client
  frag-needed / packet-too-big from a router on the backend side to local,
  quoting local:P -> backend           -> VIP -> client quoting client -> VIP
  frag-needed / packet-too-big from a router on the client side to the VIP,
  quoting VIP -> client                -> local -> backend quoting backend -> local:P
  ICMP errors quoting untracked tuples -> dropped, icmp_unrelated

and who may send them (issue 34, docs/DESIGN.md "ICMP errors about NAT
flows"), after the client's ACK completes the handshake:

  port unreachable from the backend itself -> VIP -> client (translated)
  port unreachable from the client itself  -> local -> backend
  host unreachable from any other host, either side -> dropped,
                                          icmp_err_foreign
  frag-needed / packet-too-big from a router quoting a sequence number
  2^31 away from the flow's                -> dropped, icmp_err_foreign
                            ... quoting one in the flow's window -> passed

and a NAT service whose VIP is the local address itself (10.0.0.1:8080):
its client's packets go to a local address, as replies do, so the worker
hints them as replies (the reply region looked up first, then the flows'):
SYN, SYN-ACK and the client's ACK each leave rewritten, on one NAT port;
a SYN to another port of that address is the host's (no --host-tap here:
dropped as reply_untracked, not as unknown_vip).

Expected frames are built by tests/daemon/pktgen.py (own checksum code),
not by pkt/.
"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgdaemon import run_daemon  # noqa: E402
from pktgen import eth, icmp4_err, icmp6_err, ip, ipv4, ipv6, tcp  # noqa: E402

LB, NH = "02:00:00:00:00:01", "02:00:00:00:00:fe"
SYN, ACK = 0x02, 0x10
FLAGS = [
    "--ct-capacity", "1024", "--mbufs", "2047",
    "--port-mac", "0,02:00:00:00:00:01",
    "--local", "10.0.0.1", "--local", "fd00::1",
    "--gateway", "10.0.0.254", "--gateway", "fd00::fe",
    "--neigh", "10.0.0.254,02:00:00:00:00:fe", "--neigh", "fd00::fe,02:00:00:00:00:fe",
    "--service", "10.100.0.3:80/tcp,mode=nat,name=nat4", "--backend", "10.1.0.1",
    "--service", "[fd00:100::3]:80/tcp,mode=nat,name=nat6", "--backend", "[fd00:1::1]",
    "--service", "10.0.0.1:8080/tcp,mode=nat,name=natlocal", "--backend", "10.1.0.2:80",
]


def family(v6, port):
    """(inputs, expected) for one family; @port: the NAT port expected."""
    if v6:
        C, V, L, B = ip("2001:db8::10"), ip("fd00:100::3"), ip("fd00::1"), ip("fd00:1::1")
        R1, R2 = ip("fd00:1::fe"), ip("2001:db8::fe")

        def pkt(s, d, proto, payload, ttl=64):
            return eth(LB, NH, 0x86DD, ipv6(s, d, proto, payload, hlim=ttl))

        def out(s, d, proto, payload, ttl=63):
            return eth(NH, LB, 0x86DD, ipv6(s, d, proto, payload, hlim=ttl))

        def l3(s, d, seg, ttl):
            return ipv6(s, d, 6, seg, hlim=ttl)

        def err(s, d, quote, ttl=64, o=False, kind="ptb"):
            f = out if o else pkt
            t, c, r = {"ptb": (2, 0, 1280), "port": (1, 4, 0), "host": (1, 3, 0)}[kind]
            return f(s, d, 58, icmp6_err(s, d, t, c, r, quote), ttl)
        qlen = 40 + 40
    else:
        C, V, L, B = ip("192.0.2.10"), ip("10.100.0.3"), ip("10.0.0.1"), ip("10.1.0.1")
        R1, R2 = ip("10.1.0.254"), ip("198.51.100.1")

        def pkt(s, d, proto, payload, ttl=64):
            return eth(LB, NH, 0x0800, ipv4(s, d, proto, payload, ttl=ttl))

        def out(s, d, proto, payload, ttl=63):
            return eth(NH, LB, 0x0800, ipv4(s, d, proto, payload, ttl=ttl))

        def l3(s, d, seg, ttl):
            return ipv4(s, d, 6, seg, ttl=ttl)

        def err(s, d, quote, ttl=64, o=False, kind="ptb"):
            f = out if o else pkt
            # frag-needed, next-hop MTU 1400 / port / host unreachable
            t, c, r = {"ptb": (3, 4, 1400), "port": (3, 3, 0), "host": (3, 1, 0)}[kind]
            return f(s, d, 1, icmp4_err(t, c, r, quote), ttl)
        qlen = 20 + 40
    cp, vp, bp = 40000, 80, 80
    data = bytes(range(256)) * 6
    fam = "v6" if v6 else "v4"
    ins, exp = [], []

    # 1. SYN
    ins.append((f"{fam} SYN", pkt(C, V, 6, tcp(C, V, cp, vp, SYN))))
    exp.append((f"{fam} SYN", out(L, B, 6, tcp(L, B, port, bp, SYN))))
    # 2. SYN-ACK
    ins.append((f"{fam} SYN-ACK", pkt(B, L, 6, tcp(B, L, bp, port, SYN | ACK, ack=1001))))
    exp.append((f"{fam} SYN-ACK", out(V, C, 6, tcp(V, C, vp, cp, SYN | ACK, ack=1001))))
    # 3. backend side: a router cannot forward local:P -> backend (1500 B)
    sent = l3(L, B, tcp(L, B, port, bp, ACK, data[:1400]), 63)
    seen = l3(C, V, tcp(C, V, cp, vp, ACK, data[:1400]), 63)
    ins.append((f"{fam} PTB to local", err(R1, L, sent[:qlen])))
    exp.append((f"{fam} PTB to local", err(V, C, seen[:qlen], 63, True)))
    # 4. client side: a router cannot forward VIP -> client
    sent = l3(V, C, tcp(V, C, vp, cp, ACK, data[:1400]), 60)
    seen = l3(B, L, tcp(B, L, bp, port, ACK, data[:1400]), 60)
    ins.append((f"{fam} PTB to VIP", err(R2, V, sent[:qlen])))
    exp.append((f"{fam} PTB to VIP", err(L, B, seen[:qlen], 63, True)))
    # 5./6. errors about tuples nobody tracks: dropped (icmp_unrelated)
    other = l3(L, B, tcp(L, B, port + 100, bp, ACK, data[:100]), 63)
    ins.append((f"{fam} PTB untracked local port", err(R1, L, other[:qlen])))
    other = l3(V, C, tcp(V, C, vp, cp + 1, ACK, data[:100]), 60)
    ins.append((f"{fam} PTB untracked client port", err(R2, V, other[:qlen])))
    # 7. the client's ACK: the handshake is complete, the windows known
    ins.append((f"{fam} ACK", pkt(C, V, 6, tcp(C, V, cp, vp, ACK, seq=1001, ack=1001))))
    exp.append((f"{fam} ACK", out(L, B, 6, tcp(L, B, port, bp, ACK, seq=1001, ack=1001))))
    # 8. the backend itself: its port is closed -> to the client
    sent = l3(L, B, tcp(L, B, port, bp, ACK, data[:100], seq=1001), 63)
    seen = l3(C, V, tcp(C, V, cp, vp, ACK, data[:100], seq=1001), 63)
    ins.append((f"{fam} unreachable from the backend", err(B, L, sent[:qlen], kind="port")))
    exp.append((f"{fam} unreachable from the backend",
                err(V, C, seen[:qlen], 63, True, kind="port")))
    # 9. the client itself -> to the backend
    sent = l3(V, C, tcp(V, C, vp, cp, ACK, data[:100], seq=1001), 60)
    seen = l3(B, L, tcp(B, L, bp, port, ACK, data[:100], seq=1001), 60)
    ins.append((f"{fam} unreachable from the client", err(C, V, sent[:qlen], kind="port")))
    exp.append((f"{fam} unreachable from the client",
                err(L, B, seen[:qlen], 63, True, kind="port")))
    # 10./11. anyone else's non-PMTU error, either side: dropped
    sent = l3(L, B, tcp(L, B, port, bp, ACK, data[:100], seq=1001), 63)
    ins.append((f"{fam} host unreachable from a stranger, backend side",
                err(R1, L, sent[:qlen], kind="host")))
    sent = l3(V, C, tcp(V, C, vp, cp, ACK, data[:100], seq=1001), 60)
    ins.append((f"{fam} host unreachable from a stranger, client side",
                err(R2, V, sent[:qlen], kind="host")))
    # 12. a router's PMTU message quoting a sequence number far out of
    # the window: dropped; 13. one in the window: passed on
    sent = l3(L, B, tcp(L, B, port, bp, ACK, data[:1400], seq=1001 + (1 << 31)), 63)
    ins.append((f"{fam} PTB quoting an out-of-window seq", err(R1, L, sent[:qlen])))
    sent = l3(L, B, tcp(L, B, port, bp, ACK, data[:1400], seq=1001), 63)
    seen = l3(C, V, tcp(C, V, cp, vp, ACK, data[:1400], seq=1001), 63)
    ins.append((f"{fam} PTB quoting an in-window seq", err(R1, L, sent[:qlen])))
    exp.append((f"{fam} PTB quoting an in-window seq", err(V, C, seen[:qlen], 63, True)))
    return ins, exp, 2, 3


def vip_local(port):
    """(inputs, expected) of the service on the local address."""
    C, L, B = ip("192.0.2.20"), ip("10.0.0.1"), ip("10.1.0.2")

    def pkt(s, d, seg):
        return eth(LB, NH, 0x0800, ipv4(s, d, 6, seg))

    def out(s, d, seg):
        return eth(NH, LB, 0x0800, ipv4(s, d, 6, seg, ttl=63))
    ins = [("local VIP SYN", pkt(C, L, tcp(C, L, 41000, 8080, SYN))),
           ("local VIP SYN-ACK", pkt(B, L, tcp(B, L, 80, port, SYN | ACK, ack=1001))),
           ("local VIP ACK", pkt(C, L, tcp(C, L, 41000, 8080, ACK, b"req", seq=1001))),
           ("local address SSH", pkt(C, L, tcp(C, L, 41001, 22, SYN)))]
    exp = [("local VIP SYN", out(L, B, tcp(L, B, port, 80, SYN))),
           ("local VIP SYN-ACK", out(L, C, tcp(L, C, 8080, 41000, SYN | ACK, ack=1001))),
           ("local VIP ACK", out(L, B, tcp(L, B, port, 80, ACK, b"req", seq=1001)))]
    return ins, exp


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    build = os.path.abspath(sys.argv[1])
    # one burst; NAT ports from 1024 in the order of its flows, IPv4's
    # first (a burst that mixes families is looked up a family at a time)
    ins4, exp4, d4, f4 = family(False, 1024)
    insl, expl = vip_local(1025)
    ins6, exp6, d6, f6 = family(True, 1026)
    ins, exp = ins4 + ins6 + insl, exp4 + exp6 + expl
    work = tempfile.mkdtemp(prefix="flowgate-naticmp.")
    try:
        got, stats, log = run_daemon(build, work, "nat", [f for _, f in ins], FLAGS)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    errs = []
    used = [False] * len(got)
    for name, fr in exp:
        hit = next((i for i in range(len(got)) if not used[i] and got[i] == fr), None)
        if hit is None:
            near = next((i for i in range(len(got)) if not used[i] and len(got[i]) == len(fr)),
                        None)
            if near is None:
                errs.append(f"{name}: no output frame of {len(fr)} bytes")
            else:
                a, b = got[near], fr
                k = next(i for i in range(len(b)) if a[i] != b[i])
                errs.append(f"{name}: byte {k} differs: got {a[k:k + 16].hex()} "
                            f"want {b[k:k + 16].hex()}")
            continue
        used[hit] = True
    for i, u in enumerate(used):
        if not u:
            errs.append(f"unexpected output frame {i}: {got[i][:64].hex()}")
    tot = stats["total"]
    by = tot["drops_by_reason"]
    if by.get("icmp_unrelated") != d4 + d6:
        errs.append(f"icmp_unrelated {by.get('icmp_unrelated')}, expected {d4 + d6}")
    if by.get("icmp_err_foreign") != f4 + f6:
        errs.append(f"icmp_err_foreign {by.get('icmp_err_foreign')}, expected {f4 + f6}")
    if by.get("reply_untracked") != 1:
        errs.append(f"reply_untracked {by.get('reply_untracked')}, expected 1 (SSH)")
    if tot["drops"] != d4 + d6 + f4 + f6 + 1:
        errs.append(f"drops {tot['drops']}, expected {d4 + d6 + f4 + f6 + 1}: "
                    f"{ {k: v for k, v in by.items() if v} }")
    if tot["icmp_err_fwd"] != 10:
        errs.append(f"icmp_err_fwd {tot['icmp_err_fwd']}, expected 10")
    for e in errs:
        print("FAIL:", e)
    print(f"nat icmp errors through flowgate: {sum(used)}/{len(exp)} expected "
          f"outputs, {len(ins)} inputs: {'FAIL' if errs else 'ok'}")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
