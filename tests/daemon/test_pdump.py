#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""dpdk-dumpcap captures from a running flowgate --pdump (rte_pdump_init()).

    test_pdump.py BUILD_DIR

dpdk-dumpcap is a DPDK secondary process: it maps the daemon's memory, so
the daemon runs on hugepages with a shared config (a unique --file-prefix,
neither --no-huge, --in-memory nor --no-shconf) -- a secondary cannot attach
to --no-huge memory ("Cannot get hugepage information").  Skips (77) when
no hugetlbfs with >= 200 MiB free is there (`make hugepages`, which
`make test` runs first) or dpdk-dumpcap (package dpdk) is missing.

The daemon replays SYNs to a DSR service forever (net_pcap infinite_rx);
dumpcap captures on port 0; the daemon is stopped first (SIGINT: workers
stop, then the capture library), and dumpcap then exits by itself
("Primary process is no longer active").  Ending the capture the other way
round, dumpcap first while packets flow, crashed the daemon here in about
one run in three (SIGSEGV in rte_pcapng_copy / the capture pool's mempool
ops, inside DPDK 22.11's pdump TX callback, within ~60 ms of dumpcap's exit:
dumpcap frees its pool while a worker is still inside the callback), which
is why --pdump is opt-in and docs/OBSERVABILITY.md warns about it.

