"""Scores follow their trace (docs/scores.md): to every destination that received the trace, and to
one that receives it later.

A `ScoreDelivery` row is made for each (score, delivered Delivery of its trace) pair, at two moments:
when a score is posted (`route_scores`: the destinations that have the trace already) and when a
trace is delivered (`follow_delivered`, the engine's hook: the scores posted before). Rows are sent
by the `delivery.send_scores` task (`send_scores`), claimed first like trace deliveries, retried with
the integration's retry policy, and re-dispatched by the sweeper (`sweep_scores`) when a task was lost.
An integration's ``config.score_mappings`` renames a score there, or withholds it (null).

Routing runs on the score's commit; a crash between the two would lose it, so the sweeper also routes
again (`reroute_scores`) the recent scores whose trace was delivered somewhere that has no row for
them: bounded per pass, idempotent through the unique (score, destination) row.
"""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import httpx
from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from config.celery import Queue, app
from integrations.exporters.base import ExportError
from integrations.registry import exporter_class
from integrations.selectors import resolve_target
from traces.models import Score, Trace
from traces.scores import score_record

from .client import http_client
from .models import Delivery, DeliveryStatus, ScoreDelivery, ScoreStatus
from .policy import RetryPolicy, backoff_delay

log = logging.getLogger(__name__)

SEND_SCORES_TASK = "delivery.send_scores"
ERROR_MAX = 2000
UNSUPPORTED = "{platform} takes no scores from tracerelay"
WITHHELD = "withheld by this integration's score_mappings"
# The sweeper's second look at routing: scores made up to this long ago, from where its last pass
# stopped (a cache key) less a grace; all of them when the cache has forgotten.
REROUTE_LOOKBACK = timedelta(hours=1)
REROUTE_LIMIT = 1000
REROUTE_MARK = "tracerelay:scores:rerouted-until"


@dataclass
class ScoreReport:
    delivered: int = 0
    retried: int = 0
    dead: int = 0
    withheld: int = 0
    skipped: int = 0


def route_scores(score_ids: Sequence[Any]) -> list[int]:
    """Rows for these scores to every destination their trace was delivered to; published on commit."""
    scores = list(Score.objects.filter(pk__in=list(score_ids)).values("pk", "trace_id", "team_id"))
    return _make_rows(scores, Delivery.objects.filter(trace_id__in={s["trace_id"] for s in scores}))


def follow_delivered(trace_pks: Iterable[Any], destination: str) -> list[int]:
    """The engine's hook: ``destination`` just received these traces; their scores follow."""
    pks = list(trace_pks)
    if not pks:
        return []
    scores = list(Score.objects.filter(trace_id__in=pks).values("pk", "trace_id", "team_id"))
    if not scores:
        return []
    return _make_rows(scores, Delivery.objects.filter(trace_id__in=pks, destination=destination))


def _make_rows(scores: Sequence[Any], deliveries: Any) -> list[int]:
    if not scores:
        return []
    delivered = list(deliveries.filter(status=DeliveryStatus.DELIVERED).values("pk", "trace_id", "destination"))
    by_trace: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for row in delivered:
        by_trace[row["trace_id"]].append(row)
    now = timezone.now()
    rows = [
        ScoreDelivery(
            team_id=s["team_id"],
            score_id=s["pk"],
            delivery_id=d["pk"],
            destination=d["destination"],
            next_attempt_at=now,
            created_at=now,
            updated_at=now,
        )
        for s in scores
        for d in by_trace.get(s["trace_id"], [])
    ]
    if not rows:
        return []
    ScoreDelivery.objects.bulk_create(rows, ignore_conflicts=True)  # a score goes once to each destination
    ids = list(
        ScoreDelivery.objects.filter(
            score_id__in=[s["pk"] for s in scores],
            destination__in={d["destination"] for d in delivered},
            status=ScoreStatus.PENDING,
        ).values_list("pk", flat=True)
    )
    transaction.on_commit(lambda: publish(ids))
    return ids


def publish(ids: Sequence[int], *, countdown: float | None = None) -> bool:
    if not ids:
        return True
    try:
        app.send_task(SEND_SCORES_TASK, args=[list(ids)], countdown=countdown, queue=str(Queue.DELIVERY), retry=False)
    except Exception as exc:  # the rows wait in the database; the sweeper dispatches them
        log.warning("could not publish %d score deliveries (the sweeper will): %s", len(ids), exc)
        return False
    return True


