#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""xdp-opts (issue 36): flowgate-xdp's command line comes from its option
table (FGX_OPT_LIST through control/fg_opt.h, as flowgate's FG_OPT_LIST).

    test_xdp_opts.py BUILD_DIR [SEED]

Generic on purpose: the ranges and words are read from `flowgate-xdp
--help`, so the help, the checks and the refusals are held to each other:
- every integer option (its help ends "(MIN..MAX)") takes MIN, MAX and
  seeded values between, and refuses MIN-1, MAX+1, seeded values outside
  and a word, each with "flowgate-xdp: --NAME VALUE: expected an integer in
  MIN..MAX" and exit 2;
- every word option (metavar a|b|c) takes each word and refuses another
  with "expected a, b or c";
- an unknown option, a missing value and a stray argument exit 2 naming it;
- the rows both daemons share (fg_opt.h FG_OPT_COMMON_*) read the same in
  `flowgate --help` and `flowgate-xdp --help`.
Nothing is attached: without -c and -i flowgate-xdp stops after parsing.
"""
import os
import random
import re
import subprocess
import sys

errs = []


def expect(cond, what):
    if not cond:
        errs.append(what)
        print("FAIL:", what)


def run(argv):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def rows(helptext):
    """(long name, metavar, help) of each option row of a --help."""
    out = []
    lines = helptext.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^  (?:-\w, |    )--([a-z0-9-]+)(?:[ =]?(\S.*))?$", line)
        if m and i + 1 < len(lines):
            out.append((m.group(1), m.group(2) or "", lines[i + 1].strip()))
    return out


def main():
    build = sys.argv[1]
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else int.from_bytes(os.urandom(4), "little")
    print(f"seed {seed}")
    rnd = random.Random(seed)
    fgx = os.path.join(build, "xdp", "flowgate-xdp")
    rc, out, err = run([fgx, "--help"])
    expect(rc == 0 and not err, f"--help: rc {rc}, stderr {err!r}")
    table = rows(out)
    expect(len(table) >= 12, f"--help lists {len(table)} options")
    n_int = n_word = 0
    for name, meta, text in table:
        r = re.search(r"\((\d+)\.\.(\d+)\)", text)
        if r:
            n_int += 1
            lo, hi = int(r.group(1)), int(r.group(2))
            good = [lo, hi] + [rnd.randint(lo, hi) for _ in range(4)]
            bad = [hi + 1, hi + rnd.randint(1, 1 << 40), "x" + str(lo), "-1", ""]
            if lo > 0:
                bad += [lo - 1, rnd.randint(0, lo - 1)]
            for v in good:
                rc, _, e = run([fgx, f"--{name}", str(v)])
                expect(rc == 2 and f"--{name} {v}:" not in e and "usage:" in e,
                       f"--{name} {v} (in {lo}..{hi}) refused: rc {rc}: {e!r}")
            for v in bad:
                rc, _, e = run([fgx, f"--{name}", str(v)])
                expect(rc == 2 and f"flowgate-xdp: --{name} {v}: expected an integer in "
                       f"{lo}..{hi}" in e, f"--{name} {v!r} (not in {lo}..{hi}): rc {rc}: {e!r}")
        elif "|" in meta and not meta.startswith("["):
            n_word += 1
            words = meta.split("|")
            for w in words:
                rc, _, e = run([fgx, f"--{name}", w])
                expect(rc == 2 and f"--{name} {w}:" not in e, f"--{name} {w} refused: {e!r}")
            other = "".join(rnd.choice("abcdefghij") for _ in range(6))
            rc, _, e = run([fgx, f"--{name}", other])
            want = "expected " + ", ".join(words[:-1]) + " or " + words[-1]
            expect(rc == 2 and f"flowgate-xdp: --{name} {other}: {want}" in e,
                   f"--{name} {other}: rc {rc}: {e!r}")
    expect(n_int >= 2 and n_word >= 1, f"{n_int} integer and {n_word} word options found")
    for argv, want in (([f"--no-such-{seed}"], f"unknown option '--no-such-{seed}'"),
                       (["-c"], "option '-c' needs a value"),
                       (["--mtu", "1500", "stray"], "unexpected argument 'stray'"),
                       (["detach", "lo0", "--pin-dir"], "option '--pin-dir' needs a value")):
        rc, _, e = run([fgx] + argv)
        expect(rc == 2 and f"flowgate-xdp: {want}" in e, f"{argv}: rc {rc}: {e!r}")
    rc, out, _ = run([fgx, "--version"])
    expect(rc == 0 and out.startswith("flowgate-xdp "), f"--version: {out!r}")
    fg = os.path.join(build, "dataplane", "flowgate")
    if os.path.exists(fg):
        fgrows = {r[0]: r for r in rows(run([fg, "--help"])[1])}
        for name in ("log-syslog", "version", "help"):
            mine = [r for r in table if r[0] == name]
            expect(mine and fgrows.get(name) == mine[0],
                   f"--{name}: flowgate-xdp {mine} vs flowgate {fgrows.get(name)}")
    print(f"xdp-opts: {'FAIL' if errs else 'ok'} ({n_int} integer, {n_word} word options)")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
