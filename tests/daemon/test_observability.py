#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Observability of a live daemon: /metrics (--metrics), DPDK telemetry
(/flowgate/...) and `fgctl stats --json` on the same traffic.

    test_observability.py BUILD_DIR

One flowgate on net_pcap (no root, no hugepages) with services whose names
DPDK 22.11 telemetry cannot take as keys ('-', '.', '_', unnamed IPv4 and
IPv6 VIP:PORT/PROTO), a drained backend and a NAT service with backend
ports.  It receives several packets per flow; then:
- /metrics passes `promtool check metrics` (skips with 77 when promtool is
  not installed: Debian package prometheus, scripts/install-deps.sh);
- every backend's packets, bytes, new flows, reply counters, weight and
  state agree between /metrics, /flowgate/backends and fgctl stats --json,
  and so do the per-core totals and every drop reason;
- /flowgate/services and /flowgate/backends list every service and backend,
  their keys use [A-Za-z0-9_/] only and decode (fg_stats.h) to the names;
- the HTTP server: 404 / 405 / 400 / 431, HEAD, concurrent scrapers while
  idle connections are held open, idle connections closed at the timeout;
- a real Prometheus server (Debian package prometheus; this part is left
  out when it is not installed) scrapes the daemon, reports the target up
  and returns the same per-backend packet counts through its query API;
- health checks: with a config file, a checked backend whose port is
  closed goes down; fgctl, telemetry and /metrics all say "down" (they used
  to disagree: "drained" in telemetry), the probe counters
  (flowgate_backend_health_checks_total) count successes and failures, and
  the control socket's counters are exported;
- a bad --metrics address refuses to start.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgdaemon import ERRS, HANG_S, Daemon, expect, free_port, http_exchange, work_done  # noqa: E402
from pktgen import eth, ip, ipv4, ipv6, tcp  # noqa: E402

LB, NH = "02:00:00:00:00:01", "02:00:00:00:00:fe"
SERVICES = [
    # (spec option, label the readers must show, vip, port, backends)
    ("10.100.0.1:80/tcp,mode=dsr-ipip,name=infer-a.b", "infer-a.b", "10.100.0.1", 80,
     ["10.1.0.1", "10.1.0.2", "10.1.0.3,drained"]),
    ("10.100.0.3:8080/tcp,mode=nat,name=my_svc", "my_svc", "10.100.0.3", 8080,
     ["10.1.0.1:9000", "10.1.0.2:9001"]),
    ("10.100.0.4:81/tcp,mode=dsr-ipip", "10.100.0.4:81/tcp", "10.100.0.4", 81,
     ["10.1.0.4", "10.1.0.5"]),
    ("[fd00:100::1]:443/tcp,mode=dsr-ipip", "[fd00:100::1]:443/tcp", "fd00:100::1", 443,
     ["[fd00:1::1]", "[fd00:1::2]"]),
]
FLAGS = ["--mbufs", "8191", "--port-mac", "0,02:00:00:00:00:01",
         "--local", "10.0.0.1", "--local", "fd00::1",
         "--gateway", "10.0.0.254", "--gateway", "fd00::fe",
         "--neigh", "10.0.0.254,02:00:00:00:00:fe", "--neigh", "fd00::fe,02:00:00:00:00:fe"]
for spec, _, _, _, bes in SERVICES:
    FLAGS += ["--service", spec]
    for b in bes:
        FLAGS += ["--backend", b]
FLOWS, PKTS = 40, 3     # per service; a SYN then ACKs


def frames():
    out = []
    for si, (_, _, vip, port, _) in enumerate(SERVICES):
        v6 = ":" in vip
        for i in range(FLOWS):
            c = ip(f"2001:db8::{si}:{i + 1:x}" if v6 else f"172.16.{si}.{i + 1}")
            for k in range(PKTS):
                t = tcp(c, ip(vip), 20000 + i, port, 0x02 if k == 0 else 0x10,
                        payload=b"x" * k, seq=1000 + k)
                out.append(eth(LB, NH, 0x86DD, ipv6(c, ip(vip), 6, t)) if v6 else
                           eth(LB, NH, 0x0800, ipv4(c, ip(vip), 6, t)))
    # one frame no service wants: a drop reason with a non-zero value
    c = ip("172.31.0.1")
    out.append(eth(LB, NH, 0x0800, ipv4(c, ip("10.100.0.99"), 6,
                                        tcp(c, ip("10.100.0.99"), 1, 80, 0x02))))
    return out