def send_scores(ids: Sequence[int], *, client: httpx.Client | None = None) -> ScoreReport:
    """Send the pending, due rows among ``ids``, a request per destination; safe to call twice."""
    report = ScoreReport()
    now = timezone.now()
    token = uuid.uuid4()
    claimed = ScoreDelivery.objects.filter(
        pk__in=list(ids), status=ScoreStatus.PENDING, next_attempt_at__lte=now + timedelta(seconds=1)
    ).update(status=ScoreStatus.SENDING, claim_token=token, updated_at=now)
    report.skipped = len(set(ids)) - claimed
    if not claimed:
        return report
    rows = list(ScoreDelivery.objects.filter(claim_token=token).select_related("score", "delivery"))
    groups: dict[tuple[int, str], list[ScoreDelivery]] = defaultdict(list)
    for row in rows:
        groups[(row.team_id, row.destination)].append(row)
    http = client or http_client()
    for group in groups.values():
        _send_group(group, token, http, report)
    return report


def _send_group(rows: list[ScoreDelivery], token: uuid.UUID, http: httpx.Client, report: ScoreReport) -> None:
    first = rows[0]
    try:
        integration, target = resolve_target(first.team_id, first.delivery.spec)
        exporter = exporter_class(target.platform)(target, http)
    except (LookupError, KeyError) as exc:
        _finish(rows, token, ScoreStatus.DEAD, f"destination {first.destination!r} cannot be resolved: {exc}")
        report.dead += len(rows)
        return
    if not exporter.supports_scores:
        _finish(rows, token, ScoreStatus.DEAD, UNSUPPORTED.format(platform=exporter.label or target.platform))
        report.dead += len(rows)
        return
    mappings = dict((integration.config or {}).get("score_mappings") or {}) if integration is not None else {}
    withheld = [r for r in rows if r.score.name in mappings and mappings[r.score.name] is None]
    if withheld:
        _finish(withheld, token, ScoreStatus.WITHHELD, WITHHELD)
        report.withheld += len(withheld)
    sending = [r for r in rows if r not in withheld]
    if not sending:
        return
    traces = {
        t.pk: t
        for t in Trace.objects.filter(pk__in={r.delivery.trace_id for r in sending}).only(
            "trace_id", "run_id", "timestamp", "latency_ms", "kind"
        )
    }
    policy = RetryPolicy.from_integration(integration)
    size = max(1, int(getattr(exporter, "max_batch", 100)))
    for start in range(0, len(sending), size):
        chunk = sending[start : start + size]
        names = [mappings.get(r.score.name) or r.score.name for r in chunk]
        records = [score_record(r.score, traces[r.delivery.trace_id], n) for r, n in zip(chunk, names, strict=True)]
        exporter.warning = None
        try:
            exporter.export_scores(records)
        except ExportError as exc:
            _failed(chunk, token, exc, policy, report)
        except httpx.HTTPError as exc:
            _failed(chunk, token, ExportError(f"{type(exc).__name__}: {exc}"), policy, report)
        except Exception as exc:  # a bug in an exporter must not leave rows in "sending"
            log.exception("exporter %s crashed sending scores", target.platform)
            _failed(chunk, token, ExportError(f"exporter error: {type(exc).__name__}: {exc}"), policy, report)
        else:
            now = timezone.now()
            # What the destination got differs from the score (a value it could only take rounded):
            # delivered, and said so on the row, as trace deliveries keep their warnings.
            note = f"delivered with a warning: {exporter.warning}"[:ERROR_MAX] if exporter.warning else ""
            for row, name in zip(chunk, names, strict=True):
                ScoreDelivery.objects.filter(pk=row.pk, claim_token=token).update(
                    status=ScoreStatus.DELIVERED,
                    sent_name=name,
                    attempts=row.attempts + 1,
                    delivered_at=now,
                    updated_at=now,
                    claim_token=None,
                    last_error=note,
                )
            report.delivered += len(chunk)


def _finish(rows: Sequence[ScoreDelivery], token: uuid.UUID, status: str, message: str) -> None:
    ScoreDelivery.objects.filter(pk__in=[r.pk for r in rows], claim_token=token).update(
        status=status, last_error=message[:ERROR_MAX], updated_at=timezone.now(), claim_token=None
    )


