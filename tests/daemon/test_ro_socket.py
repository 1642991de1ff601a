#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Issue 40: the read-only control socket for monitoring users, `fgctl
backends` (ipvsadm -Ln --rate / --stats), `fgctl version` and /metrics'
build info, `stats --zero` audited.

    test_ro_socket.py BUILD_DIR VERSION [--seed S]

Root only: a throwaway group and a user in it are created for the test and
removed on every exit path (SIGTERM included); skips with 77 otherwise.

A daemon on net_pcap (--no-huge) with `control_socket_ro PATH group G`
takes seeded random SYNs to a NAT and a DSR service (SYN_SENT lasts 10
minutes: nothing expires meanwhile); then:
- the read-only socket is 0660 root:G, the read-write one 0600;
- the member of G runs `fgctl stats`, `flows list`, `backends` (table and
  --json), `service list` and `version` on the read-only socket, and gets
  what root gets on the read-write one (flows: the same set);
- the same user is refused `config apply`, `backend drain`, `flows delete
  --all` and `stats --zero`, each with one sentence naming the read-write
  socket; nothing changed (config show, flow count); each refusal is one
  audit line with the user's uid, and control.refused_read_only counts 4;
- a user not in G (nobody) cannot connect to it (Permission denied), and
  `fgctl config check FILE` as nobody checks the file offline (exit 0, a
  note saying why the daemon was not asked);
- backends --stats: one line per backend; per service, Conns (new flows)
  and InPkts summed over its backends equal the SYNs sent to it; each
  backend's InActConn is its SYN_SENT flows in `flows list`, ActiveConn 0;
  the tables carry ipvsadm's column names;
- rates (a second daemon replaying the SYNs forever): InPPS > 0 for some
  backend, and InBPS >= 40 * InPPS for every one (IPv4 + TCP headers);
- `fgctl --json version` names meson's version and the build keys that
  /metrics' flowgate_build_info carries, with the same values;
- `stats --zero` as root is one audit line; a plain `stats` none.
"""
import grp
import json
import os
import pwd
import random
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgdaemon import ERRS, Daemon, expect, free_port, metrics, report, test_args, work_done  # noqa: E402
from pktgen import eth, ip, ipv4, tcp  # noqa: E402

VIPS = {"nat": "10.100.0.1", "dsr": "10.100.0.2"}
CONF = """control_socket_ro {ro} group {group};
conntrack {{
    capacity 4096;
    timeout syn_sent 10m;
}}
port net_pcap0 {{
    local 10.200.0.2;
    gateway 10.200.0.1;
}}
neighbour 10.200.0.1 02:00:00:00:00:aa port net_pcap0;
service nat 10.100.0.1:80/tcp {{
    mode nat;
    backend 10.200.0.11;
    backend 10.200.0.12 weight 2;
}}
service dsr 10.100.0.2:80/tcp {{
    mode dsr-ipip;
    backend 10.200.0.21;
    backend 10.200.0.22;
    backend 10.200.0.23;
}}
"""


def syns(rnd, n):
    """@n SYNs from distinct random clients, each to a random service."""
    out, per, seen = [], {"nat": 0, "dsr": 0}, set()
    while len(out) < n:
        c = f"10.{rnd.randrange(1, 250)}.{rnd.randrange(256)}.{rnd.randrange(1, 255)}"
        sport = rnd.randrange(1024, 65535)
        svc = rnd.choice(sorted(VIPS))
        if (c, sport) in seen:
            continue
        seen.add((c, sport))
        per[svc] += 1
        v = VIPS[svc]
        out.append(eth("02:00:00:00:00:01", "02:00:00:00:00:02", 0x0800,
                       ipv4(ip(c), ip(v), 6, tcp(ip(c), ip(v), sport, 80, 0x02))))
    return out, per


class Users:
    """The throwaway group and its member, removed by close()."""

    def __init__(self):
        pid = os.getpid()
        self.group, self.user = f"fgro{pid}", f"fgru{pid}"
        self.made = []
        subprocess.run(["groupadd", self.group], check=True, capture_output=True)
        self.made.append(("groupdel", self.group))
        subprocess.run(["useradd", "-M", "-N", "-g", "nogroup", "-G", self.group,
                        "-s", "/usr/sbin/nologin", self.user], check=True, capture_output=True)
        self.made.insert(0, ("userdel", self.user))
        self.uid = pwd.getpwnam(self.user).pw_uid
        self.gid = grp.getgrnam(self.group).gr_gid

    def close(self):
        for cmd, name in self.made:
            subprocess.run([cmd, name], capture_output=True)
        self.made = []


class Ctl:
    def __init__(self, fgctl, users):
        self.fgctl, self.users = fgctl, users

    def run(self, who, sock, *args):
        pre = []
        if who == "member":
            pre = ["setpriv", f"--reuid={self.users.user}", "--regid=nogroup", "--init-groups"]
        elif who == "nobody":
            pre = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        return subprocess.run(pre + [self.fgctl, "-s", sock] + list(args),
                              capture_output=True, text=True, timeout=60)

    def json(self, who, sock, *args):
        r = self.run(who, sock, "--json", *args)
        expect(r.returncode == 0, f"{who}: fgctl {' '.join(args)}: rc {r.returncode}: {r.stderr}")
        return json.loads(r.stdout) if r.returncode == 0 else None


def flow_key(f):
    return (f["src"], f["sport"], f["dst"], f["dport"])


def check_access(d, ctl, ro):
    st_ro, st_rw = os.stat(ro), os.stat(d.sock)
    expect(stat.S_IMODE(st_ro.st_mode) == 0o660 and st_ro.st_gid == ctl.users.gid,
           f"read-only socket mode {oct(st_ro.st_mode)} gid {st_ro.st_gid}")
    expect(stat.S_IMODE(st_rw.st_mode) == 0o600, f"read-write socket mode {oct(st_rw.st_mode)}")
    r = ctl.run("member", d.sock, "stats")
    expect(r.returncode == 1 and "Permission denied" in r.stderr,
           f"member on the read-write socket: rc {r.returncode}: {r.stderr}")
    r = ctl.run("nobody", ro, "stats")
    expect(r.returncode == 1 and "Permission denied" in r.stderr,
           f"nobody on the read-only socket: rc {r.returncode}: {r.stderr}")


def check_reads(d, ctl, ro, per):
    mine = ctl.json("member", ro, "flows", "list")
    roots = ctl.json(None, d.sock, "flows", "list")
    if mine is None or roots is None:
        return
    expect(sorted(map(flow_key, mine)) == sorted(map(flow_key, roots)) and
           len(roots) == sum(per.values()),
           f"flows list: member {len(mine)}, root {len(roots)}, sent {sum(per.values())}")
    st = ctl.json("member", ro, "stats")
    expect(st is not None and st["total"]["rx_packets"] == sum(per.values()),
           f"member stats: {st and st['total']['rx_packets']}")
    svc = ctl.json("member", ro, "service", "list")
    expect(svc == ctl.json(None, d.sock, "service", "list"), "service list differs")
    be = ctl.json("member", ro, "backends", "--stats")
    expect(be == ctl.json(None, d.sock, "backends", "--stats"), "backends --stats differs")
    if be is None:
        return
    rows = be["backends"]
    expect(len(rows) == 5, f"backends --stats: {len(rows)} rows")
    one = ctl.json("member", ro, "backends", "--stats", "--service", "nat")
    expect(one and [b["backend"] for b in one["backends"]] ==
           ["10.200.0.11:80", "10.200.0.12:80"], f"backends --service nat: {one}")
    by_backend = {}
    for f in roots:
        by_backend.setdefault(f"{f['backend']}:{f['backend_port']}", []).append(f)
    for name, vip in VIPS.items():
        mine_rows = [b for b in rows if b["service"] == f"{vip}:80/tcp"]
        expect(sum(b["conns"] for b in mine_rows) == per[name] and
               sum(b["in_packets"] for b in mine_rows) == per[name],
               f"backends {name}: conns {[b['conns'] for b in mine_rows]}, in_packets "
               f"{[b['in_packets'] for b in mine_rows]}, sent {per[name]}")
    for b in rows:
        fl = by_backend.get(b["backend"], [])
        expect(b["inactive_conns"] == len(fl) and b["active_conns"] == 0 and
               all(f["state"] == "SYN_SENT" for f in fl),
               f"backend {b['backend']}: InActConn {b['inactive_conns']} ActiveConn "
               f"{b['active_conns']}, flows {len(fl)}")
    for args, cols in ((["backends", "--interval", "100ms"], "CPS InPPS OutPPS InBPS OutBPS"),
                       (["backends", "--stats"], "Conns InPkts OutPkts InBytes OutBytes")):
        r = ctl.run("member", ro, *args)
        lines = r.stdout.splitlines()
        head = lines[0].split() if lines else []
        expect(r.returncode == 0 and len(lines) == 6 and
               head[:7] == "Prot LocalAddress:Port RemoteAddress:Port State Weight "
               "ActiveConn InActConn".split() and head[7:] == cols.split(),
               f"fgctl {' '.join(args)}: rc {r.returncode}:\n{r.stdout}{r.stderr}")


def audits(d, uid=None, cmd=None):
    lines = re.findall(r"flowgate: audit: uid=(\d+) pid=\d+ cmd=(\S+) .*result=(\w+)",
                       open(d.logf).read())
    return [x for x in lines if (uid is None or x[0] == str(uid)) and
            (cmd is None or x[1] == cmd)]


def check_refusals(d, ctl, ro, conf):
    shown = ctl.run(None, d.sock, "config", "show").stdout
    count = ctl.json(None, d.sock, "flows", "count")
    for args in (["config", "apply", conf], ["backend", "drain", "nat", "10.200.0.11"],
                 ["flows", "delete", "--all"], ["stats", "--zero"]):
        r = ctl.run("member", ro, *args)
        err = r.stderr.splitlines()[0] if r.stderr else ""
        expect(r.returncode == 1 and "read-only control socket" in err and
               f"run it as root on the read-write socket {d.sock}" in err,
               f"member {' '.join(args)}: rc {r.returncode}: {r.stderr!r}")
    expect(ctl.run(None, d.sock, "config", "show").stdout == shown, "config changed")
    expect(ctl.json(None, d.sock, "flows", "count") == count, "flow count changed")
    mine = audits(d, uid=ctl.users.uid)
    expect(len(mine) == 4 and all(x[2] == "refused" for x in mine),
           f"audit lines of the member: {mine}")
    ping = ctl.json(None, d.sock, "ping")
    expect(ping and ping["control"]["refused_read_only"] == 4,
           f"control.refused_read_only: {ping and ping['control']}")
    # offline check where the socket refuses the user
    r = ctl.run("nobody", d.sock, "config", "check", conf)
    expect(r.returncode == 0 and "OK" in r.stdout and "no access" in r.stderr,
           f"nobody: config check: rc {r.returncode}: {r.stdout}{r.stderr}")
    # stats --zero as root: audited; stats: not
    n0 = len(audits(d, cmd="stats"))
    ctl.run(None, d.sock, "stats")
    ctl.run(None, d.sock, "stats", "--zero")
    z = audits(d, cmd="stats")[n0:]
    expect(len(z) == 1 and z[0][2] == "ok" and z[0][0] == "0",
           f"stats, stats --zero as root: audit lines {z}")


def check_version(d, ctl, ro, version, mport):
    v = ctl.json("member", ro, "version")
    if v is None:
        return
    dm = v["daemon"]
    expect(v["fgctl"]["version"] == version and dm["version"] == version and
           dm["read_only"] is True and dm["socket"] == ro, f"fgctl version: {v}")
    line = [ln for ln in metrics(mport).splitlines() if ln.startswith("flowgate_build_info{")]
    labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', line[0])) if line else {}
    expect(labels and all(labels.get(k) == dm.get(k) for k in
                          ("version", "dpdk", "gpu", "march", "options")),
           f"flowgate_build_info {labels} vs fgctl version {dm}")


def check_rates(a, work, ctl, frames, users):
    conf = os.path.join(work, "rates.conf")
    open(conf, "w").write(CONF.format(ro=os.path.join(work, "rates-ro.sock"),
                                      group=users.group))
    with Daemon(a.build, work, "rates", frames, ["-c", conf],
                vdev_args=",infinite_rx=1") as d:
        d.wait_rx(len(frames))
        be = ctl.json(None, d.sock, "backends", "--interval", "300ms")
        rows = be["backends"] if be else []
        expect(any(b["in_pps"] > 0 for b in rows), f"no InPPS anywhere: {rows}")
        for b in rows:
            expect(b["in_bps"] + 0.1 >= 40 * b["in_pps"] and b["cps"] >= 0,
                   f"backend {b['backend']}: InBPS {b['in_bps']} < 40 * InPPS {b['in_pps']}")


def main():
    a, seed = test_args("version")
    if os.geteuid() != 0:
        print("SKIP: needs root (a throwaway group and user)")
        return 77
    frames, per = syns(random.Random(seed), 60)
    print(f"seed {seed}: {per}")
    # SIGTERM (meson's timeout) still removes the user and group
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    work = tempfile.mkdtemp(prefix="flowgate-ro.")
    users = None
    try:
        os.chmod(work, 0o755)
        shutil.copy2(os.path.join(a.build, "control", "fgctl"), work)
        users = Users()
        ctl = Ctl(os.path.join(work, "fgctl"), users)
        ro = os.path.join(work, "monitor-ro.sock")
        conf = os.path.join(work, "flowgate.conf")
        open(conf, "w").write(CONF.format(ro=ro, group=users.group))
        os.chmod(conf, 0o644)
        mport = free_port()
        with Daemon(a.build, work, "ro", frames,
                    ["-c", conf, "--metrics", f"127.0.0.1:{mport}"]) as d:
            d.wait_rx(len(frames))
            check_access(d, ctl, ro)
            check_reads(d, ctl, ro, per)
            check_refusals(d, ctl, ro, conf)
            check_version(d, ctl, ro, a.version, mport)
        expect(not os.path.exists(ro), "the read-only socket outlived the daemon")
        check_rates(a, work, ctl, frames, users)
    finally:
        if users:
            users.close()
        work_done(work)
    return report(f"read-only socket, backends, version, build info, stats --zero audit "
                  f"(seed {seed}): ok", seed)


if __name__ == "__main__":
    sys.exit(main())
