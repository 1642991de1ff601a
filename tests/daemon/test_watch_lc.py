#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""fgctl flows watch and least-connections accuracy through the real daemon.

    test_watch_lc.py BUILD_DIR            (root: a private network namespace)

flowgate runs in a namespace of its own with net_pcap receiving from a veth
(rx_iface_in) so packets can be injected after `fgctl flows watch` is
attached; output goes to a pcap file.  Service: DSR, scheduler lc, two
backends of weight 1; conntrack syn_sent timeout 5 s.

Each step waits for its effect (flow counts and states read back through
fgctl, events in the watch output) instead of sleeping a fixed time, so a
busy machine slows it down without failing it.  Namespace fgw<PID>, files
in /tmp/flowgate-fgw<PID>: scripts/netns-teardown.sh --sweep removes them
if this test is killed.

  1. 20 SYNs                      -> 10 flows per backend (least-connections)
  2. ACK the flows of backend A   -> ESTABLISHED (long timeout)
  3. wait: B's 10 SYN_SENT flows expire; the conntrack destroy hook must give
     their least-connections slots back (lc counts A 10, B 0)
  4. 10 new SYNs                  -> all 10 on backend B (without the hook:
                                     5 and 5)
  watch: a NEW event for each of the 30 flows, a DESTROY event for each of
  B's 10 expired flows (and none for A's), keys matching the injected flows.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fgdaemon import ERRS, HANG_S, expect  # noqa: E402
from pktgen import eth, ip, ipv4, tcp  # noqa: E402

LB, NH = "02:00:00:00:00:01", "02:00:00:00:00:fe"
VIP = "10.100.0.5"

CONF = """control_socket {sock};
conntrack {{
    capacity 4096;
    timeout syn_sent 5s;
    timeout established 10m;
}}
port net_pcap0 {{
    mac 02:00:00:00:00:01;
    local 10.0.0.1;
    gateway 10.0.0.254;
}}
neighbour 10.0.0.254 02:00:00:00:00:fe port net_pcap0;
service lc4 {vip}:80/tcp {{
    mode dsr-ipip;
    scheduler lc;
    backend 10.1.0.1;
    backend 10.1.0.2;
}}
"""


def client(i):
    return f"172.20.{i >> 8}.{i & 255}"


def frame(i, flags):
    c, v = ip(client(i)), ip(VIP)
    return eth(LB, NH, 0x0800, ipv4(c, v, 6, tcp(c, v, 20000 + i, 80, flags,
                                                 seq=1000 if flags == 0x02 else 1001)))


def sh(*cmd, check=True):
    return subprocess.run(list(cmd), check=check, capture_output=True, text=True)


class Netns:
    def __init__(self, name):
        self.name = name

    def __enter__(self):
        sh("ip", "netns", "add", self.name)
        n = ["ip", "netns", "exec", self.name]
        sh(*n, "ip", "link", "add", "fgw0", "type", "veth", "peer", "name", "fgw1")
        for d in ("fgw0", "fgw1"):
            sh(*n, "sysctl", "-qw", f"net.ipv6.conf.{d}.disable_ipv6=1", check=False)
            sh(*n, "ip", "link", "set", d, "up")
        return self

    def __exit__(self, *exc):
        sh("ip", "netns", "del", self.name, check=False)
        return False

    def cmd(self, *c):
        return ["ip", "netns", "exec", self.name] + list(c)


def prepare(ns_name):
    """Sweeps what earlier runs left (scripts/netns-teardown.sh --sweep) and
    makes this run's work folder; returns (work, its control socket path)."""
    root = os.path.dirname(os.path.dirname(HERE))
    subprocess.run([os.path.join(root, "scripts", "netns-teardown.sh"), "--sweep"], check=False)
    work = f"/tmp/flowgate-{ns_name}"
    os.makedirs(work, exist_ok=True)
    return work, os.path.join(work, "ctl.sock")


