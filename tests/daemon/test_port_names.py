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
(fgctl stats "ports") must show where the packets went.  A last row puts a
port behind net_failsafe, whose sub-devices take ethdev ids, so that a
port's ethdev id is not its index (behind_failsafe).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgdaemon import Daemon, pcap_read, pcap_write  # noqa: E402
from pktgen import eth, ip, ipv4, mac, tcp  # noqa: E402

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


def arp_request(sender, target):
    body = bytes([0, 1, 8, 0, 6, 4, 0, 1]) + mac(CLIENT_MAC) + ip(sender) + \
        bytes(6) + ip(target)
    return eth("ff:ff:ff:ff:ff:ff", CLIENT_MAC, 0x0806, body)


def arp_replies_from(frames, addr):
    """ARP replies that say @p addr is here (op 2, sender address addr)."""
    return sum(1 for f in frames if len(f) >= 42 and f[12:14] == b"\x08\x06"
               and f[20:22] == b"\x00\x02" and f[28:32] == ip(addr))


def behind_failsafe(build, work, errs):
    """A port whose ethdev id is not its port index: each net_failsafe owns
    a sub-device, which takes an ethdev id and is no port of flowgate's, so
    the second failsafe (ethdev 3) is port 2.  Its packets must be taken as
    port 2's: the DSR flows leave through it, and its ARP request for our
    address is answered out of it (the worker writes the port index over
    mbuf->port when they differ; a reply sent by the ethdev id would leave
    through the port of that index, or none).  The first failsafe's
    sub-device receives nothing (net_null, no-rx) and it sends nothing."""
    syns = os.path.join(work, "fs-syns.pcap")
    out2 = os.path.join(work, "fs-out2.pcap")
    pcap_write(syns, [arp_request("10.200.0.1", "10.200.0.2")] +
               [syn(i) for i in range(FLOWS)])
    conf = os.path.join(work, "fs.conf")
    with open(conf, "w") as f:
        f.write(PORT0 + "port net_failsafe0 { }\n" +
                PORT1.replace("net_pcap1", "net_failsafe1") +
                REST.replace("port net_pcap1", "port net_failsafe1"))
    d = Daemon(build, work, "fs", [], ["-c", conf], vdevs=[
        "net_failsafe0,dev(net_null1,no-rx=1)",
        f"net_failsafe1,dev(net_pcap2,rx_pcap={syns},tx_pcap={out2})"])
    with d:
        d.wait_rx(FLOWS + 1)
    log = open(d.logf).read()
    if "port 2 ethdev 3 " not in log:
        errs.append("behind net_failsafe: port 2 is not ethdev 3 (the row tests "
                    f"nothing): {log[-800:]}")
    outs = {"net_pcap0": d.output(), "net_failsafe1": pcap_read(out2)}
    ipip = {k: ipip_to_backend(v) for k, v in outs.items()}
    arp = {k: arp_replies_from(v, "10.200.0.2") for k, v in outs.items()}
    fs0 = [ln for ln in log.splitlines() if "(net_failsafe0): rx_packets" in ln]
    if not fs0 or "tx_packets 0 " not in fs0[0]:
        errs.append(f"behind net_failsafe: net_failsafe0 sent something: {fs0}")
    print(f"behind net_failsafe (port 2 = ethdev 3): IP-in-IP out {ipip}, ARP "
          f"replies out {arp}")
    if ipip != {"net_pcap0": 0, "net_failsafe1": FLOWS}:
        errs.append(f"behind net_failsafe: IP-in-IP left through {ipip}")
    if arp != {"net_pcap0": 0, "net_failsafe1": 1}:
        errs.append(f"behind net_failsafe: ARP replies left through {arp}")


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
        behind_failsafe(build, work, errs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for e in errs:
        print("FAIL:", e)
    print(f"ports by name: {'FAIL' if errs else 'ok'}")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