def http(port, raw, timeout=10):
    """Sends @raw, returns (status line, headers dict, body bytes)."""
    head, body = http_exchange(socket.create_connection(("127.0.0.1", port), timeout=timeout), raw)
    lines = head.decode().split("\r\n")
    hdrs = dict(ln.split(": ", 1) for ln in lines[1:])
    return lines[0], hdrs, body


def still_open(s):
    """The peer has not closed @s (nothing to read yet counts as open)."""
    try:
        return s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


def scrape(port):
    st, h, body = http(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    assert st == "HTTP/1.1 200 OK", st
    assert int(h["Content-Length"]) == len(body), (h, len(body))
    return body.decode()


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text):
    """{(name, frozenset(labels)): value}"""
    out = {}
    for ln in text.splitlines():
        if not ln or ln.startswith("#"):
            continue
        m = SAMPLE.match(ln)
        assert m, ln
        labels = frozenset(LABEL.findall(m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def telemetry(prefix, *cmds):
    """DPDK telemetry v2, spoken directly (dpdk-telemetry.py does the same)."""
    base = "/var/run/dpdk" if os.geteuid() == 0 else os.path.join(
        os.environ.get("XDG_RUNTIME_DIR", "/tmp"), "dpdk")
    path = os.path.join(base, prefix, "dpdk_telemetry.v2")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)
    info = json.loads(s.recv(1024))
    res = []
    for c in cmds:
        s.send(c.encode())
        res.append(json.loads(s.recv(info["max_output_len"]))[c.split(",")[0]])
    s.close()
    return res


def key_unescape(k):
    return re.sub(r"_([0-9A-F]{2})", lambda m: chr(int(m.group(1), 16)), k)


def backend_name(addr, port):
    return f"[{addr}]:{port}" if ":" in addr else f"{addr}:{port}"


def check_agree(d, port, prefix):
    # timer-driven counters (tx_flushes) move without traffic: the readers
    # must fall between two fgctl snapshots; traffic counters must be equal
    st = d.stats()
    text = scrape(port)
    mx = parse_metrics(text)
    tsvc, tbe, tstats = telemetry(prefix, "/flowgate/services", "/flowgate/backends",
                                  "/flowgate/stats")
    st2 = d.stats()
    expect(st["services"] == st2["services"], "service counters moved without traffic")

    def metric(name, **labels):
        return mx.get((name, frozenset(labels.items())))

    # services: every one listed, under a valid key that decodes to its label
    labels = [s[1] for s in SERVICES]
    expect(sorted(key_unescape(k) for k in tsvc) == sorted(labels),
           f"/flowgate/services keys {sorted(tsvc)} decode to {labels}")
    for k in list(tsvc) + list(tbe):
        expect(re.fullmatch(r"[A-Za-z0-9_/]+", k) is not None, f"telemetry key {k!r}")
    n_be = 0
    for s in st["services"]:
        label = s["name"] or s["service"]
        expect(label in labels, f"fgctl service {label}")
        tk = [k for k in tsvc if key_unescape(k) == label]
        if tk:
            for c in ("packets", "bytes", "new_flows", "drops", "no_backend"):
                expect(tsvc[tk[0]][c] == s[c], f"service {label} {c}: telemetry "
                       f"{tsvc[tk[0]][c]} fgctl {s[c]}")
        for c in ("packets", "bytes", "new_flows", "drops", "no_backend"):
            expect(metric(f"flowgate_service_{c}_total", service=label) == s[c],
                   f"service {label} {c}: metrics "
                   f"{metric(f'flowgate_service_{c}_total', service=label)} fgctl {s[c]}")
        expect(s["packets"] == FLOWS * PKTS, f"service {label} packets {s['packets']} "
               f"!= {FLOWS * PKTS}")
        expect(sum(b["packets"] for b in s["backends"]) == s["packets"],
               f"service {label}: backend packets do not add up")
        for b in s["backends"]:
            n_be += 1
            bn = backend_name(b["addr"], b["port"])
            key = [k for k in tbe if key_unescape(k) == f"{label}/{bn}"]
            expect(len(key) == 1, f"/flowgate/backends has {label}/{bn}: {sorted(tbe)}")
            tb = tbe[key[0]] if key else {}
            for c in ("packets", "bytes", "new_flows", "reply_packets", "reply_bytes"):
                mv = metric(f"flowgate_backend_{c}_total", service=label, backend=bn)
                expect(mv == b[c] and tb.get(c) == b[c],
                       f"backend {label} {bn} {c}: metrics {mv} telemetry "
                       f"{tb.get(c)} fgctl {b[c]}")
            expect(metric("flowgate_backend_weight", service=label, backend=bn) ==
                   b["weight"] == tb.get("weight"), f"backend {label} {bn} weight")
            expect(tb.get("state") == b["state"] and metric(
                "flowgate_backend_state", service=label, backend=bn,
                state=b["state"]) == 1, f"backend {label} {bn} state: telemetry "
                f"{tb.get('state')} fgctl {b['state']}")
    expect(len(tbe) == n_be == 9, f"/flowgate/backends lists {len(tbe)}, fgctl {n_be}")
    drained = [b for s in st["services"] for b in s["backends"] if b["state"] == "drained"]
    expect(len(drained) == 1 and drained[0]["addr"] == "10.1.0.3" and
           drained[0]["packets"] == 0, f"the drained backend: {drained}")

    # per-core totals and every drop reason (names from fgctl: the X-macros)
    cores = st["workers"]
    for c, v in st["total"].items():
        if c == "drops_by_reason":
            continue
        mv = sum(metric(f"flowgate_core_{c}_total", core=str(i)) or 0 for i in range(cores))
        v2 = st2["total"][c]
        expect(v <= mv <= tstats[c] <= v2 and (v != v2 or mv == v),
               f"core counter {c}: metrics {mv} telemetry {tstats[c]} fgctl {v}..{v2}")
    for r, v in st["total"]["drops_by_reason"].items():
        series = [metric("flowgate_drops_total", core=str(i), reason=r) for i in range(cores)]
        expect(None not in series and sum(series) == v == tstats["drops_by_reason"][r],
               f"drop {r}: metrics {series} fgctl {v}")
    expect(st["total"]["drops_by_reason"]["unknown_vip"] == 1, "one unknown_vip drop")
    live = sum(v for (n, _), v in mx.items() if n == "flowgate_conntrack_entries")
    expect(live >= FLOWS * len(SERVICES), f"conntrack entries {live}")
    expect(metric("flowgate_conntrack_capacity", core="0") == 1 << 16, "capacity")
    # the NAT service's flows, each one reply entry, against the reply
    # region's default size (nat_capacity unset: capacity / 2)
    nat = sum(v for (n, _), v in mx.items() if n == "flowgate_conntrack_nat_flows")
    expect(nat == FLOWS, f"NAT flows {nat}, expected {FLOWS}")
    expect(metric("flowgate_conntrack_nat_capacity", core="0") == 1 << 15, "NAT capacity")
    # fgctl flows count says the same (all cores)
    cnt = json.loads(d.fgctl("--json", "flows", "count").stdout)
    cores = sum(1 for (n, _), _v in mx.items() if n == "flowgate_conntrack_nat_capacity")
    expect(cnt.get("nat") == FLOWS, f"fgctl flows count nat {cnt.get('nat')}, expected {FLOWS}")
    expect(cnt.get("nat_capacity") == cores << 15,
           f"fgctl flows count nat_capacity {cnt.get('nat_capacity')}, {cores} cores")
    text_count = d.fgctl("flows", "count").stdout
    expect(f"nat {FLOWS} of {cores << 15} " in text_count, f"fgctl flows count: {text_count!r}")
    expect(any(n == "flowgate_build_info" for n, _ in mx), "build info")
    return text


def check_promtool(text, work):
    promtool = shutil.which("promtool")
    if promtool is None:
        return False
    path = os.path.join(work, "metrics.txt")
    with open(path, "w") as f:
        f.write(text)
    with open(path) as f:
        r = subprocess.run([promtool, "check", "metrics"], stdin=f,
                           capture_output=True, text=True)
    expect(r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(),
           f"promtool check metrics: rc {r.returncode}: {r.stdout} {r.stderr}")
    return True


def check_http(port):
    st, _, _ = http(port, b"GET / HTTP/1.1\r\n\r\n")
    expect(st.startswith("HTTP/1.1 404"), f"GET / -> {st}")
    st, _, _ = http(port, b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
    expect(st.startswith("HTTP/1.1 405"), f"POST -> {st}")
    st, _, _ = http(port, b"hello\r\n\r\n")
    expect(st.startswith("HTTP/1.1 400"), f"garbage -> {st}")
    st, _, _ = http(port, b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 5000)
    expect(st.startswith("HTTP/1.1 431"), f"5000-byte header -> {st}")
    st, h, body = http(port, b"HEAD /metrics HTTP/1.0\r\n\r\n")
    expect(st.startswith("HTTP/1.1 200") and body == b"" and
           int(h["Content-Length"]) > 1000, f"HEAD -> {st} {h} {len(body)}")

    # idle connections held open (half a request each) do not stop others
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(4)]
    for s in idle:
        s.sendall(b"GET /metr")
    results = []

    def one():
        try:
            results.append(len(scrape(port)) > 1000)
        except Exception as e:  # noqa: BLE001
            results.append(repr(e))

    t0 = time.monotonic()
    ts = [threading.Thread(target=one) for _ in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    expect(results == [True] * 8, f"8 concurrent scrapes with 4 idle peers: {results}")
    # Answered while the idle peers were still held (not timed: a server
    # that waited on them would answer only once its own timeout had
    # closed them, so they would be closed by now)
    held = [still_open(s) for s in idle]
    print(f"8 concurrent scrapes beside 4 idle peers: {time.monotonic() - t0:.2f} s "
          f"(a figure); idle peers still open after them: {sum(held)} of 4")
    expect(all(held), f"the scrapes were answered only after idle peers were closed: {held}")
    # the idle ones are closed by the server at its timeout (5 s; the wait
    # below is a hang guard, not a bound)
    idle[0].settimeout(120)
    t0 = time.monotonic()
    try:
        eof = idle[0].recv(1) == b""
    except socket.timeout:
        eof = False
    except OSError:
        eof = True
    print(f"idle peer closed by the server after {time.monotonic() - t0:.1f} s more")
    expect(eof, "an idle connection was not closed at the timeout")
    for s in idle:
        s.close()


def check_prometheus(d, port, work):
    """A real Prometheus scrapes the daemon; its answers match fgctl."""
    prom = shutil.which("prometheus")
    if prom is None:
        print("note: prometheus not installed: real-server scrape not tested")
        return
    api = free_port()
    cfg = os.path.join(work, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                "scrape_configs:\n  - job_name: flowgate\n    static_configs:\n"
                f"      - targets: ['127.0.0.1:{port}']\n")
    log = open(os.path.join(work, "prometheus.log"), "w")
    p = subprocess.Popen([prom, f"--config.file={cfg}",
                          f"--storage.tsdb.path={os.path.join(work, 'tsdb')}",
                          f"--web.listen-address=127.0.0.1:{api}"],
                         stdout=log, stderr=subprocess.STDOUT)

    def query(q):
        url = f"http://127.0.0.1:{api}/api/v1/query?" + urllib.parse.urlencode({"query": q})
        with urllib.request.urlopen(url, timeout=5) as r:
            return json.loads(r.read())["data"]["result"]

    try:
        up, deadline = [], time.monotonic() + HANG_S
        while time.monotonic() < deadline:
            try:
                up = query('up{job="flowgate"}')
                if up and up[0]["value"][1] == "1":
                    break
            except OSError:
                pass
            time.sleep(0.5)
        expect(up and up[0]["value"][1] == "1", f"prometheus target up: {up}")
        st = d.stats()
        res = {(r["metric"]["service"], r["metric"]["backend"]): float(r["value"][1])
               for r in query("flowgate_backend_packets_total")} if up else {}
        for s in st["services"]:
            for b in s["backends"]:
                k = (s["name"] or s["service"], backend_name(b["addr"], b["port"]))
                expect(res.get(k) == b["packets"],
                       f"prometheus {k}: {res.get(k)} fgctl {b['packets']}")
        drops = query('sum(flowgate_drops_total{reason="unknown_vip"})') if up else []
        expect(drops and float(drops[0]["value"][1]) == 1, f"prometheus drops: {drops}")
    finally:
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        log.close()


def check_health(build, work):
    """Health-checked backends: state names and probe counters agree."""
    up_sock = socket.socket()
    up_sock.bind(("127.0.0.1", 0))
    up_sock.listen(64)
    up_port, down_port, mport = up_sock.getsockname()[1], free_port(), free_port()
    conf = os.path.join(work, "hc.conf")
    with open(conf, "w") as f:
        f.write(f"""port net_pcap0 {{
    mac 02:00:00:00:00:01;
    local 10.0.0.1;
    gateway 10.0.0.254;
}}
neighbour 10.0.0.254 02:00:00:00:00:fe;
service hc-a.1 10.100.0.5:80/tcp {{
    mode nat;
    health tcp {{ interval 1s; timeout 1s; rise 1; fall 1; }}
    backend 127.0.0.1:{up_port};
    backend 127.0.0.1:{down_port};
}}
""")
    d = Daemon(build, work, "hc", frames()[:1], ["-c", conf, "--metrics", f"127.0.0.1:{mport}"])
    prefix = d.cmd[d.cmd.index("--file-prefix") + 1]
    try:
        with d:
            deadline, st = time.monotonic() + HANG_S, None
            while time.monotonic() < deadline:
                st = d.stats()
                states = {b["port"]: b["state"] for b in st["services"][0]["backends"]}
                if states == {up_port: "up", down_port: "down"}:
                    break
                time.sleep(0.2)
            expect(states == {up_port: "up", down_port: "down"}, f"health states {states}")
            (tbe,) = telemetry(prefix, "/flowgate/backends")
            text = scrape(mport)
            mx = parse_metrics(text)
            check_promtool(text, work)   # with the health and control families
            for port, want in ((up_port, "up"), (down_port, "down")):
                bn = f"127.0.0.1:{port}"
                tb = [v for k, v in tbe.items() if key_unescape(k) == f"hc-a.1/{bn}"]
                expect(len(tb) == 1 and tb[0]["state"] == want,
                       f"telemetry state of {bn}: {tb}")
                expect(mx.get(("flowgate_backend_state", frozenset(
                    {("service", "hc-a.1"), ("backend", bn), ("state", want)}))) == 1,
                    f"metrics state of {bn} is not {want}")
                ok = mx.get(("flowgate_backend_health_checks_total", frozenset(
                    {("service", "hc-a.1"), ("backend", bn), ("result", "success")})))
                bad = mx.get(("flowgate_backend_health_checks_total", frozenset(
                    {("service", "hc-a.1"), ("backend", bn), ("result", "failure")})))
                expect(ok is not None and bad is not None and
                       (ok >= 1 and bad == 0 if want == "up" else ok == 0 and bad >= 1),
                       f"probe counters of {bn}: success {ok} failure {bad}")
            req = mx.get(("flowgate_control_requests_total", frozenset()))
            expect(req is not None and req >= 1, f"flowgate_control_requests_total {req}")
    finally:
        up_sock.close()


def main():
    build = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="flowgate-obs.")
    have_promtool = False
    try:
        port = free_port()
        fr = frames()
        d = Daemon(build, work, "obs", fr, FLAGS + ["--ct-capacity", str(1 << 16),
                                                    "--metrics", f"127.0.0.1:{port}"])
        prefix = d.cmd[d.cmd.index("--file-prefix") + 1]
        with d:
            d.wait_rx(len(fr))
            time.sleep(0.2)
            text = check_agree(d, port, prefix)
            have_promtool = check_promtool(text, work)
            check_http(port)
            check_prometheus(d, port, work)
            # the parameter of /flowgate/backends scopes to one service
            (one,) = telemetry(prefix, "/flowgate/backends,infer-a.b")
            expect(len(one) == 3 and all(key_unescape(k).startswith("infer-a.b/")
                                         for k in one), f"backends,infer-a.b: {one}")
        expect("final counters" in d.log, "daemon stopped cleanly")
        check_health(build, work)

        bad = Daemon(build, work, "obsbad", fr[:1], FLAGS + ["--metrics", "nowhere:1"])
        try:
            with bad:
                expect(False, "--metrics nowhere:1 started")
        except RuntimeError as e:
            expect(bad.rc == 2 and "flowgate: --metrics nowhere:1: expected ADDR:PORT"
                   in open(bad.logf).read(), f"bad --metrics: {e}")
    finally:
        work_done(work)
    if ERRS:
        print(f"{len(ERRS)} failures")
        return 1
    if not have_promtool:
        print("SKIP: promtool not installed (Debian package prometheus, "
              "scripts/install-deps.sh); everything else passed")
        return 77
    print("observability: metrics, telemetry and fgctl agree; promtool clean")
    return 0


if __name__ == "__main__":
    sys.exit(main())
