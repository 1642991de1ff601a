#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""results-readme (issue 36): README's "Where it stands" agrees with
bench/RESULTS.md, and RESULTS.md stays a document one reads in minutes.

    test_results_readme.py SOURCE_DIR

- every figure with a decimal point in README's "Where it stands" section
  is in RESULTS.md's summary table (the section before "## Machines"), every
  other number somewhere in RESULTS.md: a figure changed in one and not in
  the other fails;
- RESULTS.md: at most 600 lines; every generated section that
  `make bench` (bench/tools/fg_results.py report) and
  bench/tools/inference_sweep.py rewrite has its markers, once; no path
  that exists on one machine only (a scratch file under /tmp, a home or
  work directory, a build directory named after its owner);
- every raw file RESULTS.md names exists: `results/...`, or a bare
  `NAME.jsonl|json|txt` anywhere under bench/results (a brace list
  `x-{a,b}.jsonl`, `{a..e}` and a `*` are expanded).
"""
import glob
import os
import re
import sys

MAX_LINES = 600
NUM = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")


def section(text, head, end_pat):
    i = text.index(head)
    m = re.compile(end_pat, re.M).search(text, i + len(head))
    return text[i:m.start() if m else len(text)]


def has_num(text, n):
    return re.search(r"(?<![\d.,])" + re.escape(n) + r"(?![\d])", text) is not None


def expand(pattern):
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [pattern]
    out = []
    for alt in m.group(1).split(","):
        alt = alt.strip()
        if ".." in alt:        # {a..e}
            lo, hi = alt.split("..")
            alt_list = [chr(c) for c in range(ord(lo), ord(hi) + 1)]
        else:
            alt_list = [alt]
        for a in alt_list:
            out += expand(pattern[:m.start()] + a + pattern[m.end():])
    return out


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "."
    errs = []

    def expect(cond, what):
        if not cond:
            errs.append(what)
            print("FAIL:", what)

    res = open(os.path.join(src, "bench", "RESULTS.md")).read()
    readme = open(os.path.join(src, "README.md")).read()
    summary = section(res, "## Summary", r"^## ")
    where = section(readme, "## Where it stands", r"^## ")
    nums = NUM.findall(where)
    expect(len(nums) > 20, f"README's Where it stands: only {len(nums)} figures found")
    missing = [n for n in nums if "." in n and not has_num(summary, n)]
    missing += [n for n in nums if "." not in n and not has_num(res, n)]
    expect(not missing, "README's Where it stands quotes figures that RESULTS.md's summary "
           f"does not have: {missing}")
    print(f"README: {len(nums)} figures, {sum('.' in n for n in nums)} of them decimals "
          "checked against RESULTS.md's summary")

    lines = res.count("\n")
    expect(lines <= MAX_LINES, f"bench/RESULTS.md has {lines} lines (at most {MAX_LINES})")
    for name in ("machine", "scenarios", "conntrack", "dataplane", "control", "latency",
                 "device", "plots"):
        for m in (f"<!-- BEGIN generated:{name} -->", f"<!-- END generated:{name} -->"):
            expect(res.count(m) == 1, f"RESULTS.md: marker {m} {res.count(m)} times, not once")
    for m in ("<!-- inference:begin -->", "<!-- inference:end -->"):
        expect(res.count(m) == 1, f"RESULTS.md: marker {m} {res.count(m)} times, not once")
    local = re.findall(r"(/tmp/[\w./-]+|/work/[\w./-]+|/home/[\w./-]+|/root/[\w./-]+|"
                       r"(?<![\w/.-])build-[\w.-]+)", res)
    expect(not local, f"RESULTS.md names paths of one machine: {sorted(set(local))}")

    raw = sorted(set(re.findall(r"`(results/[^`\s]+)`", res)))
    bare = sorted(set(re.findall(r"`([\w{},.*-]+\.(?:jsonl|json|txt))`", res)))
    absent = []
    for r in raw + bare:
        found = False
        for p in expand(r):
            if not p.startswith("results/"):      # a bare name: anywhere under results/
                p = "results/**/" + p
            elif not p.endswith(("*", ".json", ".jsonl", ".txt")):
                p += "*"
            found = found or bool(glob.glob(os.path.join(src, "bench", p), recursive=True))
        if not found:
            absent.append(r)
    expect(not absent, f"RESULTS.md names raw files that bench/ does not hold: {absent}")
    print(f"RESULTS.md: {lines} lines, {len(raw) + len(bare)} raw file references")
    print(f"results-readme: {'FAIL' if errs else 'ok'}")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
