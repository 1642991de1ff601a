#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Issue 14: flowgate as a service.

    test_service.py BUILD_DIR VERSION SOURCE_DIR

Every run of the real daemon is on net_pcap (--no-pci, --no-huge, its own
--file-prefix, no flowgate memory option: the daemon picks its default),
bounded in time, and followed by a leftovers check: no control socket, no
telemetry socket, no EAL runtime directory, no hugepage file of its prefix.

1. options: `flowgate --help` lists every option of docs/CONFIG.md's
   table and the other way round; `--version` in flowgate and fgctl prints
   meson's version; bad values exit 2 naming the option, before EAL (no
   runtime directory appears).
2. SIGTERM and SIGINT: exit 0, final counters, nothing left.
3. SIGHUP: with 400 tracked flows (seeded random clients), a changed file
   is applied (config show follows) and no flow moves to another backend;
   an invalid file and a restart-only change are refused, logged with the
   reason, and config show is unchanged.
4. audit: each fgctl change (and each SIGHUP apply) is exactly one
   "flowgate: audit:" line naming the fgctl process's uid and pid, the
   command and the result; read-only commands log none.
5. a failed start after EAL init (too few mbufs for net_pcap's ring, too
   few lcores for --workers) exits 1 naming the option, nothing left.
6. SIGKILL, then a restart with the same command line: it starts, serves,
   stops cleanly, and nothing is left.
7. systemd's notify protocol on a fake $NOTIFY_SOCKET: READY=1 once it
   serves, WATCHDOG=1 while the worker loops, RELOADING=1 / READY=1
   around SIGHUP, STOPPING=1.
