"""HTTP to the tracerelay server with the standard library: one kept-alive connection, gzip, no retries.

Retrying is the worker's business (`_client.py`); this module sends one request and says what came back.
"""

from __future__ import annotations

import email.utils
import errno
import gzip
import http.client
import json
import socket
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from . import __version__

USER_AGENT = f"tracerelay-python/{__version__}"


@dataclass
class Answer:
    status: int  # 0: no answer (connection refused, timeout, reset)
    body: Any = None  # parsed JSON, when the answer was JSON
    retry_after: float | None = None
    error: str = ""
    # No server there at all: the connection was refused, the host name does not resolve, no route to
    # it. Known at once, unlike a server that accepts and never answers.
    unreachable: bool = False


class Transport:
    """Sends JSON bodies to ``base_url``. Used from the worker thread only."""

    def __init__(self, base_url: str, api_key: str, *, timeout: float, compress: bool) -> None:
        parts = urlsplit(base_url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be an http(s) URL, not {base_url!r}")
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port
        self.prefix = parts.path
        self.api_key = api_key
        self.timeout = timeout
        self.compress = compress
        self._conn: http.client.HTTPConnection | None = None
        self._aborted = False

    def request(self, method: str, path: str, body: bytes | None, *, timeout: float | None = None) -> Answer:
        """One request; `timeout` (seconds, default the transport's) bounds connecting and each read."""
        headers = {
            "Authorization": f"Bearer {self.api_key}",
            "User-Agent": USER_AGENT,
            "Accept": "application/json",
        }
        plain, compressed = body, False
        if body is not None:
            headers["Content-Type"] = "application/json"
            if self.compress and len(body) > 512:
                body = gzip.compress(body, compresslevel=5)
                headers["Content-Encoding"] = "gzip"
                compressed = True
        answer = self._send(method, path, body, headers, self.timeout if timeout is None else timeout)
        if compressed and answer.status in (400, 415) and not _is_validation_answer(answer):
            # A server without gzip support reads the compressed bytes as broken JSON (400) or an
            # unsupported encoding (415): send the plain body, and keep sending plain ones.
            self.compress = False
            return self.request(method, path, plain, timeout=timeout)
        return answer

    def _send(self, method: str, path: str, body: bytes | None, headers: dict[str, str], timeout: float) -> Answer:
        for attempt in (1, 2):  # a kept-alive connection the server closed meanwhile: one fresh try
            if self._aborted:
                return Answer(0, error="no answer within shutdown_timeout")
            conn = self._connection(timeout)
            try:
                conn.request(method, self.prefix + path, body=body, headers=headers)
                response = conn.getresponse()
                raw = response.read()
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                if attempt == 1 and isinstance(exc, http.client.RemoteDisconnected | ConnectionResetError):
                    continue  # (after `abort`, the loop's first line answers)
                return Answer(0, error=f"{type(exc).__name__}: {exc}", unreachable=_unreachable(exc))
            if response.getheader("Connection", "").lower() == "close":
                self.close()
            parsed: Any = None
            if raw and "json" in (response.getheader("Content-Type") or ""):
                try:
                    parsed = json.loads(raw)
                except ValueError:
                    parsed = None
            return Answer(response.status, parsed, _retry_after(response.getheader("Retry-After")))
        return Answer(0, error="connection closed")  # pragma: no cover - the loop always returns

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        if self._conn is None:
            cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
            self._conn = cls(self.host, self.port, timeout=timeout)
        else:
            self._conn.timeout = timeout
            if self._conn.sock is not None:
                self._conn.sock.settimeout(timeout)
        return self._conn

    def abort(self) -> None:
        """From another thread, when the time at exit is spent: the request in flight fails now (a server
        that accepts and never answers would otherwise hold it for `timeout`), and no new one starts."""
        self._aborted = True
        conn = self._conn
        sock = conn.sock if conn is not None else None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except OSError:
                pass
            self._conn = None


def _unreachable(exc: BaseException) -> bool:
    if isinstance(exc, ConnectionRefusedError | socket.gaierror):
        return True
    return isinstance(exc, OSError) and exc.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH)


def _is_validation_answer(answer: Answer) -> bool:
    """A 400 about the traces themselves (their fields), as opposed to a body the server could not read."""
    body = answer.body
    return isinstance(body, dict) and bool(body.get("errors")) and answer.status == 400


def _retry_after(value: str | None) -> float | None:
    """Retry-After in seconds (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
