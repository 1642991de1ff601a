#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""fgctl flows watch: DESTROY events carry why the flow ended.

    test_watch_reason.py BUILD_DIR

N flows are open; a `fgctl --json flows watch` runs while `fgctl flows
delete --all` removes them: N DESTROY events arrive, one per flow, each with
"reason": "deleted" in its flow object (the daemon maps conntrack's destroy
reasons: expired, closed = expired after FIN/RST, evicted, deleted).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgdaemon import HANG_S, Daemon  # noqa: E402
from pktgen import eth, ip, ipv4, tcp  # noqa: E402

LB, NH = "02:00:00:00:00:01", "02:00:00:00:00:fe"
FLAGS = ["--mbufs", "8191", "--port-mac", "0,02:00:00:00:00:01",
         "--local", "10.0.0.1", "--gateway", "10.0.0.254",
         "--neigh", "10.0.0.254,02:00:00:00:00:fe",
         "--service", "10.100.0.1:80/tcp,mode=dsr-ipip,name=w",
         "--backend", "10.1.0.1", "--backend", "10.1.0.2"]
N = 50


def main():
    build = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="flowgate-watch.")
    errs = []
    frames = []
    for i in range(N):
        c = ip(f"172.16.2.{i + 1}")
        frames.append(eth(LB, NH, 0x0800, ipv4(c, ip("10.100.0.1"), 6,
                                               tcp(c, ip("10.100.0.1"), 41000 + i, 80, 0x02))))
    try:
        with Daemon(build, work, "wr", frames, FLAGS) as d:
            d.wait_rx(N)
            w = subprocess.Popen([d.fgctl_bin, "-s", d.sock, "--json", "flows", "watch"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            events = []

            def reader():
                for ln in w.stdout:
                    events.append(json.loads(ln))

            t = threading.Thread(target=reader, daemon=True)
            t.start()
            # the watch registered (polled, not slept on: a loaded machine
            # may take seconds to start fgctl), else the deletes go unseen
            deadline = time.monotonic() + HANG_S
            while json.loads(d.fgctl("--json", "ping").stdout)["control"]["watchers"] < 1:
                if time.monotonic() > deadline or w.poll() is not None:
                    raise RuntimeError("fgctl flows watch did not register")
                time.sleep(0.05)
            d.fgctl("flows", "delete", "--all")
            deadline = time.monotonic() + HANG_S
            while len(events) < N and time.monotonic() < deadline:
                time.sleep(0.1)
            w.terminate()
            w.wait(10)
            got = {(e["flow"]["src"], e["flow"]["sport"]) for e in events}
            want = {(f"172.16.2.{i + 1}", 41000 + i) for i in range(N)}
            bad = [e for e in events if e["event"] != "DESTROY" or
                   e["flow"].get("reason") != "deleted"]
            if len(events) != N or got != want or bad:
                errs.append(f"{len(events)} events (want {N} DESTROY/deleted), "
                            f"{len(want - got)} flows missing, wrong: {bad[:2]}")
    finally:
        if not errs:
            shutil.rmtree(work, ignore_errors=True)
    for e in errs:
        print("FAIL:", e)
    if errs:
        print("work dir kept:", work)
        return 1
    print(f"flows watch: {N} DESTROY events with reason 'deleted'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
