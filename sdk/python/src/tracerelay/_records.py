"""What the caller's thread records: plain references and clock readings, no conversion.

Turning a call into a trace dict (reading usage, rebuilding a streamed reply, converting pydantic
objects to JSON) happens on the worker thread, so an instrumented call costs the application a few
attribute stores and one `deque.append`.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

# What a `trace()` block may be (the server's span kinds but `llm` and `embedding`: those are the
# instrumented calls, which name their model). docs/sdk.md, "Runs".
SPAN_KINDS = ("agent", "tool", "retrieval", "chain", "workflow", "guardrail", "event", "other")
DEFAULT_KIND = "chain"


class Span:
    """A span of a run: a block of the application's own work (`tracerelay.trace`), and the parent of
    the calls and blocks inside it. A root's ``run_id`` is its own ``id``; its children share it."""

    __slots__ = (
        "id",
        "name",
        "kind",
        "run_id",
        "parent_id",
        "session_id",
        "user_id",
        "tags",
        "metadata",
        "input",
        "output",
        "error",
        "started",
        "t0",
        "t1",
    )

    def __init__(self, id: str, name: str, parent: Span | None, kind: str = DEFAULT_KIND) -> None:
        self.id = id
        self.name = name
        self.kind = kind
        self.parent_id = parent.id if parent is not None else None
        self.run_id: str = parent.run_id if parent is not None else id
        self.session_id: str | None = parent.session_id if parent is not None else None
        self.user_id: str | None = parent.user_id if parent is not None else None
        self.tags: list[str] = list(parent.tags) if parent is not None else []
        self.metadata: dict[str, Any] = {}
        self.input: Any = None
        self.output: Any = None
        self.error: BaseException | None = None
        self.started = 0.0
        self.t0 = 0.0
        self.t1 = 0.0

    def set_output(self, value: Any) -> None:
        self.output = value

    def set_metadata(self, key: str, value: Any) -> None:
        self.metadata[key] = value

    def add_tags(self, *tags: str) -> None:
        self.tags.extend(tags)


current_span: ContextVar[Span | None] = ContextVar("tracerelay_span", default=None)


class Call:
    """One instrumented LLM call. ``build`` (the provider's) turns it into the trace's own fields."""

    __slots__ = (
        "provider",
        "endpoint",
        "build",
        "request",
        "result",
        "error",
        "started",
        "t0",
        "t1",
        "ttft",
        "chunks",
        "stream",
        "usage_injected",
        "span",
    )

    def __init__(
        self, provider: str, endpoint: str, build: Callable[[Call], dict[str, Any]], request: dict[str, Any]
    ) -> None:
        self.provider = provider
        self.endpoint = endpoint
        self.build = build
        self.request = request
        self.result: Any = None
        self.error: BaseException | None = None
        self.started = 0.0  # wall clock, time.time()
        self.t0 = 0.0  # perf_counter at the start, at the end, at the first streamed item
        self.t1 = 0.0
        self.ttft: float | None = None
        self.chunks: list[Any] | None = None
        self.stream = False
        self.usage_injected = False
        self.span: Span | None = None
