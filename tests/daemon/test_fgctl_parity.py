#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""fgctl parity with ipvsadm / conntrack-tools, against the real daemon.

    test_fgctl_parity.py BUILD_DIR [--seed S]

One flowgate on net_pcap (no root; SYN_SENT timeout 10 min, so nothing
expires during the test) replays seeded random traffic: DSR flows
over IPv4 and IPv6 from random clients, some completed (ESTABLISHED), some
left at SYN_SENT, and NAT flows.  Then:

- flows list filters (--client ADDR/PREFIX, --client-port, --nat, --nat-port,
  --state, --backend, --core, --min/--max-idle, --min/--max-age): for random
  filters, the daemon's answer is exactly the full listing filtered here;
- every flow record has created_ms, lifetime_ms, idle_ms and age_ms ==
  idle_ms (the deprecated alias); created_ms is when the daemon ran;
- flows get finds a NAT flow by both directions' tuples and a DSR flow by its
  client tuple, IPv4 and IPv6;
- ActiveConn / InActConn: `service list`, `backend list`, `stats --json`
  and /metrics (flowgate_backend_connections) agree per backend with the
  listing (ESTABLISHED vs other states), also after deleting flows and after
  a config change (new service tables: the counters carry);
- stats: the compact default prints no zero counter and summarises drops,
  --all prints every counter, --service scopes the answer to that service;
  --zero answers with the counters, then `stats` counts from zero while
  /metrics keeps counting;
- --json on error paths: usage errors, no daemon, daemon errors each print
  one JSON object on stdout with "ok": false and exit non-zero; JSON floats
  have at most 3 decimals where fgctl computes them (stats --rate).

