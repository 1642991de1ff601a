#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Asserts one e2e run: every connection succeeded, the per-backend spread
agrees with the weights, and every connection reached exactly one backend
(backend-side logs: no (client addr, port) on two backends, one log line per
connection; for DSR the backends' view matches what the client saw).

The spread: Maglev sends each connection (a client port the kernel picks) to
backend i with probability w_i / sum(w) (the table has 65537+ slots: its own
rounding is far below what is tested), so backend i's count is Binomial(n,
p_i).  A count fails when its two-sided binomial tail probability is below
--alpha / backends (Bonferroni): a run of correct weights fails with
probability below --alpha (default 1e-6), whatever n, while a weight that is
ignored (1:1:1 for 1:2:3 moves gpu1 from 1/6 to 1/3 of n) fails at any n
used here (n = 300: P < 1e-11).  A fixed relative tolerance did neither: at
n = 1500, +-15% of gpu1's 250 is only 2.6 standard deviations (a correct run
failed about once in a hundred checks: "gpu1: 293 connections, weight says
250"), at n = 300 it would flag one run in five.  --tolerance restores the
old relative check (tests that only want a loose sanity bound)."""
import argparse
import json
import math
import sys


def binom_tail(n, p, x):
    """min(P(X <= x), P(X >= x)) for X ~ Binomial(n, p), exact (log space)."""
    if p <= 0 or p >= 1:
        return 1.0 if (x == 0 and p <= 0) or (x == n and p >= 1) else 0.0
    lp, lq = math.log(p), math.log1p(-p)
    lg = math.lgamma(n + 1)

    def pmf(k):
        return math.exp(lg - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * lp + (n - k) * lq)
    lo = sum(pmf(k) for k in range(0, x + 1))
    hi = sum(pmf(k) for k in range(x, n + 1))
    return min(lo, hi, 1.0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("result")
    ap.add_argument("--logs", nargs="+", required=True, help="bN.log in worker order")
    ap.add_argument("--weights", default="1,2,3")
    ap.add_argument("--alpha", type=float, default=1e-6,
                    help="false-failure probability of the spread check per run")
    ap.add_argument("--tolerance", type=float, default=None,
                    help="relative tolerance instead of the binomial test")
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--dsr", action="store_true", help="backends see the client's port")
    a = ap.parse_args()
    try:
        with open(a.result) as f:
            res = json.load(f)
    except (OSError, ValueError) as e:
        print(f"  FAIL: no result from load_client.py ({a.result}: {e}); its output is above")
        return 1
    w = [float(x) for x in a.weights.split(",")]
    errs = []
    if res["ok"] != a.n or res["failed"]:
        errs.append(f"{res['ok']}/{a.n} connections to {res.get('vip')} succeeded, errors: "
                    f"{res['errors']}; first failing requests: {res.get('first_failures')}"
                    + (f"; stopped early: {res['stopped']}" if res.get("stopped") else ""))
    n_ok = sum(res["per_worker"].get(f"gpu{i + 1}", 0) for i in range(len(w)))
    for i, wi in enumerate(w):
        name = f"gpu{i + 1}"
        got = res["per_worker"].get(name, 0)
        p = wi / sum(w)
        want = n_ok * p
        if a.tolerance is not None:
            if abs(got - want) > a.tolerance * want:
                errs.append(f"{name}: {got} connections, weight says {want:.0f} "
                            f"(±{a.tolerance:.0%})")
            continue
        tail = binom_tail(n_ok, p, got)
        if tail < a.alpha / (2 * len(w)):
            errs.append(f"{name}: {got} of {n_ok} connections, weight says {want:.0f}: "
                        f"P = {tail:.2g} under Binomial({n_ok}, {p:.4f}), below "
                        f"{a.alpha:g} / {2 * len(w)}")
    seen = {}
    conns = {}
    lines = 0
    for i, path in enumerate(a.logs):
        try:
            log = open(path).read().splitlines()
        except OSError as e:
            errs.append(f"gpu{i + 1}: no backend log ({e})")
            continue
        for line in log:
            f = line.split()
            if len(f) < 2:
                errs.append(f"gpu{i + 1}: unreadable log line {line!r}")
                continue
            addr, port = f[0], f[1]
            conn = f[2] if len(f) > 2 and f[2] != "-" else None
            lines += 1
            key = (addr, int(port))
            # behind full NAT the backends see the balancer's address and
            # port, which flows to different backends may share: identify
            # the connection by the client's X-Conn header there
            if conn is not None:
                if conn in conns and conns[conn] != i:
                    errs.append(f"client connection :{conn} reached gpu{conns[conn] + 1} "
                                f"and gpu{i + 1}")
                conns[conn] = i
            elif key in seen and seen[key] != i:
                errs.append(f"connection {addr}:{port} reached gpu{seen[key] + 1} and gpu{i + 1}")
            seen[key] = i
    if lines != a.n:
        errs.append(f"backends logged {lines} connections, client made {a.n}")
    if a.dsr:
        for port, worker in res["ports"].items():
            served = [k for k, v in seen.items() if k[1] == int(port)]
            if served and f"gpu{seen[served[0]] + 1}" != worker:
                errs.append(f"client port {port}: answered by {worker}, logged by gpu{seen[served[0]] + 1}")
    for port, worker in res["ports"].items():
        if port in conns and f"gpu{conns[port] + 1}" != worker:
            errs.append(f"client connection :{port}: answered by {worker}, "
                        f"logged by gpu{conns[port] + 1}")
    print(json.dumps({"vip": res["vip"], "ok": res["ok"], "per_worker": res["per_worker"],
                      "seconds": res["seconds"], "problems": len(errs)}))
    for e in errs[:20]:
        print("  FAIL:", e)
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
