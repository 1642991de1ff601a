#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""e2e-xdp-restart: flowgate-xdp restarts, reloads and upgrades with 300
real TCP connections open through it (issue 38), in network namespaces.

    tests/xdp/e2e_xdp_restart.py BUILD_DIR [--conns N]

The network is scripts/netns-setup.sh's (client 10.99.0.2, the balancer's
lb0, backends b1..b3 decapsulating with fg-decap); flowgate-xdp runs in
generic mode on lb0 with its maps and link pinned in a bpffs of the test's
own.  Services dsr4 10.99.100.1:80/tcp (dsr-ipip) and gue4
10.99.100.3:80/tcp (dsr-gue) over the three backends, which run
tests/e2e/blind_attack.py's line echo ("SEQ" -> "NAME SEQ").  N long-lived
connections (150 per service by default) each send a line after every
step; one whose reply is missing (15 s), reset, or from another backend
than its first is broken.  Phases, each printing "PHASE: broken N of M":

  sighup     the file with dsr4's first weight changed, SIGHUP: applied
             (log, audit line with origin SIGHUP, the weight in stats)
  sigterm    SIGTERM (lines also sent while no flowgate-xdp runs), start:
             the pinned maps adopted, the same program kept
  sigkill    SIGKILL (the same), start
  upgrade    SIGTERM, start of flowgate-xdp-next (tests/xdp/meson.build:
             the same sources with one more conntrack member in the middle
             of the entry: another program, another layout): conntrack
             converted by member name, the program swapped in place
  downgrade  SIGTERM, start of flowgate-xdp again: converted back, swapped

Besides: `fgctl flows list` ages grow and survive the restarts (created_ms
kept, lifetime_ms larger), /metrics passes `promtool check metrics` and
shows the connections per backend, `fgctl flows watch` reports the NEW
flows of connections opened meanwhile.  Exit 77 without root or where the
kernel has no BPF filesystem; 1 naming every failed assertion.  Waits are
polls with hang guards; no wall-clock assertion.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(HERE, "tests", "e2e"))
sys.path.insert(0, os.path.join(HERE, "tests", "daemon"))
import blind_attack as ba  # noqa: E402  (its connections, echo backends, netns)
from fgdaemon import METRICS_GET, http_exchange  # noqa: E402

P = f"fgxr{os.getpid()}"
RUN = f"/tmp/flowgate-{P}"
PIN = f"{RUN}/bpffs/fg"
METRICS = ("127.0.0.1", 9469)
DSR, GUE = "10.99.100.1", "10.99.100.3"
BACKENDS = [f"10.99.0.1{i}" for i in (1, 2, 3)]
ba.P, ba.RUN = P, RUN     # the helpers name the namespaces after P

log = ba.log
Fail = ba.Fail


def tail(path, n=8):
    try:
        return " | ".join(open(path).read().splitlines()[-n:])
    except OSError:
        return "(no log)"


