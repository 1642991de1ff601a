#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""`flowgate --gpu` produces exactly the CPU path's output packets.

    test_gpu_daemon.py BUILD_DIR [--keep DIR]

One input pcap: every packet fixture (malformed frames, ICMP errors, ARP,
ND, NAT, IPv6 ...) followed by traffic of three benchmark scenarios cut
down to a few thousand flows (churn through the NAT VIP: SYN, ACKs, FIN;
half-IPv6 established flows through the GUE VIP; a SYN flood with spoofed
sources through the IPIP VIP).  The daemon runs it on the CPU, then with
--gpu=graph and --gpu=persistent (and with two software-RSS workers when the
machine has the cores, where the GPU's dispatch hash picks the owner).
Each GPU run must:
  * emit the CPU run's frames byte for byte (same multiset; one worker:
    same order),
  * count the same drops by reason and the same tx/new-flow counters,
  * have put every received packet through the GPU (gpu_packets =
    rx_packets, gpu_fallback = gpu_errors = gpu_stale = 0).
Exits 77 (skip) when the binary has no GPU path or the machine no GPU.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgdaemon import Daemon, pcap_read  # noqa: E402
from run_fixtures import FG_FLAGS, load_fixtures, service_flags  # noqa: E402

SCENARIOS = [  # scenario file, fg-pcapgen overrides
    ("churn.scn", ["flows=2000", "pcap_packets=20000"]),
    ("ipv6-mix.scn", ["flows=4000", "pcap_packets=16000"]),
    ("syn-flood.scn", ["flows=1000", "pcap_packets=10000"]),
]
COUNTERS = ["rx_packets", "tx_packets", "new_flows", "ct_hits", "drops",
            "dispatched", "arp_replies", "nd_adverts", "icmp_err_fwd"]


def build_inputs(build, src, work):
    gen = os.path.join(build, "tests", "fixtures", "fg-fixtures-pcap")
    subprocess.run([gen, os.path.join(work, "fx")], check=True, capture_output=True)
    frames = [fr for fx in load_fixtures(os.path.join(work, "fx"))
              for fr in fx["input"]]
    n_fx = len(frames)
    pg = os.path.join(build, "bench", "tools", "fg-pcapgen")
    for scn, sets in SCENARIOS:
        out = os.path.join(work, scn + ".pcap")
        cmd = [pg, os.path.join(src, "bench", "scenarios", scn), "-o", out, "--quiet",
               "--set", "dst_mac=02:00:00:00:00:01"]
        for s in sets:
            cmd += ["--set", s]
        subprocess.run(cmd, check=True, capture_output=True)
        frames += pcap_read(out)
    return frames, n_fx


def run(build, work, tag, frames, extra, lcores, workers=1):
    # one TX queue (= one tx_pcap) per worker: net_pcap makes as many
    # queues as it is given files
    more = [os.path.join(work, f"{tag}-out{i}.pcap") for i in range(1, workers)]
    d = Daemon(build, work, tag, frames, FG_FLAGS + ["--ct-capacity", "65536"] +
               service_flags() + extra, lcores,
               vdev_args="".join(f",tx_pcap={m}" for m in more))
    try:
        with d:
            st = d.wait_rx(len(frames), timeout=120)
    except RuntimeError as e:
        log = open(d.logf).read() if os.path.exists(d.logf) else str(e)
        if "built without CUDA" in log or "no usable CUDA device" in log:
            return None
        raise
    return d.output() + [fr for m in more for fr in pcap_read(m)], st["total"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("--keep")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    work = a.keep or tempfile.mkdtemp(prefix="flowgate-gpu.")
    os.makedirs(work, exist_ok=True)
    try:
        frames, n_fx = build_inputs(build, src, work)
        print(f"input: {len(frames)} frames ({n_fx} from the fixtures)")
        layouts = [("1 worker", "0,1", 1)]
        if (os.cpu_count() or 1) >= 3:
            layouts.append(("2 workers, software RSS", "0-2", 2))
        fails = 0
        for label, lcores, nw in layouts:
            extra = ["--sw-rss", "on"] if lcores != "0,1" else []
            cpu = run(build, work, f"cpu{nw}", frames, extra, lcores, nw)
            ref_out, ref = cpu
            print(f"{label}, CPU: {ref['tx_packets']} out, {ref['drops']} drops, "
                  f"{ref['new_flows']} new flows")
            for mode in ("graph", "persistent"):
                r = run(build, work, f"{mode}{nw}", frames,
                        extra + [f"--gpu={mode}"], lcores, nw)
                if r is None:
                    print("SKIP: this flowgate has no GPU path or the machine "
                          "no CUDA device")
                    return 77
                out, t = r
                errs = []
                if (out if nw == 1 else sorted(out)) != \
                        (ref_out if nw == 1 else sorted(ref_out)):
                    n_diff = sum(1 for x, y in zip(out, ref_out) if x != y)
                    errs.append(f"output differs: {len(out)} vs {len(ref_out)} frames, "
                                f"{n_diff} differ in place")
                for c in COUNTERS:
                    if t[c] != ref[c]:
                        errs.append(f"{c} {t[c]}, CPU {ref[c]}")
                if t["drops_by_reason"] != ref["drops_by_reason"]:
                    diff = {k: (t["drops_by_reason"].get(k), v)
                            for k, v in ref["drops_by_reason"].items()
                            if t["drops_by_reason"].get(k) != v}
                    errs.append(f"drops by reason differ (gpu, cpu): {diff}")
                if (t["gpu_packets"] != t["rx_packets"] or t["gpu_fallback"] or
                        t["gpu_errors"] or t["gpu_stale"]):
                    errs.append(f"gpu_packets {t['gpu_packets']} of {t['rx_packets']}, "
                                f"fallback {t['gpu_fallback']}, errors {t['gpu_errors']}, "
                                f"stale {t['gpu_stale']}")
                print(f"{'FAIL' if errs else 'ok  '} {label}, --gpu={mode}: "
                      f"{len(out)} frames out, identical to the CPU's"
                      if not errs else f"FAIL {label}, --gpu={mode}")
                for e in errs:
                    print("     ", e)
                fails += bool(errs)
        return 1 if fails else 0
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
