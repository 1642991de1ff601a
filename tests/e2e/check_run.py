#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Asserts one e2e run: every connection succeeded, per-backend spread within
a tolerance of the weights, and every connection reached exactly one backend
(backend-side logs: no (client addr, port) on two backends, one log line per
connection; for DSR the backends' view matches what the client saw)."""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("result")
    ap.add_argument("--logs", nargs="+", required=True, help="bN.log in worker order")
    ap.add_argument("--weights", default="1,2,3")
    ap.add_argument("--tolerance", type=float, default=0.15)
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
    for i, wi in enumerate(w):
        name = f"gpu{i + 1}"
        got = res["per_worker"].get(name, 0)
        want = a.n * wi / sum(w)
        if abs(got - want) > a.tolerance * want:
            errs.append(f"{name}: {got} connections, weight says {want:.0f} (±{a.tolerance:.0%})")
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
