#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""fgctl flows against the real daemon: streamed listing, filters, limit,
delete, count, and (with --watch) flows watch events.

    test_flows.py BUILD_DIR [--flows N]

One flowgate on net_pcap gets N IPv4 SYNs to a DSR service, N/4 IPv6 SYNs
to a DSR service and N/4 IPv4 SYNs to a NAT service (all distinct flows).
The table is listed in chunks of 4096 conntrack slots (one mailbox request
each, resumed from a cursor), so N >= 20000 spans many chunks: every flow
must be listed exactly once.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgdaemon import Daemon  # noqa: E402
from pktgen import eth, ip, ipv4, ipv6, tcp  # noqa: E402

LB, NH = "02:00:00:00:00:01", "02:00:00:00:00:fe"
BASE_FLAGS = [
    "--mbufs", "8191",
    "--port-mac", "0,02:00:00:00:00:01",
    "--local", "10.0.0.1", "--local", "fd00::1",
    "--gateway", "10.0.0.254", "--gateway", "fd00::fe",
    "--neigh", "10.0.0.254,02:00:00:00:00:fe", "--neigh", "fd00::fe,02:00:00:00:00:fe",
    "--service", "10.100.0.1:80/tcp,mode=dsr-ipip,name=dsr4",
    "--backend", "10.1.0.1", "--backend", "10.1.0.2", "--backend", "10.1.0.3",
    "--service", "[fd00:100::1]:80/tcp,mode=dsr-ipip,name=dsr6",
    "--backend", "[fd00:1::1]", "--backend", "[fd00:1::2]",
    "--service", "10.100.0.3:80/tcp,mode=nat,name=nat4",
    "--backend", "10.1.0.1", "--backend", "10.1.0.2",
]


def syn4(i, vip):
    c = ip(f"172.{16 + (i >> 16)}.{(i >> 8) & 255}.{i & 255}")
    return eth(LB, NH, 0x0800, ipv4(c, ip(vip), 6, tcp(c, ip(vip), 10000 + i % 50000, 80, 0x02)))


def syn6(i):
    c = ip(f"2001:db8::{i >> 16:x}:{i & 0xffff:x}")
    v = ip("fd00:100::1")
    return eth(LB, NH, 0x86DD, ipv6(c, v, 6, tcp(c, v, 10000 + i % 50000, 80, 0x02)))


def flows_list(d, *args):
    r = d.fgctl("--json", "flows", "list", *args)
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--flows", type=int, default=20000)
    a = ap.parse_args()
    n4, n6, nn = a.flows, a.flows // 4, a.flows // 4
    frames = ([syn4(i, "10.100.0.1") for i in range(n4)] + [syn6(i) for i in range(n6)]
              + [syn4(i, "10.100.0.3") for i in range(nn)])
    total = n4 + n6 + nn
    errs = []

    def expect(cond, what):
        if not cond:
            errs.append(what)
            print("FAIL:", what)

    work = tempfile.mkdtemp(prefix="flowgate-flows.")
    try:
        cap = 1 << (total * 2).bit_length()
        with Daemon(os.path.abspath(a.build), work, "fl", frames,
                    BASE_FLAGS + ["--ct-capacity", str(cap)]) as d:
            st = d.wait_rx(len(frames))
            expect(st["total"]["new_flows"] == total,
                   f"new_flows {st['total']['new_flows']}, sent {total}")
            t0 = time.monotonic()
            fl = flows_list(d)
            dt = time.monotonic() - t0
            keys = {(f["src"], f["sport"], f["dst"], f["dport"]) for f in fl}
            expect(len(fl) == total, f"flows list: {len(fl)} flows, expected {total}")
            expect(len(keys) == len(fl), f"flows list: {len(fl) - len(keys)} duplicates")
            print(f"flows list --json: {len(fl)} flows in {dt:.2f} s")
            for svc, n in (("dsr4", n4), ("dsr6", n6), ("nat4", nn)):
                got = flows_list(d, "--service", svc)
                expect(len(got) == n, f"--service {svc}: {len(got)}, expected {n}")
                expect(all(f["service"] == svc for f in got), f"--service {svc}: other services")
            nat = flows_list(d, "--service", "nat4", "--limit", "5")
            expect(len(nat) == 5, f"--limit 5: {len(nat)}")
            expect(all(f.get("nat_addr") == "10.0.0.1" and 1024 <= f.get("nat_port", 0)
                       for f in nat), f"NAT flows without nat_addr/nat_port: {nat[:1]}")
            lim = flows_list(d, "--limit", "4097")
            expect(len(lim) == 4097, f"--limit 4097 (over a chunk): {len(lim)}")
            be = flows_list(d, "--backend", "10.1.0.2")
            expect(be and all(f["backend"] == "10.1.0.2" for f in be),
                   "--backend 10.1.0.2: wrong flows")
            cnt = json.loads(d.fgctl("--json", "flows", "count").stdout)
            expect(cnt.get("total") == total, f"flows count: {cnt}")
            r = d.fgctl("--json", "flows", "delete", "--service", "dsr6")
            dj = json.loads(r.stdout) if r.stdout.strip() else {}
            left = flows_list(d)
            expect(len(left) == total - n6, f"after delete --service dsr6: {len(left)} left "
                   f"(reply {dj}), expected {total - n6}")
            expect(not flows_list(d, "--service", "dsr6"), "dsr6 flows left after delete")
            r = d.fgctl("flows", "delete", check=False)
            expect(r.returncode == 2, f"flows delete without filter: rc {r.returncode}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"flows through fgctl: {'FAIL' if errs else 'ok'} ({total} flows)")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
