#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""e2e-restart: no connection lost to a restart or an upgrade (issue 35).

    tests/e2e/restart.py BUILD_DIR [--no-state] [--conns N] [--build2 DIR]

300 long-lived real Linux TCP connections from the client namespace
through flowgate -- 100 to a dsr-ipip VIP, 100 to a dsr-gue VIP, 100 to a
full-NAT VIP -- to three backends (blind_attack.py's servers: every reply
names its backend; DSR decapsulated by fg-decap or the kernel's tunnels,
scripts/netns-setup.sh), flowgate on net_af_packet with two workers
(software RSS), then three phases, each with `fgctl` changes around the
gap and a line sent on every connection *during* the gap (its client
retransmits until the new process answers):

  a  sigterm   weight change and a drain before; SIGTERM, the config
               file edited meanwhile (backends listed in another order,
               one drained); the same binary started; another drain after
  b  upgrade   SIGTERM, then a second build of the tree (another version
               string: meson -Dversion_suffix, in BUILD_DIR/restart-upgrade,
               built on the first run and reused after: --build2 DIR names
               one) started on a config that removes a backend with flows
               (its flows keep it as a tombstone); a weight change after
  c  sigkill   SIGKILL (nothing written), the first binary started: the
               figure is printed, not asserted (docs/DEPLOY.md has it)

A connection is broken when a reply is missing after 90 s, it is reset or
closed, or a reply comes from another backend than its first one (moved).
Last lines: "PHASE MODE: broken N of M" per phase and mode, and "PHASE:
broken N of M".  Required: 0 in a and b for every mode.  --no-state runs a
and b with `--state-file none` and requires NAT broken > 0 in a (the
check can fail: the new process knows none of the NAT flows).

Root only (77 otherwise).  Named fgrs<PID>, removed on every exit path
(scripts/netns-teardown.sh; --sweep for what a killed run left).  Every
wait polls with a guard; nothing asserts a wall-clock bound.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blind_attack as ba  # noqa: E402  (namespaces, control, clients, servers)

HERE = ba.HERE
P = f"fgrs{os.getpid()}"
RUN = f"/tmp/flowgate-{P}"
ba.P, ba.RUN = P, RUN          # its clients and servers live in our network
SERVICES = (("dsr4", ba.DSR, "dsr-ipip"), ("gue4", ba.GUE, "dsr-gue"),
            ("nat4", ba.NAT, "nat"))
MODES = [m for _, _, m in SERVICES]
GAP_GUARD = 90.0               # a reply later than this after a restart: broken
log = ba.log
Fail = ba.Fail


def config(path, order=(0, 1, 2), drained=(), removed=(), weights=None):
    """flowgate's file: two workers' worth of conntrack, the backends of
    every service in @order, @drained / @removed as (service, backend
    index) pairs, @weights {(service, index): w}."""
    weights = weights or {}
    out = ["# e2e-restart (tests/e2e/restart.py)",
           "conntrack { capacity 4096; }",
           f"port net_af_packet0 {{\n    mac {ba.LB_MAC};\n    local {ba.LOCAL};\n}}"]
    out += [f"neighbour {b} 02:00:00:99:00:1{i + 1} port net_af_packet0;"
            for i, b in enumerate(ba.BACKENDS)]
    for name, vip, mode in SERVICES:
        out.append(f"service {name} {vip}:80/tcp {{\n    mode {mode};")
        for i in order:
            if (name, i) in removed:
                continue
            w = weights.get((name, i), 1)
            out.append(f"    backend {ba.BACKENDS[i]} weight {w}"
                       f"{' drained' if (name, i) in drained else ''};")
        out.append("}")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


class Daemon:
    def __init__(self, binary, conf, tag, state):
        self.log = f"{RUN}/flowgate-{tag}.log"
        args = ["ip", "netns", "exec", f"{P}-lb", binary, "--no-huge", "-m", "512",
                "--file-prefix", P, "--lcores", "0@0,1@1,2@1",
                "--no-pci", "--vdev=net_af_packet0,iface=lb0,qpairs=2", "--", "-c", conf,
                "-s", f"{RUN}/ctl.sock", "--idle-sleep", "--workers", "2",
                "--state-file", f"{RUN}/flowgate.state" if state else "none"]
        self.p = subprocess.Popen(args, stdout=open(self.log, "w"), stderr=subprocess.STDOUT)
        if not ba.guard_wait(lambda: "flowgate: running" in self.text()
                             or self.p.poll() is not None, 120, 0.1) or self.p.poll() is not None:
            raise Fail(f"flowgate ({tag}) did not start: {ba.tail(self.log)}")
        self.ctl = ba.Ctl(f"{RUN}/ctl.sock")

    def text(self):
        try:
            return open(self.log).read()
        except OSError:
            return ""

    def line(self, word):
        return next((ln for ln in self.text().splitlines() if word in ln), "")

    def fgctl(self, *a):
        return ba.run([f"{BUILD}/control/fgctl", "-s", f"{RUN}/ctl.sock", *a], "fgctl")

    def stop(self, sig):
        ba.stop(self.p, sig, "flowgate", self.log)


