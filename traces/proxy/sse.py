"""Server-sent events: the hot-path filter that hides injected usage, and the off-path parser.

When a client streams a chat completion without asking for usage, the proxy asks for it anyway
(``stream_options.include_usage``) so the trace has real token counts. OpenAI then adds
``"usage":null`` to every chunk and one last chunk with ``"choices":[]`` and the usage. The
client must not see either: `UsageFilter` removes them, holding back nothing but an incomplete
event at the end of a read (events are forwarded as soon as their blank line arrives).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import orjson

_NULL_USAGE = (b',"usage":null', b'"usage":null,')
_EVENT = re.compile(rb".*?(?:\r\n\r\n|\n\n|\r\r)", re.DOTALL)


def _complete_end(data: bytes) -> int:
    """Index just past the last event boundary (a blank line) in ``data``, or -1."""
    lf = data.rfind(b"\n\n")
    crlf = data.rfind(b"\r\n\r\n")
    return max(lf + 2 if lf >= 0 else -1, crlf + 4 if crlf >= 0 else -1)


def event_data(event: bytes) -> bytes:
    """The data field of one event (its ``data:`` lines joined by newlines)."""
    lines = [line for line in event.splitlines() if line.startswith(b"data:")]
    return b"\n".join(line[6:] if line.startswith(b"data: ") else line[5:] for line in lines)


def _is_usage_only(event: bytes) -> bool:
    try:
        chunk = orjson.loads(event_data(event))
    except orjson.JSONDecodeError:
        return False
    return isinstance(chunk, dict) and isinstance(chunk.get("usage"), dict) and not chunk.get("choices")


class UsageFilter:
    """Feed upstream reads, forward what comes out: the same stream minus the injected usage."""

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, chunk: bytes) -> bytes:
        data = self._pending + chunk if self._pending else chunk
        end = _complete_end(data)
        if end < 0:
            self._pending = data
            return b""
        self._pending = data[end:]
        data = data[:end]
        for null in _NULL_USAGE:
            if null in data:
                data = data.replace(null, b"")
        if b'"usage"' in data:  # only the usage chunk still carries the key: rare, so parse it
            data = b"".join(e for e in _EVENT.findall(data) if not (b'"usage"' in e and _is_usage_only(e)))
        return data

    def flush(self) -> bytes:
        """Whatever trailed the last complete event (a stream cut short): passed on as it came."""
        rest, self._pending = self._pending, b""
        return rest


def parse_events(raw: bytes) -> Iterator[tuple[str, bytes]]:
    """(event name, data) for each event of an SSE stream, per the WHATWG rules that matter here."""
    name = ""
    data: list[bytes] = []
    for line in raw.splitlines():
        if not line:
            if data:
                yield name, b"\n".join(data)
            name, data = "", []
            continue
        if line.startswith(b":"):
            continue
        field, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if field == b"data":
            data.append(value)
        elif field == b"event":
            name = value.decode("utf-8", "replace")
    if data:
        yield name, b"\n".join(data)
