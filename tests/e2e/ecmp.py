#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""e2e-ecmp: three flowgate nodes behind an ECMP router, BGP + BFD, in
network namespaces (issue 13; docs/DEPLOY.md describes the same set-up).

    tests/e2e/ecmp.py BUILD_DIR

  client 10.97.1.2 --- c0 [router: FRR zebra + bgpd + bfdd, AS 65000,
                          ECMP over L4 hashes: fib_multipath_hash_policy=1]
                          r0 10.97.0.1
                           |  one L2 segment (bridge br0 in PREFIX-sw)
     +---------------------+---------------------+
  node n1..n3: flowgate on lb0 (net_af_packet, --no-huge, one worker,
               --host-tap --announce --idle-sleep --second-chance),
               BIRD 2 (AS 65001) on the TAP fg0 10.97.0.1K, BFD 300 ms x 3,
               hold 3 s; VIP 10.97.100.1:80 dsr-gue over the 3 backends
  backend b1..b3: 10.97.0.2K, VIP on lo, GUE decapsulation and second
               chance by fg-decap (xdp/fg_decap.bpf.c), one server
               answering every line with its name (ecmp_peer.py)

Phases (ecmp_peer.py counts a connection broken at its first reset, EOF,
reply from another backend, or no reply for 60 s: a blackholed flow):
  kill       SIGKILL node 3: BFD takes it out of the router's ECMP route;
             0 broken; the failover time is printed, a measurement (the
             line "figure: ..."), not a bound
  return     node 3 starts again and rejoins: 0 broken
  no-backend every backend drained on node 1: it withdraws the VIP by
             itself (route fate-sharing), the router moves its flows: 0 broken
  backends-back  undrained: node 1 announces again and rejoins: 0 broken
  drain-off  backends without second chance (fg-decap attach without
             --second-chance); backend b1 drained on nodes 1 and 2, then
             node 3 killed: the broken count is reported (Maglev alone
             moves them)
  restore    b1 undrained, node 3 back: 0 broken
  drain-on   second chance on the backends; b2 drained, then node 3
             killed: 0 broken, and the backends' fg-decap sent segments on
             to b2
  stop       SIGTERM node 1: it withdraws its route first, forwards 1 s
             more, removes its routes: 0 broken
A NAT service (VIP 10.97.100.2:80, the same backends) runs beside it
(issue 35): each node has NAT source 10.97.200.1K of its own (`sync {
nat }`), lists the others' as local and as its peers' (`peer ... nat`),
and streams its flows to its two peers (state sync, UDP over the TAP, a
shared key).  N NAT connections are up through the kill phase: node 3's
flows are carried on by nodes 1 and 2, which announce 10.97.200.13 once
node 3 has been silent 3 s (the takeover): "nat-kill: broken N of M";
the takeover time and the sender's share of the window of loss (node 3's
queue-to-send delay, mean and max, read just before the kill) are
printed as figures.  Node 3 returns: its peers send it their flows at
its first message (catch-up), it takes 10.97.200.13 back, and the NAT
flows ECMP moves to it go on: "nat-return: broken N of M".  (Here the
kernel of a node's namespace also gets the frames of lb0, which
net_af_packet only copies: each sync message arrives twice, once through
the TAP, and the copy is refused as replay.)
The last lines are "broken N of M" per phase.  Root only (exit 77
otherwise).  Everything is named after fgecmp<PID> and removed on every
exit path (scripts/netns-teardown.sh; --sweep removes what a killed run
left).  No wall-clock assertion (a loaded machine stretches every time):
waits poll for their effect under guards of minutes; the failover and
convergence times are printed as figures.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
HERE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
P = f"fgecmp{os.getpid()}"
RUN = f"/tmp/flowgate-{P}"
VIP = "10.97.100.1"
NAT_VIP = "10.97.100.2"
SYNC_PORT = 7870
N_CONN = int(os.environ.get("FG_ECMP_CONNS", "300"))
BFD_MS, BFD_MULT, HOLD_S = 300, 3, 3
DETECT_S = BFD_MS * BFD_MULT / 1000.0
FRR = "/usr/lib/frr"
ROUTER_MAC = "02:00:00:97:00:01"


def node_ip(k):
    return f"10.97.0.1{k}"


def be_ip(k):
    return f"10.97.0.2{k}"


def nat_ip(k):
    return f"10.97.200.1{k}"


T0 = time.monotonic()


def log(msg):
    print(f"[{time.monotonic() - T0:5.1f}] {msg}", flush=True)


class Fail(Exception):
    pass


def run(args, what, check=True, **kw):
    """Runs a command; a failure raises Fail naming the step."""
    r = subprocess.run(args, capture_output=True, text=True, **kw)
    if check and r.returncode != 0:
        raise Fail(f"{what}: `{' '.join(args)}` exited {r.returncode}: "
                   f"{(r.stderr or r.stdout).strip()[:300]}")
    return r


def ns_sysctl(ns, *kv):
    run(["ip", "netns", "exec", ns, "sysctl", "-qw", *kv], f"sysctl in {ns}")