A second daemon replays its pcap in a loop (infinite_rx): `stats --rate`
shows a positive rx rate, consistent with two stats read around it.
Replay a failure with the seed printed.
"""
import ipaddress
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fgdaemon import Daemon  # noqa: E402
from pktgen import eth, ip, ipv4, ipv6, tcp  # noqa: E402
from test_observability import free_port, parse_metrics, scrape  # noqa: E402

LB, NH = "02:00:00:00:00:01", "02:00:00:00:00:fe"
VIP4, VIP6, NATVIP = "10.100.0.1", "fd00:100::1", "10.100.0.3"
FLAGS = ["--mbufs", "8191", "--port-mac", "0,02:00:00:00:00:01",
         "--local", "10.0.0.1", "--gateway", "10.0.0.254",
         "--neigh", "10.0.0.254,02:00:00:00:00:fe",
         "--local", "fd00::1", "--gateway", "fd00::fe",
         "--neigh", "fd00::fe,02:00:00:00:00:fe",
         "--service", f"{VIP4}:80/tcp,mode=dsr-ipip,name=dsr4",
         "--backend", "10.1.0.5", "--backend", "10.1.0.6", "--backend", "10.1.0.7",
         "--service", f"[{VIP6}]:443/tcp,mode=dsr-ipip,name=dsr6",
         "--backend", "fd01::5", "--backend", "fd01::6",
         "--service", f"{NATVIP}:8080/tcp,mode=nat,name=nat4",
         "--backend", "10.1.0.1:9000", "--backend", "10.1.0.2:9001"]
# the same, as a file with long SYN timeouts: no flow of the first daemon
# expires while the test runs, however slow the machine
CONF = """conntrack {
    timeout syn_sent 10m;
    timeout established 15m;
}
port net_pcap0 {
    mac 02:00:00:00:00:01;
    local 10.0.0.1;
    local fd00::1;
    gateway 10.0.0.254;
    gateway6 fd00::fe;
}
neighbour 10.0.0.254 02:00:00:00:00:fe;
neighbour fd00::fe 02:00:00:00:00:fe;
service dsr4 10.100.0.1:80/tcp {
    mode dsr-ipip;
    backend 10.1.0.5;
    backend 10.1.0.6;
    backend 10.1.0.7;
}
service dsr6 [fd00:100::1]:443/tcp {
    mode dsr-ipip;
    backend fd01::5;
    backend fd01::6;
}
service nat4 10.100.0.3:8080/tcp {
    mode nat;
    backend 10.1.0.1:9000;
    backend 10.1.0.2:9001;
}
"""
PREFIXES4 = ["172.16.0.0/16", "172.17.5.0/24", "192.168.0.0/16"]
PREFIXES6 = ["fd00:aa::/48", "fd00:bb:1::/64"]


def rand_addr(rng, prefix):
    net = ipaddress.ip_network(prefix)
    return str(net.network_address + rng.randrange(1, min(net.num_addresses - 1, 1 << 30)))


def frame(c, vip, sport, dport, flags):
    if ":" in c:
        s, d = ip(c), ip(vip)
        return eth(LB, NH, 0x86DD, ipv6(s, d, 6, tcp(s, d, sport, dport, flags,
                                                      seq=1000 if flags == 0x02 else 1001)))
    s, d = ip(c), ip(vip)
    return eth(LB, NH, 0x0800, ipv4(s, d, 6, tcp(s, d, sport, dport, flags,
                                                 seq=1000 if flags == 0x02 else 1001)))


def traffic(rng):
    """Frames and the flows they open: (client, sport, vip, dport, established)."""
    flows, frames = [], []
    used = set()
    for i in range(rng.randrange(60, 120)):
        v6 = rng.random() < 0.3
        nat = not v6 and rng.random() < 0.2
        c = rand_addr(rng, rng.choice(PREFIXES6 if v6 else PREFIXES4))
        sport = rng.randrange(1024, 65535)
        if (c, sport) in used:
            continue
        used.add((c, sport))
        vip, dport = (VIP6, 443) if v6 else (NATVIP, 8080) if nat else (VIP4, 80)
        est = not nat and rng.random() < 0.5
        flows.append((c, sport, vip, dport, est))
        frames.append(frame(c, vip, sport, dport, 0x02))
    for c, sport, vip, dport, est in flows:
        if est:
            frames.append(frame(c, vip, sport, dport, 0x10))
    # dropped: no such VIP (the compact stats summarise drops)
    frames += [frame("172.31.0.1", "10.100.0.99", 1000 + i, 80, 0x02) for i in range(3)]
    return flows, frames


def in_prefix(a, prefix):
    try:
        return ipaddress.ip_address(a) in ipaddress.ip_network(prefix)
    except (TypeError, ValueError):
        return False


def main():
    args = sys.argv[1:]
    seed = random.randrange(1 << 32)
    if "--seed" in args:
        k = args.index("--seed")
        seed = int(args[k + 1])
        del args[k:k + 2]
    build = os.path.abspath(args[0])
    rng = random.Random(seed)
    print(f"seed {seed}")
    work = tempfile.mkdtemp(prefix="flowgate-parity.")
    errs = []

    def expect(cond, what):
        if not cond:
            errs.append(what)
            print("FAIL:", what)

    flows, frames = traffic(rng)
    mport = free_port()
    t_start = int(time.time() * 1000)
    try:
        conf = os.path.join(work, "par.conf")
        with open(conf, "w") as f:
            f.write(CONF)
        with Daemon(build, work, "par", frames, ["-c", conf, "--mbufs", "8191",
                                                  "--metrics", f"127.0.0.1:{mport}"]) as d:
            d.wait_rx(len(frames))

            def fj(*a, check=True):
                r = d.fgctl("--json", *a, check=check)
                return r.returncode, (json.loads(r.stdout) if r.stdout.strip() else None)

            _, full = fj("flows", "list")
            expect(len(full) == len(flows), f"{len(full)} flows listed, {len(flows)} opened")
            est = {(c, p) for c, p, _, _, e in flows if e}
            got_est = {(f["src"], f["sport"]) for f in full if f["state"] == "ESTABLISHED"}
            expect(got_est == est, f"ESTABLISHED flows: {len(got_est)} listed, {len(est)} "
                   "completed")

            # --- ActiveConn / InActConn -----------------------------------
            def want_conns():
                w = {}
                for f in full:
                    k = (f["service"], f["backend"])
                    a, i = w.get(k, (0, 0))
                    w[k] = (a + 1, i) if f["state"] == "ESTABLISHED" else (a, i + 1)
                return w
            want = want_conns()
            _, svcs = fj("service", "list")
            _, bl = fj("backend", "list")
            _, st = fj("stats")
            mx = parse_metrics(scrape(mport))
            for src_name, tree in (("service list", svcs), ("backend list", bl),
                                   ("stats", st["services"])):
                for s in tree:
                    for b in s["backends"]:
                        k = (s["name"], b["addr"])
                        got = (b.get("active_conns"), b.get("inactive_conns"))
                        expect(got == want.get(k, (0, 0)),
                               f"{src_name} {k}: active/inactive {got}, listing {want.get(k)}")
            for s in st["services"]:
                for b in s["backends"]:
                    bn = f"[{b['addr']}]:{b['port']}" if ":" in b["addr"] else \
                        f"{b['addr']}:{b['port']}"
                    got = tuple(mx.get(("flowgate_backend_connections",
                                        frozenset({("service", s["name"]), ("backend", bn),
                                                   ("state", x)})))
                                for x in ("active", "inactive"))
                    w = want.get((s["name"], b["addr"]), (0, 0))
                    expect(got == (float(w[0]), float(w[1])),
                           f"/metrics {s['name']} {bn}: {got}, listing {w}")
            r = d.fgctl("service", "list")
            expect("ACTIVECONN" in r.stdout and "INACTCONN" in r.stdout,
                   f"service list columns: {r.stdout[:200]}")
            # deleting the established flows of one backend moves them out
            k0 = next(k for k, v in want.items() if v[0] > 0)
            d.fgctl("flows", "delete", "--backend", k0[1], "--state", "ESTABLISHED")
            _, full = fj("flows", "list")
            want = want_conns()
            _, bl = fj("backend", "list", k0[0])
            for b in bl[0]["backends"]:
                got = (b["active_conns"], b["inactive_conns"])
                expect(got == want.get((k0[0], b["addr"]), (0, 0)),
                       f"after delete {k0[0]} {b['addr']}: {got}, listing "
                       f"{want.get((k0[0], b['addr']))}")

            # --- flows get by either direction ----------------------------
            nat = [f for f in full if "nat_port" in f]
            for f in nat[:5]:
                cl = f"{f['src']}:{f['sport']}"
                rc1, a = fj("flows", "get", cl, f"{f['dst']}:{f['dport']}", "tcp", check=False)
                rc2, b = fj("flows", "get", f"{f['backend']}:{f['backend_port']}",
                            f"{f['nat_addr']}:{f['nat_port']}", "tcp", check=False)
                expect(rc1 == 0 and rc2 == 0 and a and b and a[0]["sport"] == b[0]["sport"]
                       == f["sport"], f"NAT flow {cl}: get forward rc {rc1}, reply rc {rc2}")
            for f in [g for g in full if "nat_port" not in g][:6]:
                fmt = "[{}]:{}" if ":" in f["src"] else "{}:{}"
                rc, a = fj("flows", "get", fmt.format(f["src"], f["sport"]),
                           fmt.format(f["dst"], f["dport"]), "tcp", check=False)
                expect(rc == 0 and len(a) == 1 and a[0]["backend"] == f["backend"],
                       f"DSR flow {f['src']}:{f['sport']}: get rc {rc} {a}")

            # a config change builds new service tables: the counts carry
            d.fgctl("backend", "weight", "dsr4", "10.1.0.5", "5")
            d.fgctl("backend", "drain", "dsr6", "fd01::6")
            _, full = fj("flows", "list")
            want = want_conns()
            _, st = fj("stats")
            # per-worker service rows sum to the service's, across the change
            _, pc = fj("stats", "--service", "dsr4", "--per-core")
            expect(len(pc["per_core"]) == 1 and pc["services"][0]["packets"] > 0 and
                   pc["per_core"][0]["packets"] == pc["services"][0]["packets"],
                   f"stats --service --per-core: {pc.get('per_core')}")
            for s_ in st["services"]:
                for b in s_["backends"]:
                    got = (b["active_conns"], b["inactive_conns"])
                    expect(got == want.get((s_["name"], b["addr"]), (0, 0)),
                           f"after a config change {s_['name']} {b['addr']}: {got}, listing "
                           f"{want.get((s_['name'], b['addr']))}")

            # --- created / idle / age ---------------------------------
            now = int(time.time() * 1000)
            bad = [f for f in full if not ("created_ms" in f and "idle_ms" in f and
                                           "lifetime_ms" in f and f["age_ms"] == f["idle_ms"]
                                           and t_start - 1000 <= f["created_ms"] <= now
                                           and f["idle_ms"] <= f["lifetime_ms"])]
            expect(not bad, f"flow records without consistent created/idle/age: {bad[:2]}")
            r = d.fgctl("flows", "list")
            expect(" AGE " in r.stdout and " IDLE " in r.stdout and " NAT " in r.stdout,
                   f"text listing columns: {r.stdout[:300]}")
            time.sleep(1.2)
            _, old = fj("flows", "list", "--min-age", "1s")
            _, young = fj("flows", "list", "--max-age", "1s")
            _, idle = fj("flows", "list", "--min-idle", "1s", "--max-idle", "1h")
            odd = [(f["src"], f["state"], f["idle_ms"], f["lifetime_ms"]) for f in full
                   if (f["src"], f["sport"]) not in {(g["src"], g["sport"]) for g in idle}]
            expect(len(old) == len(full) and not young and len(idle) == len(full),
                   f"age/idle ranges: {len(old)} >= 1s old, {len(young)} <= 1s, "
                   f"{len(idle)} idle 1s..1h of {len(full)}: {odd[:4]}")

            # --- random filters == the listing filtered here ------------
            _, full = fj("flows", "list")
            nat = [f for f in full if "nat_port" in f]
            for k in range(40):
                opts, pred = [], []
                kind = rng.choice(["client", "client", "port", "nat", "natport", "state",
                                   "backend", "core", "combo"])
                f0 = rng.choice(full)
                if kind in ("client", "combo"):
                    if rng.random() < 0.5:
                        pfx = rng.choice(PREFIXES4 + PREFIXES6)
                    else:
                        plen = rng.randrange(8, 33) if ":" not in f0["src"] else \
                            rng.randrange(16, 129)
                        pfx = str(ipaddress.ip_network(f"{f0['src']}/{plen}", strict=False))
                    opts += ["--client", pfx]
                    pred.append(lambda f, p=pfx: in_prefix(f["src"], p))
                if kind == "port":
                    opts += ["--client-port", str(f0["sport"])]
                    pred.append(lambda f, p=f0["sport"]: f["sport"] == p)
                if kind == "nat" and nat:
                    opts += ["--nat", "10.0.0.1"]
                    pred.append(lambda f: f.get("nat_addr") == "10.0.0.1")
                if kind == "natport" and nat:
                    g = rng.choice(nat)
                    opts += ["--nat", f"{g['nat_addr']}:{g['nat_port']}"]
                    pred.append(lambda f, g=g: f.get("nat_addr") == g["nat_addr"] and
                                f.get("nat_port") == g["nat_port"])
                if kind in ("state", "combo"):
                    st = rng.choice(["ESTABLISHED", "SYN_SENT"])
                    opts += ["--state", st]
                    pred.append(lambda f, st=st: f["state"] == st)
                if kind == "backend":
                    b = f0["backend"]
                    opts += ["--backend", b]
                    pred.append(lambda f, b=b: f["backend"] == b)
                if kind == "core":
                    opts += ["--core", "0"]
                    pred.append(lambda f: f["core"] == 0)
                if not opts:
                    continue
                rc, got = fj("flows", "list", *opts)

                def sel(fl):
                    return {(f["src"], f["sport"]) for f in fl if all(p(f) for p in pred)}
                want = sel(full)
                have = {(f["src"], f["sport"]) for f in (got or [])}
                if have != want:
                    # flows only leave (SYN_SENT expires 30 s after the
                    # replay): between the listings before and after
                    _, full = fj("flows", "list")
                    want = sel(full) if sel(full) <= have <= want else want
                expect(rc == 0 and have == want,
                       f"flows list {' '.join(opts)}: {len(have)} flows, want {len(want)}")
            # --nat-port alone
            if nat:
                g = nat[0]
                rc, got = fj("flows", "list", "--nat-port", str(g["nat_port"]))
                expect(rc == 0 and [(f["src"], f["sport"]) for f in got] ==
                       [(g["src"], g["sport"])], f"--nat-port {g['nat_port']}: {got}")

            # --- stats views ----------------------------------------------
            text = d.fgctl("stats").stdout
            zero_lines = [ln for ln in text.splitlines()
                          if re.match(r"^\s*[a-z_]+\s+0(\.0+)?$", ln)]
            drops = [ln for ln in text.splitlines() if ln.strip().startswith("drops by reason")]
            expect(not zero_lines and drops and "unknown_vip 3" in drops[0] and
                   "drops_by_reason" not in text,
                   f"compact stats: zero lines {zero_lines[:3]}; {text[:300]}")
            full_text = d.fgctl("stats", "--all").stdout
            expect("drops_by_reason" in full_text and len(full_text) > len(text),
                   "stats --all prints every counter")
            _, sc = fj("stats", "--service", "dsr6")
            expect(sc.get("scope") == "service" and "total" not in sc and
                   [s["name"] for s in sc["services"]] == ["dsr6"],
                   f"stats --service dsr6 keys {sorted(sc)}")
            stext = d.fgctl("stats", "--service", "dsr6").stdout
            expect("dsr6" in stext and "dsr4" not in stext and "rx_packets" not in stext,
                   f"stats --service text: {stext[:300]}")

            # --- zero -----------------------------------------------------
            before = mx[("flowgate_core_rx_packets_total", frozenset({("core", "0")}))]
            _, z = fj("stats", "--zero")
            expect(z["total"]["rx_packets"] == before,
                   f"stats --zero answers the counters: {z['total']['rx_packets']} vs {before}")
            _, after = fj("stats")
            dsr4 = next(s for s in after["services"] if s["name"] == "dsr4")
            expect(after["total"]["rx_packets"] == 0 and dsr4["packets"] == 0 and
                   after["zeroed_at_ms"] >= t_start and
                   all(b["packets"] == 0 for b in dsr4["backends"]),
                   f"after --zero: rx {after['total']['rx_packets']}, dsr4 {dsr4['packets']}")
            expect(sum(b["active_conns"] + b["inactive_conns"] for b in dsr4["backends"]) > 0,
                   "--zero must not zero the connection gauges")
            mx2 = parse_metrics(scrape(mport))
            expect(mx2[("flowgate_core_rx_packets_total", frozenset({("core", "0")}))] >= before,
                   "/metrics was zeroed by fgctl stats --zero")

            # --- --json on error paths ------------------------------------
            def jerr(argv, want_rc):
                r = subprocess.run([d.fgctl_bin] + argv, capture_output=True, text=True,
                                   timeout=30)
                try:
                    o = json.loads(r.stdout)
                except ValueError:
                    o = None
                expect(r.returncode == want_rc and isinstance(o, dict) and
                       o.get("ok") is False and o.get("error"),
                       f"fgctl {' '.join(argv)}: rc {r.returncode}, stdout {r.stdout!r}")
            s = ["-s", d.sock]
            jerr(s + ["--json", "flows", "list", "--bogus"], 2)
            jerr(s + ["flows", "list", "--client", "10.0.0.0/33", "--json"], 2)
            jerr(s + ["--json", "flows", "list", "--min-idle", "5 parsecs"], 2)
            jerr(s + ["--json", "frobnicate"], 2)
            jerr(s + ["--json"], 2)
            jerr(["--json", "-s"], 2)
            jerr(["-s", os.path.join(work, "nobody.sock"), "--json", "stats"], 1)
            jerr(s + ["--json", "stats", "--service", "nosuch"], 1)
            jerr(s + ["--json", "flows", "get", "1.2.3.4:5", "6.7.8.9:10", "tcp"], 1)
    finally:
        pass

    # --- rates: a daemon that replays its pcap in a loop --------------------
    loop = [frame("172.16.9.9", VIP4, 5000 + i, 80, 0x02 if i == 0 else 0x10)
            for i in range(64)]
    try:
        with Daemon(build, work, "rate", loop, FLAGS, vdev_args=",infinite_rx=1") as d:
            d.wait_rx(1000)
            t0 = time.monotonic()
            a = d.stats()["total"]["rx_packets"]
            r = d.fgctl("--json", "stats", "--rate", "--interval", "500ms")
            b = d.stats()["total"]["rx_packets"]
            t1 = time.monotonic()
            rt = json.loads(r.stdout)
            rx = rt["rates"]["total"]["rx_packets"]
            expect(0.4 <= rt["interval_s"] <= 5 and rx > 0 and
                   rx * rt["interval_s"] <= (b - a) * 1.05 + 64,
                   f"stats --rate: interval {rt['interval_s']}, rx {rx}/s, read {b - a} "
                   f"in {t1 - t0:.2f}s")
            floats = re.findall(r"\d+\.\d{4,}", r.stdout)
            expect(not floats, f"floats with more than 3 decimals: {floats[:3]}")
            txt = d.fgctl("stats", "--rate", "--interval", "200ms").stdout
            expect("per-second rates" in txt and "rx_packets" in txt and "/s" in txt,
                   f"stats --rate text: {txt[:200]}")
    finally:
        if not errs:
            shutil.rmtree(work, ignore_errors=True)
    if errs:
        print(f"{len(errs)} failures (seed {seed}); work dir kept: {work}")
        return 1
    print(f"fgctl parity: {len(flows)} flows, filters, created/idle, get both ways, "
          "ActiveConn/InActConn in 4 readers, stats views/zero/rate, --json errors (seed "
          f"{seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
