"""`tracerelay.trace(...)`: a block of the application's own work, as a context manager or a decorator.

A block is a span of a run (docs/sdk.md, "Runs"): sent with ``run_id`` (the outermost block's id),
``parent_id`` (the enclosing block's id, null for a root), ``kind`` (``chain`` unless given) and
``name``, and no model or tokens. The LLM calls made inside it share its run and name it as their parent.
"""

from __future__ import annotations

import functools
import inspect
import logging
import time
from collections.abc import Callable
from contextvars import Token
from typing import Any, TypeVar

from . import _state
from ._ids import new_trace_id
from ._records import DEFAULT_KIND, SPAN_KINDS, Span, current_span

F = TypeVar("F", bound=Callable[..., Any])
log = logging.getLogger("tracerelay")
_warned_kinds: set[str] = set()


def kind_of(kind: Any) -> str:
    """A block's kind: one of `SPAN_KINDS`, else the default (logged once per value, never raised:
    a block must not break the application's code over a label)."""
    if kind is None:
        return DEFAULT_KIND
    if kind in SPAN_KINDS:
        return str(kind)
    text = repr(kind)[:80]
    if text not in _warned_kinds and len(_warned_kinds) < 100:
        _warned_kinds.add(text)
        log.warning(
            "tracerelay: trace(kind=%s) is not a block kind (%s); sent as %r",
            text,
            ", ".join(SPAN_KINDS),
            DEFAULT_KIND,
        )
    return DEFAULT_KIND


class TraceBlock:
    """What `trace()` returns: use it with ``with`` / ``async with``, or as a decorator."""

    def __init__(
        self,
        name: str,
        *,
        kind: str | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        input: Any = None,
        capture_io: bool = True,
    ) -> None:
        self.name = name
        self.kind = kind_of(kind)
        self.session_id = session_id
        self.user_id = user_id
        self.tags = list(tags or ())
        self.metadata = dict(metadata or {})
        self.input = input
        self.capture_io = capture_io
        self._open: list[tuple[Span, Token[Span | None]]] = []

    def _start(self, input: Any = None) -> tuple[Span, Token[Span | None]]:
        span = Span(new_trace_id(), self.name, current_span.get(), self.kind)
        if self.session_id:
            span.session_id = self.session_id
        if self.user_id:
            span.user_id = self.user_id
        span.tags.extend(self.tags)
        span.metadata.update(self.metadata)
        span.input = input if input is not None else self.input
        span.started = time.time()
        span.t0 = time.perf_counter()
        return span, current_span.set(span)

    @staticmethod
    def _end(span: Span, token: Token[Span | None], error: BaseException | None) -> None:
        span.t1 = time.perf_counter()
        span.error = error
        try:
            current_span.reset(token)
        except ValueError:  # ended in another context than it began in (a generator moved across tasks)
            current_span.set(None)
        client = _state.client
        if client is not None:
            client.record(span)

    def __enter__(self) -> Span:
        span, token = self._start()
        self._open.append((span, token))
        return span

    def __exit__(self, kind: Any, error: BaseException | None, tb: Any) -> None:
        span, token = self._open.pop()
        self._end(span, token, error)

    async def __aenter__(self) -> Span:
        return self.__enter__()

    async def __aexit__(self, kind: Any, error: BaseException | None, tb: Any) -> None:
        self.__exit__(kind, error, tb)

    def __call__(self, func: F) -> F:
        capture = self.capture_io

        def arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            return {"args": list(args), "kwargs": dict(kwargs)} if capture else None

        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                span, token = self._start(arguments(args, kwargs))
                try:
                    result = await func(*args, **kwargs)
                except BaseException as exc:
                    self._end(span, token, exc)
                    raise
                if capture:
                    span.output = result
                self._end(span, token, None)
                return result

            return async_wrapper  # type: ignore[return-value]

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            span, token = self._start(arguments(args, kwargs))
            try:
                result = func(*args, **kwargs)
            except BaseException as exc:
                self._end(span, token, exc)
                raise
            if capture:
                span.output = result
            self._end(span, token, None)
            return result

        return wrapper  # type: ignore[return-value]


def trace(name: str | Callable[..., Any] | None = None, **options: Any) -> Any:
    """``with tracerelay.trace("retrieve", kind="retrieval"):``, ``@tracerelay.trace("retrieve")`` or bare
    ``@tracerelay.trace``."""
    if callable(name):
        return TraceBlock(getattr(name, "__qualname__", "function"))(name)
    return TraceBlock(name or "block", **options)
