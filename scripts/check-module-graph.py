#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The folder graph of flowgate is one-way (docs/DESIGN.md, "Module map").

Every quoted #include of every source and header in a module folder is
resolved to the folder that holds the file, and the arrow must be one the
map allows (or a chain of them).  Run by meson (test 'module_graph', suite
unit) so a back arrow fails CI the day it is written.

Inside dataplane/ the same holds at the file level (PARTS): each header is
one part's face and defines the layouts of that part only (struct / union
names by prefix); a header no part claims is refused; headers include each
other without a circle; and the private layouts (PRIVATE) are included only
by the files named there.

    usage: check-module-graph.py SOURCE_ROOT | --self-test
"""
import os
import re
import sys

# module -> modules it may include directly (the graph of docs/DESIGN.md)
ALLOWED = {
    "conntrack": set(),
    "pkt": {"conntrack"},
    "control": {"conntrack"},
    "gpu": {"pkt", "conntrack"},
    "dataplane": {"pkt", "gpu", "control", "conntrack"},
    "xdp": {"pkt", "control", "conntrack"},
    "bench": {"dataplane", "xdp", "pkt", "gpu", "control", "conntrack"},
}
EXTS = (".c", ".h", ".cu", ".cuh")

# dataplane header -> the layouts (struct / union name prefixes) it may define
PARTS = {
    "fg_dp.h": ("fg_dp_params",),          # the daemon's face
    "fg_dp_private.h": ("fg_dp",),          # the daemon's state, control glue
    "fg_dp_counters.h": (),
    "fg_lb.h": ("fg_lb_",),                 # service / backend table
    "fg_neigh.h": ("fg_neigh_",),           # neighbour table
    "fg_port.h": ("fg_port", "fg_host_port", "fg_mbuf_priv"),  # devices, mbufs
    "fg_flow.h": ("fg_flow_",),             # flow decisions, watch events
    "fg_worker_private.h": ("fg_worker", "fg_fwd_", "fg_burst_out", "fg_local6",
                            "fg_nh_slot", "fg_neigh_posted"),  # one lcore's own
    "fg_load.h": ("fg_load_",),
    "fg_state.h": ("fg_state_",),           # restart hand-over: file, stats
    "fg_sync.h": ("fg_sync",),              # state sync between nodes
    "fg_stats.h": ("fg_stats_",),
    "fg_metrics.h": ("fg_metrics",),
    "fg_announce.h": ("fg_announce",),
    "fg_opts.h": ("fg_opts",),
    "fg_log.h": (),
    "fg_rcu.h": (),
}
# private layouts -> the only files that may include them
PRIVATE = {
    "fg_worker_private.h": {
        # the worker's own files
        "fg_worker.c", "fg_worker_setup.c", "fg_flow.c", "fg_neigh.c",
        # readers of a worker's counters / rings / shard
        "fg_stats.c", "fg_control.c", "fg_dp.c", "fg_gpupath.c",
        "fg_metrics.c",
        "fg_announce.c",    # liveness: a worker's tx_flushes
        "fg_port.c",        # a queue's NUMA socket: its worker's lcore
        "fg_state.c",       # the restart hand-over: shards, counter rows
        "fg_sync.c",        # state sync: a worker's rings, batch, shard
        # the bench and the tests that drive fg_worker_burst()
        "bench_dataplane.c", "test_neigh.c", "test_tombstone.c",
        "test_fixtures_worker.c",
        # the restart hand-over's test (shards, a worker's burst); its bench
        # goes through fg_dp.h (fg_dp_worker_ct, fg_dp_lb, fg_dp_state_stats)
        "test_state.c", "test_sync.c",
        "dp_fixture.h",     # their common ground (the worker a tuple hashes to)
        # state sync's bench (a worker's burst and housekeeping)
        "bench_sync.c"},
    "fg_dp_private.h": {
        "fg_dp.c", "fg_control.c", "fg_stats.c", "fg_metrics.c", "fg_lb.c",
        "fg_load.c", "fg_host.c", "fg_port.c", "fg_gpupath.c", "fg_announce.c",
        "fg_state.c", "fg_sync.c",
        "fg_worker_private.h", "bench_dataplane.c", "test_lb_scaleout.c"},
}
# bench/ reads the modules through their public headers: a *_private.h of
# any module only where named here, each with its reason.
BENCH_PRIVATE = {
    "bench_dataplane.c": {
        "fg_dp_private.h": "drives the daemon's own workers in lcore loops of its "
                           "own (fg_worker_burst, qsbr, rings, shards) to measure the "
                           "worker code itself per core: the daemon's layout is the "
                           "thing measured",
        "fg_worker_private.h": "the same loops: a worker's burst, counters and "
                               "housekeeping",
    },
    "bench_sync.c": {
        "fg_worker_private.h": "what state sync costs a worker: its burst and "
                               "housekeeping (the sync batch, the ring) with sync on and "
                               "off, on the daemon's own worker, is the thing measured",
    },
}
STRUCT_DEF = re.compile(r"^\s*(?:typedef\s+)?(?:struct|union)\s+([A-Za-z_]\w*)\s*\{", re.M)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def closure(mod):
    seen, todo = set(), [mod]
    while todo:
        for d in ALLOWED[todo.pop()]:
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


def check_parts(root):
    """dataplane/ at the file level: one part's layouts per header, no
    header circle, private layouts included only where PRIVATE says."""
    bad = []
    dp = os.path.join(root, "dataplane")
    headers = sorted(n for n in os.listdir(dp) if n.endswith(".h"))
    incs = {}
    for h in headers:
        if h not in PARTS:
            bad.append(f"dataplane/{h}: no part claims it (add it to PARTS in "
                       f"scripts/check-module-graph.py: whose layouts it holds)")
            continue
        text = open(os.path.join(dp, h), encoding="utf-8", errors="replace").read()
        for name in STRUCT_DEF.findall(text):
            if not any(name.startswith(p) for p in PARTS[h]):
                bad.append(f"dataplane/{h}: defines struct/union {name}, a layout of "
                           f"another part (this header holds {', '.join(PARTS[h]) or 'none'})")
        incs[h] = [os.path.basename(i) for i in INCLUDE.findall(text)
                   if os.path.basename(i) in headers]
    # circles among headers
    state = {}
    def visit(h, path):
        state[h] = 1
        for d in incs.get(h, ()):
            if state.get(d) == 1:
                bad.append("dataplane/ header circle: " + " -> ".join(path + [h, d]))
            elif d not in state:
                visit(d, path + [h])
        state[h] = 2
    for h in incs:
        if h not in state:
            visit(h, [])
    # who includes the private layouts
    for top in ("dataplane", "bench", "tests"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for n in names:
                if not n.endswith(EXTS):
                    continue
                text = open(os.path.join(dirpath, n), encoding="utf-8",
                            errors="replace").read()
                for inc in INCLUDE.findall(text):
                    b = os.path.basename(inc)
                    if b in PRIVATE and n != b and n not in PRIVATE[b]:
                        rel = os.path.relpath(os.path.join(dirpath, n), root)
                        bad.append(f"{rel}: includes {b}, which only "
                                   f"{', '.join(sorted(PRIVATE[b]))} may")
    return bad


def check_bench(root):
    """bench/ includes no module's *_private.h but where BENCH_PRIVATE says."""
    bad = []
    for dirpath, _, names in os.walk(os.path.join(root, "bench")):
        for n in names:
            if not n.endswith(EXTS):
                continue
            text = open(os.path.join(dirpath, n), encoding="utf-8", errors="replace").read()
            for inc in INCLUDE.findall(text):
                b = os.path.basename(inc)
                if b.endswith("_private.h") and b not in BENCH_PRIVATE.get(n, {}):
                    rel = os.path.relpath(os.path.join(dirpath, n), root)
                    bad.append(f"{rel}: includes {b}, a private layout: use the module's "
                               f"public header (or name the need in BENCH_PRIVATE, "
                               f"scripts/check-module-graph.py, with its reason)")
    return bad