def build2(build, given):
    """A second flowgate: the same tree, another version string."""
    if given:
        return os.path.join(os.path.abspath(given), "dataplane", "flowgate")
    d = os.path.join(build, "restart-upgrade")
    if not os.path.exists(os.path.join(d, "build.ninja")):
        log(f"building the upgrade binary in {d} (first run only)")
        ba.run(["meson", "setup", d, HERE, "--buildtype=debugoptimized",
                "-Dversion_suffix=+e2e-upgrade", "-Dtests=false", "-Dgpu=disabled"],
               "meson setup of the upgrade build")
    ba.run(["nice", "-n", "5", "ninja", "-C", d, "dataplane/flowgate"],
           "ninja of the upgrade build", timeout=1800)
    return os.path.join(d, "dataplane", "flowgate")


def version(binary):
    return ba.run([binary, "--version"], "--version").stdout.split()[1]


class Traffic:
    """One line on every live connection, sent while the daemon restarts:
    the clients retransmit it until the new process forwards it."""

    def __init__(self, conns):
        self.conns = conns
        self.bad = None
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        self.bad = ba.exchange(self.conns, GAP_GUARD)

    def join(self):
        self.t.join(GAP_GUARD + 60)
        return self.bad if self.bad is not None else list(self.conns)


def report(phase, conns, results):
    """Per mode and in all: how many of the connections alive at the
    phase's start broke in it."""
    tot = 0
    for m in MODES:
        mine = [c for c in conns if c.mode == m]
        n = sum(1 for c in mine if c.broken)
        tot += n
        results.append(f"{phase} {m}: broken {n} of {len(mine)}")
    results.append(f"{phase}: broken {tot} of {len(conns)}")
    for c in [c for c in conns if c.broken][:3]:
        log(f"     {phase}: {c.mode}:{c.lport} {c.broken}")
    return {m: sum(1 for c in conns if c.mode == m and c.broken) for m in MODES}


def phase(name, d, start_next, conns, before, after, sig, results):
    """Changes @before, a line in flight, the signal, the next daemon
    (start_next()), changes @after, a line on every connection."""
    live = [c for c in conns if not c.broken and c.s is not None]
    for a in before:
        d.fgctl(*a)
    log(f"  {name}: {len(live)} connections; signal {sig} to flowgate")
    # the line leaves as the signal lands: the old process may forward
    # some of it, the gap loses the rest, the new process gets the resends
    tr = Traffic(live)
    d.stop(sig)
    saved = d.line("state: saved")
    if saved:
        log(f"     {saved.split('flowgate: ')[-1]}")
    nd = start_next()
    restored = nd.line("state: ")
    log(f"     {restored.split('flowgate: ')[-1] if restored else 'no state line'}")
    st = nd.ctl.call("stats")[1]["state"]
    for a in after:
        nd.fgctl(*a)
    tr.join()
    ba.exchange([c for c in live if not c.broken], GAP_GUARD)
    ba.exchange([c for c in live if not c.broken], GAP_GUARD)
    broken = report(name, live, results)
    t = nd.ctl.total()
    refused = {k: v for k, v in st["refused"].items() if v}
    log(f"     {name}: restored {st['restored']} ({st['restored_nat']} NAT), refused "
        f"{refused or 0}, gap {st['gap_ms']} ms; nat_not_syn "
        f"{t['drops_by_reason'].get('nat_not_syn', 0)}, nat_rst_sent {t['nat_rst_sent']}")
    broken["state"] = st
    broken["saved"] = int(saved.split("saved ")[1].split()[0]) if saved else 0
    return nd, broken


