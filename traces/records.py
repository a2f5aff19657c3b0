"""`TraceRecord`: the plain, ORM-free view of a trace that the router and the exporters work on."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from .kinds import CALL_KINDS
from .usage import TokenDetails


@dataclass(frozen=True, slots=True)
class TraceRecord:
    trace_id: str
    team_id: int
    model: str
    provider: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    input_audio_tokens: int = 0
    input_image_tokens: int = 0
    reasoning_tokens: int = 0
    output_audio_tokens: int = 0
    output_image_tokens: int = 0
    latency_ms: int | None = None
    time_to_first_token_ms: int | None = None
    timestamp: datetime | None = None
    status: str = "success"
    error_type: str = ""
    error_message: str = ""
    input: Any = None
    output: Any = None
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    environment: str = ""
    service_name: str = ""
    session_id: str = ""
    user_id: str = ""
    cost: Decimal | None = None
    unpriced: bool = False
    usage_estimated: bool = False
    source: str = "api"
    client_cost: Decimal | None = None
    price_source: str = ""
    price_version: str = ""
    # The run this span belongs to (docs/runs.md): its id (the record's own trace_id for a run of one),
    # the parent span's trace_id ("" for a root), what kind of span it is, and its name.
    run_id: str = ""
    parent_id: str = ""
    kind: str = "llm"
    name: str = ""

    @property
    def is_call(self) -> bool:
        """An LLM or embedding call: priced, counted as a call; the other kinds are the run's structure."""
        return self.kind in CALL_KINDS

    @property
    def details(self) -> TokenDetails:
        return TokenDetails.of(self)

    @property
    def is_error(self) -> bool:
        return self.status in ("error", "rate_limited")

    @property
    def run(self) -> str:
        """The run's id: the client's, else this span's own id (a run of one)."""
        return self.run_id or self.trace_id

    def condition_context(self) -> dict[str, Any]:
        """The variables routing conditions see (DESIGN.md, Routing): plain JSON-like values."""
        return {
            "id": self.trace_id,
            "model": self.model,
            "provider": self.provider,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            # The parts of the prompt and of the completion (`traces.usage.DETAIL_FIELDS`); 0 when not reported.
            "cached_tokens": self.cached_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "input_audio_tokens": self.input_audio_tokens,
            "input_image_tokens": self.input_image_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "output_audio_tokens": self.output_audio_tokens,
            "output_image_tokens": self.output_image_tokens,
            "latency_ms": self.latency_ms if self.latency_ms is not None else 0,
            "time_to_first_token_ms": self.time_to_first_token_ms or 0,
            # An unpriced trace's cost is unknown, not 0: conditions comparing it do not match.
            # A span that is no call has no cost at all (`routing.conditions.NO_COST_REASON`).
            "cost": float(self.cost) if self.cost is not None and not self.unpriced and self.is_call else None,
            "status": self.status,
            "error": self.is_error,
            "error_type": self.error_type,
            "error_message": self.error_message,
            "environment": self.environment,
            "service_name": self.service_name,
            "session_id": self.session_id,
            "user_id": self.user_id,
            "tags": list(self.tags),
            "metadata": dict(self.metadata),
            "unpriced": self.unpriced,
            "usage_estimated": self.usage_estimated,
            "source": self.source,
            "run_id": self.run,
            "parent_id": self.parent_id,
            "kind": self.kind,
            "name": self.name,
        }

    @classmethod
    def from_trace(cls, trace: Any) -> TraceRecord:
        """From a `traces.models.Trace` row (or anything with the same attributes)."""
        return cls(
            trace_id=trace.trace_id,
            team_id=trace.team_id,
            model=trace.model,
            provider=trace.provider,
            prompt_tokens=trace.prompt_tokens,
            completion_tokens=trace.completion_tokens,
            total_tokens=trace.total_tokens,
            **TokenDetails.of(trace).as_dict(),
            latency_ms=trace.latency_ms,
            time_to_first_token_ms=trace.time_to_first_token_ms,
            timestamp=trace.timestamp,
            status=trace.status,
            error_type=trace.error_type,
            error_message=trace.error_message,
            input=trace.input,
            output=trace.output,
            tags=tuple(trace.tags or ()),
            metadata=dict(trace.metadata or {}),
            environment=trace.environment,
            service_name=trace.service_name,
            session_id=trace.session_id,
            user_id=trace.user_id,
            cost=trace.cost,
            unpriced=trace.unpriced,
            usage_estimated=trace.usage_estimated,
            source=trace.source,
            client_cost=trace.client_cost,
            price_source=trace.price_source,
            price_version=trace.price_version,
            run_id=trace.run_id or trace.trace_id,
            parent_id=trace.parent_id,
            kind=trace.kind,
            name=trace.name,
        )


@dataclass(frozen=True, slots=True)
class ScoreRecord:
    """A score as exporters send it: ``name`` is the destination's name for it (score_mappings);
    the trace's ids and time let each tool attach it to the span it received."""

    score_id: str
    team_id: int
    trace_id: str
    run_id: str
    name: str
    value: Any
    data_type: str  # numeric | boolean | categorical
    comment: str
    source: str
    created_at: datetime
    trace_timestamp: datetime | None = None
    trace_end: datetime | None = None
    # The kind of span the score is on ("" when unknown): a destination that logs calls only
    # (Helicone) refuses a score on a structural span it never received.
    trace_kind: str = ""
