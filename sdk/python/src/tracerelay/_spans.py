"""`tracerelay.trace(...)`: a block of the application's own work, as a context manager or a decorator.

A block becomes one trace of its own (``provider`` "span", ``model`` "span:<name>", no tokens), and
the LLM calls made inside it carry ``session_id`` (the outermost block's id unless one is given) and
``metadata.parent_id`` / ``metadata.span``, so the dashboard's feed can show a block's calls together.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable
from contextvars import Token
from typing import Any, TypeVar

from . import _state
from ._ids import new_trace_id
from ._records import Span, current_span

F = TypeVar("F", bound=Callable[..., Any])


class TraceBlock:
    """What `trace()` returns: use it with ``with`` / ``async with``, or as a decorator."""

    def __init__(
        self,
        name: str,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        input: Any = None,
        capture_io: bool = True,
    ) -> None:
        self.name = name
        self.session_id = session_id
        self.user_id = user_id
        self.tags = list(tags or ())
        self.metadata = dict(metadata or {})
        self.input = input
        self.capture_io = capture_io
        self._open: list[tuple[Span, Token[Span | None]]] = []

    def _start(self, input: Any = None) -> tuple[Span, Token[Span | None]]:
        span = Span(new_trace_id(), self.name, current_span.get())
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
    """``with tracerelay.trace("retrieve"):``, ``@tracerelay.trace("retrieve")`` or bare ``@tracerelay.trace``."""
    if callable(name):
        return TraceBlock(getattr(name, "__qualname__", "function"))(name)
    return TraceBlock(name or "block", **options)
