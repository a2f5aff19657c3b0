"""Export and import of traces (docs/export.md).

Export: every trace the feed lists for a filter (`traces.selectors.trace_chunks`, the feed's own
keyset walked to the end), as JSON Lines in the webhook's trace shape (its encoder,
`integrations.exporters.webhook.trace_payload`, with no destination's tags or metadata mapping) or as
CSV with a fixed column list, streamed chunk by chunk (gzip when the client accepts it). Under ASGI
the chunks are produced in the request's thread one at a time: Django would otherwise read a
synchronous stream to its end before sending a byte.

Import: those JSON lines back, each through the ingest service (`pipeline.services`), idempotent by
id, keeping the exported cost and stored-as-is fields, routed nowhere unless asked.
"""

from __future__ import annotations

import csv
import io
import zlib
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import orjson
from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, StreamingHttpResponse

from accounts.principals import KeyPrincipal
from config.jsonbody import (
    MAX_DEPTH,
    check_content_encoding,
    check_declared_length,
    compressed_limit,
    depth_exceeds,
    gunzip,
    read_capped,
    too_large,
)
from config.problems import Problem, empty_body
from integrations.exporters.base import Target
from integrations.exporters.calls import Call, to_json
from integrations.exporters.webhook import trace_payload
from pipeline.services import PendingTrace, traces_normalize, traces_store

from .filters import TraceFilter
from .models import Source, Trace
from .records import TraceRecord
from .selectors import trace_chunks
from .usage import DETAIL_FIELDS

FORMATS = ("jsonl", "csv")
MEDIA_TYPES = {"jsonl": "application/x-ndjson", "csv": "text/csv; charset=utf-8"}
CHUNK = 1000  # traces read and encoded at a time: what the export holds in memory
GZIP_LEVEL = 6
# No destination: no extra tags, no metadata renamed (the trace as stored, as the API shows it).
EXPORT_TARGET = Target(platform="webhook", name="export", config={})

# The CSV's columns, in order (docs/export.md). Scalars as text ("" for null, true/false), the
# free-form fields (tags, metadata, input, output) as JSON text.
CSV_COLUMNS = (
    "id",
    "timestamp",
    "end_time",
    "run_id",
    "parent_id",
    "kind",
    "name",
    "model",
    "provider",
    "status",
    "error_type",
    "error_message",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    *DETAIL_FIELDS,
    "cost",
    "cost_currency",
    "unpriced",
    "usage_estimated",
    "latency_ms",
    "time_to_first_token_ms",
    "environment",
    "service_name",
    "session_id",
    "user_id",
    "source",
    "tags",
    "metadata",
    "input",
    "output",
)
_JSON_COLUMNS = frozenset({"tags", "metadata", "input", "output"})
# A spreadsheet runs a cell starting with one of these as a formula (CSV injection): such a text cell
# is written with a leading apostrophe, as OWASP advises. The JSON Lines export is the lossless one.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def trace_export_json(trace: Trace | SimpleNamespace) -> dict[str, Any]:
    """One stored trace (a row or `trace_chunks`' values of one) in the webhook's trace shape."""
    return trace_payload(Call.of(TraceRecord.from_trace(trace), EXPORT_TARGET))


def jsonl_lines(rows: Sequence[Trace | SimpleNamespace]) -> bytes:
    return b"".join(to_json(trace_export_json(t)).encode() + b"\n" for t in rows)


