"""Trace ingestion: normalise → price → route → one transaction (traces + outbox rows) → enqueue.

Every front door (the REST API, batches, OTLP, the proxy's background writer) calls
`traces_ingest`, or its two halves: `traces_normalize` (CPU only, fine on an event loop) and
`traces_store` (the database; any thread). Each store runs its own transaction, so it works in a
request and in any thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.principals import KeyPrincipal
from config.bulk import build_row, insert_rows
from delivery.models import Delivery
from delivery.outbox import deliveries_for, enqueue_on_commit
from delivery.runs import claim_runs
from privacy.records import stored_records
from routing.router import RoutingResult, route
from routing.selectors import compiled_routing
from traces.models import Trace, _uuid7
from traces.normalize import TraceValidationError, normalize_trace
from traces.records import TraceRecord
from traces.runs.summary import add_spans
from traces.signals import traces_stored

log = logging.getLogger(__name__)
NOT_ROUTED = RoutingResult()  # what an import without `route=true` stores: no decision, no destination

Item = TypeVar("Item")
Stored = TypeVar("Stored")


@dataclass(slots=True)
class IngestResult:
    """What became of item ``index``: the stored row (new, or the one already stored under its id) or errors."""

    index: int
    trace: Trace | None
    created: bool
    errors: dict[str, list[str]] | None
    status: int  # 201 stored, 200 already stored under this id, 400/413 invalid


@dataclass(slots=True)
class PendingTrace:
    """A valid trace on its way to the database: item ``index`` of its request, sent by ``principal``."""

    index: int
    record: TraceRecord
    principal: KeyPrincipal
    client_id: bool  # the client chose the id, so it may be stored already
    pii: dict[str, Any] | None = None  # what the PII policy found before storage (the `pii` column)
    pii_applied: bool = False  # the policy ran: a retried store must not run it on its own output


def traces_ingest(*, principal: KeyPrincipal, items: Sequence[Mapping[str, Any]], source: str) -> list[IngestResult]:
    """Store the valid items (even when others fail) with their routing decisions and outbox rows."""
    results, pending = traces_normalize(principal=principal, items=items, source=source)
    if pending:
        for entry, (row, created) in zip(pending, traces_store(pending), strict=True):
            results[entry.index] = IngestResult(entry.index, row, created, None, 201 if created else 200)
    return [r for r in results if r is not None]


def store_parts(
    parts: Sequence[Sequence[Item]],
    store: Callable[[list[Item]], Sequence[Stored]],
    *,
    refused: tuple[type[BaseException], ...] = (Exception,),
    after_failure: Callable[[], None] | None = None,
) -> list[Sequence[Stored] | BaseException]:
    """Store every part with one ``store`` call; when it raises one of ``refused``, store each part
    with a call of its own, so that one part's trouble does not fail the others (the group-commit
    writer's requests, the proxy writer's traces). Per part: its results, in order (``store``
    returns one per item, in order), or what its own call raised. A single part is not tried twice.
    Anything not in ``refused`` propagates: an outage is the caller's to handle."""
    try:
        results = store([item for part in parts for item in part])
    except refused as exc:
        if after_failure is not None:
            after_failure()
        if len(parts) == 1:
            return [exc]
        return [_store_alone(part, store, refused, after_failure) for part in parts]
    out: list[Sequence[Stored] | BaseException] = []
    start = 0
    for part in parts:
        out.append(results[start : start + len(part)])
        start += len(part)
    return out


def _store_alone(
    part: Sequence[Item],
    store: Callable[[list[Item]], Sequence[Stored]],
    refused: tuple[type[BaseException], ...],
    after_failure: Callable[[], None] | None,
) -> Sequence[Stored] | BaseException:
    try:
        return store(list(part))
    except refused as exc:
        if after_failure is not None:
            after_failure()
        return exc


def traces_normalize(
    *, principal: KeyPrincipal, items: Sequence[Mapping[str, Any]], source: str
) -> tuple[list[IngestResult | None], list[PendingTrace]]:
    """Validate and price each item: results for the refused ones, the valid ones to store."""
    results: list[IngestResult | None] = [None] * len(items)
    pending: list[PendingTrace] = []
    for index, item in enumerate(items):
        try:
            record = normalize_trace(item, team_id=principal.team_id, environment=principal.environment, source=source)
        except TraceValidationError as exc:
            results[index] = IngestResult(index, None, False, exc.errors, exc.status)
            continue
        pending.append(PendingTrace(index, record, principal, item.get("id") is not None))
    return results, pending


def traces_store(pending: Sequence[PendingTrace], *, routed: bool = True) -> list[tuple[Trace, bool]]:
    """Route and store valid traces (of any teams) in one transaction: per trace, its row and whether it
    is new (False: that team had stored that client id already, and the stored row is returned).

    ``routed=False`` stores them routed nowhere (no destinations, no deliveries, their runs' routes
    untouched): `POST /api/v1/traces/import` without `route=true` (docs/export.md)."""
    _apply_pii_policies(pending)
    for attempt in range(3):
        try:
            return _store(pending, routed)
        except IntegrityError:
            # Another request stored one of these client ids between our look-up and our insert:
            # go again, and this time the look-up finds it.
            if attempt == 2:
                raise
            log.info("trace id collision on ingest, retrying")
    raise AssertionError("unreachable")


