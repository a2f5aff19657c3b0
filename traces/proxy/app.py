"""The proxy's ASGI app: `/api/v1/proxy/<path>` → the team's upstream, with a trace of every call.

Why not a Django view: Django's request machinery (middleware, URL resolving, the sync/async
switch at ~1 ms each) costs more than the whole budget of this path (≤ 1 ms added at p50). So
this is a plain ASGI callable that config/asgi.py puts in front of Django, the way Sentry and
PostHog keep ingestion off their ORM-heavy code. It still uses Django's settings, and the ORM
off the hot path:

- API keys and team upstreams come from in-process caches refreshed by threads (`cache.py`);
- the trace goes to a background writer thread (`writer.py`), never to the database here;
- request and response bodies pass through as bytes; parsing them for the trace happens in
  the writer. The one exception is a streamed chat completion without usage, whose request is
  rewritten to ask for usage and whose stream is filtered to hide it again (`sse.py`).
"""

from __future__ import annotations

import asyncio
import logging
import sys
from concurrent.futures import ThreadPoolExecutor
from time import perf_counter, time
from typing import Any

import aiohttp
import orjson
from yarl import URL

from accounts import keys
from accounts.models import Scope
from accounts.principals import KeyPrincipal
from accounts.selectors import principal_for_key
from config import invalidation, metrics
from config.asgi_io import PROBLEM, BodyReader, ClientGone, send_json, send_whole
from config.asgi_types import AsgiScope, Receive, Send
from config.problems import Problem, problem_parts

from ..ids import new_trace_id
from .cache import AsyncTTLCache
from .capture import Capture, StreamBody
from .conf import ProxySettings
from .outbound import GuardedConnector
from .request import PREFIX, Incoming, choose_target, prepare_stream, read_service_headers
from .sse import UsageFilter
from .upstreams import ResolvedUpstream, TeamUpstreams, builtin_targets, load_team_upstreams
from .writer import TraceWriter

log = logging.getLogger(__name__)

__all__ = ["PREFIX", "ProxyApp"]

# Never passed back: hop-by-hop headers, and date/server, which the ASGI server writes itself.
RESPONSE_DROP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"date",
        b"server",
    }
)
READ_WHOLE_MAX = 1024 * 1024  # a non-stream answer up to this size is read whole and sent in one piece


class _Watch:
    """Set by the disconnect watcher; tells a cancellation caused by the client from any other."""

    __slots__ = ("disconnected", "done")

    def __init__(self) -> None:
        self.disconnected = False
        self.done = False


