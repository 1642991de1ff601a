#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""State sync between two real flowgate daemons (issue 35), no root: both
on net_pcap, their sync on 127.0.0.1 (UDP), one shared key file.

    test_sync_daemon.py BUILD_DIR

  - node B (node 2) starts with no traffic; node A (node 1) reads N NAT
    SYNs from its pcap and opens N NAT flows;
  - B installs every one of them as a synced entry (`fgctl --json sync`:
    installed N, no refusal) and tracks N NAT flows (`flows count`);
  - datagrams to B's sync port that are not a peer's message (random
    bytes; a header under another key) are refused by name (bad_magic,
    bad_mac) and install nothing;
  - A sees B alive (its keepalives: last_rx_ms >= 0, records it sent: N);
    `fgctl sync` prints the peer table; /flowgate/sync telemetry is not
    checked here (tests/daemon/test_observability.py covers the socket).
Every wait polls for its effect (bounded by fgdaemon.HANG_S): no
wall-clock bound is asserted.
"""
import json
import os
import shutil
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgdaemon import HANG_S, Daemon  # noqa: E402
from pktgen import eth, ip, ipv4, tcp  # noqa: E402

LB, CL = "02:00:00:00:00:01", "02:00:00:00:00:aa"
N = 60
CFG = """port net_pcap0 {{ mac {lb}; local 10.0.0.1; gateway 10.0.0.254; }}
neighbour 10.0.0.254 {cl} port net_pcap0;
service nat4 10.100.0.3:80/tcp {{ mode nat; backend 10.1.0.1; backend 10.1.0.2; }}
sync {{
    listen 127.0.0.1:{me} node {node};
    peer {peer} 127.0.0.1:{other} node {pnode};
    key {key};
}}
"""


def free_port_pair():
    """two UDP ports in a row nobody holds now"""
    for _ in range(200):
        s1 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s1.bind(("127.0.0.1", 0))
        p = s1.getsockname()[1]
        s2 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s2.bind(("127.0.0.1", p + 1))
        except OSError:
            s1.close()
            s2.close()
            continue
        s1.close()
        s2.close()
        return p, p + 1
    raise RuntimeError("no two free UDP ports in a row")


def sync_of(d):
    r = d.fgctl("--json", "sync", check=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


def wait_for(what, fn):
    deadline = time.monotonic() + HANG_S
    while time.monotonic() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(0.05)
    raise RuntimeError(f"timed out waiting for {what}")


def main():
    build = sys.argv[1]
    work = tempfile.mkdtemp(prefix="fgsyncd")
    errs = []
    try:
        key = os.path.join(work, "sync.key")
        with open(key, "w") as f:
            f.write("daemon-test-shared-sync-key-0123456789\n")
        pa, pb = free_port_pair()
        cfg = {}
        for me, node, peer, other, pnode in (("a", 1, "b", pb, 2), ("b", 2, "a", pa, 1)):
            cfg[me] = os.path.join(work, f"{me}.conf")
            with open(cfg[me], "w") as f:
                f.write(CFG.format(lb=LB, cl=CL, me=pa if me == "a" else pb, node=node,
                                   peer=peer, other=other, pnode=pnode, key=key))
        flags = ["--ct-capacity", "1024", "--mbufs", "2047", "--idle-sleep=200"]
        cl, vip = ip("192.0.2.10"), ip("10.100.0.3")
        syns = [eth(LB, CL, 0x0800, ipv4(cl, vip, 6, tcp(cl, vip, 41000 + i, 80, 0x02)))
                for i in range(N)]
        with Daemon(build, work, "b", [], flags + ["-c", cfg["b"]]) as b:
            with Daemon(build, work, "a", syns, flags + ["-c", cfg["a"]]) as a:
                a.wait_rx(N)
                yb = wait_for(f"B installing {N} flows",
                              lambda: (lambda y: y if y and y["installed"] >= N else None)(
                                  sync_of(b)))
                if yb["installed"] != N:
                    errs.append(f"B installed {yb['installed']}, want {N}")
                bad = {k: v for k, v in yb["refused"].items() if v}
                bad.update({k: v for k, v in yb["install_refused"].items() if v})
                if bad:
                    errs.append(f"B refused: {bad}")
                cnt = json.loads(b.fgctl("--json", "flows", "count").stdout)
                if cnt.get("nat") != N:
                    errs.append(f"B tracks {cnt.get('nat')} NAT flows, want {N}: {cnt}")
                # foreign datagrams: refused by name, nothing installed
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.sendto(os.urandom(200).replace(b"F", b"x"), ("127.0.0.1", pb))
                s.sendto(b"FGSY\x01\x01\x00\x00\x00\x00\x00\x01" + b"\x00" * 200,
                         ("127.0.0.1", pb))
                s.close()
                yb = wait_for("B refusing the foreign datagrams",
                              lambda: (lambda y: y if y and y["refused"]["bad_magic"] >= 1
                                       and y["refused"]["bad_mac"] >= 1 else None)(sync_of(b)))
                if yb["installed"] != N:
                    errs.append(f"foreign datagrams changed B: installed {yb['installed']}")
                ya = wait_for("A hearing B's keepalives, its queue sent",
                              lambda: (lambda y: y if y and y["peers"][0]["last_rx_ms"] >= 0
                                       and y["backlog"] == 0 and y["sent_records"] >= N
                                       and y["sent_records"] == y["queued"]
                                       else None)(sync_of(a)))
                # N new flows, and N more if A's catch-up walk for B (B's
                # first message: a peer's start) ran after them
                if ya["sent_records"] not in (N, 2 * N) or ya["queue_full"]:
                    errs.append(f"A sent {ya['sent_records']} / queued {ya['queued']} / "
                                f"queue_full {ya['queue_full']}, want {N} or {2 * N} / "
                                "as many / 0")
                # each heard the other start and sent it what it held, then
                # said so: both past the start-up gate, on that word
                for name, d in (("A", a), ("B", b)):
                    y = wait_for(f"{name} ready (its peer's catch-up received)",
                                 lambda d=d: (lambda y: y if y and y["ready"] and
                                              y["peers"][0]["caught_up"] else None)(sync_of(d)))
                    if not y:
                        errs.append(f"{name} not ready: {sync_of(d)}")
                txt = b.fgctl("sync").stdout
                if "PEER" not in txt or "127.0.0.1:%d" % pa not in txt:
                    errs.append(f"fgctl sync text: {txt}")
                print(txt, end="")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for e in errs:
        print("FAIL:", e)
    if not errs:
        print(f"sync-daemon: {N} NAT flows of node A installed on node B, foreign "
              "datagrams refused by name")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
