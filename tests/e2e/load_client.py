#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Drives N real TCP connections (one HTTP POST each, Connection: close)
through a VIP with bounded concurrency and writes a JSON summary: successes,
failures (with the first failing requests: index, error),
per-worker counts, and the (local port -> worker) map.  Stops early, still
writing the summary, after --max-failures failures or --deadline seconds:
requests not attempted are counted as failed ("not attempted")."""
import argparse
import asyncio
import json
import socket
import sys
import time


async def one(vip, port, i, timeout, fam):
    body = json.dumps({"prompt": f"request {i} hello gpu"}).encode()
    host = f"[{vip}]" if fam == socket.AF_INET6 else vip
    r, w = await asyncio.wait_for(asyncio.open_connection(vip, port, family=fam),
                                  timeout)
    lport = w.get_extra_info("sockname")[1]
    # X-Conn: the client's own port, so backends behind NAT (which see the
    # balancer's address and port) can still log which connection they served
    req = (f"POST /v1/infer HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n"
           f"X-Conn: {lport}\r\n"
           f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
           ).encode() + body
    try:
        w.write(req)
        await w.drain()
        data = await asyncio.wait_for(r.read(), timeout)
    finally:
        w.close()
    head, _, payload = data.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.0 200") and not head.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(f"bad status: {head[:40]!r}")
    return lport, json.loads(payload)["worker"]


async def run(a):
    fam = socket.AF_INET6 if ":" in a.vip else socket.AF_INET
    sem = asyncio.Semaphore(a.concurrency)
    res = {"ok": 0, "failed": 0, "errors": {}, "first_failures": [], "per_worker": {},
           "ports": {}, "stopped": None}
    stop = asyncio.Event()

    async def task(i):
        async with sem:
            if stop.is_set():
                return
            for attempt in range(a.retries + 1):
                try:
                    lport, worker = await one(a.vip, a.port, i, a.timeout, fam)
                    res["ok"] += 1
                    res["per_worker"][worker] = res["per_worker"].get(worker, 0) + 1
                    res["ports"][str(lport)] = worker
                    return
                except Exception as e:  # noqa: BLE001 - summarized below
                    if attempt == a.retries:
                        res["failed"] += 1
                        k = type(e).__name__ + ": " + str(e)[:60]
                        res["errors"][k] = res["errors"].get(k, 0) + 1
                        if len(res["first_failures"]) < 5:
                            res["first_failures"].append({"request": i, "error": k})
                        if a.max_failures and res["failed"] >= a.max_failures:
                            res["stopped"] = f"{res['failed']} failures (--max-failures)"
                            stop.set()
    t0 = time.monotonic()
    tasks = [asyncio.ensure_future(task(i)) for i in range(a.n)]
    waiter = asyncio.ensure_future(stop.wait())
    end = None if a.deadline is None else t0 + a.deadline
    pending = set(tasks)
    while pending and not stop.is_set():
        left = None if end is None else end - time.monotonic()
        if left is not None and left <= 0:
            res["stopped"] = f"deadline of {a.deadline:g} s"
            break
        _, pending = await asyncio.wait(pending | {waiter}, timeout=left,
                                        return_when=asyncio.FIRST_COMPLETED)
        pending.discard(waiter)
    for t in tasks + [waiter]:
        t.cancel()
    await asyncio.gather(*tasks, waiter, return_exceptions=True)
    missing = a.n - res["ok"] - res["failed"]
    if missing > 0:
        res["failed"] += missing
        res["errors"]["not attempted"] = missing
    res["seconds"] = round(time.monotonic() - t0, 3)
    res["vip"] = a.vip
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("vip")
    ap.add_argument("--port", type=int, default=80)
    ap.add_argument("-n", type=int, default=1000)
    ap.add_argument("-c", "--concurrency", type=int, default=32)
    ap.add_argument("--timeout", type=float, default=5.0)
    ap.add_argument("--retries", type=int, default=0,
                    help="attempts after a failure (0: every failure counts)")
    ap.add_argument("--max-failures", type=int, default=0,
                    help="stop after this many failures (0: never)")
    ap.add_argument("--deadline", type=float, default=None,
                    help="stop after this many seconds, counting what is left as failed")
    ap.add_argument("-o", "--out", help="write the JSON summary here")
    a = ap.parse_args()
    res = asyncio.run(run(a))
    out = json.dumps(res)
    if a.out:
        with open(a.out, "w") as f:
            f.write(out)
    summary = {k: v for k, v in res.items() if k != "ports"}
    print(json.dumps(summary))
    return 0 if res["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
