#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Issue 40: what an operator meets starting and configuring flowgate.

    test_operator.py BUILD_DIR SOURCE_DIR [--seed S]

1. Start failures, each ending in one line that names the cause and the
   fix (the last line flowgate writes to stderr):
   - no free hugepages (root: a private mount namespace with an empty
     tmpfs over /sys/kernel/mm/hugepages, so EAL finds none);
   - EAL as a non-root user (nobody, on copies of the binaries);
   - the control socket's directory not writable by that user (nobody,
     --no-huge, -s in a root-owned 0755 directory);
   - --log-syslog with no listener on /dev/log (where one listens, root
     binds /dev/null over it in a private mount namespace): exit 1, the
     sentence on stderr;
   - --pdump with --no-huge, --in-memory or --no-shconf: refused before EAL
     (exit 2, no EAL runtime directory).
   Cases that need root skip (with a note) without it; the test exits 77
   only when none could run.
2. The option vocabulary: each config-describing option of `flowgate
   --help` says how it goes with -c ("overrides the file's" or "not with
   -c"), its docs/CONFIG.md row says the same, and the daemon does it: a
   "not with -c" option with -c exits 2 naming itself and the file
   statement to write; --ct-capacity with -c starts with that capacity.
3. The restart-only check compares effective values: a daemon started on a
   file that leaves the conntrack settings out applies (fgctl config apply,
   and SIGHUP) a file that writes a seeded random set of them out at their
   defaults (the defaults read from conntrack/ct.c), and refuses one that
   changes a random timeout, naming the running and the new value.
"""
import glob
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgdaemon import ERRS, HANG_S, Daemon, expect, report, test_args, work_done  # noqa: E402
from pktgen import eth, ip, ipv4, tcp  # noqa: E402

SKIPPED = []
RAN = []
OPTS_CFG = ["--service", "10.0.0.1:80,mode=nat", "--backend", "10.0.1.1",
            "--local", "10.0.0.2", "--ct-capacity", "4096"]


def skip(what):
    SKIPPED.append(what)
    print("skip:", what)


def last_line(text):
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def runtime_dirs(prefix):
    bases = ["/var/run/dpdk", os.path.join(os.environ.get("XDG_RUNTIME_DIR", "/nonexistent"),
                                          "dpdk"), "/tmp/dpdk"]
    return [os.path.join(b, prefix) for b in bases]


class Env:
    def __init__(self, a, work):
        self.a, self.work = a, work
        self.fg = os.path.join(a.build, "dataplane", "flowgate")
        self.fgctl = os.path.join(a.build, "control", "fgctl")
        self.root = os.geteuid() == 0
        # copies nobody may run (the build directory may be private)
        self.bin = os.path.join(work, "bin")
        os.makedirs(self.bin)
        for b in (self.fg, self.fgctl):
            shutil.copy2(b, self.bin)
        for d in (work, self.bin):
            os.chmod(d, 0o755)

    def run(self, argv, timeout=HANG_S, as_nobody=False, netns_mount=None):
        """Runs argv (as nobody, or in a private mount namespace after the
        shell command @netns_mount); returns the CompletedProcess."""
        if as_nobody:
            argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + argv
        if netns_mount:
            argv = ["unshare", "-m", "--propagation", "private", "sh", "-c",
                    netns_mount + ' && exec "$@"', "sh"] + argv
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def fg_argv(fg, eal, flags, prefix):
    return [fg, "-l", "0,1", "--file-prefix", prefix] + eal + \
        ["--no-pci", "--vdev=net_null0", "--"] + flags


def check_start_failures(env):
    pid = os.getpid()
    fg_nobody = os.path.join(env.bin, "flowgate")
    # 1. no free hugepages (EAL as root finds none in an empty sysfs dir)
    if env.root:
        r = env.run(fg_argv(env.fg, [], OPTS_CFG + ["-s", f"{env.work}/hp.sock"],
                            f"fgop{pid}hp"),
                    netns_mount="mount -t tmpfs none /sys/kernel/mm/hugepages")
        ll = last_line(r.stderr)
        expect(r.returncode == 1 and "no free hugepages" in ll and "make hugepages" in ll
               and "--no-huge" in ll, f"no hugepages: rc {r.returncode}, last line {ll!r}")
        RAN.append("hugepages")
    else:
        skip("no hugepages: needs root (a mount namespace)")
    if not env.root:
        skip("non-root starts: need root to become nobody")
    else:
        # 2. EAL as nobody
        r = env.run(fg_argv(fg_nobody, [], OPTS_CFG + ["-s", f"{env.work}/nr.sock"],
                            f"fgop{pid}nr"), as_nobody=True)
        ll = last_line(r.stderr)
        expect(r.returncode == 1 and "runs as uid 65534" in ll and "as root" in ll,
               f"non-root EAL: rc {r.returncode}, last line {ll!r}")
        # 3. the socket's directory: root's, 0755
        sock = os.path.join(env.work, "nobody.sock")
        r = env.run(fg_argv(fg_nobody, ["--no-huge", "--no-shconf", "-m", "512"],
                            OPTS_CFG + ["-s", sock], f"fgop{pid}ns"), as_nobody=True)
        ll = last_line(r.stderr)
        expect(r.returncode == 1 and sock in ll and "Permission denied" in ll and
               "as root" in ll and "-s PATH" in ll,
               f"non-root control socket: rc {r.returncode}, last line {ll!r}")
        RAN.append("non-root")
    # 4. --log-syslog with nothing on /dev/log
    mnt = None
    if os.path.exists("/dev/log"):
        mnt = "mount --bind /dev/null /dev/log" if env.root else False
    if mnt is False:
        skip("--log-syslog: /dev/log listens here and hiding it needs root")
    else:
        r = env.run(fg_argv(env.fg, ["--no-huge", "--no-shconf", "-m", "512"],
                            OPTS_CFG + ["--log-syslog", "-s", f"{env.work}/sl.sock"],
                            f"fgop{pid}sl"), netns_mount=mnt)
        ll = last_line(r.stderr)
        expect(r.returncode == 1 and "/dev/log" in ll and "drop --log-syslog" in ll,
               f"--log-syslog: rc {r.returncode}, stderr {r.stderr[-600:]!r}")
        RAN.append("syslog")
    # 5. --pdump with a memory mode that shares nothing: refused before EAL
    for mode in ("--no-huge", "--in-memory", "--no-shconf"):
        prefix = f"fgop{pid}pd{mode.strip('-').replace('-', '')}"
        r = env.run(fg_argv(env.fg, [mode], OPTS_CFG + ["--pdump", "-s",
                                                        f"{env.work}/pd.sock"], prefix))
        ll = last_line(r.stderr)
        expect(r.returncode == 2 and f"--pdump with the EAL option {mode}" in ll and
               f"drop {mode}" in ll and "--file-prefix" in ll,
               f"--pdump {mode}: rc {r.returncode}, last line {ll!r}")
        expect(not any(os.path.exists(d) for d in runtime_dirs(prefix)),
               f"--pdump {mode}: EAL ran before the refusal")
    RAN.append("pdump")


# a value each config-describing option takes; a new one must be added
CFG_VALUES = {"service": "10.0.0.9:80", "backend": "10.0.1.9", "local": "10.0.0.3",
              "gateway": "10.0.0.254", "neigh": "10.0.0.254,02:00:00:00:00:fe",
              "port-mac": "0,02:00:00:00:00:01", "flood-rate": "1000",
              "ct-capacity": "2048"}


def rule_of(text):
    t = text.replace("`", "")
    if "overrides the file's" in t:
        return "override"
    if "not with -c" in t:
        return "not-with-c"
    return None


def check_vocabulary(env, conf, frames):
    h = subprocess.run([env.fg, "--help"], capture_output=True, text=True, timeout=30).stdout
    helps = dict(re.findall(r"^[ \t]+(?:-\w, )?--([a-z][a-z0-9-]*)[^\n]*\n[ \t]+([^\n]*)", h,
                            re.M))
    doc = open(os.path.join(env.a.source, "docs", "CONFIG.md")).read()
    rows = dict(re.findall(r"^\| `--([a-z][a-z0-9-]*)[^|]*(?:\\\|[^|]*)*\| (.*) \|$", doc, re.M))
    expect(len(helps) >= 20 and len(rows) >= 20, f"parsed {len(helps)} --help options, "
           f"{len(rows)} doc rows")
    for name in sorted(set(helps) | set(rows)):
        hr, dr = rule_of(helps.get(name, "")), rule_of(rows.get(name, ""))
        expect(hr == dr, f"--{name}: --help says {hr}, docs/CONFIG.md says {dr}")
        if hr and name not in CFG_VALUES:
            expect(False, f"--{name} ({hr}): no example value in the test")
        if hr != "not-with-c" or name not in CFG_VALUES:
            continue
        r = subprocess.run([env.fg, "--no-huge", "--no-pci", "--vdev=net_null0", "--",
                            "-c", conf, f"--{name}", CFG_VALUES[name]],
                           capture_output=True, text=True, timeout=60)
        expect(r.returncode == 2 and f"--{name} {CFG_VALUES[name]}: not with -c {conf}" in r.stderr
               and "write " in r.stderr, f"--{name} with -c: rc {r.returncode}: {r.stderr!r}")
    overrides = [n for n in helps if rule_of(helps[n]) == "override"]
    expect(overrides == ["ct-capacity"], f"options that override the file: {overrides}")
    with Daemon(env.a.build, env.work, "vocab", frames,
                ["-c", conf, "--ct-capacity", CFG_VALUES["ct-capacity"]]) as d:
        shown = d.fgctl("config", "show").stdout
        expect(re.search(r"^\s*capacity %s;" % CFG_VALUES["ct-capacity"], shown, re.M),
               f"--ct-capacity with -c: config show says\n{shown}")


CONF = """conntrack {
    capacity 4096;
}
port net_pcap0 {
    local 10.200.0.2;
    gateway 10.200.0.1;
}
neighbour 10.200.0.1 02:00:00:00:00:aa port net_pcap0;
service web 10.100.0.1:80/tcp {
    mode nat;
    backend 10.200.0.11;
    backend 10.200.0.12;
}
"""


def ct_defaults(source):
    """conntrack/ct.c's default timeouts, in ms, by the file's state names."""
    text = open(os.path.join(source, "conntrack", "ct.c")).read()
    return {m.group(1).lower(): int(m.group(2)) * 1000
            for m in re.finditer(r"\[CT_ST_([A-Z_]+)\] = (\d+) \* 1000", text)
            if m.group(1) != "PICKUP"}


def fmt_ms(ms):
    return f"{ms // 60000}m" if ms % 60000 == 0 else f"{ms // 1000}s"


def with_conntrack(lines):
    return CONF.replace("    capacity 4096;\n", "    capacity 4096;\n" +
                        "".join(f"    {ln}\n" for ln in lines))


def wait_log(d, pattern, count):
    deadline = time.monotonic() + HANG_S
    while time.monotonic() < deadline:
        if len(re.findall(pattern, open(d.logf).read())) >= count:
            return True
        time.sleep(0.05)
    return False


def check_restart_effective(env, frames, seed):
    rnd = random.Random(seed)
    dflt = ct_defaults(env.a.source)
    expect(len(dflt) >= 11 and dflt.get("established") == 900000,
           f"conntrack/ct.c defaults: {dflt}")
    states = sorted(dflt)
    written = rnd.sample(states, rnd.randint(1, len(states)))
    if "established" not in written:
        written.append("established")   # the issue's `timeout established 15m;`
    lines = [f"timeout {s} {fmt_ms(dflt[s])};" for s in written]
    if rnd.random() < 0.5:
        lines.append("nat_capacity 2048;")   # capacity / 2
    rnd.shuffle(lines)
    same = with_conntrack(lines)
    changed_state = rnd.choice(states)
    new_ms = dflt[changed_state] + 1000 * rnd.randint(1, 600)
    changed = with_conntrack(lines + [f"timeout {changed_state} {new_ms // 1000}s;"])
    conf = os.path.join(env.work, "restart.conf")
    open(conf, "w").write(CONF)
    f_same = os.path.join(env.work, "same.conf")
    f_changed = os.path.join(env.work, "changed.conf")
    open(f_same, "w").write(same)
    open(f_changed, "w").write(changed)
    print(f"seed {seed}: defaults written out: {lines}; changed: {changed_state} "
          f"{new_ms} ms")
    with Daemon(env.a.build, env.work, "restart", frames, ["-c", conf]) as d:
        r = d.fgctl("config", "apply", f_same, check=False)
        expect(r.returncode == 0, f"config apply of the defaults written out: "
               f"{r.stdout}{r.stderr}")
        r = d.fgctl("config", "apply", f_changed, check=False)
        want = (f"conntrack timeout {changed_state}: {dflt[changed_state]}ms running, "
                f"{new_ms}ms in the new config")
        expect(r.returncode == 1 and want in r.stderr and "needs a restart" in r.stderr,
               f"config apply of a changed timeout: rc {r.returncode}: {r.stderr!r} "
               f"(wanted {want!r})")
        open(conf, "w").write(same)
        d.p.send_signal(signal.SIGHUP)
        expect(wait_log(d, r"SIGHUP: \S+ applied", 1),
               f"SIGHUP with the defaults written out not applied:\n{open(d.logf).read()[-1500:]}")
        open(conf, "w").write(changed)
        d.p.send_signal(signal.SIGHUP)
        expect(wait_log(d, r"SIGHUP: \S+ not applied.*needs a restart", 1),
               f"SIGHUP with a changed timeout:\n{open(d.logf).read()[-1500:]}")


def main():
    a, seed = test_args("source")
    work = tempfile.mkdtemp(prefix="flowgate-op.")
    frames = [eth("02:00:00:00:00:01", "02:00:00:00:00:02", 0x0800,
                  ipv4(ip(f"10.9.0.{i}"), ip("10.100.0.1"), 6,
                       tcp(ip(f"10.9.0.{i}"), ip("10.100.0.1"), 1000 + i, 80, 0x02)))
              for i in range(1, 9)]
    try:
        env = Env(a, work)
        conf = os.path.join(work, "vocab.conf")
        open(conf, "w").write(CONF)
        check_start_failures(env)
        check_vocabulary(env, conf, frames)
        check_restart_effective(env, frames, seed)
    finally:
        # EAL runtime directories of the starts that failed in EAL init
        for d in runtime_dirs(f"fgop{os.getpid()}"):
            for left in glob.glob(d + "*"):
                shutil.rmtree(left, ignore_errors=True)
        work_done(work)
    return report(f"operator: start failures ({', '.join(RAN)}), option vocabulary, "
                  f"restart-only check on effective values (seed {seed}): ok"
                  + (f"; skipped: {'; '.join(SKIPPED)}" if SKIPPED else ""), seed)


if __name__ == "__main__":
    sys.exit(main())
