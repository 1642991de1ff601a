#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""maglev-load through the real daemon, against fake GPU workers' /metrics.

    test_metrics_placement.py BUILD_DIR    (root: a private network namespace)

flowgate runs in namespace fgm<PID> (net_pcap receiving from a veth, output
to a pcap file), service 10.100.0.5:80/tcp, DSR, scheduler maglev-load,
four backends 10.1.0.1-4.  Each backend address is on the namespace's
loopback, where a small Python HTTP server (this file, --serve) answers
GET /metrics with a vLLM page whose num_requests_waiting the test sets
through a state file, or answers a malformed page, or answers too late.

The signals' limits are loose enough for a loaded 2-core machine (a scrape
may take 500 ms; a signal turns stale only after 8 s without an answer), so
step 2 reads fresh signals however slowly its 400 flows are placed, and
steps 3-5 wait for the staleness they cause.

Each step waits for its effect (signals read back through `fgctl backend
list`, flows through `fgctl flows list`) instead of sleeping a fixed time;
no wall-clock bound is asserted.

  1. all workers idle, signals fresh        (fgctl shows score and age)
  2. worker 3 reports 40 waiting requests   -> 400 new flows: worker 3 gets
     about 1/16 of them (plain Maglev: 1/4), placed_load counts the others
     (a round in which a scrape timed out, so that some flow read a stale
     signal, is run again with other flows)
  3. worker 3's endpoint goes away (absent) -> its signal turns stale,
     scrape_connect counts; 200 new flows: placed_stale counts the flows
     that would have read it, which go by plain Maglev (worker 3 ~1/4 again)
  4. malformed page                          -> scrape_malformed, placed_stale
  5. slow endpoint (answers after 2 s, past the 500 ms timeout)       -> scrape_timeout, placed_stale
  6. the flows of step 2 send ACKs           -> every one still on the backend
     it was placed on (no connection moved); the daemon forwarded all along.
