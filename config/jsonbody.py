"""The one JSON body reader every API endpoint uses: DRF's default parser (`JSONBodyParser`) and the
lean ASGI ingest path (`traces/ingest.py`) both end in `parse_body`, so a fault in a body gets the
same problem everywhere:

| fault                                   | status | problem type             |
|-----------------------------------------|--------|--------------------------|
| Content-Type is not application/json    | 415    | `unsupported-media-type` |
| Content-Encoding other than gzip        | 415    | `unsupported-media-type` |
| over the endpoint's size limit          | 413    | `payload-too-large`      |
| no body where one is needed             | 400    | `empty-body`             |
| not JSON (with line and column)         | 400    | `malformed-json`         |
| nested deeper than `MAX_DEPTH`          | 400    | `too-deep`               |

Depth: orjson parses up to 1,024 levels and refuses deeper; everything past parsing (DRF
serializers, `copy.deepcopy`, the jsonb encoder, CEL) recurses in Python, where a thousand levels is
a `RecursionError`. No legitimate body comes near 64 levels (an LLM tool schema is a dozen), so 64 is
the limit: generous for data, far from any recursion limit.

Gzip (`Content-Encoding: gzip`) is decompressed as a stream with the size limit applied to the
decompressed bytes, so a small bomb is a 413 after reading at most limit + 1 bytes of output.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import IO, Any

import orjson
from django.conf import settings
from rest_framework.parsers import BaseParser

from config.problems import Problem, empty_body

JSON = "application/json"
MAX_DEPTH = 64
_READ_CHUNK = 64 * 1024


def too_large(what: str, limit: int, size: int | None = None) -> Problem:
    this = f"; this one is {size}" if size is not None else ""
    return Problem(413, "payload-too-large", f"{what} may be at most {limit} bytes{this}.", limit_bytes=limit)


def check_content_type(content_type: str) -> None:
    """415 unless the media type is application/json (parameters such as charset are ignored)."""
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    if media_type != JSON:
        raise Problem(
            415,
            "unsupported-media-type",
            f"Send the body as {JSON}" + (f", not {media_type}." if media_type else " (Content-Type is missing)."),
        )


def check_content_encoding(encoding: str) -> str:
    """The body's coding, lower-cased: `""` (none) or `gzip`; anything else is a 415."""
    coding = (encoding or "").strip().lower()
    if coding in ("", "identity"):
        return ""
    if coding in ("gzip", "x-gzip"):
        return "gzip"
    raise Problem(
        415,
        "unsupported-media-type",
        f"Content-Encoding '{coding[:40]}' is not supported: send the body as it is, or gzip it.",
    )


def check_declared_length(content_length: str | None, max_bytes: int, what: str) -> None:
    if content_length and content_length.isdigit() and int(content_length) > max_bytes:
        raise too_large(what, max_bytes, int(content_length))


class Gunzip:
    """Stream decompression that stops at ``max_bytes`` of output (413) whatever the input claims."""

    def __init__(self, max_bytes: int, what: str) -> None:
        self._inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        self._max = max_bytes
        self._what = what
        self._out: list[bytes] = []
        self._size = 0

    def feed(self, data: bytes) -> None:
        try:
            while data:
                # Ask for one byte more than may still fit: getting it means the body is too large.
                chunk = self._inflate.decompress(data, self._max - self._size + 1)
                self._size += len(chunk)
                if self._size > self._max:
                    raise too_large(f"{self._what} (decompressed)", self._max)
                self._out.append(chunk)
                data = self._inflate.unconsumed_tail
                if self._inflate.eof:
                    break  # bytes after the gzip member are ignored, as gzip(1) warns and ignores them
        except zlib.error as exc:
            raise Problem(400, "malformed-gzip", f"The body is not valid gzip: {exc}.", title="Bad Request")

    def result(self) -> bytes:
        if not self._inflate.eof:  # zlib gave what it could but never reached the end marker
            raise Problem(400, "malformed-gzip", "The body is not valid gzip: it ends early.", title="Bad Request")
        return b"".join(self._out)


def gunzip(body: bytes, max_bytes: int, what: str) -> bytes:
    inflater = Gunzip(max_bytes, what)
    inflater.feed(body)
    return inflater.result()


def parse_body(body: bytes, *, max_bytes: int, what: str = "The body", encoding: str = "") -> Any:
    """``body`` (as received, after `check_content_type`) as JSON, or the problem that says why not."""
    coding = check_content_encoding(encoding)
    if coding == "gzip" and body:
        body = gunzip(body, max_bytes, what)
    if len(body) > max_bytes:
        raise too_large(what, max_bytes, len(body))
    if not body or body.isspace():
        raise empty_body()
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        if exc.msg.startswith("depth limit"):
            raise too_deep()
        raise Problem(
            400,
            "malformed-json",
            f"The body is not valid JSON: {exc}.",
            title="Malformed JSON",
            line=exc.lineno,
            column=exc.colno,
        )
    # Depth k needs at least k openers: a body with few of them (nearly every body) skips the walk.
    if body.count(b"[") + body.count(b"{") > MAX_DEPTH and depth_exceeds(data, MAX_DEPTH):
        raise too_deep()
    return data


def too_deep() -> Problem:
    return Problem(
        400,
        "too-deep",
        f"The body nests objects and arrays more than {MAX_DEPTH} levels deep.",
        title="JSON nested too deeply",
        max_depth=MAX_DEPTH,
    )


def depth_exceeds(value: Any, limit: int) -> bool:
    """Whether ``value`` nests containers more than ``limit`` deep (iterative: no recursion to overflow)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def read_capped(stream: IO[bytes], max_bytes: int, what: str) -> bytes:
    """Read ``stream`` to its end, refusing (413) as soon as it passes ``max_bytes``."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = stream.read(min(_READ_CHUNK, max_bytes + 1 - size))
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > max_bytes:
            raise too_large(what, max_bytes)
        chunks.append(chunk)


def body_limit(view: Any) -> int:
    """A view's body limit: its ``max_body_bytes`` attribute, else the request-wide limit."""
    return int(getattr(view, "max_body_bytes", None) or settings.DATA_UPLOAD_MAX_MEMORY_SIZE)


class JSONBodyParser(BaseParser):
    """DRF's default parser (settings.REST_FRAMEWORK): `parse_body` behind DRF's parser interface."""

    media_type = JSON

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None) -> Any:
        context = parser_context or {}
        request = context.get("request")
        headers = request.headers if request is not None else {}
        limit = body_limit(context.get("view"))
        coding = check_content_encoding(headers.get("Content-Encoding", ""))
        read_limit = limit if not coding else compressed_limit(limit)
        check_declared_length(headers.get("Content-Length"), read_limit, "The body")
        raw = read_capped(stream, read_limit, "The body")
        return parse_body(raw, max_bytes=limit, encoding=coding)


def compressed_limit(limit: int) -> int:
    """How many gzip bytes to read at most for ``limit`` decompressed: gzip can grow incompressible
    data a little (5 bytes per 16 KiB block plus an 18-byte frame)."""
    return limit + limit // 1000 + 1024


def request_json(request: Any, *, required: bool = True, default: Any = None) -> Any:
    """A DRF request's parsed body. With no body at all: `empty-body` when ``required``, else ``default``.

    DRF hands an empty body to no parser and reads it as ``{}``; this tells the two apart.
    """
    if request.stream is None:
        if required:
            raise empty_body()
        return default
    return request.data