class ProxyApp:
    def __init__(self, settings: ProxySettings | None = None) -> None:
        self.settings = settings
        self.session: aiohttp.ClientSession | None = None
        self.writer: TraceWriter | None = None
        self._startup_lock: asyncio.Lock | None = None
        self._url_cache: dict[tuple[str, bytes, bytes], URL] = {}
        self._encoding_cache: dict[bytes, str] = {}

    # -- lifecycle: one aiohttp session and one writer thread per worker process ---------------

    async def startup(self) -> None:
        if self.session is not None:
            return
        s = self.settings = self.settings or ProxySettings.from_django()
        # The trace writer is a thread: while it ingests a batch it holds the GIL, and the event
        # loop waits up to the switch interval (5 ms by default) each time it wakes. 0.5 ms keeps
        # the writer from showing in the proxy's tail latency, for a little more thread switching.
        sys.setswitchinterval(s.switch_interval)
        # Lookups run Django's ORM and cache client: blocking calls, kept off the event loop.
        executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="proxy-lookup")
        self.keys: AsyncTTLCache[str, KeyPrincipal] = AsyncTTLCache(
            principal_for_key, executor=executor, ttl=s.cache_ttl, miss_ttl=min(s.cache_ttl, 10.0)
        )
        self.upstreams: AsyncTTLCache[int, TeamUpstreams] = AsyncTTLCache(
            load_team_upstreams, executor=executor, ttl=s.cache_ttl, miss_ttl=s.cache_ttl
        )
        # A revocation or an upstream change in any process empties these at once (config/invalidation.py).
        invalidation.subscribe(invalidation.API_KEYS, lambda _digest: self.keys.invalidate())
        invalidation.subscribe(invalidation.UPSTREAMS, lambda team: self.upstreams.invalidate(_team(team)))
        invalidation.ensure_listening()
        self.openai, self.anthropic = builtin_targets(s.openai_base_url, s.anthropic_base_url)
        self.timeout = aiohttp.ClientTimeout(
            total=None, connect=s.connect_timeout, sock_connect=s.connect_timeout, sock_read=s.read_timeout
        )
        self.writer = TraceWriter(
            spool_dir=s.spool_dir,
            batch_size=s.writer_batch,
            interval=s.writer_interval,
            queue_max=s.writer_queue_max,
            max_body=s.capture_max_bytes,
            max_metadata_keys=s.max_metadata_keys,
        )
        self.writer.start()
        self.session = aiohttp.ClientSession(
            # Connects only to addresses the URL guard checked, resolved where the connection is made.
            connector=GuardedConnector(limit=s.max_connections, limit_per_host=0),
            timeout=self.timeout,
            auto_decompress=False,  # bytes pass through exactly as the upstream sent them
            # No cookie jar: one session serves every team, and cookies must never cross between them.
            cookie_jar=aiohttp.DummyCookieJar(),
            skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
        )

    async def shutdown(self) -> None:
        if self.session is not None:
            await self.session.close()
            self.session = None
        if self.writer is not None:
            # Drain the queue into the database (or the spool) before the process ends.
            await asyncio.get_running_loop().run_in_executor(None, self.writer.stop)

    async def _ensure_started(self) -> None:
        """For servers run without the lifespan protocol: start on the first request."""
        if self._startup_lock is None:
            self._startup_lock = asyncio.Lock()
        async with self._startup_lock:
            await self.startup()

    # -- the request ------------------------------------------------------------------------------

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        """Authenticate, choose the target, read the body, prepare the stream, forward; then hand the
        capture to the writer. A refusal before forwarding is a problem+json answer and no trace."""
        if self.session is None:
            await self._ensure_started()
        assert self.writer is not None
        trace_id = new_trace_id()
        id_header = (b"x-service-id", trace_id.encode())
        t0 = perf_counter()
        started = time()
        incoming = Incoming(scope["headers"])
        try:
            principal, team = await self._authenticate(incoming)
            raw_path: bytes = scope.get("raw_path") or scope["path"].encode()
            target, rest = choose_target(raw_path, incoming.service, team, (self.openai, self.anthropic))
            capture = Capture(trace_id, principal, target, scope["method"], rest.decode("latin-1"))
            capture.started = started
            capture.request_type = incoming.content_type
            if incoming.service:
                read_service_headers(incoming.service, capture, self.settings)  # type: ignore[arg-type]
            # The request body, whole (LLM requests are small; the limit guards the rest).
            limit = self.settings.max_body_bytes  # type: ignore[union-attr]
            capture.request_body = await BodyReader(receive).read(limit, "A request body")
        except ClientGone:
            return  # gone before it finished sending: nothing was called
        except Problem as refused:
            return await _problem(send, id_header, refused)
        body, usage_filter, streaming = prepare_stream(capture, capture.request_body)
        headers = self._upstream_headers(incoming, target, streaming)
        url = self._url(target.base_url, rest, scope.get("query_string", b""))
        try:
            await self._forward_watched(scope, receive, send, capture, url, body, headers, usage_filter, id_header, t0)
        finally:
            capture.latency_ms = (perf_counter() - t0) * 1000
            self.writer.submit(capture)

    async def _authenticate(self, incoming: Incoming) -> tuple[KeyPrincipal, TeamUpstreams]:
        """Who is calling: refused without a database look-up when malformed, cached when known."""
        raw_key = incoming.key
        if not raw_key:
            raise Problem(401, "missing-key", "Send your tracerelay API key in X-Service-Key.")
        try:
            principal = await self.keys.get(raw_key) if keys.parse(raw_key) is not None else None
            team = await self.upstreams.get(principal.team_id) if principal is not None else None
        except Exception:  # database and cache both out, and nothing cached for this key yet
            log.exception("proxy: key or upstream look-up failed")
            raise Problem(503, "unavailable", "Keys cannot be checked right now; retry.") from None
        if principal is None or team is None:
            raise Problem(401, "invalid-key", "The X-Service-Key is malformed, unknown or revoked.")
        if not principal.has_scope(Scope.PROXY):
            raise Problem(403, "insufficient-scope", "This key may not use the proxy.")
        return principal, team

    def _upstream_headers(self, incoming: Incoming, target: ResolvedUpstream, streaming: bool) -> list[tuple[str, str]]:
        """The client's headers, plus the upstream's key when the client brings none, its extra headers,
        and the encodings the trace writer can read."""
        forward = incoming.forward
        if not incoming.has_credentials and target.auth_header is not None:
            forward.append(target.auth_header)
        if target.headers:
            sent = {name.lower() for name, _ in forward}
            forward.extend(h for h in target.headers if h[0] not in sent)
        forward.append(("accept-encoding", "identity" if streaming else self._encoding_for(incoming.accept_encoding)))
        return forward

    async def _forward_watched(
        self,
        scope: AsgiScope,
        receive: Receive,
        send: Send,
        capture: Capture,
        url: URL,
        body: bytes,
        headers: list[tuple[str, str]],
        usage_filter: UsageFilter | None,
        id_header: tuple[bytes, bytes],
        t0: float,
    ) -> None:
        """`_forward`, cancelled when the client hangs up (which the trace then says)."""
        metrics.observe_proxy_added_latency(perf_counter() - t0)
        watch = _Watch()
        watcher = asyncio.create_task(_watch_disconnect(receive, asyncio.current_task(), watch))  # type: ignore[arg-type]
        try:
            await self._forward(scope, send, capture, url, body or None, headers, usage_filter, id_header, t0)
        except asyncio.CancelledError:
            if not watch.disconnected:
                raise
            asyncio.current_task().uncancel()  # type: ignore[union-attr]
            # The client hung up: leaving the `async with` closed the upstream connection, which
            # is how an HTTP request is cancelled; the trace says so.
            capture.error_type = "client_disconnected"
            capture.error_message = "The client closed the connection before the response was complete."
        finally:
            watch.done = True
            watcher.cancel()

    async def _forward(
        self,
        scope: AsgiScope,
        send: Send,
        capture: Capture,
        url: URL,
        body: bytes | None,
        headers: list[tuple[str, str]],
        usage_filter: UsageFilter | None,
        id_header: tuple[bytes, bytes],
        t0: float,
    ) -> None:
        assert self.session is not None
        try:
            async with self.session.request(
                scope["method"], url, data=body, headers=headers, allow_redirects=False
            ) as response:
                capture.status_code = response.status
                capture.response_headers = response.raw_headers
                out = [(n, v) for n, v in response.raw_headers if n.lower() not in RESPONSE_DROP]
                is_sse = response.content_type == "text/event-stream"
                length = response.content_length
                if not is_sse and length is not None and length <= READ_WHOLE_MAX:
                    data = await response.read()
                    capture.response_body = data
                    out.append(id_header)
                    await send_whole(send, response.status, data, out)
                    return
                await self._stream(send, capture, response, out, usage_filter, id_header, is_sse, t0)
        except TimeoutError:
            if isinstance(capture.response_body, StreamBody):
                return  # _stream already ended the response and recorded the error
            capture.status_code = 504
            capture.error_type = "upstream_timeout"
            capture.error_message = f"{capture.target.name} did not answer in time."
            await _problem(send, id_header, Problem(504, "upstream-timeout", capture.error_message))
        except aiohttp.ClientError as exc:
            if isinstance(capture.response_body, StreamBody):
                return
            capture.status_code = 502
            capture.error_type = "upstream_unreachable"
            capture.error_message = f"{capture.target.name} could not be reached: {exc}"[:1000]
            await _problem(send, id_header, Problem(502, "upstream-unreachable", capture.error_message))

    async def _stream(
        self,
        send: Send,
        capture: Capture,
        response: aiohttp.ClientResponse,
        headers: list[tuple[bytes, bytes]],
        usage_filter: UsageFilter | None,
        id_header: tuple[bytes, bytes],
        is_sse: bool,
        t0: float,
    ) -> None:
        """Pass the body on read by read, as it arrives: no buffering beyond one incomplete event."""
        if usage_filter is not None:
            headers = [(n, v) for n, v in headers if n.lower() != b"content-length"]
        headers.append(id_header)
        await send({"type": "http.response.start", "status": response.status, "headers": headers})
        recorded = capture.response_body = StreamBody()
        try:
            async for chunk in response.content.iter_any():
                if not recorded.size and is_sse:
                    capture.ttft_ms = (perf_counter() - t0) * 1000
                recorded.append(chunk)
                if usage_filter is not None:
                    chunk = usage_filter.feed(chunk)
                    if not chunk:
                        continue
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except (TimeoutError, aiohttp.ClientError) as exc:
            # The status line is gone already: end the stream with an error event the SDKs raise on.
            timeout = isinstance(exc, TimeoutError)
            capture.error_type = "upstream_timeout" if timeout else "upstream_disconnected"
            capture.error_message = f"{capture.target.name} {'went silent' if timeout else 'broke off'} mid-stream."
            if is_sse:
                tail = usage_filter.flush() if usage_filter is not None else b""
                tail += _sse_error(capture.target.is_anthropic, capture.error_type, capture.error_message)
                await send({"type": "http.response.body", "body": tail, "more_body": False})
            # Any other body is left incomplete: the server then closes the connection, so the
            # client sees a truncated response instead of a short one that looks whole.
            raise
        tail = usage_filter.flush() if usage_filter is not None else b""
        await send({"type": "http.response.body", "body": tail, "more_body": False})

    def _url(self, base_url: str, rest: bytes, query: bytes) -> URL:
        key = (base_url, rest, query)
        url = self._url_cache.get(key)
        if url is None:
            text = f"{base_url}/{rest.decode('latin-1')}" + (f"?{query.decode('latin-1')}" if query else "")
            url = URL(text, encoded=True)  # forwarded as the client encoded it
            if len(self._url_cache) >= 4096:
                self._url_cache.clear()
            self._url_cache[key] = url
        return url

    def _encoding_for(self, accept_encoding: bytes) -> str:
        """What we ask the upstream for: the client's gzip/deflate (which the writer can decode), or identity."""
        cached = self._encoding_cache.get(accept_encoding)
        if cached is None:
            offered = {token.split(b";")[0].strip().lower() for token in accept_encoding.split(b",")}
            cached = ", ".join(e for e in ("gzip", "deflate") if e.encode() in offered) or "identity"
            if len(self._encoding_cache) < 256:
                self._encoding_cache[accept_encoding] = cached
        return cached


async def _watch_disconnect(receive: Receive, task: asyncio.Task[Any], watch: _Watch) -> None:
    """Cancel the request's task when the client hangs up (uvicorn reports it on `receive`)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            if not watch.done:
                watch.disconnected = True
                task.cancel()
            return


def _sse_error(anthropic: bool, kind: str, message: str) -> bytes:
    if anthropic:
        data = orjson.dumps({"type": "error", "error": {"type": kind, "message": message}})
        return b"event: error\ndata: " + data + b"\n\n"
    return b"data: " + orjson.dumps({"error": {"type": kind, "message": message}}) + b"\n\n"


async def _problem(send: Send, id_header: tuple[bytes, bytes], exc: Problem) -> None:
    # problem+json as the API renders it, less the Bearer challenge on a 401: the proxy's key goes
    # in X-Service-Key, not in Authorization (which is forwarded to the upstream).
    body, _ = problem_parts(exc)
    await send_json(send, exc.status_code, body, PROBLEM, (id_header,))


def _team(key: str | None) -> int | None:
    return int(key) if key else None
