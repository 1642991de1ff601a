# SPDX-License-Identifier: BSD-3-Clause
"""Helpers for daemon-level tests: classic pcap I/O and one flowgate run
over a pcap on net_pcap (no root, no hugepages)."""
import argparse
import json
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import time

# Hang detector for every wait of the daemon tests: a wait returns as soon as
# its condition holds, so this bounds only a daemon that is stuck, never a
# slow one (a busy machine took more than 30 s to start one under make test
# beside six compilers).  FG_TEST_HANG_S overrides it.
HANG_S = float(os.environ.get("FG_TEST_HANG_S", "300"))


def pcap_read(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        raise ValueError(f"{path}: not a pcap ({len(data)} bytes)")
    magic = struct.unpack("<I", data[:4])[0]
    if magic in (0xA1B2C3D4, 0xA1B23C4D):
        end = "<"
    elif magic in (0xD4C3B2A1, 0x4D3CB2A1):
        end = ">"
    else:
        raise ValueError(f"{path}: bad pcap magic {magic:#x}")
    frames, off = [], 24
    while off + 16 <= len(data):
        _, _, caplen, wirelen = struct.unpack(end + "IIII", data[off:off + 16])
        off += 16
        if caplen != wirelen:
            raise ValueError(f"{path}: frame {len(frames)} truncated in capture "
                             f"({caplen} of {wirelen} bytes)")
        frames.append(data[off:off + caplen])
        off += caplen
    return frames


def pcap_write(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", i // 1000000, i % 1000000, len(fr), len(fr)))
            f.write(fr)


class Daemon:
    """One flowgate on net_pcap (rx_pcap = the given frames, tx_pcap = a
    file), driven through fgctl on its own control socket.

        with Daemon(build, work, "tag", frames, flags) as d:
            d.wait_rx(len(frames))
            d.fgctl("--json", "flows", "list")
        d.output(), d.log   # after the with block: stopped by SIGINT
    """

    def __init__(self, build, work, tag, inputs, flags, lcores="0,1", eal=(),
                 vdev_args="", vdevs=()):
        self.fg = os.path.join(build, "dataplane", "flowgate")
        self.fgctl_bin = os.path.join(build, "control", "fgctl")
        self.inp = os.path.join(work, f"{tag}-in.pcap")
        self.out = os.path.join(work, f"{tag}-out.pcap")
        self.sock = os.path.join(work, f"{tag}.sock")
        self.logf = os.path.join(work, f"{tag}.log")
        self.log = ""
        self.rc = None
        pcap_write(self.inp, inputs)
        devs = [f"net_pcap0,rx_pcap={self.inp},tx_pcap={self.out}{vdev_args}", *vdevs]
        # -m 768: a daemon at the default capacity holds ~280 MB of
        # conntrack (1M flows and a 512K NAT region, IPv4 and IPv6) and
        # ~155 MB of mbufs (65535)
        self.cmd = [self.fg, "--no-huge", "--no-shconf", "-m", "768",
                    "--file-prefix", f"fgfx{os.getpid()}{tag}", "-l" if "," in lcores
                    or "-" in lcores else "--lcores", lcores] + list(eal) + \
            ["--no-pci"] + [f"--vdev={d}" for d in devs] + \
            ["--", "-s", self.sock] + flags
        self.p = None

    def __enter__(self):
        with open(self.logf, "w") as lf:
            self.p = subprocess.Popen(self.cmd, stdout=lf, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + HANG_S
        while not os.path.exists(self.sock):
            if self.p.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"flowgate did not start:\n{self.log[-3000:]}")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def fgctl(self, *args, check=True, timeout=60):
        r = subprocess.run([self.fgctl_bin, "-s", self.sock] + list(args),
                           capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError(f"fgctl {' '.join(args)}: rc {r.returncode}: {r.stderr}")
        return r

    def stats(self):
        r = self.fgctl("--json", "stats", check=False)
        return json.loads(r.stdout) if r.returncode == 0 else None

    def wait_rx(self, n, timeout=HANG_S):
        """Waits until the daemon received @n packets; returns the stats."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            st = self.stats()
            if st and st["total"]["rx_packets"] >= n:
                time.sleep(0.05)   # the last burst's counters
                return self.stats()
            if self.p.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"flowgate did not receive {n} packets: {self.stats()}")

    def stop(self):
        if self.p is None or self.rc is not None:
            return
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
        try:
            self.rc = self.p.wait(timeout=HANG_S)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.rc = self.p.wait()
        self.log = open(self.logf).read()
        if self.rc != 0:
            raise RuntimeError(f"flowgate exited {self.rc}:\n{self.log[-3000:]}")
        if "final counters" not in self.log or "stopped cleanly" not in self.log:
            raise RuntimeError("flowgate did not print final counters / stop "
                               f"cleanly:\n{self.log[-3000:]}")

    def output(self):
        return pcap_read(self.out)


# ---- HTTP to a metrics server (the daemon's, flowgate-xdp's)

METRICS_GET = b"GET /metrics HTTP/1.0\r\n\r\n"


def free_port():
    """A TCP port of 127.0.0.1 that nothing listens on (now)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_exchange(s, raw):
    """Sends @raw on the connected socket @s, reads until the server closes,
    closes @s.  Returns (head, body) as bytes."""
    with s:
        s.sendall(raw)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return head, body


def metrics(port, timeout=HANG_S):
    """The body of GET /metrics from 127.0.0.1:@port, as text."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    return http_exchange(s, METRICS_GET)[1].decode(errors="replace")


def run_daemon(build, work, tag, inputs, flags, lcores="0,1"):
    """Runs flowgate over @inputs with daemon options @flags; waits until
    every input is received, stops it with SIGINT.
    Returns (output frames, fgctl stats --json, log text)."""
    d = Daemon(build, work, tag, inputs, flags, lcores)
    with d:
        stats = d.wait_rx(len(inputs))
    return d.output(), stats, d.log


# ---- what every daemon test does alike: failures, arguments, the end

ERRS = []


def expect(cond, what):
    """Records a failure (the test goes on; the end reports them all)."""
    if not cond:
        ERRS.append(what)
        print("FAIL:", what)


def test_args(*names):
    """The command line BUILD NAMES... [--seed N]: (args, seed), the build
    directory made absolute, the seed drawn when not given."""
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    for n in names:
        ap.add_argument(n)
    ap.add_argument("--seed", type=int, default=None)
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    return a, (a.seed if a.seed is not None else random.randrange(1 << 30))


def work_done(work):
    """The work directory goes, or is kept (and named) when anything failed."""
    if not ERRS:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print("work dir kept:", work)


def report(ok, seed=None):
    """The test's exit status: 1 with the failures counted, else 0 and @ok."""
    if ERRS:
        print(f"{len(ERRS)} failures" + (f" (seed {seed})" if seed is not None else ""))
        return 1
    print(ok)
    return 0