def nooffload(ns, dev):
    """Checksum/segmentation offloads off, read back (a veth left with TX
    checksum offload makes its sender emit partial checksums)."""
    run(["ip", "netns", "exec", ns, "ethtool", "-K", dev, "rx", "off", "tx", "off",
         "tso", "off", "gso", "off", "gro", "off"], f"ethtool -K {dev} in {ns}", check=False)
    feats = run(["ip", "netns", "exec", ns, "ethtool", "-k", dev], f"ethtool -k {dev}").stdout
    for f in ("rx-checksumming", "tx-checksumming", "tcp-segmentation-offload",
              "generic-segmentation-offload", "generic-receive-offload"):
        if f"{f}: off" not in feats:
            raise Fail(f"{f} still on for {dev} in {ns}: partial checksums would break traffic")


def mac_of(kind, k):
    return f"02:00:00:97:00:{kind}{k}"


def attach(ns, ifname, mac, swport):
    run(["ip", "netns", "add", ns], f"namespace {ns}")
    run(["ip", "link", "add", swport, "netns", f"{P}-sw", "type", "veth", "peer", "name",
         ifname, "netns", ns], f"veth {swport}/{ifname}")
    run(["ip", "-n", ns, "link", "set", ifname, "address", mac], "mac")
    run(["ip", "-n", ns, "link", "set", "lo", "up"], "lo up")
    run(["ip", "-n", ns, "link", "set", ifname, "up"], f"{ifname} up")
    run(["ip", "-n", f"{P}-sw", "link", "set", swport, "master", "br0", "up"], "bridge port")
    nooffload(ns, ifname)
    nooffload(f"{P}-sw", swport)


def build_network(nohash_obj):
    sw = f"{P}-sw"
    run(["ip", "netns", "add", sw], "bridge namespace")
    run(["ip", "-n", sw, "link", "add", "br0", "type", "bridge"], "bridge")
    run(["ip", "-n", sw, "link", "set", "br0", "up"], "bridge up")
    # router: r0 on the segment, c0 towards the client
    r, c = f"{P}-r", f"{P}-c"
    attach(r, "r0", ROUTER_MAC, "sw-r")
    run(["ip", "-n", r, "addr", "add", "10.97.0.1/24", "dev", "r0"], "router address")
    run(["ip", "netns", "add", c], "client namespace")
    run(["ip", "link", "add", "c0", "netns", r, "type", "veth", "peer", "name", "eth0",
         "netns", c], "client veth")
    for ns, dev, addr in ((r, "c0", "10.97.1.1/24"), (c, "eth0", "10.97.1.2/24")):
        run(["ip", "-n", ns, "link", "set", dev, "up"], f"{dev} up")
        run(["ip", "-n", ns, "addr", "add", addr, "dev", dev], f"{dev} address")
        nooffload(ns, dev)
    run(["ip", "-n", c, "link", "set", "lo", "up"], "client lo")
    run(["ip", "-n", c, "route", "add", "default", "via", "10.97.1.1"], "client route")
    ns_sysctl(c, "net.ipv4.ip_local_port_range=20000 60999")
    # the router hashes the 5-tuple as one behind a wire would, not the
    # hash the client's socket left on the skb (tests/e2e/fg_nohash.bpf.c)
    run(["ip", "netns", "exec", r, "tc", "qdisc", "add", "dev", "c0", "clsact"], "clsact c0")
    run(["ip", "netns", "exec", r, "tc", "filter", "add", "dev", "c0", "ingress", "bpf",
         "direct-action", "obj", nohash_obj, "sec", "tc"], "TC program fg_nohash on c0")
    ns_sysctl(r, "net.ipv4.ip_forward=1", "net.ipv4.fib_multipath_hash_policy=1",
              "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0",
              "net.ipv4.conf.r0.rp_filter=0", "net.ipv4.conf.c0.rp_filter=0")
    for k in (1, 2, 3):
        n = f"{P}-n{k}"
        attach(n, "lb0", mac_of(1, k), f"sw-n{k}")
        ns_sysctl(n, "net.ipv6.conf.lb0.disable_ipv6=1", "net.ipv4.conf.lb0.arp_ignore=8")
    for k in (1, 2, 3):
        b = f"{P}-b{k}"
        attach(b, "eth0", mac_of(2, k), f"sw-b{k}")
        run(["ip", "-n", b, "addr", "add", f"{be_ip(k)}/24", "dev", "eth0"], "backend address")
        run(["ip", "-n", b, "addr", "add", f"{VIP}/32", "dev", "lo"], "backend VIP")
        run(["ip", "-n", b, "route", "add", "default", "via", "10.97.0.1"], "backend route")
        kv = ["net.ipv4.ip_forward=1"]   # bpf_fib_lookup needs forwarding on eth0
        for d in ("all", "default", "eth0", "lo"):
            kv += [f"net.ipv4.conf.{d}.rp_filter=0", f"net.ipv4.conf.{d}.arp_ignore=1",
                   f"net.ipv4.conf.{d}.arp_announce=2"]
        ns_sysctl(b, *kv)
        for j in (1, 2, 3):
            if j != k:   # second chance hops need the other backends' MACs
                run(["ip", "-n", b, "neigh", "replace", be_ip(j), "lladdr", mac_of(2, j),
                     "dev", "eth0", "nud", "permanent"], "backend neighbour")
        decap(b, second_chance=True)