def _failed(
    rows: Sequence[ScoreDelivery], token: uuid.UUID, error: ExportError, policy: RetryPolicy, report: ScoreReport
) -> None:
    message = (error.message or str(error))[:ERROR_MAX]
    if error.status_code and str(error.status_code) not in message:
        message = f"HTTP {error.status_code}: {message}"[:ERROR_MAX]
    now = timezone.now()
    for row in rows:
        attempts = row.attempts + 1
        if error.permanent or attempts >= policy.max_attempts:
            status, when = ScoreStatus.DEAD, now
            report.dead += 1
        else:
            status = ScoreStatus.PENDING
            when = now + timedelta(seconds=backoff_delay(attempts, policy, retry_after=error.retry_after))
            report.retried += 1
        ScoreDelivery.objects.filter(pk=row.pk, claim_token=token).update(
            status=status,
            attempts=attempts,
            next_attempt_at=when,
            last_error=message,
            updated_at=now,
            claim_token=None,
        )


def _uuid7_floor(moment: datetime) -> uuid.UUID:
    """The smallest UUIDv7 of this millisecond: score ids are UUIDv7, so a time range of scores is a
    range of their primary key (no index on ``created_at`` needed)."""
    return uuid.UUID(int=int(moment.timestamp() * 1000) << 80)


def reroute_scores(*, now: datetime | None = None, limit: int = REROUTE_LIMIT) -> int:
    """Route again the scores posted since the last pass (at most `REROUTE_LOOKBACK` back, and at
    least the sweeper's grace old, so the routing on commit goes first) that lack a row for a
    destination their trace was delivered to: a crash between a score's commit and its routing.
    At most ``limit`` scores a pass; the number of scores routed again."""
    now = now or timezone.now()
    grace = timedelta(seconds=float(settings.TRACERELAY_OUTBOX_SWEEP_GRACE_S))
    until = now - grace
    since = now - REROUTE_LOOKBACK
    try:
        mark = cache.get(REROUTE_MARK)
    except Exception:  # the cache being down must not stop the sweeper: look back the whole hour
        mark = None
    if isinstance(mark, (int, float)):
        # Less a grace: a score whose transaction was slow to commit is seen on the next pass too.
        since = max(since, datetime.fromtimestamp(mark, tz=until.tzinfo) - grace)
    if since >= until:
        return 0
    unrouted = Delivery.objects.filter(trace_id=OuterRef("trace_id"), status=DeliveryStatus.DELIVERED).exclude(
        Exists(ScoreDelivery.objects.filter(score_id=OuterRef(OuterRef("pk")), destination=OuterRef("destination")))
    )
    orphans = list(
        Score.objects.filter(pk__gte=_uuid7_floor(since), pk__lt=_uuid7_floor(until))
        .filter(Exists(unrouted))
        .order_by("pk")
        .values("pk", "trace_id", "team_id")[:limit]
    )
    if orphans:
        log.warning("routing %d scores again: their routing on commit did not happen", len(orphans))
        _make_rows(orphans, Delivery.objects.filter(trace_id__in={s["trace_id"] for s in orphans}))
    if len(orphans) < limit:  # all seen up to ``until``; else the next pass starts over from the mark
        try:
            cache.set(REROUTE_MARK, until.timestamp(), timeout=int(REROUTE_LOOKBACK.total_seconds()) * 2)
        except Exception:
            log.warning("could not store the score rerouting mark; the next pass looks back an hour")
    return len(orphans)


def sweep_scores(*, now: datetime | None = None, limit: int = 10_000) -> int:
    """Route again the scores whose routing was lost (`reroute_scores`), take back claims held past
    the claim timeout, and publish pending rows due for longer than the sweeper's grace (their task
    was lost); the number published."""
    now = now or timezone.now()
    try:
        reroute_scores(now=now)
    except Exception:  # the second look must not keep the sweeper from its first job
        log.exception("could not route lost scores again")
    timeout = timedelta(seconds=float(settings.TRACERELAY_DELIVERY_CLAIM_TIMEOUT_S))
    grace = timedelta(seconds=float(settings.TRACERELAY_OUTBOX_SWEEP_GRACE_S))
    ScoreDelivery.objects.filter(status=ScoreStatus.SENDING, updated_at__lt=now - timeout).update(
        status=ScoreStatus.PENDING, claim_token=None, next_attempt_at=now, updated_at=now
    )
    due = list(
        ScoreDelivery.objects.filter(status=ScoreStatus.PENDING, next_attempt_at__lte=now - grace)
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:limit]
    )
    if due:
        ScoreDelivery.objects.filter(pk__in=due).update(next_attempt_at=now)  # not again before another grace
        publish(due)
    return len(due)