"""
import glob
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgdaemon import ERRS, HANG_S, expect, pcap_write, report, work_done  # noqa: E402
from pktgen import eth, ip, ipv4, tcp  # noqa: E402



CONF = """conntrack {
    capacity 4096;
    timeout syn_sent 10m;
    timeout established 10m;
}
port net_pcap0 {
    local 10.200.0.2;
    gateway 10.200.0.1;
}
neighbour 10.200.0.1 02:00:00:00:00:aa port net_pcap0;
service web 10.100.0.1:80/tcp {
    mode dsr-ipip;
    backend 10.200.0.11;
    backend 10.200.0.12;
    backend 10.200.0.13 weight 2;
}
"""


def frames(n, seed):
    rnd = random.Random(seed)
    out, seen = [], set()
    while len(out) < n:
        c = f"10.{rnd.randrange(1, 250)}.{rnd.randrange(256)}.{rnd.randrange(1, 255)}"
        sport = rnd.randrange(1024, 65535)
        if (c, sport) in seen:
            continue
        seen.add((c, sport))
        s, d = ip(c), ip("10.100.0.1")
        out.append(eth("02:00:00:00:00:01", "02:00:00:00:00:02", 0x0800,
                       ipv4(s, d, 6, tcp(s, d, sport, 80, 0x02))))
    return out


def runtime_dirs(prefix):
    bases = ["/var/run/dpdk", os.path.join(os.environ.get("XDG_RUNTIME_DIR", "/nonexistent"),
                                          "dpdk"), "/tmp/dpdk"]
    return [os.path.join(b, prefix) for b in bases]


def hugepage_files(prefix):
    found = []
    for line in open("/proc/mounts"):
        f = line.split()
        if len(f) > 2 and f[2] == "hugetlbfs":
            found += glob.glob(os.path.join(f[1], prefix + "map_*"))
    return found


class Run:
    """One flowgate process; stderr+stdout to a log file."""

    def __init__(self, a, work, tag, pcap, flags, lcores="0,1", vdev_extra=""):
        self.a, self.work, self.tag = a, work, tag
        self.prefix = f"fgsvc{os.getpid()}{tag}"
        self.sock = os.path.join(work, f"{tag}.sock")
        self.logf = os.path.join(work, f"{tag}.log")
        self.out = os.path.join(work, f"{tag}-out.pcap")
        self.cmd = [os.path.join(a.build, "dataplane", "flowgate"), "-l", lcores,
                    "--no-huge", "-m", "512", "--file-prefix", self.prefix,
                    "--no-pci", f"--vdev=net_pcap0,rx_pcap={pcap},tx_pcap={self.out}{vdev_extra}",
                    "--", "-s", self.sock] + flags
        self.p = None

    def start(self, wait=True):
        self.lf = open(self.logf, "a")
        self.p = subprocess.Popen(self.cmd, stdout=self.lf, stderr=subprocess.STDOUT)
        if not wait:
            return self
        deadline = time.monotonic() + HANG_S
        while time.monotonic() < deadline:
            if self.fgctl("ping", check=False).returncode == 0:
                return self
            if self.p.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"{self.tag}: flowgate did not start:\n{self.log()[-3000:]}")

    def log(self):
        return open(self.logf).read()

    def fgctl(self, *args, check=True, pid_out=None):
        p = subprocess.Popen([os.path.join(self.a.build, "control", "fgctl"), "-s",
                              self.sock] + list(args), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        if pid_out is not None:
            pid_out.append(p.pid)
        o, e = p.communicate(timeout=60)
        r = subprocess.CompletedProcess(p.args, p.returncode, o, e)
        if check and r.returncode != 0:
            raise RuntimeError(f"fgctl {' '.join(args)}: rc {r.returncode}: {e}")
        return r

    def signal(self, sig):
        self.p.send_signal(sig)

    def wait(self, timeout=HANG_S):
        try:
            return self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            return None
        finally:
            self.lf.close()

    def wait_log(self, pattern, count=1, timeout=HANG_S):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(re.findall(pattern, self.log())) >= count:
                return True
            time.sleep(0.05)
        return False

    def leftovers(self):
        left = [p for p in [self.sock] if os.path.exists(p)]
        left += [d for d in runtime_dirs(self.prefix) if os.path.exists(d)]
        left += hugepage_files(self.prefix)
        return left


def check_options(a, work):
    fg = os.path.join(a.build, "dataplane", "flowgate")
    fgctl = os.path.join(a.build, "control", "fgctl")
    h = subprocess.run([fg, "--help"], capture_output=True, text=True, timeout=30)
    expect(h.returncode == 0, f"flowgate --help: rc {h.returncode}")
    listed = set(re.findall(r"^\s+(?:-\w, )?--([a-z][a-z0-9-]*)", h.stdout, re.M))
    doc = open(os.path.join(a.source, "docs", "CONFIG.md")).read()
    table = set(re.findall(r"^\| `--([a-z][a-z0-9-]*)", doc, re.M))
    expect(len(listed) >= 20, f"flowgate --help lists {len(listed)} options: {h.stdout[:300]}")
    expect(listed == table, f"--help vs docs/CONFIG.md table: only in --help "
           f"{sorted(listed - table)}, only in the doc {sorted(table - listed)}")
    expect("EAL common options" not in h.stdout, "flowgate --help printed EAL's help")
    for b in (fg, fgctl):
        v = subprocess.run([b, "--version"], capture_output=True, text=True, timeout=30)
        expect(v.returncode == 0 and a.version in v.stdout,
               f"{os.path.basename(b)} --version: rc {v.returncode}: {v.stdout!r}")
    v = subprocess.run([fg, "--version"], capture_output=True, text=True, timeout=30)
    expect("DPDK" in v.stdout and "CUDA" in v.stdout and "march" in v.stdout,
           f"flowgate --version lacks build options: {v.stdout!r}")
    # a bad value never reaches EAL: exit 2, the option named, no runtime dir
    for opt, bad in (("--workers", "abc"), ("--mbufs", "xyz"), ("--ct-capacity", "10"),
                     ("--service", "10.0.0.1:80,on-fail=never"), ("--icmp-rate", "-1"),
                     ("--mtu", "9"), ("--log-level", "loud")):
        prefix = f"fgsvc{os.getpid()}bad"
        r = subprocess.run([fg, "--no-huge", "--file-prefix", prefix,
                            "--no-pci", "--vdev=net_null0", "--", opt, bad],
                           capture_output=True, text=True, timeout=30)
        expect(r.returncode == 2 and f"flowgate: {opt} {bad}" in r.stderr,
               f"{opt} {bad}: rc {r.returncode}: {r.stderr!r}")
        expect(not any(os.path.exists(d) for d in runtime_dirs(prefix)),
               f"{opt} {bad}: EAL ran before the option was refused")


def check_stop(a, work, pcap, conf, sig):
    tag = "term" if sig == signal.SIGTERM else "int"
    r = Run(a, work, tag, pcap, ["-c", conf]).start()
    r.signal(sig)
    rc = r.wait()
    log = r.log()
    expect(rc == 0, f"{tag}: rc {rc}")
    expect("final counters" in log and "flowgate: stopped cleanly" in log,
           f"{tag}: no final counters / clean stop:\n{log[-1500:]}")
    expect(re.search(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z notice flowgate: running:",
                     log, re.M), f"{tag}: log lines carry no timestamp / level:\n{log[:800]}")
    expect(not r.leftovers(), f"{tag}: left behind {r.leftovers()}")


def flows_by_backend(r):
    fl = json.loads(r.fgctl("--json", "flows", "list").stdout)
    return {(f["src"], f["sport"]): (f["backend"], f["backend_id"]) for f in fl}


def check_reload_and_audit(a, work, pcap, conf, n_flows):
    r = Run(a, work, "hup", pcap, ["-c", conf]).start()
    uid = os.getuid()
    try:
        deadline = time.monotonic() + HANG_S
        while time.monotonic() < deadline:
            st = json.loads(r.fgctl("--json", "stats").stdout)
            if st["total"]["rx_packets"] >= n_flows:
                break
            time.sleep(0.05)
        before = flows_by_backend(r)
        expect(len(before) == n_flows, f"hup: {len(before)} flows tracked of {n_flows}")
        expect(len(set(before.values())) == 3, f"hup: flows on {set(before.values())}")

        # audit: one line per change, none for reads
        changes = [("backend.drain", ["backend", "drain", "web", "10.200.0.11"], 0),
                   ("backend.undrain", ["backend", "undrain", "web", "10.200.0.11"], 0),
                   ("backend.weight", ["backend", "weight", "web", "10.200.0.12", "3"], 0),
                   ("backend.add", ["backend", "add", "web", "10.200.0.15"], 0),
                   ("backend.del", ["backend", "del", "web", "10.200.0.15"], 0),
                   ("backend.del", ["backend", "del", "web", "10.200.0.99"], 1),
                   ("service.add", ["service", "add", "10.100.0.9:81/tcp"], 0),
                   ("service.del", ["service", "del", "10.100.0.9:81/tcp"], 0),
                   ("flows.delete", ["flows", "delete", "--service", "web", "--backend",
                                     "10.200.0.99"], 0),
                   ("config.apply", ["config", "apply", conf], 0)]
        for cmd, args, want_rc in changes:
            pids = []
            res = r.fgctl(*args, check=False, pid_out=pids)
            expect(res.returncode == want_rc, f"fgctl {' '.join(args)}: rc {res.returncode} "
                   f"{res.stderr}")
            pat = rf"flowgate: audit: uid={uid} pid={pids[0]} cmd={re.escape(cmd)} args=\S+ " \
                  rf"result={'ok' if want_rc == 0 else 'refused'}"
            expect(r.wait_log(pat, 1), f"no audit line for {cmd} ({args})")
            expect(len(re.findall(rf"pid={pids[0]} ", r.log())) == 1,
                   f"{cmd}: not exactly one audit line")
        for args in (["stats"], ["config", "show"], ["flows", "count"], ["service", "list"]):
            pids = []
            r.fgctl(*args, pid_out=pids)
            time.sleep(0.05)
            expect(f"pid={pids[0]} " not in r.log(), f"read-only {args} was audited")
        n_audit = len(re.findall(r"flowgate: audit: ", r.log()))
        expect(n_audit == len(changes), f"{n_audit} audit lines for {len(changes)} changes")

        # SIGHUP with a changed file: applied, no tracked flow moves
        text = open(conf).read()
        changed = text.replace("backend 10.200.0.13 weight 2;",
                               "backend 10.200.0.13 weight 5;\n    backend 10.200.0.14;")
        open(conf, "w").write(changed)
        r.signal(signal.SIGHUP)
        expect(r.wait_log(r"SIGHUP: \S+ applied"), "SIGHUP: valid file not applied:\n"
               + r.log()[-1500:])
        show = r.fgctl("config", "show").stdout
        expect("10.200.0.14" in show and "weight 5" in show, f"SIGHUP: show: {show}")
        after = flows_by_backend(r)
        moved = [k for k in before if after.get(k) != before[k]]
        expect(not moved, f"SIGHUP moved {len(moved)} flows, e.g. {moved[:3]}")
        expect(r.wait_log(r"audit: uid=\d+ pid=%d cmd=config.apply .*\"origin\":\"SIGHUP\""
                          r".* result=ok" % r.p.pid), "SIGHUP apply not audited")

        # an invalid file and a restart-only change: refused, logged, unchanged
        for what, bad, reason in (
                ("invalid", changed + "bogus_keyword 1;\n", r"unknown keyword 'bogus_keyword'"),
                ("restart-only", changed.replace("capacity 4096;", "capacity 8192;"),
                 r"conntrack capacity.*needs a restart")):
            open(conf, "w").write(bad)
            r.signal(signal.SIGHUP)
            expect(r.wait_log(r"SIGHUP: \S+ not applied, the running config is unchanged: "
                              r".*" + reason),
                   f"SIGHUP {what}: no refusal logged:\n{r.log()[-1500:]}")
            expect(r.fgctl("config", "show").stdout == show, f"SIGHUP {what} changed the config")
            expect(flows_by_backend(r) == after, f"SIGHUP {what} moved flows")
        open(conf, "w").write(text)
        expect(r.p.poll() is None, "SIGHUP killed the daemon")
    finally:
        r.signal(signal.SIGTERM)
        rc = r.wait()
    expect(rc == 0 and "stopped cleanly" in r.log(), f"hup: rc {rc}")
    expect(not r.leftovers(), f"hup: left behind {r.leftovers()}")


def check_failed_starts(a, work, pcap, conf):
    for tag, flags, lcores, extra, want in (
            ("mbufs", ["-c", conf, "--mbufs", "1024"], "0,1", ",infinite_rx=1",
             "raise --mbufs"),
            ("workers", ["-c", conf, "--workers", "3"], "0,1", "", "--workers 3")):
        r = Run(a, work, tag, pcap, flags, lcores=lcores, vdev_extra=extra).start(wait=False)
        rc = r.wait(timeout=60)
        log = r.log()
        expect(rc == 1 and want in log, f"failed start {tag}: rc {rc}:\n{log[-1500:]}")
        expect("EAL memory released" in log, f"failed start {tag}: no cleanup line")
        expect(not r.leftovers(), f"failed start {tag}: left behind {r.leftovers()}")


def check_notify(a, work, pcap, conf):
    """sd_notify protocol with a fake $NOTIFY_SOCKET: READY=1 once serving,
    WATCHDOG=1 every WATCHDOG_USEC/2 while the worker loops, RELOADING=1
    then READY=1 around a SIGHUP, STOPPING=1 at SIGTERM."""
    import socket
    path = os.path.join(work, "sd-notify")
    ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    ns.bind(path)
    ns.settimeout(0.2)
    msgs = []

    def drain(until, want=None, start=0):
        deadline = time.monotonic() + until
        while time.monotonic() < deadline:
            try:
                msgs.append(ns.recv(4096).decode())
            except socket.timeout:
                pass
            if want and want in msgs[start:]:
                return True
        return False

    env = dict(os.environ, NOTIFY_SOCKET=path, WATCHDOG_USEC="200000")
    r = Run(a, work, "notify", pcap, ["-c", conf])
    r.lf = open(r.logf, "a")
    r.p = subprocess.Popen(r.cmd, stdout=r.lf, stderr=subprocess.STDOUT, env=env)
    try:
        expect(drain(30, "READY=1"), f"notify: no READY=1: {msgs}")
        expect(r.fgctl("ping", check=False).returncode == 0, "notify: READY=1 before serving")
        # pings keep coming while the worker loops (polled for: how many a
        # second a loaded machine lets through is not this test's claim)
        n = len(msgs)
        deadline = time.monotonic() + 30
        while msgs[n:].count("WATCHDOG=1") < 3 and time.monotonic() < deadline:
            drain(0.2)
        wd = msgs[n:].count("WATCHDOG=1")
        expect(wd >= 3, f"notify: {wd} WATCHDOG=1 in 30 s at WATCHDOG_USEC=200000: {msgs[n:]}")
        n = len(msgs)
        r.signal(signal.SIGHUP)
        drain(10, "READY=1", n)
        around = [m for m in msgs[n:] if m != "WATCHDOG=1"]
        expect(around[:2] == ["RELOADING=1", "READY=1"], f"notify: around SIGHUP: {around}")
        r.signal(signal.SIGTERM)
        expect(drain(20, "STOPPING=1", n), f"notify: no STOPPING=1: {msgs[-5:]}")
    finally:
        if r.p.poll() is None:
            r.signal(signal.SIGTERM)
        rc = r.wait()
        ns.close()
    expect(rc == 0, f"notify: rc {rc}")
    expect(not r.leftovers(), f"notify: left behind {r.leftovers()}")


def check_kill_restart(a, work, pcap, conf):
    r = Run(a, work, "kill", pcap, ["-c", conf]).start()
    r.signal(signal.SIGKILL)
    r.wait()
    # a crash cannot clean up: the socket file stays until the next start
    r.start()
    expect(r.fgctl("ping", check=False).returncode == 0, "restart after SIGKILL: no ping")
    r.signal(signal.SIGTERM)
    rc = r.wait()
    expect(rc == 0 and r.log().count("stopped cleanly") == 1, f"kill-restart: rc {rc}")
    expect(not r.leftovers(), f"kill-restart: left behind {r.leftovers()}")


def main():
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("version")
    ap.add_argument("source")
    ap.add_argument("--flows", type=int, default=400)
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    work = tempfile.mkdtemp(prefix="flowgate-svc.")
    try:
        conf = os.path.join(work, "flowgate.conf")
        open(conf, "w").write(CONF)
        pcap = os.path.join(work, "in.pcap")
        pcap_write(pcap, frames(a.flows, seed=1401))
        check_options(a, work)
        check_stop(a, work, pcap, conf, signal.SIGTERM)
        check_stop(a, work, pcap, conf, signal.SIGINT)
        check_reload_and_audit(a, work, pcap, conf, a.flows)
        big = os.path.join(work, "big.pcap")
        pcap_write(big, frames(3000, seed=7))
        check_failed_starts(a, work, big, conf)
        check_kill_restart(a, work, pcap, conf)
        check_notify(a, work, pcap, conf)
    finally:
        work_done(work)
    return report("service: options, signals, reload, audit, failed starts, kill+restart, "
                  "notify: ok")


if __name__ == "__main__":
    sys.exit(main())
