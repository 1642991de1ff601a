# SPDX-License-Identifier: BSD-3-Clause
"""Helpers for daemon-level tests: classic pcap I/O and one flowgate run
over a pcap on net_pcap (no root, no hugepages)."""
import json
import os
import signal
import struct
import subprocess
import time


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


def fgctl_stats(fgctl, sock):
    r = subprocess.run([fgctl, "-s", sock, "--json", "stats"], capture_output=True,
                       text=True, timeout=10)
    if r.returncode != 0:
        return None
    return json.loads(r.stdout)


def run_daemon(build, work, tag, inputs, flags, lcores="0,1"):
    """Runs flowgate (one net_pcap port) over @inputs with daemon options
    @flags; waits until every input is received, stops it with SIGINT.
    Returns (output frames, fgctl stats --json, log text)."""
    fg = os.path.join(build, "dataplane", "flowgate")
    fgctl = os.path.join(build, "control", "fgctl")
    inp = os.path.join(work, f"{tag}-in.pcap")
    out = os.path.join(work, f"{tag}-out.pcap")
    sock = os.path.join(work, f"{tag}.sock")
    log = os.path.join(work, f"{tag}.log")
    pcap_write(inp, inputs)
    cmd = [fg, "--no-pci", "--no-huge", "--no-shconf", "-m", "256",
           "--file-prefix", f"fgfx{os.getpid()}{tag}", "-l", lcores,
           f"--vdev=net_pcap0,rx_pcap={inp},tx_pcap={out}", "--",
           "-s", sock] + flags
    with open(log, "w") as lf:
        p = subprocess.Popen(cmd, stdout=lf, stderr=subprocess.STDOUT)
    stats = None
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if p.poll() is not None:
                break
            if os.path.exists(sock):
                stats = fgctl_stats(fgctl, sock)
                if stats and stats["total"]["rx_packets"] >= len(inputs):
                    # TX buffers flush every 100 us and on stop; counters
                    # of the last burst are final once rx stops moving
                    time.sleep(0.05)
                    stats = fgctl_stats(fgctl, sock)
                    break
            time.sleep(0.05)
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
        rc = p.wait(timeout=20)
    except Exception:
        p.kill()
        p.wait()
        raise
    text = open(log).read()
    if rc != 0:
        raise RuntimeError(f"flowgate exited {rc}:\n{text[-3000:]}")
    if "final counters" not in text or "stopped cleanly" not in text:
        raise RuntimeError(f"flowgate did not print final counters / stop cleanly:\n{text[-3000:]}")
    if stats is None:
        raise RuntimeError(f"no stats from fgctl:\n{text[-3000:]}")
    return pcap_read(out), stats, text


