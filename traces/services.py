"""Trace ingestion: normalise → price → route → one transaction (traces + outbox rows) → enqueue.

Every front door (the REST API, batches, OTLP, the proxy's background writer) calls
`traces_ingest`. It runs its own transaction, so it works in a request and in any thread.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.principals import KeyPrincipal
from routing.models import Delivery
from routing.outbox import deliveries_for, enqueue_on_commit
from routing.router import RoutingResult, route
from routing.selectors import compiled_routing

from .models import Trace
from .normalize import TraceValidationError, normalize_trace
from .records import TraceRecord

log = logging.getLogger(__name__)


@dataclass(slots=True)
class IngestResult:
    """What became of item ``index``: the stored row (new, or the one already stored under its id) or errors."""

    index: int
    trace: Trace | None
    created: bool
    errors: dict[str, list[str]] | None
    status: int  # 201 stored, 200 already stored under this id, 400/413 invalid


def traces_ingest(*, principal: KeyPrincipal, items: Sequence[Mapping[str, Any]], source: str) -> list[IngestResult]:
    """Store the valid items (even when others fail) with their routing decisions and outbox rows."""
    results: list[IngestResult | None] = [None] * len(items)
    records: list[tuple[int, TraceRecord]] = []
    client_ids: set[str] = set()
    for index, item in enumerate(items):
        try:
            record = normalize_trace(item, team_id=principal.team_id, environment=principal.environment, source=source)
        except TraceValidationError as exc:
            results[index] = IngestResult(index, None, False, exc.errors, exc.status)
            continue
        records.append((index, record))
        if item.get("id") is not None:
            client_ids.add(record.trace_id)

    if records:
        for attempt in range(3):
            try:
                _store(principal, records, client_ids, results)
                break
            except IntegrityError:
                # Another request stored one of these client ids between our look-up and our insert:
                # go again, and this time the look-up finds it.
                if attempt == 2:
                    raise
                log.info("trace id collision on ingest, retrying")
    return [r for r in results if r is not None]


def _store(
    principal: KeyPrincipal,
    records: list[tuple[int, TraceRecord]],
    client_ids: set[str],
    results: list[IngestResult | None],
) -> None:
    team_id = principal.team_id
    # Only client-chosen ids can already exist: ours are fresh UUIDv7s.
    stored: dict[str, Trace] = {}
    if client_ids:
        stored = {t.trace_id: t for t in Trace.objects.filter(team_id=team_id, trace_id__in=client_ids)}

    compiled = compiled_routing(team_id)
    now = timezone.now()
    new_rows: list[Trace] = []
    deliveries: list[Delivery] = []
    pending: dict[str, Trace] = {}
    outcome: list[tuple[int, Trace, bool]] = []
    for index, record in records:
        existing = stored.get(record.trace_id) or pending.get(record.trace_id)
        if existing is not None:
            outcome.append((index, existing, False))
            continue
        result = route(record.condition_context(), compiled)
        row = _row(record, principal, result, now)
        pending[record.trace_id] = row
        new_rows.append(row)
        deliveries.extend(deliveries_for(row, result))
        outcome.append((index, row, True))

    if new_rows:
        with transaction.atomic():
            Trace.objects.bulk_create(new_rows)
            if deliveries:
                Delivery.objects.bulk_create(deliveries)
                enqueue_on_commit([d.pk for d in deliveries])
    for index, row, created in outcome:
        results[index] = IngestResult(index, row, created, None, 201 if created else 200)


def _row(record: TraceRecord, principal: KeyPrincipal, result: RoutingResult, now: Any) -> Trace:
    return Trace(
        team_id=record.team_id,
        trace_id=record.trace_id,
        api_key_id=principal.key_id,
        source=record.source,
        model=record.model,
        provider=record.provider,
        prompt_tokens=record.prompt_tokens,
        completion_tokens=record.completion_tokens,
        total_tokens=record.total_tokens,
        latency_ms=record.latency_ms,
        time_to_first_token_ms=record.time_to_first_token_ms,
        timestamp=record.timestamp,
        received_at=now,
        status=record.status,
        error_type=record.error_type,
        error_message=record.error_message,
        input=record.input,
        output=record.output,
        tags=list(record.tags),
        metadata=record.metadata,
        environment=record.environment,
        service_name=record.service_name,
        session_id=record.session_id,
        user_id=record.user_id,
        cost=record.cost,
        client_cost=record.client_cost,
        unpriced=record.unpriced,
        usage_estimated=record.usage_estimated,
        price_source=record.price_source,
        price_version=record.price_version,
        destinations=result.destinations,
        routing=[d.as_dict() for d in result.decisions],
    )
