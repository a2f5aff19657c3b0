"""`otlp_export`: the spans of one OTLP request in, stored traces and a count of refused spans out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from accounts.principals import KeyPrincipal
from pipeline.services import traces_ingest

from .mapping import SpanRefused, span_to_item
from .spans import iter_spans

SOURCE = "otlp"
MAX_REASONS = 5  # in `partial_success.error_message`: enough to see what is wrong, bounded


@dataclass(slots=True)
class ExportOutcome:
    stored: int = 0  # new traces
    existing: int = 0  # spans sent before (same trace and span id): the stored trace stands
    skipped: int = 0  # not LLM calls: accepted, not stored (docs/otlp.md)
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
    """Map every span; store the LLM calls (the valid ones, even when others are refused)."""
    outcome = ExportOutcome()
    items: list[dict[str, Any]] = []
    span_ids: list[str] = []
    for span in iter_spans(request):
        try:
            item = span_to_item(span)
        except SpanRefused as exc:
            outcome.refuse(span.span_id, str(exc))
            continue
        if item is None:
            outcome.skipped += 1
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


def _ingest(principal: KeyPrincipal, items: Sequence[Mapping[str, Any]]) -> list[Any]:
    """The one call into the ingest write path (normalise → price → route → store with outbox)."""
    return traces_ingest(principal=principal, items=items, source=SOURCE)


def _reason(errors: dict[str, list[str]]) -> str:
    return "; ".join(
        f"{name}: {' '.join(messages)}" if name else " ".join(messages) for name, messages in errors.items()
    )