def decap(b, second_chance):
    """fg-decap on the backend's eth0 (attach replaces the program): GUE
    and IPIP for the VIP, with or without second chance."""
    run(["ip", "netns", "exec", b, f"{BUILD}/xdp/fg-decap", "attach", "eth0", "--vip", VIP,
         "--gue-port", "6080"] + (["--second-chance"] if second_chance else []),
        f"fg-decap attach in {b}")


def start_router():
    r = f"{P}-r"
    d = f"{RUN}/frr"
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o777)    # FRR drops to user frr
    with open(f"{d}/zebra.conf", "w") as f:
        f.write(f"hostname r\nlog file {d}/frr.log\n")
    with open(f"{d}/bfdd.conf", "w") as f:
        f.write(f"hostname r\nlog file {d}/frr.log\nbfd\n profile fast\n"
                f"  detect-multiplier {BFD_MULT}\n  receive-interval {BFD_MS}\n"
                f"  transmit-interval {BFD_MS}\n !\n!\n")
    nb = "".join(f" neighbor {node_ip(k)} peer-group fg\n" for k in (1, 2, 3))
    with open(f"{d}/bgpd.conf", "w") as f:
        f.write(f"hostname r\nlog file {d}/frr.log\nrouter bgp 65000\n"
                f" bgp router-id 10.97.0.1\n no bgp ebgp-requires-policy\n"
                f" bgp bestpath as-path multipath-relax\n timers bgp 1 {HOLD_S}\n"
                f" neighbor fg peer-group\n neighbor fg remote-as 65001\n"
                f" neighbor fg timers connect 1\n neighbor fg bfd profile fast\n{nb}"
                f" address-family ipv4 unicast\n  maximum-paths 8\n exit-address-family\n!\n")
    for f_ in os.listdir(d):
        os.chmod(f"{d}/{f_}", 0o644)
    common = ["-d", "-u", "frr", "-g", "frr", "-z", f"{d}/zserv.api", "--vty_socket", d,
              "-A", "127.0.0.1", "-P", "0"]
    run(["ip", "netns", "exec", r, f"{FRR}/zebra", *common, "-f", f"{d}/zebra.conf",
         "-i", f"{d}/zebra.pid"], "FRR zebra")
    for _ in range(100):
        if os.path.exists(f"{d}/zserv.api"):
            break
        time.sleep(0.1)
    run(["ip", "netns", "exec", r, f"{FRR}/bfdd", *common, "-f", f"{d}/bfdd.conf",
         "-i", f"{d}/bfdd.pid", "--bfdctl", f"{d}/bfdd.sock"], "FRR bfdd")
    run(["ip", "netns", "exec", r, f"{FRR}/bgpd", *common, "-f", f"{d}/bgpd.conf",
         "-i", f"{d}/bgpd.pid"], "FRR bgpd")


def vtysh(cmd):
    return run(["ip", "netns", "exec", f"{P}-r", "vtysh", "--vty_socket", f"{RUN}/frr",
                "-c", cmd], "vtysh", check=False).stdout


def start_bird(k):
    n = f"{P}-n{k}"
    conf = f"{RUN}/bird{k}.conf"
    with open(conf, "w") as f:
        f.write(f"""router id {node_ip(k)};
log "{RUN}/bird{k}.log" all;
ipv4 table vips;
protocol device {{ scan time 2; }}
# flowgate --announce keeps VIP/32 dev fg0 in kernel table 4242 while it
# forwards with a usable backend; learn reads it (netlink events, no scan)
protocol kernel flowgate_vips {{
  kernel table 4242;
  learn;
  scan time 10;
  ipv4 {{ table vips; import all; export none; }};
}}
protocol bfd {{
  interface "fg0" {{ min rx interval {BFD_MS} ms; min tx interval {BFD_MS} ms; multiplier {BFD_MULT}; }};
}}
protocol bgp upstream {{
  local {node_ip(k)} as 65001;
  neighbor 10.97.0.1 as 65000;
  hold time {HOLD_S};
  keepalive time 1;
  connect retry time 1;
  error wait time 1, 4;
  bfd on;
  ipv4 {{ table vips; import none; export where net ~ [ 10.97.100.0/24{{32,32}}, 10.97.200.0/24{{32,32}} ]; next hop self; }};
}}
""")
    run(["ip", "netns", "exec", n, "bird", "-c", conf, "-s", f"{RUN}/bird{k}.ctl",
         "-P", f"{RUN}/bird{k}.pid"], f"BIRD on node {k}")


