#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The folder graph of flowgate is one-way (docs/DESIGN.md, "Module map").

Every quoted #include of every source and header in a module folder is
resolved to the folder that holds the file, and the arrow must be one the
map allows (or a chain of them).  Run by meson (test 'module_graph', suite
unit) so a back arrow fails CI the day it is written.

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
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def closure(mod):
    seen, todo = set(), [mod]
    while todo:
        for d in ALLOWED[todo.pop()]:
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


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
    print("self-test: clean tree passes, back arrow refused")
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
    for line in bad:
        print(line, file=sys.stderr)
    print("arrows: " + ", ".join(f"{a}->{b}" for a, b in sorted(arrows)))
    if bad:
        print(f"{len(bad)} include(s) break the one-way module graph",
              file=sys.stderr)
        return 1
    print("module graph is one-way")
    return 0


if __name__ == "__main__":
    sys.exit(main())
