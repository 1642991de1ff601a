#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The Grafana dashboard (docs/grafana/flowgate-dashboard.json) against a
live daemon's /metrics.

    test_grafana.py BUILD_DIR

Every metric name a panel query or a template variable uses is a family of
the live output (a `# TYPE` line), and every label a query selects on or
groups by is carried by the samples of a family that query uses (instance
and job aside: Prometheus adds them), so a renamed metric or label fails
here instead of leaving an empty panel.  The dashboard is also checked for
what Grafana needs to import it (unique panel ids, a datasource input).
"""
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fgdaemon import Daemon  # noqa: E402
from pktgen import eth, ip, ipv4, tcp  # noqa: E402
from test_observability import free_port, scrape  # noqa: E402

DASH = os.path.join(os.path.dirname(os.path.dirname(HERE)), "docs", "grafana",
                    "flowgate-dashboard.json")
LB, NH = "02:00:00:00:00:01", "02:00:00:00:00:fe"
CONF = """port net_pcap0 {{
    mac 02:00:00:00:00:01;
    local 10.0.0.1;
    gateway 10.0.0.254;
}}
neighbour 10.0.0.254 02:00:00:00:00:fe;
service web 10.100.0.1:80/tcp {{
    mode dsr-ipip;
    backend 10.1.0.5;
    backend 10.1.0.6;
}}
service nat4 10.100.0.3:8080/tcp {{
    mode nat;
    health tcp {{ interval 200ms; timeout 100ms; rise 1; fall 1; }}
    backend 127.0.0.1:{up};
}}
"""
NAME = re.compile(r"\bflowgate_[a-z0-9_]+\b")
SELECTOR = re.compile(r"\b(flowgate_[a-z0-9_]+)\s*\{([^}]*)\}")
MATCHER = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)")
BY = re.compile(r"\b(?:by|on|without|ignoring)\s*\(([^)]*)\)")
PROM_LABELS = {"instance", "job"}


def queries(dash):
    """(where, expr) for every panel target and template variable query."""
    out = []

    def walk(panels):
        for p in panels:
            for t in p.get("targets", []):
                out.append((f"panel '{p.get('title')}'", t["expr"]))
            walk(p.get("panels", []))
    walk(dash["panels"])
    for v in dash.get("templating", {}).get("list", []):
        q = v.get("query")
        if isinstance(q, dict):
            q = q.get("query")
        if isinstance(q, str) and "flowgate_" in q:
            out.append((f"variable ${v['name']}", q))
    return out


def families(text):
    """{family: set of label names seen on its samples}"""
    fam = {}
    for ln in text.splitlines():
        if ln.startswith("# TYPE "):
            fam.setdefault(ln.split()[2], set())
        elif ln and not ln.startswith("#"):
            name = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", ln).group(0)
            labels = set(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="', ln.split("}")[0]))
            fam.setdefault(name, set()).update(labels)
    return fam


def main():
    build = os.path.abspath(sys.argv[1])
    errs = []

    def expect(cond, what):
        if not cond:
            errs.append(what)
            print("FAIL:", what)

    dash = json.load(open(DASH))
    ids = [p["id"] for p in dash["panels"]]
    expect(len(ids) == len(set(ids)), f"duplicate panel ids: {ids}")
    expect(any(i.get("type") == "datasource" for i in dash.get("__inputs", [])),
           "no datasource input for import")
    qs = queries(dash)
    expect(len(qs) >= 20, f"only {len(qs)} queries in the dashboard")

    frames = []
    for i in range(20):
        c = ip(f"172.16.0.{i + 1}")
        vip, port = ("10.100.0.3", 8080) if i % 4 == 0 else ("10.100.0.1", 80)
        frames.append(eth(LB, NH, 0x0800, ipv4(c, ip(vip), 6,
                                               tcp(c, ip(vip), 40000 + i, port, 0x02))))
    work = tempfile.mkdtemp(prefix="flowgate-grafana.")
    port = free_port()
    # a health-checked backend, so the health-check family has samples
    up = socket.socket()
    up.bind(("127.0.0.1", 0))
    up.listen(64)
    conf = os.path.join(work, "gf.conf")
    with open(conf, "w") as f:
        f.write(CONF.format(up=up.getsockname()[1]))
    try:
        with Daemon(build, work, "gf", frames, ["-c", conf, "--mbufs", "8191",
                                                 "--metrics", f"127.0.0.1:{port}"]) as d:
            d.wait_rx(len(frames))
            deadline = time.monotonic() + 20
            text = scrape(port)
            while "flowgate_backend_health_checks_total{" not in text and \
                    time.monotonic() < deadline:
                time.sleep(0.2)
                text = scrape(port)
            fam = families(text)
    finally:
        up.close()
        shutil.rmtree(work, ignore_errors=True)

    used = set()
    for where, expr in qs:
        names = set(NAME.findall(expr))
        used |= names
        for n in sorted(names):
            expect(n in fam, f"{where}: {n} is not in /metrics")
        have = set().union(*(fam.get(n, set()) for n in names)) if names else set()
        for n, sel in SELECTOR.findall(expr):
            for lab in MATCHER.findall(sel):
                expect(lab in PROM_LABELS or lab in fam.get(n, set()),
                       f"{where}: {n} has no label '{lab}' (has {sorted(fam.get(n, []))})")
        for grp in BY.findall(expr):
            for lab in (x.strip() for x in grp.split(",") if x.strip()):
                expect(lab in PROM_LABELS or lab in have,
                       f"{where}: groups by '{lab}', which none of {sorted(names)} carries")
    if errs:
        print(f"{len(errs)} failures")
        return 1
    print(f"grafana dashboard: {len(qs)} queries, {len(used)} metric families, all in a "
          "live /metrics with their labels")
    return 0


if __name__ == "__main__":
    sys.exit(main())