class Node:
    def __init__(self, k, second_chance=True):
        self.k = k
        self.proc = None
        self.sock = f"{RUN}/n{k}.sock"
        self.second_chance = second_chance
        self.starts = 0

    def start(self):
        self.launch()
        self.wait_running()

    def config(self):
        """The node's config file: ports, neighbours, the DSR and NAT
        services, state sync with the other two nodes."""
        k = self.k
        nb = "".join(f"neighbour {be_ip(j)} {mac_of(2, j)} port net_af_packet0;\n"
                     for j in (1, 2, 3))
        bes = "".join(f" backend {be_ip(j)};\n" for j in (1, 2, 3))
        peers = "".join(f" peer n{j} {node_ip(j)}:{SYNC_PORT} node {j} nat {nat_ip(j)};\n"
                        for j in (1, 2, 3) if j != k)
        path = f"{RUN}/n{k}.conf"
        with open(path, "w") as f:
            f.write(f"port net_af_packet0 {{\n local {node_ip(k)} {nat_ip(1)} {nat_ip(2)} "
                    f"{nat_ip(3)};\n gateway 10.97.0.1;\n}}\n"
                    f"neighbour 10.97.0.1 {ROUTER_MAC} port net_af_packet0;\n{nb}"
                    f"service ecmp {VIP}:80/tcp {{\n mode dsr-gue;\n{bes}}}\n"
                    f"service ecmpnat {NAT_VIP}:80/tcp {{\n mode nat;\n{bes}}}\n"
                    f"sync {{\n listen {node_ip(k)}:{SYNC_PORT} node {k};\n nat {nat_ip(k)};\n"
                    f"{peers} key {RUN}/sync.key;\n}}\n")
        return path

    def launch(self):
        n = f"{P}-n{self.k}"
        args = [f"{BUILD}/dataplane/flowgate", "--no-huge", "-m", "384",
                "--file-prefix", f"{P}-n{self.k}", "-l", "0,1",
                "--no-pci", "--vdev=net_af_packet0,iface=lb0", "--",
                "--host-tap", "--announce", "--idle-sleep", "--ct-capacity", "16384", "--mbufs", "8191",
                "-s", self.sock, "-c", self.config()]
        if self.second_chance:
            args.append("--second-chance")
        self.starts += 1
        self.log = f"{RUN}/flowgate{self.k}.{self.starts}.log"
        logf = open(self.log, "w")
        self.proc = subprocess.Popen(["ip", "netns", "exec", n, *args], stdout=logf,
                                     stderr=subprocess.STDOUT)

    def wait_running(self):
        n = f"{P}-n{self.k}"
        for _ in range(600):   # 60 s: a guard against a hang on a busy host
            if "flowgate: running" in open(self.log).read():
                break
            if self.proc.poll() is not None:
                raise Fail(f"flowgate on node {self.k} exited {self.proc.returncode}: "
                           f"{tail(self.log)}")
            time.sleep(0.1)
        else:
            raise Fail(f"flowgate on node {self.k} did not start")
        # the kernel side of the TAP: the node's address (BGP, BFD)
        run(["ip", "-n", n, "addr", "add", f"{node_ip(self.k)}/24", "dev", "fg0"], "TAP address")
        run(["ip", "-n", n, "link", "set", "fg0", "up"], "TAP up")

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def fgctl(self, *a):
        return run([f"{BUILD}/control/fgctl", "-s", self.sock, *a], f"fgctl on node {self.k}")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def tail(path, n=8):
    try:
        return " | ".join(open(path).read().splitlines()[-n:])
    except OSError:
        return "(no log)"


def nexthops(dst=VIP):
    out = run(["ip", "-n", f"{P}-r", "route", "show", f"{dst}/32"], "router route",
              check=False).stdout
    return sorted(set(re.findall(r"via (10\.97\.0\.1\d)", out)))


def wait_nexthops(want, guard_s=180, dst=VIP):
    end = time.monotonic() + guard_s
    while time.monotonic() < end:
        if nexthops(dst) == want:
            return time.monotonic()
        time.sleep(0.05)
    raise Fail(f"the router's route to {dst} has next hops {nexthops(dst)}, expected {want} "
               f"(BGP: {vtysh('show bgp summary')[-600:]})")


class Poller(threading.Thread):
    """Reads every node's counters through its control socket every 50 ms:
    (time, rx_packets, new_flows) per node."""

    def __init__(self, nodes):
        super().__init__(daemon=True)
        self.nodes = nodes
        self.samples = {n.k: [] for n in nodes}
        self.conns = {}
        self.halt = False

    def query(self, node):
        s = self.conns.get(node.k)
        try:
            if s is None:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                # a loaded machine answers late: a short timeout would drop
                # every sample (and reconnect) while the phase runs
                s.settimeout(10)
                s.connect(node.sock)
                self.conns[node.k] = s = (s, s.makefile("r"))
            s[0].sendall(b'{"v":1,"cmd":"stats","args":{}}\n')
            rep = json.loads(s[1].readline())
            t = rep["data"]["total"]
            return t["rx_packets"], t["new_flows"], t.get("second_chance", 0)
        except (OSError, ValueError, KeyError, TypeError):
            if s is not None:
                self.conns.pop(node.k, None)
            return None

    def run(self):
        while not self.halt:
            for n in self.nodes:
                v = self.query(n)
                if v is not None:
                    self.samples[n.k].append((time.monotonic(), *v))
            time.sleep(0.05)

    def latest(self, k):
        return self.samples[k][-1] if self.samples[k] else (0, 0, 0, 0)

    def last_rx_change(self, k, before):
        """Last sample time (< before) when node k's rx_packets moved."""
        s = [x for x in self.samples[k] if x[0] < before]
        for a, b in zip(reversed(s[:-1]), reversed(s)):
            if b[1] != a[1]:
                return b[0]
        return None

    def first_new_flow(self, ks, after):
        """First sample time (> after) when a node of ks inserted a flow."""
        best = None
        for k in ks:
            s = self.samples[k]
            for a, b in zip(s, s[1:]):
                if b[0] > after and b[2] != a[2]:
                    best = b[0] if best is None else min(best, b[0])
                    break
        return best