def _apply_pii_policies(pending: Sequence[PendingTrace]) -> None:
    """Each team's PII policy, after normalising and before routing and storage (once: not again on
    a retry). Here, not in `traces_normalize`, because this runs in a thread (the async front doors
    normalise on the event loop, where the policy's database read is not allowed)."""
    by_team: dict[int, list[PendingTrace]] = {}
    for entry in pending:
        if not entry.pii_applied:
            by_team.setdefault(entry.principal.team_id, []).append(entry)
    for team_id, entries in by_team.items():
        records, found = stored_records(team_id, [entry.record for entry in entries])
        for entry, record, pii in zip(entries, records, found, strict=True):
            entry.record, entry.pii, entry.pii_applied = record, pii, True


def _store(pending: Sequence[PendingTrace], routed: bool = True) -> list[tuple[Trace, bool]]:
    # Only client-chosen ids can already exist: ours are fresh UUIDv7s.
    client_ids: dict[int, set[str]] = {}
    for entry in pending:
        if entry.client_id:
            client_ids.setdefault(entry.principal.team_id, set()).add(entry.record.trace_id)
    stored: dict[tuple[int, str], Trace] = {}
    for team_id, ids in client_ids.items():
        for trace in Trace.objects.filter(team_id=team_id, trace_id__in=ids):
            stored[(team_id, trace.trace_id)] = trace

    compiled: dict[int, Any] = {}
    now = timezone.now()
    new_rows: list[Trace] = []
    new_routed: list[tuple[Trace, TraceRecord, RoutingResult]] = []
    outcome: list[tuple[Trace, bool]] = []
    for entry in pending:
        record, team_id = entry.record, entry.principal.team_id
        existing = stored.get((team_id, record.trace_id))
        if existing is not None:
            outcome.append((existing, False))
            continue
        if routed:
            routing = compiled.get(team_id)
            if routing is None:
                routing = compiled[team_id] = compiled_routing(team_id)
            result = route(record.condition_context(), routing)
        else:
            result = NOT_ROUTED
        row = _row(record, entry.principal, result, now)
        row.pii = entry.pii
        stored[(team_id, record.trace_id)] = row  # the same id again in this batch is "already stored"
        new_rows.append(row)
        new_routed.append((row, record, result))
        outcome.append((row, True))

    if new_rows:
        with transaction.atomic():
            # A run is routed as a tree (delivery.runs): its row is locked first, so that concurrent
            # batches of one run see each other's spans and destinations.
            deliveries: list[Delivery] = []
            runs = claim_runs([(record, result) for _, record, result in new_routed]) if routed else None
            if runs is not None:
                for row, record, result in new_routed:
                    deliveries.extend(deliveries_for(row, result))
                    deliveries.extend(runs.follow(row, record, result))
            insert_rows(new_rows)
            add_spans(new_rows)  # their runs' summary rows, under each row's lock (traces.runs.summary)
            traces_stored.send(sender=Trace, rows=new_rows)
            if deliveries:
                insert_rows(deliveries)
            enqueue_on_commit([d.pk for d in deliveries] + (runs.backfill() if runs is not None else []))
    return outcome


def _row(record: TraceRecord, principal: KeyPrincipal, result: RoutingResult, now: Any) -> Trace:
    values = {
        "id": _uuid7(),
        "team_id": record.team_id,
        "trace_id": record.trace_id,
        "run_id": record.run,
        "parent_id": record.parent_id,
        "kind": record.kind,
        "name": record.name,
        "api_key_id": principal.key_id,
        "source": record.source,
        "model": record.model,
        "provider": record.provider,
        "prompt_tokens": record.prompt_tokens,
        "completion_tokens": record.completion_tokens,
        "total_tokens": record.total_tokens,
        **record.details.as_dict(),
        "latency_ms": record.latency_ms,
        "time_to_first_token_ms": record.time_to_first_token_ms,
        "timestamp": record.timestamp,
        "received_at": now,
        "status": record.status,
        "error_type": record.error_type,
        "error_message": record.error_message,
        "input": record.input,
        "output": record.output,
        "tags": list(record.tags),
        "metadata": record.metadata,
        "environment": record.environment,
        "service_name": record.service_name,
        "session_id": record.session_id,
        "user_id": record.user_id,
        "cost": record.cost,
        "client_cost": record.client_cost,
        "unpriced": record.unpriced,
        "usage_estimated": record.usage_estimated,
        "price_source": record.price_source,
        "price_version": record.price_version,
        "destinations": result.destinations,
        "routing": [d.as_dict() for d in result.decisions],
    }
    return build_row(Trace, values)
