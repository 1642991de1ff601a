#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Issue 9 defect 7: config ports are matched to DPDK devices by name.

    test_port_names.py BUILD_DIR

Two net_pcap devices: net_pcap0 (probed first, DPDK port 0) receives SYNs
for a DSR service; the backend's next hop is a static neighbour on
net_pcap1.  Each row declares the ports differently (another order than
DPDK probed them, only the second device, an unknown name); the encapsulated
packets must leave through net_pcap1 only, whatever the order of the port
blocks, and an unknown name must stop the daemon at start (and fail
`fgctl config check` against a running daemon).  The devices' own counters
(fgctl stats "ports") must show where the packets went.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgdaemon import Daemon, pcap_read, pcap_write  # noqa: E402
from pktgen import eth, ip, ipv4, tcp  # noqa: E402

LB, CLIENT_MAC = "02:00:00:00:00:01", "02:00:00:00:00:fe"
VIP, BACKEND, NEXT_HOP = "10.100.0.1", "10.200.0.11", "10.200.0.1"
FLOWS = 50
PORT1 = """port net_pcap1 {
    local 10.200.0.2;
    gateway 10.200.0.1;
}
"""
PORT0 = "port net_pcap0 { }\n"
REST = f"""neighbour {NEXT_HOP} 02:00:00:00:00:aa port net_pcap1;
service web {VIP}:80/tcp {{
    mode dsr-ipip;
    backend {BACKEND};
}}
"""
# name, config text, expected start failure (substring) or None
ROWS = [
    ("declared in the other order", PORT1 + PORT0 + REST, None),
    ("only the second device declared", PORT1 + REST, None),
    ("declared in probe order", PORT0 + PORT1 + REST, None),
    ("unknown device", "port net_bogus0 { }\n" + PORT1 + REST,
     "port 'net_bogus0' is not a device of this flowgate"),
]


def syn(i):
    c = ip(f"172.16.0.{i + 1}")
    return eth(LB, CLIENT_MAC, 0x0800,
               ipv4(c, ip(VIP), 6, tcp(c, ip(VIP), 30000 + i, 80, 0x02)))


def ipip_to_backend(frames):
    return sum(1 for f in frames if len(f) >= 34 and f[12:14] == b"\x08\x00"
               and f[23] == 4 and f[30:34] == ip(BACKEND))


def main():
    build = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="flowgate-ports.")
    frames = [syn(i) for i in range(FLOWS)]
    errs = []
    try:
        empty = os.path.join(work, "empty.pcap")
        pcap_write(empty, [])
        for n, (name, text, start_err) in enumerate(ROWS):
            conf = os.path.join(work, f"r{n}.conf")
            with open(conf, "w") as f:
                f.write(text)
            out1 = os.path.join(work, f"r{n}-out1.pcap")
            d = Daemon(build, work, f"r{n}", frames, ["-c", conf],
                       vdevs=[f"net_pcap1,rx_pcap={empty},tx_pcap={out1}"])
            if start_err:
                try:
                    with d:
                        pass
                    errs.append(f"{name}: flowgate started")
                except RuntimeError:
                    log = open(d.logf).read()
                    if start_err not in log or d.p.returncode == 0:
                        errs.append(f"{name}: rc {d.p.returncode}, log lacks "
                                    f"'{start_err}': {log[-500:]}")
                print(f"{name}: refused at start: {'ok' if not errs else 'FAIL'}")
                continue
            with d:
                st = d.wait_rx(FLOWS)
                ports = {p["name"]: p["tx_packets"] for p in st.get("ports", [])}
                # a running daemon knows its devices: check refuses a
                # name that is not one, accepts any order of the blocks
                bad = os.path.join(work, "bad.conf")
                with open(bad, "w") as f:
                    f.write(ROWS[-1][1])
                r = d.fgctl("config", "check", bad, check=False)
                if r.returncode != 1 or "net_bogus0" not in r.stderr:
                    errs.append(f"{name}: config check of an unknown device: rc "
                                f"{r.returncode} {r.stderr.strip()}")
                r = d.fgctl("--json", "config", "check", os.path.join(work, "r0.conf"),
                            check=False)
                if r.returncode != 0 or not json.loads(r.stdout).get("daemon_checked"):
                    errs.append(f"{name}: config check of the ports in another order: "
                                f"rc {r.returncode} {r.stdout} {r.stderr}")
            on0, on1 = ipip_to_backend(d.output()), ipip_to_backend(pcap_read(out1))
            print(f"{name}: {on1} packets left through net_pcap1, {on0} through "
                  f"net_pcap0; device tx counters (fgctl stats ports): {ports}")
            if on1 != FLOWS or on0 != 0:
                errs.append(f"{name}: {on1} of {FLOWS} on net_pcap1, {on0} on net_pcap0")
            if ports.get("net_pcap1") != on1 or ports.get("net_pcap0") != on0:
                errs.append(f"{name}: device counters {ports} do not show where the "
                            "packets left")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for e in errs:
        print("FAIL:", e)
    print(f"ports by name: {'FAIL' if errs else 'ok'}")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