"""
import http.server
import json
import os
import shutil
import socketserver
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_watch_lc as wl  # noqa: E402  (namespace, injection, frames)
from fgdaemon import ERRS, expect  # noqa: E402

BACKENDS = ["10.1.0.1", "10.1.0.2", "10.1.0.3", "10.1.0.4"]
HOT = "10.1.0.3"
MPORT = 9100

CONF = """control_socket {sock};
conntrack {{
    capacity 16384;
    timeout syn_sent 10m;
    timeout established 10m;
}}
port net_pcap0 {{
    mac 02:00:00:00:00:01;
    local 10.0.0.1;
    gateway 10.0.0.254;
}}
neighbour 10.0.0.254 02:00:00:00:00:fe port net_pcap0;
service infer {vip}:80/tcp {{
    mode dsr-ipip;
    scheduler maglev-load;
    health metrics {{
        port {mport};
        interval 500ms;
        timeout 500ms;
        stale 8s;
        select model_name "sim";
        margin 1;
        saturate 100;
    }}
{backends}}}
"""


# ---- the fake worker (runs inside the namespace) ----------------------------

def serve_main(addr, port, state):
    class H(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            try:
                st = json.load(open(state))
            except (OSError, ValueError):
                st = {"mode": "ok", "waiting": 0}
            mode = st.get("mode", "ok")
            if mode == "slow":
                time.sleep(2.0)
            if mode == "malformed":
                body = 'vllm:num_requests_waiting{model_name="sim} 3\n'
            else:
                w = st.get("waiting", 0)
                body = ("# HELP vllm:num_requests_waiting Waiting.\n"
                        "# TYPE vllm:num_requests_waiting gauge\n"
                        f'vllm:num_requests_waiting{{engine="0",model_name="sim"}} {w}.0\n'
                        f'vllm:num_requests_running{{engine="0",model_name="sim"}} 4.0\n'
                        f'vllm:kv_cache_usage_perc{{engine="0",model_name="sim"}} 0.25\n'
                        'vllm:num_requests_waiting{engine="0",model_name="other"} 99.0\n')
            data = body.encode()
            try:
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:
                pass

    class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        allow_reuse_address = True

    S((addr, port), H).serve_forever()
    return 0


# ---- the test ----------------------------------------------------------------

def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--serve":
        return serve_main(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("metrics placement test: needs root (network namespace); skipped")
        return 77
    build = os.path.abspath(sys.argv[1])
    fgctl = os.path.join(build, "control", "fgctl")
    ns_name = f"fgm{os.getpid()}"
    work, sock = wl.prepare(ns_name)
    conf = os.path.join(work, "m.conf")
    with open(conf, "w") as f:
        f.write(CONF.format(sock=sock, vip=wl.VIP, mport=MPORT,
                            backends="".join(f"    backend {b};\n" for b in BACKENDS)))
    errs = ERRS   # fgdaemon.expect() records into it

    def ctl(*args):
        r = subprocess.run([fgctl, "-s", sock, "--json", *args], capture_output=True,
                           text=True, timeout=20)
        if r.returncode != 0:
            raise RuntimeError(f"fgctl {' '.join(args)}: {r.stderr}")
        return json.loads(r.stdout)

    def flows():
        return ctl("flows", "list")

    def loads():
        """backend address -> its load object (fgctl backend list)"""
        out = {}
        for s in ctl("backend", "list"):
            for b in s.get("backends", []) if isinstance(s, dict) else []:
                out[b["addr"]] = b.get("load", {})
        return out

    def svc_stats():
        st = ctl("stats")
        return next(s for s in st["services"] if s["name"] == "infer")

    def scrapes(addr, outcome):
        for b in ctl("health")["backends"]:
            if b["backend"].startswith(addr + ":"):
                return b["load"]["scrapes"][outcome]
        return -1

    def set_state(addr, **st):
        path = os.path.join(work, f"state-{addr}")
        with open(path + ".tmp", "w") as f:
            json.dump(st, f)
        os.replace(path + ".tmp", path)

    servers = {}

    def start_server(ns, addr):
        servers[addr] = subprocess.Popen(ns.cmd(sys.executable, os.path.abspath(__file__),
                                                "--serve", addr, str(MPORT),
                                                os.path.join(work, f"state-{addr}")),
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop_server(addr):
        p = servers.pop(addr, None)
        if p is not None:
            p.kill()
            p.wait()

    def placed(ids):
        """flows of @ids (by sport) -> backend address"""
        want = set(ids)
        fl = wl.wait_for(flows, lambda v: {int(f["sport"]) - 20000 for f in v} >= want)
        return {int(f["sport"]) - 20000: f["backend"] for f in fl
                if int(f["sport"]) - 20000 in want}

    def phase(ids):
        # a busy machine may lose injected frames: resend the missing
        # SYNs (as a client would) until every flow exists
        wl.deliver(ns, ids, 0x02, flows, lambda f: int(f["sport"]) - 20000 in set(ids),
                   rounds=20)
        return placed(ids)

    fgp = None
    try:
        with wl.Netns(ns_name) as ns:
            wl.sh(*ns.cmd("ip", "link", "set", "lo", "up"))
            for b in BACKENDS:
                wl.sh(*ns.cmd("ip", "addr", "add", f"{b}/32", "dev", "lo"))
                set_state(b, mode="ok", waiting=0)
                start_server(ns, b)
            fgp = wl.start_flowgate(ns, build, work, conf, 8191)

            # 1. idle workers: every signal fresh, shown with score and age
            ld = wl.wait_for(loads, lambda v: all(v.get(b, {}).get("state") == "fresh"
                                                  for b in BACKENDS))
            expect(all(ld.get(b, {}).get("state") == "fresh" for b in BACKENDS),
                   f"step 1: signals not fresh: {ld}")
            expect(all(ld[b].get("series", {}).get("vllm:num_requests_waiting") == 0
                       and ld[b].get("age_ms") is not None for b in BACKENDS if b in ld),
                   f"step 1: series/age missing: {ld}")

            # 2. worker 3 is loaded: new flows avoid it
            set_state(HOT, mode="ok", waiting=40)
            wl.wait_for(loads, lambda v: v[HOT].get("score", 0) >= 40)
            # The claim needs placements that read fresh signals.  A loaded
            # machine may time a scrape out (its signal is then stale until
            # the next answer), and a flow placed meanwhile goes by plain
            # Maglev, counted in placed_stale: such a round proves nothing
            # either way, so it is run again with other flows (polling for
            # the effect, not a bound on time).
            p2all = {}
            for k in range(10):
                wl.wait_for(loads, lambda v: all(v.get(b, {}).get("state") == "fresh"
                                                 for b in BACKENDS))
                s0 = svc_stats()
                p2 = phase(range(k * 400 + (5000 if k else 0), k * 400 + 400 +
                                 (5000 if k else 0)))
                s1 = svc_stats()
                p2all.update(p2)
                if s1["placed_stale"] == s0["placed_stale"]:
                    break
                print(f"step 2: round {k}: placed_stale +"
                      f"{s1['placed_stale'] - s0['placed_stale']} (a scrape timed out); again")
            hot2 = sum(1 for b in p2.values() if b == HOT)
            expect(len(p2) == 400, f"step 2: {len(p2)} of 400 flows")
            expect(hot2 < 400 / 8,
                   f"step 2: {hot2}/400 new flows on the loaded worker (want ~1/16, "
                   f"plain Maglev gives ~1/4)")
            d_load = s1["placed_load"] - s0["placed_load"]
            expect(d_load > 0 and s1["placed_stale"] == s0["placed_stale"],
                   f"step 2: placed_load +{d_load}, placed_stale "
                   f"+{s1['placed_stale'] - s0['placed_stale']} in each of {k + 1} rounds")
            print(f"step 2: loaded worker got {hot2}/400 new flows; placed_load +{d_load}")
            # backend list: per worker, new flows by Maglev vs by load
            bl = {b["addr"]: b for s in ctl("backend", "list") for b in s.get("backends", [])}
            by_load = sum(bl[a].get("new_flows_load", 0) for a in BACKENDS)
            expect(by_load == s1["placed_load"] and bl[HOT].get("new_flows_load", -1) == 0 and
                   all(bl[a]["new_flows_maglev"] + bl[a]["new_flows_load"] == bl[a]["new_flows"]
                       for a in BACKENDS),
                   f"backend list: new_flows_load sum {by_load} vs placed_load "
                   f"{s1['placed_load']}, loaded worker {bl[HOT].get('new_flows_load')}")

            # 3..5: absent, malformed, slow -> stale -> plain Maglev, counted
            steps = [("absent", "scrape_connect"), ("malformed", "scrape_malformed"),
                     ("slow", "scrape_timeout")]
            base = 1000
            for mode, outcome in steps:
                c0 = scrapes(HOT, outcome)
                if mode == "absent":
                    stop_server(HOT)
                else:
                    set_state(HOT, mode=mode, waiting=40)
                    if HOT not in servers:
                        start_server(ns, HOT)
                wl.wait_for(lambda: (scrapes(HOT, outcome), loads()[HOT].get("state")),
                            lambda v: v[0] > c0 and v[1] == "stale")
                c1 = scrapes(HOT, outcome)
                expect(c1 > c0, f"{mode}: {outcome} did not count ({c0} -> {c1})")
                expect(loads()[HOT].get("state") == "stale", f"{mode}: signal not stale")
                s0 = svc_stats()
                p = phase(range(base, base + 200))
                s1 = svc_stats()
                hot = sum(1 for b in p.values() if b == HOT)
                d_stale = s1["placed_stale"] - s0["placed_stale"]
                expect(len(p) == 200, f"{mode}: {len(p)} of 200 flows forwarded")
                expect(d_stale > 0, f"{mode}: placed_stale +{d_stale}")
                expect(hot > 200 / 8,
                       f"{mode}: {hot}/200 on the stale worker: plain Maglev gives ~1/4")
                print(f"{mode}: {outcome} {c0}->{c1}, placed_stale +{d_stale}, "
                      f"stale worker {hot}/200")
                base += 1000

            # 6. the flows of step 2 keep their backend whatever the signals did
            set_state(HOT, mode="ok", waiting=0)
            if HOT not in servers:
                start_server(ns, HOT)
            st0 = ctl("stats")["total"]
            rx0 = st0["rx_packets"]
            # a busy machine's capture side may miss a frame (as a TCP
            # client would, send again): ACKs of tracked flows, so a frame
            # that arrives twice only touches its flow again
            ids2 = sorted(p2all)
            for _ in range(5):
                wl.inject(ns, [wl.frame(i, 0x10) for i in ids2])
                if wl.wait_for(lambda: ctl("stats")["total"]["rx_packets"],
                               lambda n: n >= rx0 + len(ids2), timeout=15) >= rx0 + len(ids2):
                    break
            after = placed(ids2)
            moved = [i for i in p2all if after.get(i) != p2all[i]]
            expect(not moved, f"step 6: {len(moved)} flows moved, e.g. "
                   f"{[(i, p2all[i], after.get(i)) for i in moved[:5]]}")
            st = ctl("stats")
            expect(st["total"]["new_flows"] == st0["new_flows"],
                   f"new_flows {st0['new_flows']} -> {st['total']['new_flows']}: ACKs of "
                   f"tracked flows opened flows")
            fgp.send_signal(2)
            rc = fgp.wait(timeout=20)
            expect(rc == 0, f"flowgate exit {rc}")
    finally:
        for a in list(servers):
            stop_server(a)
        if fgp is not None and fgp.poll() is None:
            fgp.kill()
            fgp.wait()
        if errs and os.path.exists(os.path.join(work, "flowgate.log")):
            print(open(os.path.join(work, "flowgate.log")).read()[-1500:])
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(f"/var/run/dpdk/{ns_name}", ignore_errors=True)
    print(f"maglev-load placement with fake metrics endpoints: {'FAIL' if errs else 'ok'}")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
