#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Both ends of the e2e-ecmp test's long-lived connections.

  ecmp_peer.py server NAME [--port 80]
      answers every line "SEQ" with "NAME SEQ" (a backend; started in its
      namespace, it listens on every address, the VIP included).

  ecmp_peer.py client VIP -n N [--port 80] [--interval 0.1]
      opens N TCP connections (TCP_NODELAY) and sends a line on each every
      interval; every reply must come from the backend that answered the
      connection's first one, in order.  A connection is *broken* at its
      first reset, EOF, wrong backend, out-of-order reply or a reply later
      than --stall seconds; it is then closed and never reopened.

The client is driven on stdin, one command a line, answering on stdout:
  mark NAME     a phase begins now          -> "marked NAME"
  settle NAME   wait until every connection alive at the mark has had
                --settle-replies replies to lines sent after the mark, or
                broke (--stall guards a hang)
                -> "phase NAME broken N of M" (N: broke since the mark)
  spread        -> "spread B1:n B2:n ..." (connections per backend)
  quit
It prints "ready N" once every connection has had 3 replies, or
"failed: ..." and exits 1 when they cannot all be opened.
"""
import argparse
import asyncio
import socket
import sys
import time


async def serve(name, port):
    async def handle(r, w):
        try:
            while True:
                line = await r.readline()
                if not line:
                    break
                w.write(name.encode() + b" " + line)
                await w.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            w.close()

    srv = await asyncio.start_server(handle, host="0.0.0.0", port=port,
                                     backlog=1024, reuse_address=True)
    print("listening", flush=True)
    async with srv:
        await srv.serve_forever()


class Conn:
    def __init__(self, i):
        self.i = i
        self.backend = None
        self.replies = []        # send times of answered lines
        self.broken_at = None
        self.why = None
        self.connect_retries = 0
        self.retry_why = None
        self.port = None         # the client's port (to find its flow)
        self.waiting = None      # send time of the line not yet answered


async def run_conn(c, args, stop):
    # a connection that never opened is not a broken one: retried while the
    # router has no route (a loaded machine can starve the router's BFD, which
    # then withdraws every next hop for a moment) or the SYN was lost
    end = time.monotonic() + args.stall * 2
    while True:
        try:
            r, w = await asyncio.wait_for(
                asyncio.open_connection(args.vip, args.port), timeout=args.stall)
            break
        except (OSError, asyncio.TimeoutError) as e:
            if time.monotonic() > end or stop.is_set():
                c.broken_at, c.why = time.monotonic(), f"connect: {e!r}"
                return
            c.connect_retries += 1
            c.retry_why = f"{e!r}"[:100]
            await asyncio.sleep(0.5)
    w.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    c.port = w.get_extra_info("sockname")[1]
    seq = 0
    try:
        while not stop.is_set():
            seq += 1
            sent = c.waiting = time.monotonic()
            w.write(b"%d\n" % seq)
            line = await asyncio.wait_for(r.readline(), timeout=args.stall)
            if not line:
                raise ConnectionError("EOF")
            name, _, got = line.decode().strip().partition(" ")
            if got != str(seq):
                raise ConnectionError(f"reply {got!r} to line {seq}")
            if c.backend is None:
                c.backend = name
            elif name != c.backend:
                raise ConnectionError(f"reply from {name}, connection began on {c.backend}")
            c.replies.append(sent)
            if len(c.replies) > 64:
                del c.replies[:32]
            delay = args.interval - (time.monotonic() - sent)
            if delay > 0:
                await asyncio.sleep(delay)
    except (OSError, ConnectionError, asyncio.TimeoutError) as e:
        c.broken_at, c.why = time.monotonic(), repr(e) if not isinstance(
            e, asyncio.TimeoutError) else f"no reply in {args.stall} s"
    finally:
        w.close()


async def client(args):
    stop = asyncio.Event()
    conns = [Conn(i) for i in range(args.n)]
    tasks = []
    for c in conns:   # paced opening: no SYN burst to drop on a busy host
        tasks.append(asyncio.create_task(run_conn(c, args, stop)))
        await asyncio.sleep(0.005)
    deadline = time.monotonic() + args.stall * 3
    while time.monotonic() < deadline:
        if all(len(c.replies) >= 3 or c.broken_at for c in conns):
            break
        await asyncio.sleep(0.1)
    bad = [c for c in conns if c.broken_at or len(c.replies) < 3]
    if bad:
        print(f"failed: {len(bad)} of {args.n} connections did not start: "
              f"{bad[0].why or 'too slow'}", flush=True)
        stop.set()
        return 1
    retried = [c for c in conns if c.connect_retries]
    print(f"ready {args.n}" + (f" ({sum(c.connect_retries for c in retried)} connect retries, "
                               f"first: {retried[0].retry_why})" if retried else ""), flush=True)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    marks = {}
    while True:
        line = (await reader.readline()).decode().split()
        if not line or line[0] == "quit":
            break
        if line[0] == "mark":
            t = time.monotonic()
            marks[line[1]] = (t, [c for c in conns if c.broken_at is None])
            print(f"marked {line[1]}", flush=True)
        elif line[0] == "settle":
            t0, alive = marks[line[1]]
            guard = time.monotonic() + args.stall * 2
            while time.monotonic() < guard:
                if all(c.broken_at or sum(s > t0 for s in c.replies) >= args.settle_replies
                       for c in alive):
                    break
                await asyncio.sleep(0.1)
            late = [c for c in alive if c.broken_at is None and
                    sum(s > t0 for s in c.replies) < args.settle_replies]
            for c in late:   # cannot happen unless run_conn hangs: count it
                c.broken_at, c.why = time.monotonic(), "no progress"
            broken = [c for c in alive if c.broken_at is not None]
            for c in broken[:5]:
                quiet = f", unanswered since mark+{c.waiting - t0:.1f} s" if c.waiting else ""
                print(f"  connection {c.i} ({c.backend}): {c.why} (client port {c.port}"
                      f"{quiet})", flush=True)
            print(f"phase {line[1]} broken {len(broken)} of {len(alive)}", flush=True)
        elif line[0] == "spread":
            per = {}
            for c in conns:
                if c.broken_at is None:
                    per[c.backend] = per.get(c.backend, 0) + 1
            print("spread " + " ".join(f"{k}:{v}" for k, v in sorted(per.items())),
                  flush=True)
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("server")
    s.add_argument("name")
    s.add_argument("--port", type=int, default=80)
    c = sub.add_parser("client")
    c.add_argument("vip")
    c.add_argument("-n", type=int, default=300)
    c.add_argument("--port", type=int, default=80)
    c.add_argument("--interval", type=float, default=0.1)
    c.add_argument("--stall", type=float, default=60.0,
                   help="a reply later than this (s) breaks the connection: a "
                   "blackholed flow (TCP's retransmissions reach a live path in seconds; "
                   "60 s leaves room for a loaded machine)")
    c.add_argument("--settle-replies", type=int, default=5)
    a = ap.parse_args()
    if a.mode == "server":
        asyncio.run(serve(a.name, a.port))
        return 0
    return asyncio.run(client(a))


if __name__ == "__main__":
    sys.exit(main())