class Rig:
    def __init__(self, build, n):
        self.build = build
        self.n = n
        self.fg = None
        self.logf = None
        self.starts = 0
        self.servers = []
        self.results = []
        self.weight = 1
        self.ctl = ba.Ctl(f"{RUN}/ctl.sock")

    # ---- setup -----------------------------------------------------------
    def network(self):
        r = ba.run([f"{HERE}/scripts/netns-setup.sh", P, f"{self.build}/xdp/fg-decap"],
                   "netns-setup.sh", check=False)
        if r.returncode != 0:
            raise Fail(f"network setup: {(r.stderr or r.stdout).strip()[-400:]}")
        lb = f"{P}-lb"
        # the kernel keeps lb0: it answers ARP for the VIPs there, and hc0
        # on the same segment must not (docs/XDP.md, "ARP")
        ba.run(["ip", "netns", "exec", lb, "sysctl", "-qw",
                "net.ipv4.conf.lb0.arp_ignore=0", "net.ipv4.conf.hc0.arp_ignore=1",
                "net.ipv4.conf.hc0.arp_announce=2"], "sysctl on lb0/hc0")
        for v in (DSR, GUE):
            ba.run(["ip", "-n", lb, "addr", "add", f"{v}/32", "dev", "lb0"], f"VIP {v} on lb0")
        os.makedirs(f"{RUN}/bpffs", exist_ok=True)
        r = subprocess.run(["mount", "-t", "bpf", "bpf", f"{RUN}/bpffs"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return f"no BPF filesystem: mount -t bpf: {r.stderr.strip()}"
        return None

    def servers_start(self):
        for i in range(3):
            self.servers.append(subprocess.Popen(
                ["ip", "netns", "exec", f"{P}-b{i + 1}", sys.executable,
                 os.path.join(HERE, "tests", "e2e", "blind_attack.py"), "--serve", f"b{i + 1}"],
                stdout=open(f"{RUN}/b{i + 1}.log", "w"), stderr=subprocess.STDOUT))
        for i in range(3):
            if not ba.guard_wait(lambda: "listening" in open(f"{RUN}/b{i + 1}.log").read(),
                                 30, 0.1):
                raise Fail(f"backend b{i + 1} does not listen: {tail(f'{RUN}/b{i + 1}.log')}")

    def write_config(self):
        def svc(name, vip, mode, w1):
            return (f"service {name} {vip}:80/tcp {{\n    mode {mode};\n" +
                    "".join(f"    backend {b} weight {w1 if i == 0 else 1};\n"
                            for i, b in enumerate(BACKENDS)) + "}\n")
        with open(f"{RUN}/xdp.conf", "w") as f:
            f.write("""# e2e-xdp-restart (tests/xdp/e2e_xdp_restart.py)
conntrack {
    capacity 65536;
    timeout fin_wait 10m;
    timeout close 10m;
    timeout syn_sent 10m;
}
port lb0 {
    mac 02:00:00:99:00:01;
    local 10.99.0.1;
}
""" + "".join(f"neighbour {b} 02:00:00:99:00:1{i + 1} port lb0;\n"
              for i, b in enumerate(BACKENDS)) +
                    svc("dsr4", DSR, "dsr-ipip", self.weight) + svc("gue4", GUE, "dsr-gue", 1))

    # ---- the daemon ------------------------------------------------------
    def start(self, exe):
        self.starts += 1
        self.logf = f"{RUN}/fgx-{self.starts}.log"
        self.fg = subprocess.Popen(
            ["ip", "netns", "exec", f"{P}-lb", exe, "-c", f"{RUN}/xdp.conf", "-i", "lb0",
             "--mode", "generic", "-s", f"{RUN}/ctl.sock", "--pin-dir", PIN,
             "--metrics", f"{METRICS[0]}:{METRICS[1]}"],
            stdout=open(self.logf, "w"), stderr=subprocess.STDOUT)
        if not ba.guard_wait(lambda: "flowgate-xdp: running on" in open(self.logf).read()
                             or self.fg.poll() is not None, 60, 0.1) \
                or self.fg.poll() is not None:
            raise Fail(f"{os.path.basename(exe)} did not start: {tail(self.logf)}")
        return open(self.logf).read()

    def stop(self, sig):
        fg, self.fg = self.fg, None
        ba.stop(fg, sig, "flowgate-xdp", self.logf)
        if sig == signal.SIGTERM and "stopped cleanly" not in open(self.logf).read():
            raise Fail(f"flowgate-xdp did not stop cleanly: {tail(self.logf)}")

    def record(self, line, ok, detail=""):
        self.results.append((line, ok, detail))
        log(("     " if ok else "FAIL ") + line + (f"  [{detail}]" if detail and not ok else ""))

    # ---- checks ----------------------------------------------------------
    def exchange(self, conns, what):
        bad = ba.exchange(conns)
        return len(bad), ba.why(bad)

    def flows_of(self, conns):
        """{(vip, client port): flow} of the live connections."""
        fl = {(f["dst"], f["sport"]): f for f in self.ctl.flows(client=ba.CLIENT)}
        return {(c.vip, c.lport): fl.get((c.vip, c.lport)) for c in conns}

    def ages(self, before, after, span):
        """created_ms kept and lifetime_ms larger for every connection."""
        grew, kept, bad = [], 0, []
        for k, a in before.items():
            b = after.get(k)
            if not a or not b:
                bad.append(f"{k}: not listed ({'before' if not a else 'after'})")
                continue
            if not a.get("created_ms") or abs(b["created_ms"] - a["created_ms"]) > 50:
                bad.append(f"{k}: created_ms {a.get('created_ms')} -> {b.get('created_ms')}")
            else:
                kept += 1
            if b["lifetime_ms"] <= a["lifetime_ms"]:
                bad.append(f"{k}: lifetime_ms {a['lifetime_ms']} -> {b['lifetime_ms']}")
            else:
                grew.append(b["lifetime_ms"] - a["lifetime_ms"])
        ok = not bad and grew
        self.record(f"{span}: flow ages grew for {len(grew)} of {len(before)} flows "
                    f"(lifetime_ms +{min(grew) if grew else 0}..+{max(grew) if grew else 0}), "
                    f"created_ms kept for {kept}", ok, "; ".join(bad[:3]))

    def metrics(self, conns):
        with ba.netns(f"{P}-lb"):
            s = socket.create_connection(METRICS, timeout=30)
        head, body = http_exchange(s, METRICS_GET)
        text = body.decode()
        with open(f"{RUN}/metrics.txt", "w") as f:
            f.write(text)
        promtool = shutil.which("promtool")
        if promtool is None:
            self.record("/metrics: promtool not installed (Debian package prometheus)", False)
        else:
            r = subprocess.run([promtool, "check", "metrics"], input=text,
                               capture_output=True, text=True)
            out = (r.stdout + r.stderr).strip()
            self.record(f"/metrics: promtool check metrics: rc {r.returncode}, "
                        f"{'no remark' if not out else 'remarks'} ({len(text.splitlines())} lines)",
                        r.returncode == 0 and not out, out[:300])
        active = sum(float(l.split()[-1]) for l in text.splitlines()
                     if l.startswith("flowgate_backend_connections{") and 'state="active"' in l)
        pk = sum(float(l.split()[-1]) for l in text.splitlines()
                 if l.startswith("flowgate_backend_packets_total{"))
        live = sum(1 for c in conns if not c.broken)
        self.record(f"/metrics: {active:.0f} active connections over the backends for "
                    f"{live} open, {pk:.0f} packets to backends",
                    active >= live and pk > 0 and head.startswith(b"HTTP/1.1 200"))

    def watch(self):
        """fgctl flows watch sees the NEW flows of connections opened now."""
        w = subprocess.Popen([f"{self.build}/control/fgctl", "-s", f"{RUN}/ctl.sock", "--json",
                              "flows", "watch"], stdout=subprocess.PIPE, text=True)
        time.sleep(1.0)          # its first walk is the baseline
        fresh = []
        for _ in range(5):
            c = ba.Conn(DSR, "watch").open()
            fresh.append(c)
        ba.exchange(fresh)
        ports = {c.lport for c in fresh}
        seen = set()

        def got():
            return ports <= seen
        end = time.monotonic() + 30
        os.set_blocking(w.stdout.fileno(), False)
        buf = ""
        while not got() and time.monotonic() < end:
            try:
                buf += w.stdout.read() or ""
            except (BlockingIOError, TypeError):
                pass
            for line in buf.splitlines():
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                if ev.get("event") == "NEW" and ev["flow"]["dst"] == DSR:
                    seen.add(ev["flow"]["sport"])
            time.sleep(0.2)
        w.terminate()
        w.wait()
        for c in fresh:
            c.close()
        self.record(f"fgctl flows watch: NEW for {len(ports & seen)} of {len(ports)} "
                    f"connections opened", got())

    # ---- phases ----------------------------------------------------------
    def phase(self, name, conns, action):
        """action() disrupts and restores; lines are exchanged inside it
        (while stopped) and after it; the phase's broken count is printed."""
        before = len([c for c in conns if c.broken])
        notes = action(conns) or ""
        after_n, why = self.exchange(conns, name)
        broken = len([c for c in conns if c.broken]) - before
        self.record(f"{name}: broken {broken} of {len(conns)}{notes}", broken == 0,
                    why if broken else "")
        cnt = self.ctl.call("flows.count")[1]
        self.record(f"{name}: {cnt['total']} flows tracked after it", cnt["total"] >= len(conns))

    def a_sighup(self, conns):
        self.weight = 3
        self.write_config()
        self.fg.send_signal(signal.SIGHUP)
        if not ba.guard_wait(lambda: "SIGHUP: " in open(self.logf).read() and
                             ("applied" in open(self.logf).read() or
                              "not applied" in open(self.logf).read()), 30, 0.1):
            raise Fail(f"no SIGHUP outcome in the log: {tail(self.logf)}")
        text = open(self.logf).read()
        st = self.ctl.call("stats")[1]
        w = [b["weight"] for s in st["services"] if s["name"] == "dsr4" for b in s["backends"]
             if b["addr"] == BACKENDS[0]]
        self.record("sighup: file applied, audit line with origin SIGHUP, dsr4's weight "
                    f"{w}", "not applied" not in text and w == [3] and
                    '"origin":"SIGHUP"' in text and "cmd=config.apply" in text,
                    tail(self.logf, 3))
        self.watch()
        return ""

    def restart(self, conns, sig, exe, want):
        self.stop(sig)
        was = len([c for c in conns if c.broken])
        self.exchange(conns, "gap")
        gap = len([c for c in conns if c.broken]) - was
        text = self.start(exe)
        ok = all(w in text for w in want)
        self.record(f"  start of {os.path.basename(exe)}: " +
                    "; ".join(w for w in want), ok, tail(self.logf, 4))
        return f" ({gap} while no flowgate-xdp ran)"

    def stop_all(self):
        if self.fg and self.fg.poll() is None:
            self.fg.terminate()
            try:
                self.fg.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.fg.kill()
        subprocess.run(["ip", "netns", "exec", f"{P}-lb", f"{self.build}/xdp/flowgate-xdp",
                        "detach", "lb0", "--pin-dir", PIN], capture_output=True)
        subprocess.run(["umount", f"{RUN}/bpffs"], capture_output=True)
        for s in self.servers:
            s.terminate()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--conns", type=int, default=300)
    a = ap.parse_args()
    if os.geteuid() != 0:
        log("e2e-xdp-restart: needs root (network namespaces, BPF)")
        return 77
    build = os.path.abspath(a.build)
    fgx, nxt = f"{build}/xdp/flowgate-xdp", f"{build}/tests/xdp/flowgate-xdp-next"
    for b in (fgx, nxt, f"{build}/control/fgctl", f"{build}/xdp/fg-decap"):
        if not os.access(b, os.X_OK):
            log(f"e2e-xdp-restart: FAIL: {b} not built")
            return 1
    ba._ROOT_NS = os.open("/proc/self/ns/net", os.O_RDONLY)
    subprocess.run([f"{HERE}/scripts/netns-teardown.sh", "--sweep"])
    os.makedirs(RUN, exist_ok=True)
    rig = Rig(build, a.conns)
    try:
        skip = rig.network()
        if skip:
            log(f"e2e-xdp-restart: skipped: {skip}")
            return 77
        rig.servers_start()
        rig.write_config()
        text = rig.start(fgx)
        if "cannot load the XDP program" in text:
            log(f"e2e-xdp-restart: skipped: the kernel loads no XDP program: {tail(rig.logf)}")
            return 77
        conns = ba.open_conns(DSR, "dsr4", a.conns // 2) + \
            ba.open_conns(GUE, "gue4", a.conns - a.conns // 2)
        log(f"     {len(conns)} connections open, on backends "
            f"{sorted({c.backend for c in conns})}")
        rig.metrics(conns)
        f0, t0 = rig.flows_of(conns), time.monotonic()
        rig.phase("sighup", conns, rig.a_sighup)
        keep = ["adopted 9 pinned maps", "same program kept"]
        rig.phase("sigterm", conns, lambda c: rig.restart(c, signal.SIGTERM, fgx, keep))
        f1 = rig.flows_of(conns)
        rig.ages(f0, f1, f"across SIGHUP and SIGTERM + start ({time.monotonic() - t0:.1f} s)")
        rig.phase("sigkill", conns, lambda c: rig.restart(c, signal.SIGKILL, fgx, keep))
        conv = ["fgx_ct4 converted (another layout)", "program swapped"]
        rig.phase("upgrade", conns, lambda c: rig.restart(c, signal.SIGTERM, nxt, conv))
        rig.phase("downgrade", conns, lambda c: rig.restart(c, signal.SIGTERM, fgx, conv))
        rig.ages(f1, rig.flows_of(conns), "across SIGKILL, upgrade and downgrade")
        r = subprocess.run([f"{build}/control/fgctl", "-s", f"{RUN}/ctl.sock", "flows", "list",
                            "--client", ba.CLIENT, "--limit", "3"], capture_output=True, text=True)
        log("     fgctl flows list --client 10.99.0.2 --limit 3:\n" + r.stdout.rstrip())
        rig.metrics(conns)
        for c in conns:
            c.close()
    except (Fail, OSError) as e:
        rig.record(f"e2e-xdp-restart: could not complete: {e}", False)
        if rig.logf:
            log(f"     {os.path.basename(rig.logf)}: {tail(rig.logf)}")
    finally:
        rig.stop_all()
        if os.environ.get("FG_E2E_KEEP"):
            shutil.copytree(RUN, f"/tmp/flowgate-kept-{P}", dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("*.sock", "bpffs"))
            log(f"e2e-xdp-restart: logs kept in /tmp/flowgate-kept-{P}")
        subprocess.run([f"{HERE}/scripts/netns-teardown.sh", P])
        shutil.rmtree(RUN, ignore_errors=True)
    failed = [r for r in rig.results if not r[1]]
    print("--- e2e-xdp-restart ---", flush=True)
    for line, ok, detail in rig.results:
        print(("" if ok else "FAIL ") + line + (f"  [{detail}]" if detail and not ok else ""),
              flush=True)
    print("e2e-xdp-restart: " + ("PASS" if not failed else f"FAIL ({len(failed)} assertions)"),
          flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(130))
    sys.exit(main())