def _cell(column: str, value: Any) -> str:
    if column in _JSON_COLUMNS:
        return "" if value is None else to_json(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def csv_row(payload: Mapping[str, Any]) -> list[str]:
    error = payload.get("error") or {}
    values = {**payload, "error_type": error.get("type"), "error_message": error.get("message")}
    return [_cell(column, values.get(column)) for column in CSV_COLUMNS]


def csv_lines(rows: Sequence[Trace | SimpleNamespace] | None) -> bytes:
    """The CSV lines of ``rows`` (RFC 4180, CRLF), or the header line when ``rows`` is None."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    if rows is None:
        writer.writerow(CSV_COLUMNS)
    else:
        writer.writerows(csv_row(trace_export_json(t)) for t in rows)
    return buffer.getvalue().encode()


def export_bytes(*, team_id: int, trace_filter: TraceFilter, fmt: str, chunk: int = CHUNK) -> Iterator[bytes]:
    """The export's body, one piece per chunk of traces (the CSV's header first)."""
    if fmt not in FORMATS:
        raise ValueError(fmt)
    if fmt == "csv":
        yield csv_lines(None)
    for rows in trace_chunks(team_id=team_id, trace_filter=trace_filter, size=chunk):
        yield jsonl_lines(rows) if fmt == "jsonl" else csv_lines(rows)


def gzipped(pieces: Iterator[bytes], level: int = GZIP_LEVEL) -> Iterator[bytes]:
    """``pieces`` as one gzip stream (a gzip file's bytes), compressed as they come."""
    deflate = zlib.compressobj(level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    for piece in pieces:
        out = deflate.compress(piece)
        if out:
            yield out
    yield deflate.flush()


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether an Accept-Encoding header takes gzip (`gzip`, `x-gzip` or `*` with a q above 0)."""
    chosen: dict[str, float] = {}
    for part in accept_encoding.split(","):
        coding, _, params = part.strip().partition(";")
        q = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if coding:
            chosen[coding.strip().lower()] = q
    for name in ("gzip", "x-gzip"):
        if name in chosen:
            return chosen[name] > 0
    return chosen.get("*", 0) > 0


def export_filename(fmt: str, now: datetime | None = None) -> str:
    return f"traces-{(now or datetime.now(UTC)).date().isoformat()}.{fmt}"


def export_response(
    request: HttpRequest, *, team_id: int, trace_filter: TraceFilter, fmt: str
) -> StreamingHttpResponse:
    """The streamed export of ``trace_filter``: gzip-coded when the request's Accept-Encoding takes it,
    an attachment named traces-<date>.<fmt>. Nothing is read before the first chunk is asked for."""
    compress = accepts_gzip(request.headers.get("Accept-Encoding", ""))
    pieces = export_bytes(team_id=team_id, trace_filter=trace_filter, fmt=fmt)
    if compress:
        pieces = gzipped(pieces)
    # Under ASGI a synchronous iterator is read to its end before the first byte is sent: hand Django
    # an asynchronous one that makes each chunk in the request's own thread (its database connection).
    content: Iterator[bytes] | AsyncIterator[bytes] = in_thread(pieces) if isinstance(request, ASGIRequest) else pieces
    response = StreamingHttpResponse(content, content_type=MEDIA_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="{export_filename(fmt)}"'
    response["Vary"] = "Accept-Encoding"
    response["Cache-Control"] = "no-store"
    response["X-Accel-Buffering"] = "no"  # a proxy in front (nginx) passes the stream on as it comes
    if compress:
        response["Content-Encoding"] = "gzip"
    return response


def _next_or_none(pieces: Iterator[bytes]) -> bytes | None:
    return next(pieces, None)


async def in_thread(pieces: Iterator[bytes]) -> AsyncIterator[bytes]:
    """``pieces`` read one at a time in the request's sync thread (thread-sensitive)."""
    step = sync_to_async(_next_or_none, thread_sensitive=True)
    try:
        while True:
            piece = await step(pieces)
            if piece is None:
                return
            yield piece
    finally:
        close = getattr(pieces, "close", None)
        if close is not None:
            await sync_to_async(close, thread_sensitive=True)()


# --- Import ---------------------------------------------------------------------------------------

IMPORT_MEDIA_TYPES = ("application/x-ndjson", "application/jsonl", "application/x-jsonlines")
IMPORT_BATCH = 500  # lines validated and stored together
IMPORT_MAX_ERRORS = 1000  # line errors listed at most (all are counted in `failed`)


@dataclass
class ImportOutcome:
    imported: int = 0
    skipped: int = 0
    failed: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)

    def refuse(self, line: int, detail: str) -> None:
        self.failed += 1
        if len(self.errors) < IMPORT_MAX_ERRORS:
            self.errors.append({"line": line, "detail": detail})

    def as_dict(self) -> dict[str, Any]:
        errors = sorted(self.errors, key=lambda e: e["line"])
        return {"imported": self.imported, "skipped": self.skipped, "failed": self.failed, "errors": errors}


def read_import_body(request: HttpRequest) -> bytes:
    """The import's body, decompressed: 415 unless JSON Lines (gzip or not), 413 over
    TRACERELAY_IMPORT_MAX_BYTES (decompressed), 400 when empty or not gzip as it claims."""
    media = (request.content_type or "").split(";", 1)[0].strip().lower()
    if media not in IMPORT_MEDIA_TYPES:
        shown = f", not {media}." if media else " (Content-Type is missing)."
        raise Problem(
            415, "unsupported-media-type", f"Send the exported JSON Lines as {' or '.join(IMPORT_MEDIA_TYPES)}{shown}"
        )
    limit = settings.IMPORT_MAX_BYTES
    what = "An import"
    coding = check_content_encoding(request.headers.get("Content-Encoding", ""))
    read_limit = compressed_limit(limit) if coding else limit
    check_declared_length(request.META.get("CONTENT_LENGTH"), read_limit, what)
    chunked = getattr(request, "_body", None)  # config.middleware.ChunkedBodyMiddleware read it already
    raw = chunked if isinstance(chunked, bytes) else read_capped(request, read_limit, what)  # type: ignore[arg-type]  # HttpRequest is a readable stream
    if len(raw) > read_limit:
        raise too_large(what, read_limit, len(raw))
    body = gunzip(raw, limit, what) if coding and raw else raw
    if not body.strip():
        raise Problem(400, "empty-body", "The request body is empty: send exported traces, one JSON object a line.")
    return body


def traces_import(*, principal: KeyPrincipal, body: bytes, route: bool = False, reprice: bool = False) -> ImportOutcome:
    """Store each line of ``body`` (an export's JSON Lines) as its team's trace through the ingest
    service, idempotent by id: a trace whose id the team stores already is skipped. A bad line is
    counted and named; it never stops the others. Batches of IMPORT_BATCH lines are stored as they
    are read, each in its own transaction."""
    outcome = ImportOutcome()
    batch: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(body.split(b"\n"), start=1):
        if not line.strip():
            continue
        item = _parse_line(line, number, outcome)
        if item is not None:
            batch.append((number, item))
        if len(batch) >= IMPORT_BATCH:
            _import_batch(principal, batch, outcome, route=route, reprice=reprice)
            batch = []
    if batch:
        _import_batch(principal, batch, outcome, route=route, reprice=reprice)
    if outcome.imported + outcome.skipped + outcome.failed == 0:
        raise empty_body()
    return outcome


def _parse_line(line: bytes, number: int, outcome: ImportOutcome) -> dict[str, Any] | None:
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        outcome.refuse(number, f"Not JSON: {exc}.")
        return None
    if not isinstance(data, dict):
        outcome.refuse(number, "Must be a JSON object: one exported trace.")
        return None
    if line.count(b"[") + line.count(b"{") > MAX_DEPTH and depth_exceeds(data, MAX_DEPTH):
        outcome.refuse(number, f"Nests objects and arrays more than {MAX_DEPTH} levels deep.")
        return None
    if not isinstance(data.get("id"), str) or not data["id"]:
        outcome.refuse(number, "id: Required: an import is idempotent by the exported trace's id.")
        return None
    return data


def _import_batch(
    principal: KeyPrincipal,
    batch: list[tuple[int, dict[str, Any]]],
    outcome: ImportOutcome,
    *,
    route: bool,
    reprice: bool,
) -> None:
    items = [data for _, data in batch]
    results, pending = traces_normalize(principal=principal, items=items, source=Source.API)
    for result in results:
        if result is not None:
            field_name, messages = next(iter((result.errors or {"": ["Invalid trace."]}).items()))
            outcome.refuse(batch[result.index][0], f"{field_name}: {messages[0]}" if field_name else messages[0])
    for entry in pending:
        entry.record = imported_record(entry, items[entry.index], reprice=reprice)
    for _, created in traces_store(pending, routed=route):
        if created:
            outcome.imported += 1
        else:
            outcome.skipped += 1


def imported_record(entry: PendingTrace, data: Mapping[str, Any], *, reprice: bool) -> TraceRecord:
    """The validated record with what the export says of the stored trace that ingest would decide anew:
    its source, environment (also when empty) and whether its usage was estimated; its cost and
    unpriced flag unless ``reprice`` (then priced here, by today's prices). The exported `cost` is ours,
    never a client's cost."""
    record = entry.record
    changes: dict[str, Any] = {"client_cost": None}
    if data.get("source") in Source.values:
        changes["source"] = data["source"]
    if isinstance(data.get("environment"), str):
        changes["environment"] = data["environment"]
    if isinstance(data.get("usage_estimated"), bool):
        changes["usage_estimated"] = data["usage_estimated"]
    if not reprice and record.is_call and isinstance(data.get("unpriced"), bool):
        # `cost` passed ingest's checks as the client's cost: the same number, kept as ours.
        changes |= {
            "cost": record.client_cost,
            "unpriced": data["unpriced"],
            "price_source": "import",
            "price_version": "",
        }
    return replace(record, **changes)