def start_flowgate(ns, build, work, conf, mbufs):
    """flowgate in @ns with config @conf, receiving on fgw0 (what inject()
    sends into fgw1) and writing what it sends to work/out.pcap; returns
    its Popen once the control socket (work/ctl.sock) is up."""
    sock = os.path.join(work, "ctl.sock")
    with open(os.path.join(work, "flowgate.log"), "w") as log:   # the child keeps its own
        fgp = subprocess.Popen(ns.cmd(
            os.path.join(build, "dataplane", "flowgate"), "--no-huge", "--no-shconf", "-m", "256",
            "--file-prefix", ns.name, "-l", "0,1",
            "--no-pci", f"--vdev=net_pcap0,rx_iface_in=fgw0,tx_pcap={work}/out.pcap",
            "--", "-c", conf, "--mbufs", str(mbufs)), stdout=log, stderr=subprocess.STDOUT)
    for _ in range(300):
        if os.path.exists(sock) or fgp.poll() is not None:
            break
        time.sleep(0.05)
    if not os.path.exists(sock):
        raise RuntimeError("flowgate did not start: "
                           + open(os.path.join(work, "flowgate.log")).read()[-2000:])
    return fgp


def wait_for(get, done, timeout=HANG_S):
    """Polls get() until done(value) or @timeout s (a guard against a hang,
    not a bound the test asserts); returns the last value."""
    end = time.monotonic() + timeout
    v = get()
    while not done(v) and time.monotonic() < end:
        time.sleep(0.1)
        v = get()
    return v


def deliver(ns, ids, flags, get, mine, rounds=5):
    """Injects frame(i, flags) for @ids until get() (flows, filtered by
    mine) holds each of them: on a busy machine the capture side may miss
    a frame, and a TCP client would retransmit it too.  Returns the flows."""
    ids = list(ids)
    fl = []
    for _ in range(rounds):
        have = {int(f["sport"]) - 20000 for f in fl if mine(f)}
        todo = [i for i in ids if i not in have]
        if not todo:
            break
        inject(ns, [frame(i, flags) for i in todo])
        fl = wait_for(get, lambda v: {int(f["sport"]) - 20000 for f in v if mine(f)} >= set(ids),
                      timeout=2.0)
    # the last frames may still be on their way on a loaded machine: the
    # hang guard, not a bound (returns at once when they all arrived)
    fl = wait_for(get, lambda v: {int(f["sport"]) - 20000 for f in v if mine(f)} >= set(ids))
    return [f for f in fl if mine(f)]


def inject(ns, frames):
    """Sends @frames into fgw1 (arrive on fgw0, flowgate's RX)."""
    path = tempfile.mktemp(prefix="fgw-inject.")
    with open(path, "wb") as f:
        for fr in frames:
            f.write(len(fr).to_bytes(2, "big") + fr)
    try:
        sh(*ns.cmd(sys.executable, os.path.abspath(__file__), "--inject", "fgw1", path))
    finally:
        os.unlink(path)


