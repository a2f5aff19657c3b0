"""The delivery engine: outbox rows → exporters, with retries, a circuit breaker, fallbacks and a dead letter.

A `deliver` task hands `deliver_batch` a list of Delivery ids. It reads the ones still pending and
due, groups them by (team, destination), and for each group sends chunks of up to the exporter's
``max_batch``. Each chunk is claimed first with a conditional UPDATE (pending → sending, stamped with
a fresh claim token), so two workers never send the same row; outcomes are written only where the
token is still ours. Outcomes:

* delivered;
* a transient failure → pending again at ``now + backoff`` (exponential, full jitter, at least the
  destination's Retry-After), until the integration's ``max_attempts``;
* a permanent failure, the last attempt, or a destination that no longer resolves → the row gives up:
  ``failed`` with a new row for the next fallback destination, or ``dead`` (the dead letter, replayable);
* items the destination refused in an answer that accepted the others (`Exporter.export_encoded`
  returns them, with its reason for each) → retried or given up each with that reason, the others
  delivered; a batch of which it refused an unknown part (`Exporter.warning`) → delivered, the
  warning kept as each row's ``last_error``;
* a trace the exporter cannot encode (`Exporter.encode_batch`: a time its format cannot represent,
  a span older than the destination accepts) → that row alone gives up the same way, with the
  reason; the rest of its chunk is sent.

States: pending → sending → delivered | pending (retry) | failed (a fallback carries on) | dead.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import time
import uuid
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import httpx
from django.utils import timezone

from config import invalidation, metrics
from debugmode.recording import export_recorded
from debugmode.state import active as debug_active
from integrations.exporters.base import Exporter, ExportError, Refused, Target
from integrations.models import Integration
from integrations.registry import exporter_class
from integrations.selectors import resolve_target
from privacy.records import export_records
from traces.models import Trace
from traces.records import TraceRecord

from .admission import admit
from .batches import ROW_FIELDS, chunks, units, with_batch_mates
from .breaker import CircuitBreaker
from .client import http_client
from .models import Delivery, DeliveryStatus
from .policy import RetryPolicy
from .scores import follow_delivered
from .states import EARLY_SLACK, DeliveryReport, claim, defer, give_up, mine, retry, wait

log = logging.getLogger(__name__)

LAST_ERROR_MAX = 2000


@dataclass(frozen=True, slots=True)
class _Sender:
    integration: Integration | None
    target: Target
    exporter: Exporter
    policy: RetryPolicy


def deliver_batch(delivery_ids: Sequence[int], *, client: httpx.Client | None = None) -> DeliveryReport:
    """Deliver the pending, due rows among ``delivery_ids``; safe to call twice with the same ids."""
    report = DeliveryReport()
    ids = list(dict.fromkeys(int(i) for i in delivery_ids))
    if not ids:
        return report
    now = timezone.now()
    # By primary key only (status is tested here): see `claim` on why the status index is avoided.
    rows = Delivery.objects.filter(pk__in=ids).values(*ROW_FIELDS, "status")
    due = [r for r in rows if r["status"] == DeliveryStatus.PENDING and r["next_attempt_at"] <= now + EARLY_SLACK]
    report.skipped += len(ids) - len(due)
    due = with_batch_mates(due, now)  # a batch is re-sent whole, whichever of its rows the task named

    groups: dict[tuple[int, str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in due:
        groups[(row["team_id"], row["destination"], _spec_key(row["spec"]))].append(row)

    http = client or http_client()
    for (team_id, destination, _), group in groups.items():
        with metrics.deliveries_counted(destination, report):
            _deliver_group(team_id, destination, group, http, report)
    return report


# Resolved destinations, per process, for a few seconds: resolving costs queries and a decryption,
# and a busy worker would repeat them for every task. An integration edit empties it in every
# process at once (config/invalidation.py); the TTL bounds staleness only while that bus is down.
RESOLVE_TTL_S = 5.0
_resolved: dict[tuple[int, str], tuple[float, Integration | None, Target]] = {}


def _resolve(team_id: int, spec: Mapping[str, Any]) -> tuple[Integration | None, Target]:
    key = (team_id, _spec_key(spec))
    now = time.monotonic()
    hit = _resolved.get(key)
    if hit is not None and now - hit[0] < RESOLVE_TTL_S:
        return hit[1], hit[2]
    invalidation.ensure_listening()
    integration, target = resolve_target(team_id, spec)
    if len(_resolved) > 10_000:
        _resolved.clear()
    _resolved[key] = (now, integration, target)
    return integration, target


def forget_resolved(_team: str | None = None) -> None:
    _resolved.clear()


invalidation.subscribe(invalidation.INTEGRATIONS, forget_resolved)


def _spec_key(spec: Mapping[str, Any]) -> str:
    # Rows of one destination may differ in tags or webhook url (routed by different rules);
    # the fallback chain and sample rate do not change how a row is sent.
    return json.dumps({k: v for k, v in spec.items() if k not in ("fallback", "sample_rate")}, sort_keys=True)


def _deliver_group(
    team_id: int, destination: str, rows: list[dict[str, Any]], http: httpx.Client, report: DeliveryReport
) -> None:
    try:
        integration, target = _resolve(team_id, rows[0]["spec"])
        cls = exporter_class(target.platform)
        sender = _Sender(integration, target, cls(target, http), RetryPolicy.from_integration(integration))
    except (LookupError, KeyError) as exc:
        # The integration was deleted or disabled after routing: nothing to retry against.
        message = f"destination {destination!r} cannot be resolved: {exc.args[0] if exc.args else exc}"
        for chunk in chunks(rows, 500):
            token, claimed = claim(chunk)
            if claimed:
                give_up(claimed, token, message, None, None, report)
            report.skipped += len(chunk) - len(claimed)
        return
    except Exception as exc:  # e.g. a secret that no configured Fernet key decrypts: fixable, so retry
        log.exception("cannot prepare destination %r of team %s", destination, team_id)
        error = ExportError(f"cannot prepare destination {destination!r}: {type(exc).__name__}: {exc}")
        for chunk in chunks(rows, 500):
            token, claimed = claim(chunk)
            report.skipped += len(chunk) - len(claimed)
            if claimed:
                _failed(claimed, token, error, RetryPolicy.from_integration(None), None, report)
        return

    breaker = CircuitBreaker(team_id, destination)
    size = max(1, int(getattr(sender.exporter, "max_batch", 100)))
    pending = units(rows, size)
    while pending:
        permit = breaker.acquire()
        if not permit.allowed:
            report.deferred += defer([row for _, members in pending for row in members], permit.retry_at)
            return
        batch_id, members = pending.pop(0)
        if permit.probe and batch_id is None and len(members) > 1:
            # The probe is one request: one new row, or a stored batch whole (never split).
            pending.insert(0, (None, members[1:]))
            members = members[:1]
        _send_chunk(members, batch_id, sender, breaker, permit.probe, report)


def _send_chunk(
    rows: list[dict[str, Any]],
    batch_id: uuid.UUID | None,
    sender: _Sender,
    breaker: CircuitBreaker,
    probe: bool,
    report: DeliveryReport,
) -> None:
    """Send ``rows`` in one request: a stored batch re-formed (``batch_id``), or a new batch."""
    resend = batch_id is not None
    token, claimed = claim(rows, batch_id=batch_id or uuid.uuid4(), whole=resend)
    if resend and 0 < len(claimed) < len(rows):
        # Part of the batch changed hands since it was read (a replay, a worker with an older view):
        # this smaller set is a batch of its own from now on, so that its own re-sends stay whole.
        mine(token, claimed).update(batch_id=uuid.uuid4())
    report.skipped += len(rows) - len(claimed)
    if not claimed:
        if probe:
            breaker.release_probe()
        return
    records_by_trace = _records([r["trace_id"] for r in claimed])
    present = [r for r in claimed if r["trace_id"] in records_by_trace]
    records = [records_by_trace[r["trace_id"]] for r in present]
    integration_id = sender.integration.pk if sender.integration is not None else None
    # The destination's PII policy entry, before export to it: an integration's by its name, an ad-hoc
    # webhook's by the name its rule gives it (a rule stored when a url could redirect an integration
    # keeps that integration's entry: its traces are never given more than before).
    records = export_records(claimed[0]["team_id"], sender.target.name, records)
    # The integration's own settings: environments, quota, identity, transform (delivery.admission).
    admitted = admit(
        present, records, integration_id=integration_id, config=sender.target.config, token=token, report=report
    )
    present, records = admitted.rows, admitted.records
    # Each trace is encoded on its own: one this destination cannot represent gives up alone.
    batch, refused = sender.exporter.encode_batch(records)
    waiting = sender.exporter.waiting
    if refused:
        for reason, same in _by_reason(present, refused).items():
            give_up(same, token, reason, None, integration_id, report)
    if waiting:  # a span whose parent has not arrived yet, for a destination that needs it first
        later = [present[i] for i in waiting]
        report.deferred += wait(later, token, next(iter(waiting.values())), sender.exporter.wait_seconds)
    if refused or waiting:
        present = [r for i, r in enumerate(present) if i not in refused and i not in waiting]
    if not batch:
        if probe:  # nothing was sent: the destination's state is still unknown
            breaker.release_probe()
        return
    try:
        if debug_active(claimed[0]["team_id"]):  # debug mode: the exporter's requests are recorded
            answer = export_recorded(sender.exporter, batch, present)
        else:
            answer = sender.exporter.export_encoded(batch)
    except ExportError as exc:
        error: ExportError = exc
    except httpx.HTTPError as exc:  # an exporter that let a transport error through: transient
        error = ExportError(f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # a bug in an exporter must not leave rows stuck in "sending"
        log.exception("exporter %s crashed", sender.target.platform)
        error = ExportError(f"exporter error: {type(exc).__name__}: {exc}")
    else:
        rejected: Refused = answer or {}
        if rejected:  # the destination took some items and refused these, saying why
            _refused_items([present[i] for i in rejected], list(rejected.values()), token, sender, report)
            present = [r for i, r in enumerate(present) if i not in rejected]
        now = timezone.now()
        # The destination took the batch but refused an unknown part of it (an OTLP partial success):
        # delivered, with its word on each row.
        warning = getattr(sender.exporter, "warning", None)
        noted = {"last_error": f"delivered with a warning: {warning}"[:LAST_ERROR_MAX]} if warning else {}
        report.delivered += mine(token, present).update(
            status=DeliveryStatus.DELIVERED,
            delivered_at=now,
            updated_at=now,
            claim_token=None,
            integration_id=integration_id,
            **noted,
        )
        breaker.record_success()
        _scores_follow(present, present[0]["destination"])
        return

    message = _error_text(error)
    if error.permanent:
        if probe:  # the destination answered: it is up, whatever it thought of this batch
            breaker.record_success()
        give_up(present, token, message, error.status_code, integration_id, report)
        return
    breaker.record_failure(probe=probe)
    _failed(present, token, error, sender.policy, integration_id, report)


def _refused_items(
    rows: list[dict[str, Any]],
    errors: list[ExportError],
    token: uuid.UUID,
    sender: _Sender,
    report: DeliveryReport,
) -> None:
    """Items the destination refused in an answer that accepted others: each gives up (permanent)
    or is retried, with the destination's reason for it."""
    integration_id = sender.integration.pk if sender.integration is not None else None
    by_error: dict[tuple[str, bool, int | None], list[dict[str, Any]]] = defaultdict(list)
    first: dict[tuple[str, bool, int | None], ExportError] = {}
    for row, error in zip(rows, errors, strict=True):
        key = (_error_text(error), error.permanent, error.status_code)
        by_error[key].append(row)
        first.setdefault(key, error)
    for key, same in by_error.items():
        error = first[key]
        if error.permanent:
            give_up(same, token, key[0], error.status_code, integration_id, report)
        else:
            _failed(same, token, error, sender.policy, integration_id, report)


