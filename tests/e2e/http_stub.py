#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""GPU-worker stand-in for the demo and e2e tests: a dual-stack HTTP server
that answers POST /v1/infer (and GET /health) with JSON naming the worker,
and appends "client_addr client_port x_conn" of every connection it served
(x_conn: the client's X-Conn header, its own port; "-" if absent) to a
log file, so tests can check that no connection reached two workers."""
import argparse
import http.server
import json
import socket
import sys
import threading


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    server_version = "fg-infer-stub/1"

    def log_message(self, fmt, *args):  # quiet: the conn log is what matters
        pass

    def _reply(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _log_conn(self):
        host, port = self.client_address[0], self.client_address[1]
        if host.startswith("::ffff:"):
            host = host[7:]
        with self.server.log_lock:
            conn = self.headers.get("X-Conn", "-").strip() or "-"
            self.server.log.write(f"{host} {port} {conn}\n")
            self.server.log.flush()
        return host, port

    def do_GET(self):
        if self.path == "/health":
            self._reply(200, {"worker": self.server.name, "ok": True})
        else:
            self._reply(404, {"error": "not found"})

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(min(n, 1 << 20)) if n else b""
        if self.path != "/v1/infer":
            self._reply(404, {"error": "not found"})
            return
        host, port = self._log_conn()
        try:
            prompt = json.loads(body or b"{}").get("prompt", "")
        except ValueError:
            self._reply(400, {"error": "bad json"})
            return
        self._reply(200, {"worker": self.server.name, "client": host,
                          "client_port": port, "tokens": len(str(prompt).split()),
                          "output": "ok"})


class Server(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6
    daemon_threads = True
    request_queue_size = 1024

    def server_bind(self):
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("--port", type=int, default=80)
    ap.add_argument("--log", required=True)
    a = ap.parse_args()
    srv = Server(("::", a.port), Handler)
    srv.name = a.name
    srv.log = open(a.log, "a")
    srv.log_lock = threading.Lock()
    print(f"{a.name}: listening on [::]:{a.port}", flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
