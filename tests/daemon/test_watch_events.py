#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""fgctl flows watch: timestamps, filters, NEW / UPDATE / DESTROY with reasons.

    test_watch_events.py BUILD_DIR        (root: a private network namespace)

flowgate runs in a namespace of its own with net_pcap receiving from a veth
(rx_iface_in), so packets are injected while watchers are attached (the
injection helpers of test_watch_lc.py).  Conntrack: capacity 1024,
syn_sent 5 s, close 1 s.  Two watchers: one filtered to clients in
172.20.0.0/16 (--client), one unfiltered.

  A  6 flows from 172.20.0.x: SYN -> NEW; ACK -> UPDATE SYN_SENT ->
     ESTABLISHED (on probation: two more ACKs, the last 2.2 s after the
     SYN, assure them, with no event); 2 of them RST -> UPDATE ESTABLISHED -> CLOSE, then DESTROY
     reason "closed" (expired after the close); 1 deleted with `flows delete
     --client ADDR/32` -> DESTROY "deleted"; 3 stay.
  B  4 flows from 172.21.0.x: SYN only -> DESTROY "expired" (syn_sent 5 s).
     The filtered watcher never sees B nor C.
  C  2,000 SYNs from 172.22.x.x fill the table: unassured entries are
     evicted, each with a DESTROY "evicted" (every C flow that got a NEW is
     either still listed or had a DESTROY: evicted, or expired).

Every event has ts_ms (Unix ms) within the run and a "time" string; per flow
NEW <= UPDATE <= DESTROY in time and in order; UPDATE events carry
prev_state.  Namespace fgv<PID>, files in /tmp/flowgate-fgv<PID>.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fgdaemon import ERRS, expect  # noqa: E402
from pktgen import eth, ip, ipv4, tcp  # noqa: E402
from test_watch_lc import Netns, inject, prepare, start_flowgate, wait_for  # noqa: E402

LB, NH = "02:00:00:00:00:01", "02:00:00:00:00:fe"
VIP = "10.100.0.5"

CONF = """control_socket {sock};
conntrack {{
    capacity 1024;
    timeout syn_sent 5s;
    timeout close 1s;
    timeout established 10m;
}}
port net_pcap0 {{
    mac 02:00:00:00:00:01;
    local 10.0.0.1;
    gateway 10.0.0.254;
}}
neighbour 10.0.0.254 02:00:00:00:00:fe port net_pcap0;
service ev4 {vip}:80/tcp {{
    mode dsr-ipip;
    backend 10.1.0.1;
    backend 10.1.0.2;
}}
"""


def frame(client, sport, flags):
    c, v = ip(client), ip(VIP)
    return eth(LB, NH, 0x0800, ipv4(c, v, 6, tcp(c, v, sport, 80, flags,
                                                 seq=1000 if flags == 0x02 else 1001)))


