"""A fault-injecting HTTP proxy in front of a real Prometheus, for tests.

It listens on 127.0.0.1 only, forwards each `/api/v1/query` to the upstream server and then
applies the fault `plan(request)` chooses for it: a partial answer in the Thanos/Mimir
dialect (API `warnings`) or VictoriaMetrics' (`"isPartial": true`), half of the series
dropped; the error Thanos gives when asked for no partial answer (HTTP 422); a PromQL
annotation on a complete answer; a body cut off; a connection dropped
mid-body; a 200 carrying `"status": "error"`; a body that is not JSON; a body trickled a byte
at a time; a sample rewritten to `+Inf`. Every fault is bounded in time.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import requests

THANOS_WARNING = (
    'fetch series for {replica="b"} store 10.0.0.9:10901: rpc error: code = Unavailable'
)
ANNOTATION = 'PromQL info: metric might not be a counter, name does not end in _total: "DCGM_FI_DEV_GPU_UTIL"'
TRICKLE_LIMIT_S = 20.0
"""A trickled answer stops after this long whatever the client does."""


@dataclass
class Request:
    query: str
    time: str
    form: dict[str, str]
    attempt: int
    """1 for the first time this (query, time) is asked, 2 for its first retry, ..."""


@dataclass
class Proxy:
    url: str
    upstream: str
    plan: Callable[[Request], str | None] = lambda _r: None
    seen: list[Request] = field(default_factory=list)
    faults: list[tuple[str, str]] = field(default_factory=list)
    """(fault, query) of every fault injected."""
    attempts: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self, plan: Callable[[Request], str | None] | None = None) -> None:
        with self.lock:
            self.plan = plan or (lambda _r: None)
            self.seen.clear()
            self.faults.clear()
            self.attempts.clear()


def _halve(payload: dict) -> dict:
    result = payload["data"]["result"]
    payload["data"]["result"] = result[::2] if len(result) > 1 else []
    return payload


def _handler(proxy: Proxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self._serve(urlsplit(self.path).query.encode())

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self._serve(self.rfile.read(length))

        def _serve(self, body: bytes) -> None:
            form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
            with proxy.lock:
                key = (form.get("query", ""), form.get("time", ""))
                proxy.attempts[key] += 1
                request = Request(key[0], key[1], form, proxy.attempts[key])
                proxy.seen.append(request)
                fault = proxy.plan(request)
                if fault:
                    proxy.faults.append((fault, request.query))
            upstream = requests.post(
                proxy.upstream + urlsplit(self.path).path,
                data=form,
                timeout=30,
                headers={"Accept-Encoding": "identity"},
            )
            if fault is None or upstream.status_code != 200:
                return self._send(upstream.status_code, upstream.content)
            payload = upstream.json()
            if fault == "partial":  # Thanos, Mimir, Cortex: a store did not answer
                payload = _halve(payload)
                payload["warnings"] = [THANOS_WARNING]
            elif fault == "vm_partial":  # VictoriaMetrics cluster: a vmstorage node did not answer
                payload = _halve(payload)
                payload["isPartial"] = True
            elif fault == "annotation":  # complete, with a note from the query engine
                payload["infos"] = [ANNOTATION]
            elif fault == "status_error":
                return self._send(
                    200,
                    b'{"status":"error","errorType":"internal","error":"store gateway overloaded"}',
                )
            elif fault == "store_down":  # Thanos with partial_response=false when a store is down
                return self._send(
                    422,
                    json.dumps(
                        {"status": "error", "errorType": "execution", "error": THANOS_WARNING}
                    ).encode(),
                )
            elif fault == "not_json":
                return self._send(200, b"<html><body>Grafana login</body></html>", "text/html")
            elif fault == "inf":
                for series in payload["data"]["result"]:
                    if series.get("values"):
                        series["values"][0][1] = "+Inf"
                        break
            data = json.dumps(payload).encode()
            if (
                fault == "cut_off"
            ):  # Content-Length announced, half the body sent, connection closed
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data[: len(data) // 2])
                self.close_connection = True
                return None
            if fault == "dropped":  # chunked, the connection dropped mid-body
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                half = data[: len(data) // 2]
                self.wfile.write(f"{len(half):x}\r\n".encode() + half + b"\r\n")
                self.close_connection = True
                return None
            if fault == "trickle":  # a byte every 50 ms: never a socket timeout, never an end
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                stop = time.monotonic() + TRICKLE_LIMIT_S
                try:
                    for byte in data:
                        if time.monotonic() > stop:
                            break
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(0.05)
                except OSError:
                    pass  # the client gave up: what the test wants
                self.close_connection = True
                return None
            return self._send(200, data)

        def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    return Handler


@contextmanager
def fault_proxy(upstream: str) -> Iterator[Proxy]:
    """A proxy on 127.0.0.1 (free port) in front of `upstream`; stopped on exit."""
    proxy = Proxy(url="", upstream=upstream.rstrip("/"))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(proxy))
    httpd.daemon_threads = True
    proxy.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)
