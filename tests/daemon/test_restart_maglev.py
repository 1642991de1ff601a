#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Issue 9 defect 6: a restart keeps DSR flows on their backends.

    test_restart_maglev.py BUILD_DIR

Backend ids are assigned on start (in the order the backends are listed),
and a restart after runtime changes lists the same set in another order.
Two runs of flowgate over the same SYNs, with the same backend set given in
different orders (so every backend gets another id): each flow must leave
for the same backend in both runs, because the Maglev table depends on the
backends' address:port only.
"""
import os
import shutil
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgdaemon import run_daemon  # noqa: E402
from pktgen import eth, ip, ipv4, tcp  # noqa: E402

LB, NH = "02:00:00:00:00:01", "02:00:00:00:00:fe"
VIP = "10.100.0.1"
FLOWS = 400
BASE = [
    "--port-mac", "0,02:00:00:00:00:01", "--local", "10.0.0.1",
    "--gateway", "10.0.0.254", "--neigh", "10.0.0.254,02:00:00:00:00:fe",
    "--service", f"{VIP}:80/tcp,mode=dsr-ipip,name=web",
]
# (address, weight): unequal weights, so the round order matters too
BACKENDS = [("10.1.0.1", 1), ("10.1.0.2", 2), ("10.1.0.3", 1),
            ("10.1.0.4", 3), ("10.1.0.5", 1)]
ORDERS = {"listed": [0, 1, 2, 3, 4], "reversed": [4, 3, 2, 1, 0],
          "shuffled": [2, 4, 0, 3, 1]}


def syn(i):
    c = ip(f"172.16.{i >> 8}.{i & 255}")
    return eth(LB, NH, 0x0800, ipv4(c, ip(VIP), 6, tcp(c, ip(VIP), 20000 + i, 80, 0x02)))


def backends_by_flow(frames):
    """{client sport: backend} from IPIP output (outer dst = backend)."""
    out = {}
    for f in frames:
        if len(f) < 14 + 20 + 20 + 4 or f[12:14] != b"\x08\x00" or f[14 + 9] != 4:
            continue
        outer_dst = ".".join(str(b) for b in f[30:34])
        sport = struct.unpack("!H", f[14 + 20 + 20:14 + 20 + 22])[0]
        out[sport] = outer_dst
    return out


def main():
    build = os.path.abspath(sys.argv[1])
    frames = [syn(i) for i in range(FLOWS)]
    work = tempfile.mkdtemp(prefix="flowgate-restart.")
    runs = {}
    try:
        for name, order in ORDERS.items():
            flags = list(BASE)
            for k in order:
                addr, w = BACKENDS[k]
                flags += ["--backend", f"{addr},weight={w}"]
            out, st, _ = run_daemon(build, work, name, frames, flags)
            runs[name] = backends_by_flow(out)
            if len(runs[name]) != FLOWS:
                print(f"FAIL: run {name}: {len(runs[name])} of {FLOWS} flows "
                      f"left through IPIP (stats {st['total']})")
                return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ref = runs["listed"]
    bad = 0
    for name, got in runs.items():
        moved = sum(1 for k in ref if got.get(k) != ref[k])
        print(f"{name}: {moved} of {FLOWS} flows on another backend than 'listed'")
        bad += moved
    used = set(ref.values())
    if len(used) != len(BACKENDS):
        print(f"FAIL: only {sorted(used)} used")
        return 1
    print(f"restart keeps flows: {'FAIL' if bad else 'ok'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