Checks: every captured frame is an input frame (RX) or its IPIP
encapsulation to the backend (TX), both directions are there, the daemon
stops cleanly; and without --pdump dumpcap is refused.
"""
import glob
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgdaemon import HANG_S, Daemon  # noqa: E402
from pktgen import eth, ip, ipv4, tcp  # noqa: E402

LB, NH = "02:00:00:00:00:01", "02:00:00:00:00:fe"
N = 64
# a small conntrack: the daemon's -m 192 must leave room in the shared
# hugepages for dumpcap's capture pool (with the default 2^20 entries,
# grown by later per-slot arrays, dumpcap's pool creation failed: ENOMEM)
FLAGS = ["--mbufs", "8191", "--ct-capacity", "65536", "--port-mac", "0,02:00:00:00:00:01",
         "--local", "10.0.0.1", "--gateway", "10.0.0.254",
         "--neigh", "10.0.0.254,02:00:00:00:00:fe",
         "--service", "10.100.0.1:80/tcp,mode=dsr-ipip,name=cap",
         "--backend", "10.1.0.1"]


def skip(why):
    print("SKIP:", why)
    sys.exit(77)


def hugetlbfs_dir(own=None):
    """The hugetlbfs mount to use (/dev/hugepages, else @own: not another
    process's mount) and the free MiB of 2 MiB pages."""
    mounts = [ln.split()[1] for ln in open("/proc/mounts") if ln.split()[2] == "hugetlbfs"]
    d = "/dev/hugepages" if "/dev/hugepages" in mounts else own if own in mounts else None
    if d is None:
        return None, 0
    info = dict(ln.split(":", 1) for ln in open("/proc/meminfo"))
    free = int(info["HugePages_Free"].split()[0])
    size_kb = int(info["Hugepagesize"].split()[0])
    return d, free * size_kb // 1024


def pcapng_frames(path):
    """(interface, frame bytes) of every Enhanced Packet Block."""
    data = open(path, "rb").read()
    off, end, out = 0, "<", []
    while off + 12 <= len(data):
        btype = struct.unpack("<I", data[off:off + 4])[0]
        if btype == 0x0A0D0D0A:   # section header: byte order
            end = "<" if data[off + 8:off + 12] == b"\x4d\x3c\x2b\x1a" else ">"
        btype, blen = struct.unpack(end + "II", data[off:off + 8])
        if blen < 12:
            raise ValueError(f"{path}: bad block at {off}")
        if off + blen > len(data):
            break       # the last block, cut by the end of the capture
        if btype == 6:
            ifid, _, _, caplen, _ = struct.unpack(end + "IIIII", data[off + 8:off + 28])
            out.append((ifid, data[off + 28:off + 28 + caplen]))
        off += blen
    return out


def main():
    build = os.path.abspath(sys.argv[1])
    dumpcap = shutil.which("dpdk-dumpcap")
    if dumpcap is None:
        skip("dpdk-dumpcap not found (Debian package dpdk)")
    with HugepagesFor(200) as hdir:
        return run(build, dumpcap, hdir)


class HugepagesFor:
    """At least MIB of free 2 MiB hugepages on a hugetlbfs mount for the
    test: as root, reserves what is missing (and mounts a private hugetlbfs
    when there is none) and gives both back on exit; otherwise skips."""

    NR = "/proc/sys/vm/nr_hugepages"

    def __init__(self, mib):
        self.mib, self.added, self.mnt = mib, 0, None

    def __enter__(self):
        hdir, free_mib = hugetlbfs_dir()
        if (hdir is None or free_mib < self.mib) and os.geteuid() == 0:
            if free_mib < self.mib:
                want = (self.mib - free_mib + 1) // 2
                have = int(open(self.NR).read())
                with open(self.NR, "w") as f:
                    f.write(str(have + want))
                self.added = int(open(self.NR).read()) - have
            if hdir is None:
                self.mnt = tempfile.mkdtemp(prefix="flowgate-pdump-huge.")
                subprocess.run(["mount", "-t", "hugetlbfs", "nodev", self.mnt], check=False)
            hdir, free_mib = hugetlbfs_dir(self.mnt)
        if hdir is None or free_mib < self.mib:
            self.__exit__()
            skip(f"dpdk-dumpcap needs the daemon on shared hugepages and there are "
                 f"{free_mib} MiB free on {hdir or 'no hugetlbfs mount'} (not root, "
                 f"or the kernel could not reserve them)")
        return hdir

    def __exit__(self, *exc):
        if self.mnt:
            subprocess.run(["umount", self.mnt], check=False)
            os.rmdir(self.mnt)
            self.mnt = None
        if self.added > 0:
            have = int(open(self.NR).read())
            with open(self.NR, "w") as f:
                f.write(str(max(0, have - self.added)))
            self.added = 0
        return False


def run(build, dumpcap, hdir):
    inputs = [eth(LB, NH, 0x0800, ipv4(ip(f"172.16.0.{i + 1}"), ip("10.100.0.1"), 6,
                                       tcp(ip(f"172.16.0.{i + 1}"), ip("10.100.0.1"),
                                           30000 + i, 80, 0x02)))
              for i in range(N)]
    work = tempfile.mkdtemp(prefix="flowgate-pdump.")
    errs = []
    prefixes = []

    def daemon(tag, flags):
        d = Daemon(build, work, tag, inputs, flags, vdev_args=",infinite_rx=1")
        # shared hugepage memory instead of the helper's --no-huge --no-shconf
        prefixes.append(d.cmd[d.cmd.index("--file-prefix") + 1])
        for opt in ("--no-huge", "--no-shconf"):
            d.cmd.remove(opt)
        d.cmd[d.cmd.index("-m") + 1] = "192"
        d.cmd[1:1] = ["--huge-dir", hdir]
        d.cmd = [a.replace(d.out, "/dev/null") for a in d.cmd]  # no TX file
        return d, prefixes[-1]

    out = os.path.join(work, "cap.pcapng")
    dc = None
    try:
        d, prefix = daemon("pd", FLAGS + ["--pdump"])
        with d:
            d.wait_rx(N)
            dc = subprocess.Popen([dumpcap, "--file-prefix", prefix, "-i", "0", "-q",
                                   "-w", out], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
            deadline = time.monotonic() + HANG_S
            while (not os.path.exists(out) or os.path.getsize(out) < 65536) and \
                    time.monotonic() < deadline and dc.poll() is None:
                time.sleep(0.05)
            if dc.poll() is not None or not os.path.exists(out):
                errs.append(f"dpdk-dumpcap rc {dc.poll()}: {dc.communicate()[0]}")
            # stop the daemon first; its exit with a secondary attached can
            # take longer than the helper's 20 s under ASan on a busy machine
            t0 = time.monotonic()
            d.p.send_signal(signal.SIGINT)
            try:
                d.p.wait(timeout=90)
            except subprocess.TimeoutExpired:
                errs.append("the daemon did not exit within 90 s of SIGINT with "
                            "dpdk-dumpcap attached")
            print(f"daemon exit took {time.monotonic() - t0:.1f} s")
        # the daemon stopped cleanly (Daemon.stop checks); dumpcap follows
        try:
            rest = dc.communicate(timeout=30)[0]
        except subprocess.TimeoutExpired:
            dc.kill()
            rest = dc.communicate()[0]
            errs.append("dpdk-dumpcap did not exit after the daemon stopped")
        if not errs and "Primary process is no longer active" not in rest:
            errs.append(f"dpdk-dumpcap: {rest[-500:]}")
        if not errs:
            frames = pcapng_frames(out)
            rx = [f for _, f in frames if f in inputs]
            # TX: Ethernet + outer IPv4 (proto 4) + the input's IP packet
            # (inputs carry Ethernet padding past the IP total length)
            inner = {x[14:14 + struct.unpack("!H", x[16:18])[0]] for x in inputs}
            tx = [f for _, f in frames if len(f) > 34 and f[12:14] == b"\x08\x00"
                  and f[23] == 4 and f[34:] in inner]
            print(f"captured {len(frames)} frames: {len(rx)} RX, {len(tx)} TX (IPIP)")
            if len(rx) + len(tx) != len(frames) or len(rx) < N or len(tx) < N:
                errs.append(f"captured {len(frames)} frames = {len(rx)} RX + {len(tx)} "
                            f"TX + others; expected >= {N} of each and nothing else")

        # without --pdump the daemon refuses captures
        d, prefix = daemon("nopd", FLAGS)
        with d:
            d.wait_rx(N)
            r = subprocess.run([dumpcap, "--file-prefix", prefix, "-i", "0", "-q", "-c", "1",
                                "-w", os.path.join(work, "no.pcapng")],
                               capture_output=True, text=True, timeout=60)
            if r.returncode == 0:
                errs.append("dpdk-dumpcap captured from a daemon without --pdump")
    finally:
        if dc is not None and dc.poll() is None:
            dc.kill()
            dc.wait()
        for p in prefixes:
            for f in glob.glob(os.path.join(hdir, p + "map_*")):
                os.unlink(f)
            shutil.rmtree(os.path.join("/var/run/dpdk", p), ignore_errors=True)
        if not errs:
            shutil.rmtree(work, ignore_errors=True)
    for e in errs:
        print("FAIL:", e)
    if errs:
        print("work dir kept:", work)
        return 1
    print("pdump: dpdk-dumpcap captured RX and TX of a running flowgate")
    return 0


if __name__ == "__main__":
    sys.exit(main())
