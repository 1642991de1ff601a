#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""No function of the product is longer than 150 lines (issue 11).

Scans the C / CUDA sources and headers of the module folders (tests/ are
exempt) for function bodies: a line that is exactly "{" opens one, the
next line that is exactly "}" closes it, the signature is the nearest line
above that starts at column 0.  Allowed longer: the option parsing and
run functions listed in ALLOW (four benches' sub-command mains; the
daemon's main() and flowgate-bench dataplane are under the limit since the
lifecycle API).

    usage: check-func-length.py SOURCE_ROOT [--max N] | --self-test
"""
import os
import re
import sys

FOLDERS = ["conntrack", "pkt", "control", "gpu", "dataplane", "xdp", "bench"]
EXTS = (".c", ".h", ".cu")
ALLOW = {(f"bench/bench_{b}.c", f"bench_{b}_main")
         for b in ("conntrack", "control", "gpu", "latency")}
SIG = re.compile(r"^(?:[A-Za-z_].*?[\s*])?([A-Za-z_][A-Za-z_0-9]*)\s*\(")


def functions(text):
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i] == "{" and i > 0:
            k = i - 1
            while k > 0 and not SIG.match(lines[k]):
                k -= 1
            e = i
            while e < len(lines) and lines[e] != "}":
                e += 1
            m = SIG.match(lines[k])
            yield (m.group(1) if m else "?"), k + 1, e - k + 1
            i = e
        i += 1


def check(root, limit):
    bad = []
    for mod in FOLDERS:
        for dirpath, _, names in os.walk(os.path.join(root, mod)):
            for n in sorted(names):
                if not n.endswith(EXTS):
                    continue
                path = os.path.join(dirpath, n)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for name, line, length in functions(f.read()):
                        if length > limit and (rel, name) not in ALLOW:
                            bad.append(f"{rel}:{line}: {name}() is {length} lines "
                                       f"(limit {limit})")
    return bad


def self_test():
    import tempfile
    with tempfile.TemporaryDirectory(prefix="fgfunclen") as t:
        os.makedirs(os.path.join(t, "pkt"))
        body = "int f(void)\n{\n" + "\tx();\n" * 160 + "}\n"
        with open(os.path.join(t, "pkt", "a.c"), "w") as f:
            f.write("static int g(int a,\n\t     int b)\n{\n\treturn a;\n}\n" + body)
        bad = check(t, 150)
        if len(bad) != 1 or "f() is 163 lines" not in bad[0]:
            print(f"self-test: expected one long f(), got {bad}", file=sys.stderr)
            return 1
    print("self-test: a 163-line function is refused, a short one passes")
    return 0


def main():
    args = sys.argv[1:]
    if args == ["--self-test"]:
        return self_test()
    if not args:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    limit = 150
    if "--max" in args:
        limit = int(args[args.index("--max") + 1])
    bad = check(args[0], limit)
    for b in bad:
        print(b, file=sys.stderr)
    if bad:
        print(f"{len(bad)} function(s) over {limit} lines", file=sys.stderr)
        return 1
    print(f"no function over {limit} lines (allowed: "
          + ", ".join(sorted(n for _, n in ALLOW)) + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
