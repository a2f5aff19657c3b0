"""`POST /api/v1/traces`: its one core (`ingest_payload`, `ingest_answer`) and its lean door.

The endpoint has two doors and no more: this bare ASGI app (`mount`, in front of Django in
config/asgi.py: the fast one) and `traces.api.TraceListCreate.post` (DRF: WSGI, Django's test
clients, and the OpenAPI schema). Both authenticate alike, read the body with config/jsonbody.py,
call `ingest_payload` and answer with `ingest_answer`; they differ only in how the trace is stored.

A single-trace POST is mostly fixed cost: DRF's request wrapping, negotiation and response
rendering, a hop to a worker thread for the sync view, a transaction with its commit, and a Celery
publish for its outbox rows. Here the request is authenticated, parsed and validated on the event
loop, and the valid trace joins every other trace that arrived meanwhile in one transaction, done
by one writer thread per process (group commit). The response still waits for that commit, so a
201 means stored durably with its routing decided, exactly as on the DRF door (which stores the
one trace itself, in its request thread).
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from concurrent.futures import Future
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections

from accounts.authentication import token_from_header
from accounts.models import Scope
from accounts.principals import KeyPrincipal
from accounts.selectors import principal_for_key, principal_from_memory
from config.asgi_io import BodyReader, send_json, send_problem
from config.asgi_types import ASGIApp, AsgiScope, Receive, Send
from config.jsonbody import (
    check_content_encoding,
    check_content_type,
    check_declared_length,
    compressed_limit,
    parse_body,
)
from config.problems import Problem
from pipeline.services import PendingTrace, store_parts, traces_normalize, traces_store

from .models import Trace
from .prices.lookup import fresh as fresh_team_prices
from .prices.lookup import refresh as refresh_team_prices
from .serializers import trace_json

log = logging.getLogger(__name__)

GROUP_MAX_TRACES = 2000  # per transaction: big enough to amortise, small enough to keep commits quick


class GroupCommitWriter:
    """One thread that stores what many requests hand it, in as few transactions as it can."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[list[PendingTrace], Future[list[tuple[Trace, bool]]]]] = (
            queue.SimpleQueue()
        )
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def submit(self, pending: list[PendingTrace]) -> Future[list[tuple[Trace, bool]]]:
        future: Future[list[tuple[Trace, bool]]] = Future()
        self._queue.put((pending, future))
        if self._thread is None or not self._thread.is_alive():
            with self._lock:
                if self._thread is None or not self._thread.is_alive():
                    self._thread = threading.Thread(target=self._run, name="trace-group-commit", daemon=True)
                    self._thread.start()
        return future

    def _run(self) -> None:
        while True:
            group = [self._queue.get()]
            size = len(group[0][0])
            while size < GROUP_MAX_TRACES:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                group.append(item)
                size += len(item[0])
            self._write(group)
            if self._queue.empty():
                # As at the end of a request: hand the connection back (to the pool, with Postgres).
                close_old_connections()

    def _write(self, group: list[tuple[list[PendingTrace], Future[list[tuple[Trace, bool]]]]]) -> None:
        # One transaction for the group; if it fails, one per request, so that one request's
        # trouble does not fail the others. A request whose own store fails gets a 503.
        outcomes = store_parts([pending for pending, _ in group], traces_store, after_failure=close_old_connections)
        for (pending, future), outcome in zip(group, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                log.error("storing %d trace(s) failed", len(pending), exc_info=outcome)
                future.set_exception(Problem(503, "unavailable", "The trace could not be stored; retry."))
            else:
                future.set_result(list(outcome))


writer = GroupCommitWriter()


async def authenticate(authorization: str, scope: str) -> KeyPrincipal:
    """The same rules as `ApiKeyAuthentication` + `scoped`: 401 without a valid key, 403 without the scope."""
    token = token_from_header(authorization)
    if token is None:
        raise Problem(401, "unauthorized", "Send 'Authorization: Bearer <API key>'.")
    principal = principal_from_memory(token)
    if principal is None:
        principal = await sync_to_async(_principal_in_thread, thread_sensitive=False)(token)
    if principal is None:
        raise Problem(401, "invalid-key", "The API key is malformed, unknown or revoked.")
    if not principal.has_scope(scope):
        raise Problem(
            403,
            "insufficient-scope",
            f"A {principal.environment} key may not do this (needs scope '{scope}').",
            required_scope=scope,
        )
    return principal


def _principal_in_thread(token: str) -> KeyPrincipal | None:
    try:
        return principal_for_key(token)
    finally:
        close_old_connections()  # this executor thread has no request to end: give the connection back


def check_json_headers(
    content_type: str, content_length: str | None, max_bytes: int, what: str, encoding: str = ""
) -> None:
    """415 unless the body is application/json (gzip or not); 413 when its declared length is over the limit."""
    check_content_type(content_type)
    limit = compressed_limit(max_bytes) if check_content_encoding(encoding) else max_bytes
    check_declared_length(content_length, limit, what)


def parse_json(body: bytes, max_bytes: int, what: str, encoding: str = "") -> Any:
    """The body as JSON by the one parser every endpoint uses (config/jsonbody.py)."""
    return parse_body(body, max_bytes=max_bytes, what=what, encoding=encoding)


def invalid_trace(errors: dict[str, list[str]], status: int) -> Problem:
    first = next(iter(errors.items()), ("", ["Invalid trace."]))
    where = f"{first[0]}: " if first[0] else ""
    if status == 413:
        return Problem(413, "payload-too-large", f"{where}{first[1][0]}", errors=errors)
    return Problem(400, "validation", f"{where}{first[1][0]}", title="Invalid trace", errors=errors)


def ingest_payload(principal: KeyPrincipal, data: Any) -> PendingTrace:
    """The one core of `POST /api/v1/traces`, behind both doors: the parsed body → the valid,
    priced trace to store, or the `Problem` that refuses it (400 not an object or invalid, 413)."""
    if not isinstance(data, dict):
        raise Problem(400, "validation", "The body must be a JSON object (one trace).", title="Invalid request")
    results, pending = traces_normalize(principal=principal, items=[data], source="api")
    if not pending:
        failed = results[0]
        assert failed is not None
        raise invalid_trace(failed.errors or {}, failed.status)
    return pending[0]


def ingest_answer(row: Trace, created: bool) -> tuple[int, dict[str, Any]]:
    """What both doors answer once the trace is stored: 201 with it, or 200 with the one stored under its id."""
    return (201 if created else 200), trace_json(row)


# --- The same endpoint as a bare ASGI app, in front of Django ------------------------------------

INGEST_PATH = "/api/v1/traces"


def mount(app: ASGIApp) -> ASGIApp:
    """``app`` with `POST /api/v1/traces` answered by `ingest_asgi` before Django sees it.

    Django's ASGI handler costs more than the whole ingest (request_started/finished signals run
    sync receivers in a fresh thread per request); `config/asgi.py` wraps its app with this.
    """

    async def application(scope: AsgiScope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] == INGEST_PATH:
            await ingest_asgi(scope, receive, send)
        else:
            await app(scope, receive, send)

    return application


async def ingest_asgi(scope: AsgiScope, receive: Receive, send: Send) -> None:
    headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
    limit = settings.TRACE_MAX_BYTES
    reader = BodyReader(receive)
    try:
        try:
            principal = await authenticate(headers.get("authorization", ""), Scope.INGEST)
            encoding = headers.get("content-encoding", "")
            check_json_headers(
                headers.get("content-type", ""), headers.get("content-length"), limit, "A trace", encoding
            )
            body = await reader.read(compressed_limit(limit) if encoding else limit, "A trace")
        except Problem:
            await reader.drain()  # a client still sending would otherwise see the connection reset
            raise
        if fresh_team_prices(principal.team_id) is None:  # pricing on the loop below may not query
            await sync_to_async(refresh_team_prices, thread_sensitive=False)(principal.team_id)
        pending = ingest_payload(principal, parse_json(body, limit, "A trace", encoding))
        [(row, created)] = await asyncio.wrap_future(writer.submit([pending]))
        status, payload = ingest_answer(row, created)
    except Problem as exc:
        await send_problem(send, exc)
        return
    await send_json(send, status, payload)