def _scores_follow(rows: list[dict[str, Any]], destination: str) -> None:
    """Scores posted before these traces reached ``destination`` follow them there (delivery.scores).
    A failure here must not undo a delivery: the sweeper's next pass cannot find these, so it is logged."""
    try:
        follow_delivered([r["trace_id"] for r in rows], destination)
    except Exception:
        log.exception("could not queue the scores of %d traces delivered to %s", len(rows), destination)


def _failed(
    rows: list[dict[str, Any]],
    token: uuid.UUID,
    error: ExportError,
    policy: RetryPolicy,
    integration_id: int | None,
    report: DeliveryReport,
) -> None:
    """A transient failure: retry the rows with attempts left, give up on the others."""
    message = _error_text(error)
    exhausted = [r for r in rows if r["attempts"] >= policy.max_attempts]
    retrying = [r for r in rows if r["attempts"] < policy.max_attempts]
    if exhausted:
        note = f"gave up after {policy.max_attempts} attempts: {message}"
        give_up(exhausted, token, note, error.status_code, integration_id, report)
    if retrying:
        report.retried += retry(retrying, token, message, error, policy, integration_id)


@functools.cache
def _record_columns() -> tuple[str, ...]:
    """The Trace columns a `TraceRecord` is made of (not the routing decisions and other bulk)."""
    wanted = {f.name for f in dataclasses.fields(TraceRecord)}
    return ("id", *(f.attname for f in Trace._meta.concrete_fields if f.attname in wanted))


def _records(trace_pks: Sequence[Any]) -> dict[Any, TraceRecord]:
    """The traces as exporters see them; plain values, not model instances (this is the hot path)."""
    rows = Trace.objects.filter(pk__in=list(trace_pks)).values(*_record_columns())
    return {row["id"]: TraceRecord.from_trace(SimpleNamespace(**row)) for row in rows}


def _by_reason(rows: list[dict[str, Any]], refused: Mapping[int, str]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for index, reason in refused.items():
        out[reason[:LAST_ERROR_MAX]].append(rows[index])
    return out


def _error_text(error: ExportError) -> str:
    text = error.message or str(error) or type(error).__name__
    if error.status_code and str(error.status_code) not in text:
        text = f"HTTP {error.status_code}: {text}"
    return text[:LAST_ERROR_MAX]
