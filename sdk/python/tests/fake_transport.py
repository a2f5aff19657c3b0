"""An in-process transport for unit tests: records each request, answers from a script (default 201/200)."""

from __future__ import annotations

import json
import threading
from collections import deque
from typing import Any

import tracerelay
from tracerelay._transport import Answer

KEY = "tr_prod_testkey0123456789abcdefghijklmn"


class FakeTransport:
    def __init__(self) -> None:
        self.requests: list[tuple[str, str, Any]] = []
        self.answers: deque[Answer | BaseException] = deque()
        self.gate: threading.Event | None = None  # when set, requests wait for it (a slow server)
        self.entered = threading.Event()
        self.closed = False
        self.timeouts: list[float | None] = []  # each request's timeout, as the client gave it

    def request(self, method: str, path: str, body: bytes | None, *, timeout: float | None = None) -> Answer:
        self.entered.set()
        self.timeouts.append(timeout)
        if self.gate is not None:
            self.gate.wait(10)
        data = json.loads(body) if body else None
        self.requests.append((method, path, data))
        if self.answers:
            answer = self.answers.popleft()
            if isinstance(answer, BaseException):
                raise answer
            return answer
        if path.endswith("/batch"):
            return Answer(200, {"created": len(data["traces"]), "failed": 0, "results": []})
        return Answer(201, {"id": (data or {}).get("id")})

    def close(self) -> None:
        self.closed = True

    @property
    def traces(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for _, path, data in self.requests:
            if path.endswith("/traces/batch"):
                out.extend(data["traces"])
            elif path.endswith("/traces"):
                out.append(data)
        return out


def start_sdk(transport: FakeTransport, **options: Any) -> None:
    """`tracerelay.init` with the fake transport and a test key."""
    tracerelay.init(api_key=KEY, transport=transport, **options)


def wait_for(predicate: Any, timeout: float = 30.0) -> bool:
    """Poll until `predicate()` holds; the deadline is far above what even a loaded machine needs."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return bool(predicate())