def main():
    global BUILD
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--no-state", action="store_true",
                    help="run a and b with --state-file none: NAT must break (the check can fail)")
    ap.add_argument("--conns", type=int, default=100, help="connections per mode (100)")
    ap.add_argument("--build2", help="an existing second build to upgrade to")
    a = ap.parse_args()
    if os.geteuid() != 0:
        log("e2e-restart: needs root (network namespaces)")
        return 77
    BUILD = os.path.abspath(a.build)
    for b in ("dataplane/flowgate", "control/fgctl"):
        if not os.access(f"{BUILD}/{b}", os.X_OK):
            log(f"e2e-restart: FAIL: {BUILD}/{b} not built")
            return 1
    ba._ROOT_NS = os.open("/proc/self/ns/net", os.O_RDONLY)
    subprocess.run([f"{HERE}/scripts/netns-teardown.sh", "--sweep"])
    os.makedirs(RUN, exist_ok=True)
    results, failed, rig, d = [], [], ba.Rig(BUILD, 0), None
    conf = f"{RUN}/flowgate.conf"
    state = not a.no_state
    try:
        bin1 = f"{BUILD}/dataplane/flowgate"
        bin2 = build2(BUILD, a.build2)
        log(f"binaries: {version(bin1)} and {version(bin2)}")
        rig.network()
        rig.servers_start()
        config(conf)
        d = Daemon(bin1, conf, "0", state)
        conns = []
        for name, vip, mode in SERVICES:
            conns += ba.open_conns(vip, mode, a.conns)
        ba.warm(conns)
        log(f"  {len(conns)} connections: {ba.spread(conns)}")

        def start(binary, tag):
            return lambda: Daemon(binary, conf, tag, state)

        # a: the same build, the file edited in the gap
        config(conf, order=(2, 0, 1), drained={("dsr4", 0), ("gue4", 1)},
               weights={("nat4", 2): 3})
        d, br_a = phase("a-sigterm", d, start(bin1, "a"), conns,
                        [("backend", "weight", "dsr4", ba.BACKENDS[1], "2"),
                         ("backend", "drain", "gue4", ba.BACKENDS[1])],
                        [("backend", "drain", "nat4", ba.BACKENDS[2])],
                        signal.SIGTERM, results)
        # b: another build; b1 removed from gue4 and nat4 (tombstones)
        config(conf, order=(1, 2, 0), drained={("dsr4", 0)},
               removed={("gue4", 0), ("nat4", 0)})
        d, br_b = phase("b-upgrade", d, start(bin2, "b"), conns,
                        [("backend", "weight", "dsr4", ba.BACKENDS[2], "4")],
                        [("backend", "weight", "gue4", ba.BACKENDS[2], "5")],
                        signal.SIGTERM, results)
        # c: SIGKILL, nothing written
        d, br_c = phase("c-sigkill", d, start(bin1, "c"), conns, [], [],
                        signal.SIGKILL, results)
        for ph, br in (("a-sigterm", br_a), ("b-upgrade", br_b)):
            for m in MODES:
                if state and br[m]:
                    failed.append(f"{ph} {m}: {br[m]} broken (0 required)")
            st = br["state"]
            if state and (st["restored"] != br["saved"] or br["saved"] < len(conns)
                          or any(st["refused"].values())):
                failed.append(f"{ph}: saved {br['saved']} flows, restored {st['restored']}, "
                              f"refused {st['refused']} (every flow restored required)")
        if not state and br_a["nat"] == 0:
            failed.append("a-sigterm: --no-state but no NAT connection broke: "
                          "the test cannot tell")
        d.stop(signal.SIGTERM)
        d = None
    except (Fail, OSError) as e:
        failed.append(f"could not complete: {e}")
    finally:
        if d is not None and d.p.poll() is None:
            d.p.kill()
        for s in rig.servers:
            s.terminate()
        if os.environ.get("FG_E2E_KEEP"):
            shutil.copytree(RUN, f"/tmp/flowgate-kept-{P}", dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("*.sock"))
            log(f"e2e-restart: logs kept in /tmp/flowgate-kept-{P}")
        subprocess.run([f"{HERE}/scripts/netns-teardown.sh", P])
    print("--- e2e-restart" + (" (--no-state)" if not state else "") + " ---", flush=True)
    for line in results:
        print(line, flush=True)
    for f in failed:
        print(f"FAIL {f}", flush=True)
    print("e2e-restart: " + ("PASS" if not failed else f"FAIL ({len(failed)})"), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(130))
    sys.exit(main())
