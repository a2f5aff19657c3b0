"""A fake tracerelay server on loopback (http.server in a thread) that checks what the SDK sends; a
server that accepts connections and never answers; a port where nothing listens.

It answers like the real one (201 / 200 for one trace, 200 with per-item results for a batch), or
from `script`, a queue of (status, headers, body) answers given first. With ``gzip=False`` it acts
as a server without gzip support: a compressed body is a 400 problem, as malformed JSON would be.
"""

from __future__ import annotations

import gzip
import json
import socket
import threading
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REQUIRED = {"id", "kind", "name", "timestamp"}
CALL_REQUIRED = {"model", "provider"}  # of `llm` and `embedding` spans (the others carry no model)
KINDS = {"llm", "embedding", "agent", "tool", "retrieval", "chain", "workflow", "guardrail", "event", "other"}


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes  # as sent (compressed or not)
    data: Any  # parsed JSON, after decompression

    @property
    def traces(self) -> list[dict[str, Any]]:
        if self.path.endswith("/traces/batch"):
            return list(self.data["traces"])
        return [self.data] if self.path.endswith("/traces") else []


class FakeTracerelay:
    def __init__(self, *, gzip_ok: bool = True) -> None:
        self.gzip_ok = gzip_ok
        self.received: list[Received] = []
        self.script: deque[tuple[int, dict[str, str], Any]] = deque()
        self.seen_ids: set[str] = set()
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                owner._handle(self)

            def do_PUT(self) -> None:
                owner._handle(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def traces(self) -> list[dict[str, Any]]:
        """Every trace stored (each id once, as the real server keeps it)."""
        out: dict[str, dict[str, Any]] = {}
        for request in self.received:
            for trace in request.traces:
                out.setdefault(trace["id"], trace)
        return list(out.values())

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length)
        headers = {k.lower(): v for k, v in handler.headers.items()}
        raw = body
        if headers.get("content-encoding") == "gzip":
            if not self.gzip_ok:
                return self._answer(handler, 400, {}, {"title": "Malformed request", "detail": "JSON parse error"})
            raw = gzip.decompress(body)
        try:
            data = json.loads(raw) if raw else None
        except ValueError:
            return self._answer(handler, 400, {}, {"title": "Malformed request", "detail": "JSON parse error"})
        with self._lock:
            self.received.append(Received(handler.command, handler.path, headers, body, data))
            scripted = self.script.popleft() if self.script else None
        if scripted is not None:
            status, extra, answer = scripted
            if 200 <= status < 300 and handler.command == "POST":
                self._store(handler.path, data)
            return self._answer(handler, status, extra, answer)
        if handler.command == "PUT":
            return self._answer(handler, 200, {}, {"rules": data.get("rules")})
        if handler.path == "/api/v1/traces":
            new = self._store(handler.path, data)[0]
            return self._answer(handler, 201 if new else 200, {}, {"id": data["id"]})
        if handler.path == "/api/v1/traces/batch":
            news = self._store(handler.path, data)
            results = [{"index": i, "status": 201 if n else 200} for i, n in enumerate(news)]
            return self._answer(handler, 200, {}, {"created": sum(news), "results": results, "failed": 0})
        return self._answer(handler, 404, {}, {"title": "Not found"})

    def _store(self, path: str, data: Any) -> list[bool]:
        traces = data["traces"] if path.endswith("/batch") else [data]
        news = []
        for trace in traces:
            missing = REQUIRED - set(trace)
            if trace.get("kind") in ("llm", "embedding"):
                missing |= CALL_REQUIRED - set(trace)
            assert not missing, f"a trace without {missing}: {trace}"
            assert trace["kind"] in KINDS, trace["kind"]
            with self._lock:
                news.append(trace["id"] not in self.seen_ids)
                self.seen_ids.add(trace["id"])
        return news

    def _answer(self, handler: BaseHTTPRequestHandler, status: int, headers: dict[str, str], body: Any) -> None:
        payload = json.dumps(body).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json" if status < 400 else "application/problem+json")
        handler.send_header("Content-Length", str(len(payload)))
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(payload)


class BlackHole:
    """A server that accepts connections and never answers; `connected` is set at the first one."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.connected = threading.Event()
        self.held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self) -> BlackHole:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() (close alone does not, on Linux)
        except OSError:
            pass
        self.listener.close()
        self._thread.join(5)
        for conn in self.held:
            conn.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:  # closed
                return
            self.held.append(conn)
            self.connected.set()


def closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port