class Client:
    def __init__(self, vip=VIP):
        self.p = subprocess.Popen(["ip", "netns", "exec", f"{P}-c", "python3",
                                   f"{HERE}/tests/e2e/ecmp_peer.py", "client", vip,
                                   "-n", str(N_CONN)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def expect(self, prefix, guard_s=600):
        res = [None]
        self.lines = []

        def rd():
            while True:
                line = self.p.stdout.readline()
                if not line:
                    return
                line = line.rstrip()
                if line.startswith(prefix) or line.startswith("failed"):
                    res[0] = line
                    return
                self.lines.append(line)
                log(line)
        t = threading.Thread(target=rd, daemon=True)
        t.start()
        t.join(guard_s)
        if res[0] is None or res[0].startswith("failed"):
            raise Fail(f"client: {res[0] or 'no answer to ' + prefix}")
        return res[0]

    def cmd(self, line, prefix):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return self.expect(prefix)


def nat_broken_report(nodes, lines):
    """What each running node holds of the NAT connections a phase broke
    (the client's lines name their ports), and its non-zero drops and sync
    counters: the evidence a failed phase leaves behind."""
    for ln in lines:
        m = re.search(r"client port (\d+)", ln)
        if not m:
            continue
        for n in nodes:
            got = n.fgctl("--json", "flows", "list", "--client-port", m.group(1),
                          "--limit", "16").stdout.strip()
            log(f"     node {n.k}, client port {m.group(1)}: {got or 'no flow'}")
    for n in nodes:
        st = json.loads(n.fgctl("--json", "stats").stdout).get("total", {})
        drops = {k: v for k, v in st.items() if isinstance(v, dict) and k == "drops"}
        log(f"     node {n.k} drops: {json.dumps(drops.get('drops', {}))}; counters: " +
            json.dumps({k: v for k, v in st.items() if v and not isinstance(v, (dict, list))}))
        log(f"     node {n.k} sync: " + " ".join(n.fgctl("--json", "sync").stdout.split()))


def main():
    if os.geteuid() != 0:
        log("e2e-ecmp: needs root (network namespaces)")
        return 77
    if not os.path.exists("/dev/net/tun"):
        log("e2e-ecmp: no /dev/net/tun (flowgate --host-tap)")
        return 77
    for t in ("ip", "tc", "ethtool", "clang", "bird", "birdc", "vtysh"):
        if shutil.which(t) is None:
            log(f"e2e-ecmp: FAIL: {t} is not installed (scripts/install-deps.sh installs it)")
            return 1
    for t in ("zebra", "bgpd", "bfdd"):
        if not os.access(f"{FRR}/{t}", os.X_OK):
            log(f"e2e-ecmp: FAIL: {FRR}/{t} missing (package frr, scripts/install-deps.sh)")
            return 1
    subprocess.run([f"{HERE}/scripts/netns-teardown.sh", "--sweep"])
    if not os.access(f"{BUILD}/xdp/fg-decap", os.X_OK):
        log("e2e-ecmp: SKIP: no fg-decap (built with libbpf and bpftool: the backends' "
            "decapsulation and second chance)")
        return 77
    os.makedirs(RUN, exist_ok=True)
    with open(f"{RUN}/sync.key", "w") as f:
        f.write(os.urandom(16).hex() + "\n")
    os.chmod(f"{RUN}/sync.key", 0o600)
    nodes = [Node(k) for k in (1, 2, 3)]
    poller = None
    client = None
    nat_client = None
    servers = []
    results = []
    try:
        nohash = f"{RUN}/fg_nohash.o"
        run(["clang", "-O2", "-g", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu", "-c",
             f"{HERE}/tests/e2e/fg_nohash.bpf.c", "-o", nohash], "clang: TC program fg_nohash")
        build_network(nohash)
        start_router()
        for k in (1, 2, 3):
            servers.append(subprocess.Popen(
                ["ip", "netns", "exec", f"{P}-b{k}", "python3", f"{HERE}/tests/e2e/ecmp_peer.py",
                 "server", f"b{k}"], stdout=open(f"{RUN}/b{k}.log", "w"), stderr=subprocess.STDOUT))
        for n in nodes:        # EAL start-ups overlap
            n.launch()
        for n in nodes:
            n.wait_running()
            start_bird(n.k)
        all3 = [node_ip(k) for k in (1, 2, 3)]
        wait_nexthops(all3)
        log(f"ok   router: {VIP}/32 over ECMP next hops {all3} (BGP from BIRD on each node)")
        wait_nexthops(all3, dst=NAT_VIP)
        for k in (1, 2, 3):
            wait_nexthops([node_ip(k)], dst=nat_ip(k))
        log(f"ok   router: {NAT_VIP}/32 over {all3}; NAT sources {nat_ip(1)}, {nat_ip(2)}, "
            f"{nat_ip(3)} each via its node")
        poller = Poller(nodes)
        poller.start()
        client = Client()
        ready = client.expect("ready")
        log(f"ok   {N_CONN} connections up, one line every 100 ms each ({ready}); "
            + client.cmd("spread", "spread"))
        # every node's counters sampled with its flows (polled: the poller
        # thread may lag on a loaded machine; 60 s is the hang guard)
        end = time.monotonic() + 60
        while True:
            spread = {k: poller.samples[k][-1][2] if poller.samples[k] else 0
                      for k in (1, 2, 3)}
            if min(spread.values()) > 0 or time.monotonic() > end:
                break
            time.sleep(0.1)
        log(f"     flows per node: {spread}")
        if min(spread.values()) == 0:
            raise Fail(f"ECMP did not spread the connections over all 3 nodes: {spread}")
        nat_client = Client(NAT_VIP)
        ready = nat_client.expect("ready")
        log(f"ok   {N_CONN} NAT connections up ({ready}); " + nat_client.cmd("spread", "spread"))

        picked = {}

        def phase(name, action, want_hops, settle_extra=None):
            client.cmd(f"mark {name}", "marked")
            t_event = time.monotonic()
            before = {k: poller.latest(k) for k in (1, 2)}
            action()
            t_route = wait_nexthops(want_hops)
            if settle_extra:
                settle_extra()
            line = client.cmd(f"settle {name}", "phase")
            m = re.match(r"phase \S+ broken (\d+) of (\d+)", line)
            results.append((name, int(m.group(1)), int(m.group(2))))
            after = {k: poller.latest(k) for k in (1, 2)}
            picked[name] = sum(after[k][2] - before[k][2] for k in (1, 2))
            log(f"     {line} (router converged {t_route - t_event:.2f} s after the event; "
                "nodes 1, 2: " + ", ".join(
                    f"{after[k][2] - before[k][2]} flows picked up, "
                    f"{after[k][3] - before[k][3]} second-chance hints" for k in (1, 2)) + ")")
            return t_event, t_route

        # -- kill: SIGKILL node 3 mid-traffic; its NAT flows go on through
        # nodes 1 and 2 (state sync), which take 10.97.200.13 over
        nat_client.cmd("mark kill", "marked")
        pre = {}

        def kill3():
            pre.update(json.loads(nodes[2].fgctl("--json", "sync").stdout))
            pre["nat"] = json.loads(nodes[2].fgctl("--json", "flows", "count").stdout)["nat"]
            own = nodes[2].fgctl("--json", "flows", "list", "--nat", nat_ip(3), "--limit",
                                 "100000").stdout.strip()
            pre["own"] = len(json.loads(own)) if own else 0
            nodes[2].kill()
        t_kill, t_route = phase("kill", kill3, all3[:2])
        t_take = wait_nexthops(all3[:2], dst=nat_ip(3))
        line = nat_client.cmd("settle kill", "phase")
        m = re.match(r"phase \S+ broken (\d+) of (\d+)", line)
        results.append(("nat-kill", int(m.group(1)), int(m.group(2))))
        if int(m.group(1)):
            nat_broken_report(nodes[:2], nat_client.lines)
        got = [json.loads(n.fgctl("--json", "sync").stdout) for n in nodes[:2]]
        mean = pre["delay_us_sum"] / pre["sent_records"] if pre.get("sent_records") else 0
        log(f"     NAT {line}: node 3 held {pre['nat']} NAT flows, {pre['own']} of them "
            f"its own (from {nat_ip(3)}), and had sent "
            f"{pre.get('sent_records', 0)} records; nodes 1, 2 installed "
            f"{[g['installed'] for g in got]}, refused {[g['refused'] for g in got]}")
        log(f"     figure: nat_takeover_s<={t_take - t_kill:.2f} (the kill to the router's "
            f"route to {nat_ip(3)} via nodes 1, 2, seen once the DSR phase settled: an upper "
            f"bound; 3 s of silence first) "
            f"window_of_loss_sender_us mean={mean:.0f} max={pre.get('delay_us_max', 0)} "
            "(node 3's queueing to send: flows opened that long before the kill were not "
            "yet sent; plus the network's one-way delay)")
        if pre["own"] == 0:
            raise Fail("ECMP put no NAT flow on node 3: the takeover was not exercised")

        last_dead = poller.last_rx_change(3, t_kill + 1.0)
        first_other = poller.first_new_flow((1, 2), t_kill)
        if last_dead is None or first_other is None:
            # a figure, not the claim (the phase's "0 broken" is): print why
            # it is missing, with what the survivors counted, and go on
            # (seen 2 times in 20 runs on a loaded 2-core machine: nodes 1, 2
            # sampled all along, their new_flows unchanged over the phase)
            log(f"     figure: failover_s=n/a (last rx on node 3 {last_dead}, first "
                f"picked-up flow elsewhere {first_other}; samples after the kill: " +
                ", ".join(f"node {k} {sum(1 for x in poller.samples[k] if x[0] > t_kill)}"
                          for k in (1, 2, 3)) + "; survivors' counters: " +
                "; ".join(json.dumps({a: b for a, b in json.loads(
                    nodes[k].fgctl("--json", "stats").stdout).get("total", {}).items()
                    if b and not isinstance(b, (dict, list))}) for k in (0, 1)) +
                "; their tables: " + "; ".join(
                    " ".join(nodes[k].fgctl("flows", "count").stdout.split()) for k in (0, 1)) +
                "; a flow both survivors already track (moved by an earlier route change) "
                "is not a new flow; announce lines in the nodes' logs: " + "; ".join(
                    f"node {n.k}: " + " / ".join(
                        ln.strip()[-120:] for ln in open(n.log, errors="replace")
                        if "announce:" in ln and ("withdraw" in ln or "again" in ln))
                    for n in nodes) + ")")
        else:
            failover = first_other - last_dead
            # a measurement, not a bound: a loaded machine stretches it (the
            # functional claim is the phase's "0 broken")
            log(f"     figure: failover_s={failover:.2f} (the last packet through node 3 to "
                f"the first picked-up flow on nodes 1/2) route_withdrawn_s={t_route - t_kill:.2f} "
                f"(after the kill); BFD {BFD_MS} ms x {BFD_MULT} = {DETECT_S:.1f} s; "
                f"load average {os.getloadavg()[0]:.1f}")

        def node3_carries():
            """Node 3 carries flows again before the next phase kills it
            (else that phase would move none of its flows)."""
            end = time.monotonic() + 180
            while time.monotonic() < end:
                cnt = nodes[2].fgctl("flows", "count").stdout
                m = re.search(r"total (\d+)", cnt)
                if m and int(m.group(1)) >= N_CONN // 10:
                    log(f"     node 3 carries {m.group(1)} flows again")
                    return
                time.sleep(0.2)
            neigh = run(["ip", "-n", f"{P}-r", "neigh", "show", node_ip(3)], "neigh",
                        check=False).stdout.strip()
            t = json.loads(nodes[2].fgctl("--json", "stats").stdout)["total"]
            log(f"     node 3: " + ", ".join(f"{k} {t[k]}" for k in (
                "rx_packets", "tx_packets", "new_flows", "ct_hits", "ct_untracked", "drops")))
            log("     router: " + run(["ip", "-n", f"{P}-r", "-d", "route", "show", f"{VIP}/32"],
                                     "route", check=False).stdout.replace("\n", " | "))
            log("     router nexthops: " + run(["ip", "-n", f"{P}-r", "nexthop", "show"],
                                     "nh", check=False).stdout.replace("\n", " | "))
            raise Fail(f"node 3 is a next hop again but carries {cnt.strip()!r} "
                       f"(router neighbour: {neigh!r}; route: {nexthops()})")
        # -- return: node 3 again; its peers send it what they hold at its
        # first message (catch-up), it takes its NAT source back, and the
        # NAT flows ECMP moves to it go on there
        nat_client.cmd("mark return", "marked")
        phase("return", nodes[2].start, all3, node3_carries)
        wait_nexthops([node_ip(3)], dst=nat_ip(3))
        line = nat_client.cmd("settle return", "phase")
        m = re.match(r"phase \S+ broken (\d+) of (\d+)", line)
        results.append(("nat-return", int(m.group(1)), int(m.group(2))))
        if int(m.group(1)):
            nat_broken_report(nodes, nat_client.lines)
        y3 = json.loads(nodes[2].fgctl("--json", "sync").stdout)
        log(f"     NAT {line}: node 3 installed {y3['installed']} flows from its peers "
            f"(catch-up), refused {sum(y3['refused'].values())}")
        nat_client.p.stdin.write("quit\n")
        nat_client.p.stdin.flush()
        nat_client.p.wait(timeout=60)

        # -- node 1 loses every backend (all drained): it withdraws the VIP
        # by itself, the router moves its flows, which keep their backends;
        # then they come back
        def set_drained(node, drained):
            """Every backend of node 1 drained or undrained in one config
            apply: one table change (backend by backend, the node could
            announce again with one backend and pick flows up wrongly)."""
            text = node.fgctl("config", "show").stdout
            text, n = re.subn(r"(\n\s*backend [^;\n]*?)(?: drained)?;",
                              r"\1 drained;" if drained else r"\1;", text)
            if n != 6:
                raise Fail(f"config show of node {node.k}: {n} backend lines, expected 6 "
                           "(3 of the DSR service, 3 of the NAT one)")
            path = f"{RUN}/n{node.k}-drained-{int(drained)}.conf"
            with open(path, "w") as f:
                f.write(text)
            node.fgctl("config", "apply", path)

        def drain_all():
            set_drained(nodes[0], True)
        phase("no-backend", drain_all, all3[1:])
        if "withdrawn (no usable backend)" not in open(nodes[0].log).read():
            raise Fail("node 1 did not log the withdrawal of the VIP (no usable backend)")

        def undrain_all():
            set_drained(nodes[0], False)
        phase("backends-back", undrain_all, all3)

        # -- drain without second chance: backends ignore the hint
        for k in (1, 2, 3):
            decap(f"{P}-b{k}", second_chance=False)
        log("     backends: " + run(["ip", "netns", "exec", f"{P}-b1", f"{BUILD}/xdp/fg-decap",
                                     "status", "eth0"], "fg-decap status").stdout.splitlines()[0])

        def forget():
            """Nodes 1 and 2 forget their flows, as when the entries of an
            earlier failover have expired: node 3's flows then land where
            no entry knows them (else their old entries would carry them
            and nothing would be measured).  Their own flows are picked
            up again at once, by the unchanged Maglev table."""
            out = [n.fgctl("flows", "delete", "--all").stdout.strip() for n in nodes[:2]]
            time.sleep(1)
            cnt = [n.fgctl("flows", "count").stdout.strip().replace("\n", " ")
                   for n in nodes]
            log(f"     forgotten on nodes 1, 2: {out}; now {cnt}")

        def drain_and_kill(be):
            """The backend drained on nodes 1 and 2 first, then node 3
            killed: its flows reach nodes where the backend is already
            drained.  (Killed first, a loaded machine could let the router
            move them before fgctl drains, and they would be picked up onto
            the undrained backend: nothing for second chance to do.)"""
            def act():
                for n in nodes[:2]:
                    n.fgctl("backend", "drain", "ecmp", be)
                nodes[2].kill()
            return act
        forget()
        phase("drain-off", drain_and_kill(be_ip(1)), all3[:2])

        def restore():
            for n in nodes[:2]:
                n.fgctl("backend", "undrain", "ecmp", be_ip(1))
            nodes[2].start()

        phase("restore", restore, all3, node3_carries)

        for k in (1, 2, 3):
            decap(f"{P}-b{k}", second_chance=True)
        forget()
        phase("drain-on", drain_and_kill(be_ip(2)), all3[:2])
        hints = sum(json.loads(n.fgctl("--json", "stats").stdout)["total"]
                    .get("second_chance", 0) for n in nodes[:2])
        log(f"     second-chance hints sent by nodes 1 and 2: {hints}")
        fwd = 0
        for k in (1, 2, 3):
            st = json.loads(run(["ip", "netns", "exec", f"{P}-b{k}", f"{BUILD}/xdp/fg-decap",
                                 "status", "eth0", "--json"], "fg-decap status").stdout)
            fwd += st["counters"]["second_chance_fwd"]
        log(f"     segments the backends' fg-decap sent on to the previous owner: {fwd}")

        # -- stop: SIGTERM node 1; it withdraws first and forwards 1 s more
        def stop1():
            nodes[0].stop()
            if nodes[0].proc.returncode != 0:
                raise Fail(f"node 1 exited {nodes[0].proc.returncode} on SIGTERM")
        phase("stop", stop1, all3[1:2])
        if "withdrawn (flowgate stops)" not in open(nodes[0].log).read():
            raise Fail("node 1 did not log the withdrawal on SIGTERM")
        gone = run(["ip", "-n", f"{P}-n1", "route", "show", "table", "4242"], "table 4242",
                   check=False).stdout.strip()
        if gone:
            raise Fail(f"node 1 left routes in table 4242 after it stopped: {gone}")
        if picked.get("drain-on", 0) == 0:
            raise Fail("phase drain-on: nodes 1 and 2 picked up no flow: second chance was "
                       "not exercised")
        return report(results, hints, fwd)
    except Fail as e:
        log(f"e2e-ecmp: FAIL: {e}")
        for n in nodes:
            if n.starts:
                log(f"  {os.path.basename(n.log)}: {tail(n.log, 5)}")
        return 1
    finally:
        if poller:
            poller.halt = True
        if nat_client and nat_client.p.poll() is None:
            nat_client.p.kill()
        if client and client.p.poll() is None:
            try:
                client.p.stdin.write("quit\n")
                client.p.stdin.flush()
                client.p.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                client.p.kill()
        for n in nodes:
            n.stop()
        for s in servers:
            s.terminate()
        if os.environ.get("FG_E2E_KEEP"):
            shutil.copytree(RUN, f"/tmp/flowgate-kept-{P}", dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("*.vty", "*.api", "*.sock", "*.ctl"))
            log(f"e2e-ecmp: logs kept in /tmp/flowgate-kept-{P}")
        subprocess.run([f"{HERE}/scripts/netns-teardown.sh", P])


def report(results, hints, fwd):
    ok = True
    want_zero = {"kill", "nat-kill", "return", "nat-return", "no-backend", "backends-back",
                 "restore", "drain-on", "stop"}
    for name, b, m in results:
        if name in want_zero and b != 0:
            log(f"FAIL: phase {name}: {b} of {m} connections broke (expected 0)")
            ok = False
    off = [b for name, b, _ in results if name == "drain-off"]
    if hints == 0:
        log("FAIL: no second-chance hint was sent in phase drain-on")
        ok = False
    if fwd == 0:
        log("FAIL: no backend's fg-decap sent a segment on to its previous owner (drain-on)")
        ok = False
    log("e2e-ecmp: " + ("PASS" if ok else "FAIL") +
        f" (backend drained during the rehash: {off[0] if off else '?'} broken without "
        f"second chance, {[b for n, b, _ in results if n == 'drain-on'][0]} with it)")
    for name, b, m in results:
        print(f"{name}: broken {b} of {m}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(130))
    sys.exit(main())