A = [(f"172.20.0.{i + 1}", 30000 + i) for i in range(6)]
B = [(f"172.21.0.{i + 1}", 31000 + i) for i in range(4)]
C = [(f"172.22.{i // 250}.{i % 250 + 1}", 32000 + i) for i in range(2000)]


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("watch events test: needs root (network namespace); skipped")
        return 77
    build = os.path.abspath(sys.argv[1])
    fgctl = os.path.join(build, "control", "fgctl")
    ns_name = f"fgv{os.getpid()}"
    work, sock = prepare(ns_name)
    conf = os.path.join(work, "ev.conf")
    with open(conf, "w") as f:
        f.write(CONF.format(sock=sock, vip=VIP))
    errs = ERRS   # fgdaemon.expect() records into it

    def ctl(*args):
        return subprocess.run([fgctl, "-s", sock, *args], capture_output=True, text=True,
                              timeout=30)

    def flows(*args):
        r = ctl("--json", "flows", "list", *args)
        if r.returncode != 0:
            raise RuntimeError(f"flows list: {r.stderr}")
        return json.loads(r.stdout)

    def keys(fl):
        return {f if isinstance(f, tuple) else (f["src"], f["sport"]) for f in fl}

    def events(path):
        out = []
        for line in open(path):
            line = line.strip()
            if line.startswith("{"):
                out.append(json.loads(line))
        return out

    procs = []
    t0 = int(time.time() * 1000)
    try:
        with Netns(ns_name) as ns:
            fgp = start_flowgate(ns, build, work, conf, 4095)
            procs.append(fgp)
            wf_path, wa_path = os.path.join(work, "wf.json"), os.path.join(work, "wa.json")
            wf_out, wa_out = open(wf_path, "w"), open(wa_path, "w")
            wf = subprocess.Popen([fgctl, "-s", sock, "--json", "flows", "watch",
                                   "--client", "172.20.0.0/16"], stdout=wf_out,
                                  stderr=subprocess.STDOUT)
            wa = subprocess.Popen([fgctl, "-s", sock, "--json", "flows", "watch"],
                                  stdout=wa_out, stderr=subprocess.STDOUT)
            procs += [wf, wa]

            def watchers():
                try:
                    return json.loads(ctl("--json", "ping").stdout)["control"]["watchers"]
                except (ValueError, KeyError, TypeError):
                    return 0
            expect(wait_for(watchers, lambda n: n >= 2) >= 2, "the watchers did not attach")

            def deliver(pairs, flags, done):
                for _ in range(5):
                    if done():
                        return True
                    inject(ns, [frame(c, p, flags) for c, p in pairs])
                    if wait_for(done, lambda v: v, timeout=3.0):
                        return True
                return wait_for(done, lambda v: v)   # a loaded machine: the hang guard

            # A opens and completes; B opens
            ok = deliver(A + B, 0x02, lambda: keys(A + B) <= keys(flows()))
            expect(ok, "A and B flows did not open")
            t_open = time.monotonic()
            ok = deliver(A, 0x10, lambda: keys(A) <= keys(flows("--state", "ESTABLISHED")))
            expect(ok, "A flows did not reach ESTABLISHED")
            # a DSR handshake is probation (issue 34): the A flows earn
            # their place (4 packets over 2 s) before C fills the table;
            # assurance changes no state (no event)
            inject(ns, [frame(c, p, 0x10) for c, p in A])
            time.sleep(max(0.0, t_open + 2.2 - time.monotonic()))

            def assured():
                return {(f["src"], f["sport"]) for f in flows() if f["flags"] & 0x04}
            ok = deliver(A, 0x10, lambda: keys(A) <= assured())
            expect(ok, "A flows were not assured after 4 packets over 2 s")
            # two A flows reset: CLOSE, then expire 1 s later ("closed")
            ok = deliver(A[:2], 0x04, lambda: not (keys(A[:2]) & keys(flows("--client",
                                                                              "172.20.0.0/16",
                                                                              "--state",
                                                                              "ESTABLISHED"))))
            expect(ok, "A flows did not leave ESTABLISHED on RST")
            # one deleted by client address
            r = ctl("--json", "flows", "delete", "--client", f"{A[2][0]}/32")
            expect(r.returncode == 0 and json.loads(r.stdout).get("deleted") == 1,
                   f"flows delete --client {A[2][0]}/32: {r.stdout} {r.stderr}")
            # B expires (5 s), A[:2] expire after close (1 s)
            left = wait_for(lambda: keys(flows()), lambda v: not (v & keys(B + A[:3])))
            expect(not (left & keys(B + A[:3])), f"flows still listed: {left & keys(B + A[:3])}")
            # C fills the table: evictions
            inject(ns, [frame(c, p, 0x02) for c, p in C])
            time.sleep(1.0)
            listed_c = wait_for(lambda: keys(flows("--client", "172.22.0.0/16")),
                                lambda v: len(v) >= 900)
            listed_c = keys(flows("--client", "172.22.0.0/16"))

            # every event up to this listing written (flows only leave):
            # polled in the watchers' files (fgctl flushes each event), not
            # slept on, for a loaded machine may run them seconds later
            want_a = sum(2 + (2 if i < 2 else 1 if i == 2 else 0) for i in range(len(A)))

            def written():
                try:
                    evf_, eva_ = events(wf_path), events(wa_path)
                except ValueError:      # a line being written
                    return False
                gone = {(e["flow"]["src"], e["flow"]["sport"]) for e in eva_
                        if e["event"] == "DESTROY"}
                new_c = {(e["flow"]["src"], e["flow"]["sport"]) for e in eva_
                         if e["event"] == "NEW" and e["flow"]["src"].startswith("172.22.")}
                return len(evf_) >= want_a and keys(B) <= gone and new_c <= listed_c | gone
            wait_for(written, lambda v: v)
            t1 = int(time.time() * 1000) + 1000
            for w, out in ((wf, wf_out), (wa, wa_out)):
                w.send_signal(signal.SIGINT)
                w.wait(timeout=10)
                out.close()
            evf, eva = events(wf_path), events(wa_path)

            # --- the filtered watcher: A only, every event expected -------
            by = {}
            for e in evf:
                by.setdefault((e["flow"]["src"], e["flow"]["sport"]), []).append(e)
            expect(set(by) == keys(A), f"filtered watcher saw {sorted(set(by) - keys(A))[:5]} "
                   f"besides A; missing {sorted(keys(A) - set(by))}")
            for k, evs in by.items():
                kinds = [e["event"] for e in evs]
                i = A.index(k)
                want = ["NEW", "UPDATE"] + (["UPDATE", "DESTROY"] if i < 2 else
                                            ["DESTROY"] if i == 2 else [])
                expect(kinds == want, f"A flow {k}: events {kinds}, want {want}")
                ups = [e for e in evs if e["event"] == "UPDATE"]
                if ups:
                    expect(ups[0]["flow"].get("prev_state") == "SYN_SENT" and
                           ups[0]["flow"]["state"] == "ESTABLISHED",
                           f"A flow {k}: first UPDATE {ups[0]['flow']}")
                if len(ups) > 1:
                    expect(ups[1]["flow"].get("prev_state") == "ESTABLISHED" and
                           ups[1]["flow"]["state"] == "CLOSE",
                           f"A flow {k}: second UPDATE {ups[1]['flow']}")
                ds = [e for e in evs if e["event"] == "DESTROY"]
                if ds:
                    want_r = "closed" if i < 2 else "deleted"
                    expect(ds[0]["flow"].get("reason") == want_r,
                           f"A flow {k}: DESTROY reason {ds[0]['flow'].get('reason')}, "
                           f"want {want_r}")
                ts = [e["ts_ms"] for e in evs]
                expect(ts == sorted(ts) and all(t0 - 1000 <= t <= t1 for t in ts) and
                       all(e["ts_ms"] == e["flow"].get("ts_ms") for e in evs) and
                       all(re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", e["time"])
                           for e in evs),
                       f"A flow {k}: timestamps {ts} / {[e.get('time') for e in evs]} "
                       f"(run {t0}..{t1})")
                created = {e["flow"]["created_ms"] for e in evs}
                # derived from TSC ages: a few ms of jitter between events
                expect(max(created) - min(created) <= 100 and min(created) <= min(ts) + 100,
                       f"A flow {k}: created_ms {created} vs events {ts}")

            # --- the unfiltered watcher: B expired, C evicted ------------
            for c, p in B:
                d = [e for e in eva if (e["flow"]["src"], e["flow"]["sport"]) == (c, p)]
                expect([e["event"] for e in d] == ["NEW", "DESTROY"] and
                       d[-1]["flow"].get("reason") == "expired",
                       f"B flow {c}:{p}: {[(e['event'], e['flow'].get('reason')) for e in d]}")
            new_c = {(e["flow"]["src"], e["flow"]["sport"]) for e in eva
                     if e["event"] == "NEW" and e["flow"]["src"].startswith("172.22.")}
            ev_c = {(e["flow"]["src"], e["flow"]["sport"]) for e in eva
                    if e["event"] == "DESTROY" and e["flow"]["src"].startswith("172.22.")}
            why_c = {e["flow"].get("reason") for e in eva
                     if e["event"] == "DESTROY" and e["flow"]["src"].startswith("172.22.")}
            # SYN_SENT C flows may also expire (5 s) while the rest is sent
            expect("evicted" in why_c and why_c <= {"evicted", "expired"} and
                   new_c <= listed_c | ev_c,
                   f"C: {len(new_c)} NEW, {len(ev_c)} DESTROY ({why_c}), {len(listed_c)} "
                   f"listed, {len(new_c - listed_c - ev_c)} neither")
            st = json.loads(ctl("--json", "stats").stdout)
            expect(st["total"].get("watch_dropped") == 0,
                   f"watch_dropped {st['total'].get('watch_dropped')}")
            print(f"watch: filtered {len(evf)} events, unfiltered {len(eva)}; C: {len(new_c)} "
                  f"opened, {len(ev_c)} evicted")
            fgp.send_signal(signal.SIGINT)
            rc = fgp.wait(timeout=20)
            expect(rc == 0, f"flowgate exit {rc}")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if errs:
            print(open(os.path.join(work, "flowgate.log")).read()[-1500:])
        else:
            shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(f"/var/run/dpdk/{ns_name}", ignore_errors=True)
    print(f"flows watch events: {'FAIL' if errs else 'ok'}")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
