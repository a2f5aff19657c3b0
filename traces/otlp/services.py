"""`otlp_export`: the spans of one OTLP request in, stored traces (every span, each a span of its run)
and a count of refused spans out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from accounts.principals import KeyPrincipal
from pipeline.services import traces_ingest

from .mapping import CALL_KINDS, SpanRefused, span_kind, span_to_item
from .spans import PlainSpan, iter_spans

SOURCE = "otlp"
MAX_REASONS = 5  # in `partial_success.error_message`: enough to see what is wrong, bounded
# The kind of a call that wraps other calls of its request (an OpenInference LLM span of a framework
# around the instrumented client's own): a structural span, so the run's cost counts each call once.
WRAPPER_KIND = "chain"


@dataclass(slots=True)
class ExportOutcome:
    stored: int = 0  # new traces
    existing: int = 0  # spans sent before (same trace and span id): the stored trace stands
    rejected: int = 0
    reasons: list[str] = field(default_factory=list)

    def refuse(self, span_id: str, reason: str) -> None:
        self.rejected += 1
        if len(self.reasons) < MAX_REASONS:
            self.reasons.append(f"span {span_id or '(invalid id)'}: {reason}")

    @property
    def error_message(self) -> str:
        if not self.rejected:
            return ""
        more = f" (and {self.rejected - len(self.reasons)} more)" if self.rejected > len(self.reasons) else ""
        return f"{self.rejected} span(s) refused: " + "; ".join(self.reasons) + more


def otlp_export(*, principal: KeyPrincipal, request: ExportTraceServiceRequest) -> ExportOutcome:
    """Map and store every span (the valid ones, even when others are refused)."""
    outcome = ExportOutcome()
    spans = list(iter_spans(request))
    kinds = [span_kind(span.attributes) for span in spans]
    for index in _wrapping_calls(spans, kinds):
        kinds[index] = WRAPPER_KIND
    items: list[dict[str, Any]] = []
    span_ids: list[str] = []
    for span, kind in zip(spans, kinds, strict=True):
        try:
            item = span_to_item(span, kind)
        except SpanRefused as exc:
            outcome.refuse(span.span_id, str(exc))
            continue
        items.append(item)
        span_ids.append(span.span_id)
    step = settings.BATCH_MAX_TRACES  # one transaction per chunk, as for a REST batch
    for start in range(0, len(items), step):
        for result in _ingest(principal, items[start : start + step]):
            if result.trace is None:
                outcome.refuse(span_ids[start + result.index], _reason(result.errors or {}))
            elif result.created:
                outcome.stored += 1
            else:
                outcome.existing += 1
    return outcome


def _wrapping_calls(spans: Sequence[PlainSpan], kinds: Sequence[str]) -> set[int]:
    """The indexes of the calls (`llm`, `embedding`) that have another call below them in this request:
    wrappers, whose usage is their calls' again. Each span's ancestors are walked once (O(spans))."""
    at = {(span.trace_id, span.span_id): i for i, span in enumerate(spans) if span.span_id}
    wrappers: set[int] = set()
    walked: set[int] = set()
    for i, span in enumerate(spans):
        if kinds[i] not in CALL_KINDS:
            continue
        parent = at.get((span.trace_id, span.parent_span_id)) if span.parent_span_id else None
        while parent is not None and parent not in walked:
            walked.add(parent)
            if kinds[parent] in CALL_KINDS:
                wrappers.add(parent)
            above = spans[parent]
            parent = at.get((above.trace_id, above.parent_span_id)) if above.parent_span_id else None
    return wrappers


def _ingest(principal: KeyPrincipal, items: Sequence[Mapping[str, Any]]) -> list[Any]:
    """The one call into the ingest write path (normalise → price → route → store with outbox)."""
    return traces_ingest(principal=principal, items=items, source=SOURCE)


def _reason(errors: dict[str, list[str]]) -> str:
    return "; ".join(
        f"{name}: {' '.join(messages)}" if name else " ".join(messages) for name, messages in errors.items()
    )
