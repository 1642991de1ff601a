#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""fgctl flows get by either direction's tuple, against the real daemon.

    test_flows_get.py BUILD_DIR

A NAT flow is found by the client's tuple (client -> VIP) and by the reply
tuple a backend logs (backend:port -> balancer NAT address:port), so a
backend's log line leads to its client; a wrong NAT port finds nothing; a
DSR flow has no reply tuple through the balancer.
"""
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgdaemon import Daemon  # noqa: E402
from pktgen import eth, ip, ipv4, tcp  # noqa: E402

LB, NH = "02:00:00:00:00:01", "02:00:00:00:00:fe"
FLAGS = ["--mbufs", "8191", "--port-mac", "0,02:00:00:00:00:01",
         "--local", "10.0.0.1", "--gateway", "10.0.0.254",
         "--neigh", "10.0.0.254,02:00:00:00:00:fe",
         "--service", "10.100.0.3:8080/tcp,mode=nat,name=nat4",
         "--backend", "10.1.0.1:9000", "--backend", "10.1.0.2:9001",
         "--service", "10.100.0.1:80/tcp,mode=dsr-ipip,name=dsr4",
         "--backend", "10.1.0.5"]
N = 8


def syn(i, vip, port):
    c = ip(f"172.16.1.{i + 1}")
    return eth(LB, NH, 0x0800, ipv4(c, ip(vip), 6, tcp(c, ip(vip), 40000 + i, port, 0x02)))


# A SYN-only flow lives CT_ST_SYN_SENT's 30 s: on a loaded machine the
# checks of one daemon run can outlast that, and a flow that expired is
# found by neither tuple.  Such a run proves nothing either way: it is
# started again (a fresh daemon), and only a miss within SYN_SENT_S of
# the SYNs is a failure.
SYN_SENT_S = 30.0
ATTEMPTS = 5


def check(build, work, tag, frames, expect):
    """One daemon run; False when the flows may have expired meanwhile."""
    with Daemon(build, work, tag, frames, FLAGS) as d:
        d.wait_rx(len(frames))
        t_rx = time.monotonic()
        misses = []

        def get(src, dst):
            r = d.fgctl("--json", "flows", "get", src, dst, "tcp", check=False)
            return r.returncode, json.loads(r.stdout) if r.stdout.strip() else None

        def found(cond, what):
            if not cond:
                misses.append(what)

        flows = json.loads(d.fgctl("--json", "flows", "list").stdout)
        nat = [f for f in flows if f["service"] == "nat4"]
        found(len(nat) == N and all("nat_port" in f for f in nat),
              f"{len(nat)} NAT flows with nat_port: {nat[:1]}")
        for f in nat:
            client = f"{f['src']}:{f['sport']}"
            rc, fwd = get(client, f"{f['dst']}:{f['dport']}")
            found(rc == 0 and len(fwd) == 1, f"forward get {client}: {fwd}")
            back, lb = f"{f['backend']}:{f['backend_port']}", f"{f['nat_addr']}:{f['nat_port']}"
            rc, rep = get(back, lb)
            got = rep[0] if rc == 0 and rep else {}
            found(rc == 0 and len(rep) == 1 and
                  f"{got.get('src')}:{got.get('sport')}" == client,
                  f"reply-tuple get {back} -> {lb}: {rep}")
        if misses and time.monotonic() - t_rx >= SYN_SENT_S - 5:
            print(f"note: {len(misses)} lookups missed after "
                  f"{time.monotonic() - t_rx:.0f} s (SYN_SENT's timeout is {SYN_SENT_S:.0f} s): "
                  f"the flows may have expired; a fresh daemon again")
            return False
        for m in misses:
            expect(False, m)
        if not nat:
            return True
        f = nat[0]
        # a port no NAT flow holds (the allocator hands out ports in
        # order: nat_port + 1 is most often the next flow's)
        used = {g["nat_port"] for g in nat}
        wrong = next(p for p in range(f["nat_port"] + 1, f["nat_port"] + 65536)
                     if p % 65536 >= 1024 and p % 65536 not in used) % 65536
        rc, _ = get(f"{f['backend']}:{f['backend_port']}", f"{f['nat_addr']}:{wrong}")
        expect(rc != 0, "a wrong NAT port found a flow")
        dsr = [f for f in flows if f["service"] == "dsr4"]
        expect(len(dsr) == 1, f"one DSR flow: {dsr}")
        if dsr:
            rc, _ = get(f"{dsr[0]['backend']}:80", f"{dsr[0]['src']}:{dsr[0]['sport']}")
            expect(rc != 0, "a DSR flow was found by a backend->client tuple")
    return True


def main():
    build = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="flowgate-get.")
    errs = []

    def expect(cond, what):
        if not cond:
            errs.append(what)
            print("FAIL:", what)

    frames = [syn(i, "10.100.0.3", 8080) for i in range(N)] + [syn(N, "10.100.0.1", 80)]
    try:
        for i in range(ATTEMPTS):
            if check(build, work, f"get{i}", frames, expect):
                break
        else:
            expect(False, f"{ATTEMPTS} daemon runs each outlasted SYN_SENT's {SYN_SENT_S:.0f} s")
    finally:
        if not errs:
            shutil.rmtree(work, ignore_errors=True)
    if errs:
        print(f"{len(errs)} failures; work dir kept: {work}")
        return 1
    print(f"flows get: {N} NAT flows found by client and by reply tuple")
    return 0


if __name__ == "__main__":
    sys.exit(main())
