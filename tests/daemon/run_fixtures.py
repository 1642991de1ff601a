#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Packet fixtures through the real flowgate daemon (net_pcap in, pcap out).

    run_fixtures.py BUILD_DIR [--each] [--only NAME,NAME] [--keep DIR]

fg-fixtures-pcap writes every fixture of tests/fixtures as input/expected
pcaps.  The fixtures are independent of each other (distinct flows, one NAT
flow), so by default ONE daemon processes all inputs in fixture order (EAL
start-up is ~1 s; one daemon per fixture would take ~30 s).  Then:

  * the daemon's output pcap must equal the concatenated expected pcaps
    frame for frame, byte for byte (a mismatch names the fixture);
  * every drop reason of fgctl stats --json (drops_by_reason) must equal
    the number of expected drops of that reason, all others zero;
  * rx_packets = inputs, tx_packets = expected outputs;
  * SIGINT: the daemon prints its final counters and exits 0.

--each runs one fresh daemon per fixture instead (slower, isolates state).
Fixtures flagged follow_frag run too: a first fragment arms a
fragment-follow entry (the flow's 3-tuple, ports 0) and the later fragments
reach the same backend.

The daemon gets the fixtures' assumed config (tests/fixtures/README.md)
through its command-line flags: backend ids 0..2 (the Maglev key includes
the id), port MAC 02:00:00:00:00:01, MTU 9000 (--mtu: net_pcap's own MTU is
1500, and the jumbo fixtures need 9014-byte frames in one mbuf).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgdaemon import pcap_read, run_daemon  # noqa: E402

FG_FLAGS = [
    "--ct-capacity", "1024", "--mbufs", "2047", "--mtu", "9000",
    "--port-mac", "0,02:00:00:00:00:01",
    "--local", "10.0.0.1", "--local", "fd00::1",
    "--gateway", "10.0.0.254", "--gateway", "fd00::fe",
    "--neigh", "10.0.0.254,02:00:00:00:00:fe", "--neigh", "fd00::fe,02:00:00:00:00:fe",
]
B4 = ["10.1.0.1", "10.1.0.2", "10.1.0.3"]
B6 = ["[fd00:1::1]", "[fd00:1::2]", "[fd00:1::3]"]
SERVICES = [  # name, VIP:port, mode, backends (fixture order = ids 0..2)
    ("dsr_ipip4", "10.100.0.1:80/tcp", "dsr-ipip", B4),
    ("dsr_gue4", "10.100.0.2:80/tcp", "dsr-gue", B4),
    ("nat4", "10.100.0.3:80/tcp", "nat", B4),
    ("dsr_ipip6", "[fd00:100::1]:80/tcp", "dsr-ipip", B6),
]


def service_flags():
    out = []
    for name, vip, mode, backends in SERVICES:
        out += ["--service", f"{vip},mode={mode},name={name},gue-port=6080"]
        for i, b in enumerate(backends):
            out += ["--backend", f"{b},id={i}"]
    return out


def load_fixtures(outdir):
    fx = []
    for line in open(os.path.join(outdir, "fixtures.tsv")):
        if line.startswith("#"):
            continue
        name, flags, n, desc = line.rstrip("\n").split("\t", 3)
        d = os.path.join(outdir, name)
        rows = []
        for r in open(os.path.join(d, "expected.tsv")):
            if r.startswith("#"):
                continue
            idx, verdict, drop, out_len = r.split()
            rows.append((verdict, drop, int(out_len)))
        fx.append({
            "name": name, "flags": flags, "desc": desc, "rows": rows,
            "input": pcap_read(os.path.join(d, "input.pcap")),
            "expected": pcap_read(os.path.join(d, "expected.pcap")),
        })
        assert len(fx[-1]["input"]) == int(n) == len(rows), name
    return fx


def hexdiff(a, b):
    for i in range(max(len(a), len(b))):
        if i >= len(a) or i >= len(b) or a[i] != b[i]:
            return (f"first difference at byte {i} (len got {len(a)}, want {len(b)}): "
                    f"got {a[i:i + 16].hex()} want {b[i:i + 16].hex()}")
    return "identical"


def check(group, got, stats):
    """Compares one daemon run with the fixtures of @group; returns errors.

    Within a burst the daemon answers ARP/ND as it parses and forwards flow
    packets after the conntrack lookup, so frames of different fixtures may
    leave in another order than they came in.  Every expected frame must
    appear byte for byte exactly once, and the frames of one fixture in
    their order."""
    errs = []
    used = [False] * len(got)
    n_want = 0
    for fx in group:
        last = -1
        for k, fr in enumerate(fx["expected"]):
            n_want += 1
            hit = next((i for i in range(len(got)) if not used[i] and got[i] == fr), None)
            if hit is None:
                # closest candidate: an unused frame of the same length, else any
                cand = [i for i in range(len(got)) if not used[i]]
                same = [i for i in cand if len(got[i]) == len(fr)]
                near = (same or cand or [None])[0]
                why = hexdiff(got[near], fr) if near is not None else "no frames left"
                errs.append(f"{fx['name']}: expected output {k} ({len(fr)} B) not "
                            f"produced; closest: {why}")
                continue
            used[hit] = True
            if hit < last:
                errs.append(f"{fx['name']}: output {k} left before output {k - 1}")
            last = hit
    for i, u in enumerate(used):
        if not u:
            errs.append(f"unexpected output frame {i} ({len(got[i])} B): {got[i][:48].hex()}")
    want = [None] * n_want
    tot = stats["total"]
    n_in = sum(len(fx["input"]) for fx in group)
    if tot["rx_packets"] != n_in:
        errs.append(f"rx_packets {tot['rx_packets']}, inputs {n_in}")
    if tot["tx_packets"] != len(want):
        errs.append(f"tx_packets {tot['tx_packets']}, expected outputs {len(want)}")
    exp_drops = {}
    for fx in group:
        for verdict, drop, _ in fx["rows"]:
            if verdict == "drop":
                exp_drops.setdefault(drop, []).append(fx["name"])
    by = tot["drops_by_reason"]
    for reason in sorted(set(by) | set(exp_drops)):
        n_want = len(exp_drops.get(reason, []))
        if reason not in by:
            errs.append(f"drop counter {reason} missing from fgctl stats "
                        f"({','.join(exp_drops[reason])})")
        elif by[reason] != n_want:
            errs.append(f"drop counter {reason} = {by[reason]}, expected {n_want}"
                        + (f" (from {','.join(sorted(set(exp_drops[reason])))})"
                           if n_want else ""))
    if tot["drops"] != sum(len(v) for v in exp_drops.values()):
        errs.append(f"drops {tot['drops']}, expected {sum(len(v) for v in exp_drops.values())}")
    return errs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("--each", action="store_true", help="one daemon per fixture")
    ap.add_argument("--only", help="comma-separated fixture names")
    ap.add_argument("--keep", help="keep pcaps and logs in this directory")
    ap.add_argument("--gpu", choices=["graph", "persistent"],
                    help="run the daemon with --gpu=MODE (CUDA build and a GPU); "
                    "every packet must then go through the GPU path")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    work = a.keep or tempfile.mkdtemp(prefix="flowgate-fx.")
    os.makedirs(work, exist_ok=True)
    try:
        gen = os.path.join(build, "tests", "fixtures", "fg-fixtures-pcap")
        subprocess.run([gen, os.path.join(work, "fx")], check=True, capture_output=True)
        fixtures = load_fixtures(os.path.join(work, "fx"))
        if a.only:
            names = a.only.split(",")
            fixtures = [f for f in fixtures if f["name"] in names]
            if len(fixtures) != len(names):
                print(f"unknown fixture in {a.only}", file=sys.stderr)
                return 2
        groups = [[f] for f in fixtures] if a.each else [fixtures]
        failed = []
        t0 = time.monotonic()
        for gi, group in enumerate(groups):
            inputs = [fr for fx in group for fr in fx["input"]]
            gpu = [f"--gpu={a.gpu}"] if a.gpu else []
            got, stats, _ = run_daemon(build, work, f"g{gi}", inputs,
                                       FG_FLAGS + service_flags() + gpu)
            errs = check(group, got, stats)
            if a.gpu:
                t = stats["total"]
                if t["gpu_packets"] != len(inputs) or t["gpu_fallback"] or t["gpu_errors"]:
                    errs.append(f"--gpu: gpu_packets {t['gpu_packets']} of {len(inputs)}, "
                                f"gpu_fallback {t['gpu_fallback']}, gpu_errors {t['gpu_errors']}")
            label = group[0]["name"] if len(group) == 1 else f"{len(group)} fixtures"
            print(f"{'FAIL' if errs else 'ok  '} {label}: {len(inputs)} in, "
                  f"{len(got)} out")
            for e in errs:
                print("     ", e)
            if errs:
                failed += [f["name"] for f in group]
        n_pkts = sum(len(f["input"]) for f in fixtures)
        print(f"fixtures through flowgate: {len(fixtures) - len(failed)}/{len(fixtures)} "
              f"fixtures, {n_pkts} packets, {len(groups)} daemon run(s), "
              f"{time.monotonic() - t0:.1f} s")
        return 1 if failed else 0
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
