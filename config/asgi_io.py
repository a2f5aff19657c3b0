"""Reading a request body and writing a whole response, for the bare-ASGI doors that bypass Django
(single-trace ingest in traces/ingest.py, the proxy in traces/proxy/app.py)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .asgi_types import Receive, Send
from .jsonbody import too_large
from .jsoncodec import dumps
from .problems import PROBLEM_CONTENT_TYPE, Problem, problem_parts

JSON = b"application/json"
PROBLEM = PROBLEM_CONTENT_TYPE.encode()
Headers = Iterable[tuple[bytes, bytes]]


class ClientGone(Problem):
    """The client disconnected before its whole body arrived (a door may answer it, or just stop)."""

    def __init__(self) -> None:
        super().__init__(400, "bad-request", "The client went away before sending the whole body.")


class BodyReader:
    """A request's body from ASGI ``receive``, capped while it arrives (a missing or false
    Content-Length cannot get more than ``limit`` bytes into memory)."""

    __slots__ = ("receive", "done")

    def __init__(self, receive: Receive) -> None:
        self.receive = receive
        self.done = False

    async def read(self, limit: int, what: str) -> bytes:
        """The whole body; `ClientGone` on a disconnect, a 413 `Problem` (naming ``what``) past ``limit``."""
        chunks: list[bytes] = []
        size = 0
        while not self.done:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                self.done = True
                raise ClientGone()
            chunk = message.get("body", b"")
            self.done = not message.get("more_body", False)
            size += len(chunk)
            if size > limit:
                raise too_large(what, limit, size)
            chunks.append(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def drain(self) -> None:
        """Read and drop the rest: a client still sending would otherwise see the connection reset."""
        while not self.done:
            message = await self.receive()
            self.done = message["type"] == "http.disconnect" or not message.get("more_body", False)


async def send_whole(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    """A response in one piece: ``headers`` as given (the caller sets content-type and -length)."""
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def send_json(send: Send, status: int, payload: Any, content_type: bytes = JSON, headers: Headers = ()) -> None:
    """``payload`` as JSON with its content-type and length, plus ``headers``."""
    data = dumps(payload)
    raw = [(b"content-type", content_type), (b"content-length", str(len(data)).encode()), *headers]
    await send_whole(send, status, data, raw)


async def send_problem(send: Send, exc: Problem, headers: Headers = ()) -> None:
    """``exc`` as problem+json, rendered as everywhere else (`problem_parts`: the 401 challenge included)."""
    body, extra = problem_parts(exc)
    raw = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in extra.items()]
    await send_json(send, exc.status_code, body, PROBLEM, [*raw, *headers])
