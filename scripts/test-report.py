#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Which suites ran, from meson's own log: per suite, how many tests
passed, failed, timed out, were skipped (a test in two suites counts in
both).

    scripts/test-report.py BUILD_DIR LABEL"""
import json
import sys


def main():
    build, label = sys.argv[1], sys.argv[2]
    suites = {}
    try:
        with open(f"{build}/meson-logs/testlog.json") as f:
            for line in f:
                t = json.loads(line)
                # "project:suite1+suite2 / test" (meson 1.0 names a test so)
                head, _, name = t["name"].rpartition(" / ")
                for s in (t.get("suite") or head.split(":", 1)[-1].split("+")):
                    s = s.split(":", 1)[-1] or "(none)"
                    suites.setdefault(s, {}).setdefault(t["result"], []).append(name)
    except (OSError, ValueError) as e:
        print(f"make test: {label}: no meson test log ({e})")
        return 0
    print(f"make test: {label}: suites that ran")
    for s in sorted(suites):
        r = suites[s]
        counts = ", ".join(f"{len(v)} {k.lower()}" for k, v in sorted(r.items()))
        bad = [n for k, v in r.items() if k not in ("OK", "SKIP", "EXPECTEDFAIL") for n in v]
        print(f"  {s:10s} {counts}" + (f"  (not ok: {', '.join(bad)})" if bad else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