def self_test():
    """The checker must fail on a back arrow and pass on a clean tree."""
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory(prefix="fgmodgraph") as t:
        for mod in ALLOWED:
            os.makedirs(os.path.join(t, mod))
        def write(rel, text):
            with open(os.path.join(t, rel), "w") as f:
                f.write(text)
        write("conntrack/ct.h", "")
        write("pkt/fg_pkt.h", '#include "ct.h"\n')
        write("dataplane/fg_dp.h", '#include "fg_pkt.h"\n')
        run = lambda: subprocess.run([sys.executable, __file__, t],
                                     capture_output=True).returncode
        if run() != 0:
            print("self-test: a clean tree was refused", file=sys.stderr)
            return 1
        write("pkt/fg_rss.c", '#include "dataplane/fg_dp.h"\n')
        if run() != 1:
            print("self-test: pkt -> dataplane was not refused", file=sys.stderr)
            return 1
        # the parts: a layout in another part's header is refused
        write("dataplane/fg_dp_private.h", "struct fg_dp { int x; };\n")
        write("pkt/fg_rss.c", "")
        if run() != 0:
            print("self-test: a clean dataplane/ was refused", file=sys.stderr)
            return 1
        write("dataplane/fg_dp_private.h", "struct fg_dp { int x; };\n"
              "struct fg_lb_table { int y; };\n")
        if run() != 1:
            print("self-test: an lb layout in fg_dp_private.h was not refused",
                  file=sys.stderr)
            return 1
        write("dataplane/fg_dp_private.h", "struct fg_dp { int x; };\n")
        write("dataplane/fg_lb.h", '#include "fg_flow.h"\n')
        write("dataplane/fg_flow.h", '#include "fg_lb.h"\n')
        if run() != 1:
            print("self-test: a header circle was not refused", file=sys.stderr)
            return 1
        write("dataplane/fg_flow.h", "")
        write("bench/bench_x.c", '#include "ct_private.h"\n')
        write("conntrack/ct_private.h", "")
        r = subprocess.run([sys.executable, __file__, t], capture_output=True, text=True)
        if r.returncode != 1 or "bench/bench_x.c: includes ct_private.h" not in r.stderr:
            print("self-test: a bench file including ct_private.h was not refused",
                  file=sys.stderr)
            return 1
    print("self-test: clean tree passes, back arrow, foreign layout, header "
          "circle and a bench's private include refused")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    root = sys.argv[1]
    # which module folder owns each header (by path and by base name)
    owner_of_path, owners_of_name = {}, {}
    files = {}
    for mod in ALLOWED:
        top = os.path.join(root, mod)
        if not os.path.isdir(top):
            print(f"module folder {mod}/ is missing", file=sys.stderr)
            return 1
        for dirpath, _, names in os.walk(top):
            for n in names:
                if not n.endswith(EXTS):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, n), root)
                files.setdefault(mod, []).append(rel)
                owner_of_path[rel] = mod
                owners_of_name.setdefault(n, set()).add(mod)
    bad = []
    arrows = set()
    for mod, rels in sorted(files.items()):
        ok = closure(mod) | {mod}
        for rel in sorted(rels):
            with open(os.path.join(root, rel), encoding="utf-8",
                      errors="replace") as f:
                text = f.read()
            for inc in INCLUDE.findall(text):
                here = os.path.normpath(os.path.join(os.path.dirname(rel), inc))
                if here in owner_of_path:
                    target = {owner_of_path[here]}
                elif os.path.normpath(inc) in owner_of_path:
                    target = {owner_of_path[os.path.normpath(inc)]}
                else:
                    target = owners_of_name.get(os.path.basename(inc), set())
                if len(target) > 1:
                    bad.append(f"{rel}: #include \"{inc}\" names a header "
                               f"of several modules ({', '.join(sorted(target))})")
                    continue
                for t in target:
                    if t != mod:
                        arrows.add((mod, t))
                    if t not in ok:
                        bad.append(f"{rel}: #include \"{inc}\": {mod} -> {t} "
                                   f"is not in the module map")
    if os.path.isdir(os.path.join(root, "dataplane")) and \
            os.path.exists(os.path.join(root, "dataplane", "fg_dp_private.h")):
        bad += check_parts(root)
    bad += check_bench(root)
    for line in bad:
        print(line, file=sys.stderr)
    print("arrows: " + ", ".join(f"{a}->{b}" for a, b in sorted(arrows)))
    if bad:
        print(f"{len(bad)} include(s) break the one-way module graph or "
              f"dataplane/'s parts", file=sys.stderr)
        return 1
    print("module graph is one-way")
    return 0


if __name__ == "__main__":
    sys.exit(main())
