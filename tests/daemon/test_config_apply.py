#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Issue 9 defect 5: `fgctl config apply` applies every field it accepts or
refuses the change, naming the field that needs a restart.

    test_config_apply.py BUILD_DIR

One flowgate (net_pcap, -s socket, started from a config file).  Each row
applies an edited copy of that file: restart-only changes (conntrack
capacity / flood_rate / timeouts, a renamed port, a new control_socket) and
an empty service set must exit 1 with the field named while `config show`
keeps printing what is in force; live changes (a backend, gue_port) and
re-applying the file itself must succeed and show up in `config show`.
"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgdaemon import Daemon  # noqa: E402

CONF = """gue_port 6080;
conntrack {
    capacity 4096;
    flood_rate 1000;
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
}
"""
# name, from, to (None: cut from there), extra args, rc, stderr / show substring
ROWS = [
    ("same file again", "", "", [], 0, "capacity 4096;"),
    ("ct capacity", "capacity 4096;", "capacity 8192;", [], 1,
     "conntrack capacity: 4096 running, 8192 in the new config: needs a restart"),
    ("ct capacity left out", "capacity 4096;", "", [], 0, "capacity 4096;"),
    ("flood_rate", "flood_rate 1000;", "flood_rate 5;", [], 1, "conntrack flood_rate"),
    ("timeout", "timeout established 10m;", "timeout established 1m;", [], 1,
     "conntrack timeout established"),
    ("renamed port", "net_pcap0", "net_pcap9", [], 1,
     "port 'net_pcap9' is not a device of this flowgate (devices: net_pcap0)"),
    ("new control_socket", "gue_port 6080;", "gue_port 6080;\ncontrol_socket /tmp/x.sock;", [],
     1, "control_socket"),
    ("no services", "service web", None, [], 1, "--allow-empty"),
    ("backend (live)", "backend 10.200.0.12;", "backend 10.200.0.13;", [], 0,
     "backend 10.200.0.13"),
    ("gue_port (live)", "gue_port 6080;", "gue_port 6090;", [], 0, "gue_port 6090;"),
    ("no services, --allow-empty", "service web", None, ["--allow-empty"], 0, None),
]


def main():
    build = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="flowgate-apply.")
    errs = []
    try:
        conf = os.path.join(work, "fg.conf")
        with open(conf, "w") as f:
            f.write(CONF)
        with Daemon(build, work, "ap", [], ["-c", conf, "--ct-capacity", "4096"]) as d:
            for name, frm, to, args, rc, want in ROWS:
                text = CONF if frm == "" else (CONF[:CONF.index(frm)] if to is None
                                               else CONF.replace(frm, to))
                path = os.path.join(work, "edit.conf")
                with open(path, "w") as f:
                    f.write(text)
                before = d.fgctl("config", "show").stdout
                r = d.fgctl("config", "apply", path, *args, check=False)
                after = d.fgctl("config", "show").stdout
                ok = r.returncode == rc
                if rc:
                    ok = ok and want in r.stderr and after == before
                elif want:
                    ok = ok and want in after
                print(f"{name}: exit {r.returncode} {'ok' if ok else 'FAIL'} "
                      f"{r.stderr.strip()[:160]}")
                if not ok:
                    errs.append(f"{name}: exit {r.returncode} (want {rc}), stderr "
                                f"{r.stderr.strip()!r}, config show changed: "
                                f"{after != before}, want {want!r}")
                if rc == 0:   # back to the original for the next row
                    with open(path, "w") as f:
                        f.write(CONF)
                    d.fgctl("config", "apply", path)
            show = d.fgctl("config", "show").stdout
            if "capacity 4096;" not in show or "flood_rate 1000;" not in show:
                errs.append(f"config show does not say what is in force:\n{show}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for e in errs:
        print("FAIL:", e)
    print(f"config apply: {'FAIL' if errs else 'ok'}")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
