"""`FakeServer`: a small threaded HTTP server on 127.0.0.1 (an OS-chosen port) for tests.

It records every request and answers from a script, so a test can play a destination that is
slow, down, rate limiting or flaky::

    with FakeServer() as server:                     # or FakeLangfuse(), FakeOtlpCollector() …
        server.queue(Reply(429, headers={"Retry-After": "7"}), Reply(500))  # the next two answers
        server.default = Reply(200, {"ok": True})    # every answer after those
        ... code under test posts to server.url + "/path" ...
        assert server.wait_for(3)                    # three requests arrived (within 5 s)
        request = server.requests[-1]
        request.json(), request.header("authorization"), request.content  # body, gzip undone

Reply options: ``status``, ``body`` (bytes, str, or anything JSON-serialisable), ``headers``,
``delay_s`` (sleep before answering: timeouts and latency), ``close`` (drop the connection
without an answer: a connection error at the client).

Platform fakes (tests/fakes/destinations.py) subclass it and override `handle`, which returns
the Reply for a request after checking it against the platform's real format; a request that
breaks the format is answered the way the platform would (400/401/415/422…) and listed in
``server.problems`` so a test can assert ``server.problems == []``. `handle` runs only when
no queued reply is waiting, so scripted failures always win.
"""

from __future__ import annotations

import gzip
import json
import socket
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Reply:
    status: int = 200
    body: Any = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    close: bool = False

    def encoded(self) -> tuple[bytes, dict[str, str]]:
        headers = dict(self.headers)
        if isinstance(self.body, bytes):
            body = self.body
        elif isinstance(self.body, str):
            body = self.body.encode()
            headers.setdefault("Content-Type", "text/plain; charset=utf-8")
        else:
            body = json.dumps(self.body).encode()
            headers.setdefault("Content-Type", "application/json")
        return body, headers


@dataclass
class RecordedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-cased names
    body: bytes  # as received
    content: bytes  # Content-Encoding (gzip/deflate) undone
    received_at: float

    def header(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name.lower(), default)

    def json(self) -> Any:
        return json.loads(self.content)


class FakeServer:
    """See the module docstring."""

    def __init__(self, *, default: Reply | None = None) -> None:
        self.default = default or Reply(200, b"")
        self.requests: list[RecordedRequest] = []
        self.problems: list[tuple[RecordedRequest, str]] = []
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> FakeServer:
        handler = _handler_for(self)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name=type(self).__name__, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "start() the server first"
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # --- scripting ---------------------------------------------------------------------------
    def queue(self, *replies: Reply) -> None:
        """Answer the next requests with these, in order, before `handle`/``default``."""
        with self._lock:
            self._queue.extend(replies)

    def fail_next(self, count: int, status: int = 500, **reply: Any) -> None:
        self.queue(*(Reply(status, **reply) for _ in range(count)))

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()
            self.problems.clear()
            self._queue.clear()

    def wait_for(self, count: int, timeout: float = 5.0) -> bool:
        """Block until at least ``count`` requests arrived; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while len(self.requests) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._arrived.wait(left)
        return True

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == path]

    # --- answering ---------------------------------------------------------------------------
    def handle(self, request: RecordedRequest) -> Reply:
        """Subclasses check the request and answer like the real destination."""
        return self.default

    def problem(self, request: RecordedRequest, message: str, status: int = 400, body: Any = None) -> Reply:
        """Record a format violation and build the reply the real destination would give."""
        with self._lock:
            self.problems.append((request, message))
        return Reply(status, body if body is not None else {"error": message})

    def _answer(self, request: RecordedRequest) -> Reply:
        with self._arrived:
            self.requests.append(request)
            self._arrived.notify_all()
            scripted = self._queue.popleft() if self._queue else None
        if scripted is not None:
            return scripted
        return self.handle(request)


def _decoded(body: bytes, encoding: str) -> bytes:
    encoding = encoding.strip().lower()
    if encoding == "gzip":
        return gzip.decompress(body)
    if encoding == "deflate":
        return zlib.decompress(body)
    return body


def _handler_for(server: FakeServer) -> Callable[..., BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            try:
                content = _decoded(body, headers.get("content-encoding", ""))
            except (OSError, zlib.error):
                content = b""
            parts = urlsplit(self.path)
            request = RecordedRequest(
                method=self.command,
                path=parts.path,
                query=parse_qs(parts.query),
                headers=headers,
                body=body,
                content=content,
                received_at=time.time(),
            )
            try:
                reply = server._answer(request)
            except Exception as exc:  # a bug in a fake must show up as a 500, not a hang
                reply = Reply(500, {"error": f"fake server error: {type(exc).__name__}: {exc}"})
            if reply.delay_s:
                time.sleep(reply.delay_s)
            if reply.close:
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return
            payload, reply_headers = reply.encoded()
            try:
                self.send_response(reply.status)
                for name, value in reply_headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if payload and self.command != "HEAD":
                    self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _serve

    return Handler