def inject_main(iface, path):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    data = open(path, "rb").read()
    off = 0
    while off < len(data):
        n = int.from_bytes(data[off:off + 2], "big")
        s.send(data[off + 2:off + 2 + n])
        off += 2 + n
        time.sleep(0.0005)
    return 0


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--inject":
        return inject_main(sys.argv[2], sys.argv[3])
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("watch/lc test: needs root (network namespace); skipped")
        return 77
    build = os.path.abspath(sys.argv[1])
    fgctl = os.path.join(build, "control", "fgctl")
    ns_name = f"fgw{os.getpid()}"
    work, sock = prepare(ns_name)
    conf = os.path.join(work, "lc.conf")
    with open(conf, "w") as f:
        f.write(CONF.format(sock=sock, vip=VIP))
    errs = ERRS   # fgdaemon.expect() records into it

    def flows(*args):
        r = subprocess.run([fgctl, "-s", sock, "--json", "flows", "list", *args],
                           capture_output=True, text=True, timeout=20)
        if r.returncode != 0:
            raise RuntimeError(f"flows list: {r.stderr}")
        return json.loads(r.stdout)

    fgp = watch = None
    try:
        with Netns(ns_name) as ns:
            fgp = start_flowgate(ns, build, work, conf, 4095)
            wout = open(os.path.join(work, "watch.json"), "w")
            watch = subprocess.Popen([fgctl, "-s", sock, "--json", "flows", "watch"],
                                     stdout=wout, stderr=subprocess.STDOUT)

            def watchers():
                r = subprocess.run([fgctl, "-s", sock, "--json", "ping"],
                                   capture_output=True, text=True, timeout=20)
                try:
                    return json.loads(r.stdout)["control"]["watchers"]
                except (ValueError, KeyError, TypeError):
                    return 0
            expect(wait_for(watchers, lambda n: n >= 1) >= 1, "fgctl flows watch did not attach")
            # 1. 20 SYNs
            fl = deliver(ns, range(20), 0x02, lambda: flows(), lambda f: True)
            per = {}
            for f in fl:
                per.setdefault(f["backend"], []).append(f)
            expect(len(fl) == 20 and sorted(len(v) for v in per.values()) == [10, 10],
                   f"phase 1: {len(fl)} flows, per backend "
                   f"{ {k: len(v) for k, v in per.items()} } (want 10/10)")
            a_addr = sorted(per)[0] if per else None
            b_addr = sorted(per)[-1] if per else None
            a_ids = [int(f["sport"]) - 20000 for f in per.get(a_addr, [])]
            b_ids = [int(f["sport"]) - 20000 for f in per.get(b_addr, [])]
            # 2. establish A's flows
            est = deliver(ns, a_ids, 0x10, lambda: flows("--state", "ESTABLISHED"), lambda f: True)
            expect(len(est) == len(a_ids), f"phase 2: {len(est)} of A's {len(a_ids)} flows ESTABLISHED")
            # 3. B's SYN_SENT flows expire (5 s)
            left = wait_for(lambda: flows(), lambda v: len(v) <= len(a_ids))
            expect(len(left) == len(a_ids) and all(f["backend"] == a_addr for f in left),
                   f"phase 3: {len(left)} flows left, expected A's {len(a_ids)} "
                   f"({[f['state'] for f in left][:5]})")
            # 4. 10 new SYNs: least-connections must send all to B
            new = deliver(ns, range(100, 110), 0x02, lambda: flows(),
                          lambda f: int(f["sport"]) >= 20100)
            on_b = sum(1 for f in new if f["backend"] == b_addr)
            expect(len(new) == 10 and on_b == 10,
                   f"phase 4: {on_b}/{len(new)} new flows on the emptier backend "
                   f"{b_addr} (least-connections must count expired flows out)")
            # every event written: 30 NEW + B's DESTROYs
            wait_for(lambda: open(os.path.join(work, "watch.json")).read().count('"event"'),
                     lambda n: n >= 30 + len(b_ids))
            watch.send_signal(signal.SIGINT)
            watch.wait(timeout=10)
            wout.close()
            ev = {"NEW": set(), "DESTROY": set()}
            n_ev = 0
            for line in open(os.path.join(work, "watch.json")):
                line = line.strip()
                if not line.startswith("{"):
                    continue
                o = json.loads(line)
                n_ev += 1
                fl_ = o["flow"]
                ev.setdefault(o["event"], set()).add(int(fl_["sport"]) - 20000)
            want_new = set(range(20)) | set(range(100, 110))
            expect(ev["NEW"] == want_new,
                   f"watch NEW: {len(ev['NEW'])} flows, missing "
                   f"{sorted(want_new - ev['NEW'])[:10]}, extra {sorted(ev['NEW'] - want_new)[:10]}")
            expect(set(b_ids) <= ev["DESTROY"] and not (set(a_ids) & ev["DESTROY"]),
                   f"watch DESTROY: {sorted(ev['DESTROY'])} (want B's {sorted(b_ids)}, "
                   f"none of A's)")
            st = json.loads(subprocess.run([fgctl, "-s", sock, "--json", "stats"],
                                           capture_output=True, text=True).stdout)
            expect(st["total"].get("watch_dropped") == 0,
                   f"watch_dropped {st['total'].get('watch_dropped')}")
            print(f"watch: {n_ev} events; lc: phase-4 flows on emptier backend {on_b}/10")
            fgp.send_signal(signal.SIGINT)
            rc = fgp.wait(timeout=20)
            expect(rc == 0, f"flowgate exit {rc}")
    finally:
        for p in (watch, fgp):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
        if errs:
            print(open(os.path.join(work, "flowgate.log")).read()[-1500:])
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(f"/var/run/dpdk/{ns_name}", ignore_errors=True)
    print(f"flows watch + least-connections: {'FAIL' if errs else 'ok'}")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
