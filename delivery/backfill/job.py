"""Running a backfill (docs/delivery.md, "Backfill"): the job walks its traces in (timestamp, id)
order and writes outbox rows for this integration, a chunk at a time, only while the destination
can take more without live delivery waiting.

A task runs the job for a slice of time (`run_slice`), then hands it on to a fresh task: the job's
state (cursor, counts) is in its row, and the running task's claim on it is a heartbeat
(``heartbeat_at``, ``claim_token``) taken with a conditional UPDATE. A worker that dies stops
renewing it; the sweep (`sweep_backfills`) then publishes a new task, which takes the job over at
its cursor.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Count, Q, QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from psycopg.types.json import Jsonb

from config.celery import Queue, app
from config.jsoncodec import dumps
from integrations.models import Integration
from integrations.options.quota import Quota, usage
from integrations.selectors import resolve_target
from routing.router import DestinationSpec, route
from routing.selectors import compiled_routing
from traces.filters import parse_trace_filter
from traces.kinds import CALL_KINDS
from traces.models import Trace
from traces.records import TraceRecord

from ..breaker import CircuitBreaker
from ..models import BACKFILL_ACTIVE, Backfill, BackfillStatus, Delivery, DeliveryStatus
from ..outbox import DELIVER_TASK

log = logging.getLogger(__name__)

BACKFILL_TASK = "delivery.backfill"
CHUNK = 500  # traces read per step (at most max_per_second of them)
WAIT_S = 0.5  # pause when the destination is busy, over its quota or its circuit is open
RUN_RULE = "backfill"
SENT = ("delivered",)
FAILED = ("failed", "dead", "dropped")
WAITING = ("pending", "sending")


def publish_job(backfill_id: int, *, countdown: float | None = None) -> None:
    """Hand the job to a backfill worker (best effort: the sweep publishes it again if this is lost)."""
    try:
        app.send_task(BACKFILL_TASK, args=[backfill_id], queue=str(Queue.BACKFILL), countdown=countdown, retry=False)
    except Exception as exc:
        log.warning("could not publish backfill %s (the sweep will): %s", backfill_id, exc)


def publish_rows(ids: Sequence[int]) -> None:
    """The job's outbox rows go to the backfill queue: live delivery tasks never wait behind them.
    A retry (engine) goes to the delivery queue like any other; the sweep dispatches lost ones."""
    chunk = max(1, int(settings.TRACERELAY_DELIVERY_TASK_CHUNK))
    try:
        for start in range(0, len(ids), chunk):
            app.send_task(DELIVER_TASK, args=[list(ids[start : start + chunk])], queue=str(Queue.BACKFILL), retry=False)
    except Exception as exc:
        log.warning("could not publish %d backfill deliveries (the outbox sweeper will): %s", len(ids), exc)


def stale_before(now: datetime | None = None) -> datetime:
    return (now or timezone.now()) - timedelta(seconds=float(settings.TRACERELAY_BACKFILL_STALE_S))


def claim(backfill_id: int) -> uuid.UUID | None:
    """Take the job (pending, or running with no live heartbeat): one conditional UPDATE."""
    token = uuid.uuid4()
    now = timezone.now()
    free = Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=stale_before(now))
    taken = Backfill.objects.filter(Q(pk=backfill_id, status__in=BACKFILL_ACTIVE) & free).update(
        status=BackfillStatus.RUNNING, claim_token=token, heartbeat_at=now
    )
    if not taken:
        return None
    Backfill.objects.filter(pk=backfill_id, started_at__isnull=True).update(started_at=now)
    return token


def outcome_counts(backfill_id: int) -> dict[str, int]:
    """The job's rows by outcome: ``sent``, ``failed`` (gave up, dead or dropped) and ``waiting``."""
    rows = Delivery.objects.filter(backfill_id=backfill_id).values("status").annotate(n=Count("pk"))
    by = {r["status"]: r["n"] for r in rows}
    return {
        "sent": sum(by.get(s, 0) for s in SENT),
        "failed": sum(by.get(s, 0) for s in FAILED),
        "waiting": sum(by.get(s, 0) for s in WAITING),
    }


@dataclass(slots=True)
class _Step:
    done: bool = False  # the cursor is past the last trace
    wait_s: float = 0.0  # why not go on at once: busy, quota, breaker


class _Runner:
    def __init__(self, job: Backfill, token: uuid.UUID, sleep: Callable[[float], None]):
        self.job = job
        self.token = token
        self.sleep = sleep
        self.integration: Integration = job.integration
        self.name = self.integration.name
        self.quota = Quota.of(self.integration.config or {})
        self.names = self._names()
        self.breakers = [CircuitBreaker(job.team_id, name) for name in self.names]
        self.filter = parse_trace_filter(job.filters or {})
        self.routing = compiled_routing(job.team_id) if job.apply_rules else None

    def _names(self) -> list[str]:
        """The destination names that reach this integration: its own, and its platform's when a
        rule naming the platform resolves to it (`integrations.selectors.resolve_target`)."""
        names = [self.name]
        platform = self.integration.platform
        if platform != self.name:
            try:
                found, _ = resolve_target(self.job.team_id, {"name": platform})
            except Exception:  # no integration of that platform, or one that cannot be prepared: only the name
                found = None
            if found is not None and found.pk == self.integration.pk:
                names.append(platform)
        return names

    def window(self) -> QuerySet[Trace]:
        qs = Trace.objects.filter(team_id=self.job.team_id, timestamp__gte=self.job.since, timestamp__lt=self.job.until)
        return self.filter.apply(qs)

    def write(self, **fields: Any) -> bool:
        """Save fields while the job is still ours and running (a cancel or a takeover stops us)."""
        fields["heartbeat_at"] = timezone.now()
        ours = Backfill.objects.filter(pk=self.job.pk, claim_token=self.token, status=BackfillStatus.RUNNING)
        return bool(ours.update(**fields))

    def room(self) -> float | int:
        """How many rows may be written now: the backlog's room, then the quota's."""
        waiting = Delivery.objects.filter(
            team_id=self.job.team_id, destination__in=self.names, status__in=WAITING
        ).count()
        room: float | int = int(settings.TRACERELAY_BACKFILL_MAX_BACKLOG) - waiting
        if self.quota is not None:
            used = usage(self.integration.pk, self.quota)
            if used is None:
                return 0
            names = {"m": "max_per_minute", "d": "max_per_day"}
            for letter, limit in self.quota.limits.items():
                room = min(room, limit - used.get(names[letter], 0) - waiting)
        return room

    def step(self) -> _Step:
        began = time.monotonic()
        if any(breaker.is_open() for breaker in self.breakers):
            return _Step(wait_s=WAIT_S)
        room = self.room()
        if room <= 0:
            return _Step(wait_s=WAIT_S)
        n = int(min(CHUNK, self.job.max_per_second, room))
        qs = self.window().order_by("timestamp", "pk")
        if self.job.cursor:
            at, pk = parse_datetime(self.job.cursor[0]), uuid.UUID(self.job.cursor[1])
            qs = qs.filter(Q(timestamp__gt=at) | Q(timestamp=at, pk__gt=pk))
        if self.routing is None:  # without rules only the keys are needed, not the payloads
            qs = qs.only("pk", "timestamp", "trace_id", "run_id", "parent_id")
        rows = list(qs[:n])
        if not rows:
            return _Step(done=True)
        chosen, specs, not_routed = self.choose(rows)
        inserted = self.insert(chosen, specs, RUN_RULE if not self.job.apply_rules else None)
        mine = {tid for _, tid in inserted}
        already_ours = self.ours([t.pk for t in chosen if t.pk not in mine])
        skipped = not_routed + len(chosen) - len(mine) - already_ours
        followers = self.follow_runs(chosen)
        ids = [i for i, _ in inserted] + [i for i, _ in followers]
        extra = 0
        if followers:  # run spans from outside the window add to the total
            in_window = set(self.window().filter(pk__in=[tid for _, tid in followers]).values_list("pk", flat=True))
            extra = sum(1 for _, tid in followers if tid not in in_window)
        last = rows[-1]
        job = self.job
        job.cursor = [last.timestamp.isoformat(), str(last.pk)]
        job.skipped += skipped
        job.total += extra
        if not self.write(cursor=job.cursor, skipped=job.skipped, total=job.total):
            Delivery.objects.filter(pk__in=ids, status=DeliveryStatus.PENDING).delete()  # cancelled meanwhile
            return _Step(done=True)
        if ids:
            publish_rows(ids)
        # The chunk's share of a second at max_per_second, less the time the step itself took.
        return _Step(wait_s=max(0.0, len(rows) / max(1, job.max_per_second) - (time.monotonic() - began)))

    def choose(self, rows: list[Trace]) -> tuple[list[Trace], list[dict[str, Any]], int]:
        """The traces to send and each one's routed destination; the number rules did not route here."""
        if self.routing is None:
            spec = DestinationSpec(self.name).as_dict()
            return rows, [spec] * len(rows), 0
        chosen, specs = [], []
        for row in rows:
            result = route(TraceRecord.from_trace(row).condition_context(), self.routing)
            for decision in result.kept:
                if self._is_here(decision.destination):
                    chosen.append(row)
                    specs.append({**decision.destination.as_dict(), "name": self.name, "_rule": decision.rule})
                    break
        return chosen, specs, len(rows) - len(chosen)

    def _is_here(self, dest: DestinationSpec) -> bool:
        if dest.url:
            return False
        return dest.name in self.names

    def insert(
        self, traces: Sequence[Trace], specs: Sequence[dict[str, Any]], rule: str | None
    ) -> list[tuple[int, Any]]:
        """Outbox rows for the traces this integration has none for: [(delivery id, trace pk)]."""
        if not traces:
            return []
        rules = [rule or spec.pop("_rule", RUN_RULE) for spec in specs]
        now = timezone.now()
        with connection.cursor() as cursor:
            cursor.execute(
                """
                INSERT INTO routing_delivery (team_id, trace_id, destination, spec, rule_name, status, attempts,
                    next_attempt_at, last_error, replay_count, created_at, updated_at, dispatched_at, backfill_id)
                SELECT %s, c.trace_id, %s, c.spec, c.rule, %s, 0, %s, '', 0, %s, %s, %s, %s
                FROM unnest(%s::uuid[], %s::jsonb[], %s::text[]) AS c(trace_id, spec, rule)
                WHERE NOT EXISTS (
                    SELECT 1 FROM routing_delivery d
                    WHERE d.trace_id = c.trace_id AND (d.integration_id = %s OR d.destination = ANY(%s::text[]))
                )
                ON CONFLICT (trace_id, destination) DO NOTHING
                RETURNING id, trace_id
                """,
                [
                    self.job.team_id,
                    self.name,
                    DeliveryStatus.PENDING,
                    now,
                    now,
                    now,
                    now,
                    self.job.pk,
                    [t.pk for t in traces],
                    [Jsonb(s, dumps=dumps) for s in specs],
                    rules,
                    self.integration.pk,
                    self.names,
                ],
            )
            return [(row[0], row[1]) for row in cursor.fetchall()]

    def ours(self, trace_pks: list[Any]) -> int:
        """Of these traces, how many already have a row from this job (a run span sent earlier)."""
        if not trace_pks:
            return 0
        return Delivery.objects.filter(trace_id__in=trace_pks, destination=self.name, backfill_id=self.job.pk).count()

    def follow_runs(self, chosen: Sequence[Trace]) -> list[tuple[int, Any]]:
        """A run goes whole, as on the live path (docs/routing.md, Runs): the structural spans of
        the runs of the traces sent go too."""
        runs = {t.run_id for t in chosen if t.run_id and (t.parent_id or t.run_id != t.trace_id)}
        if not runs:
            return []
        spans = list(
            Trace.objects.filter(team_id=self.job.team_id, run_id__in=runs)
            .exclude(kind__in=CALL_KINDS)
            .only("pk", "run_id")
        )
        spec = DestinationSpec(self.name).as_dict()
        return self.insert(spans, [dict(spec) for _ in spans], "backfill: follows its run")

    def finish(self) -> bool:
        """Done once every row written has an outcome: succeeded, with the final counts."""
        counts = outcome_counts(self.job.pk)
        if counts["waiting"]:
            self.write(sent=counts["sent"], failed=counts["failed"])
            return False
        self.write(
            sent=counts["sent"],
            failed=counts["failed"],
            status=BackfillStatus.SUCCEEDED,
            finished_at=timezone.now(),
            claim_token=None,
        )
        return True


def run_slice(backfill_id: int, *, seconds: float | None = None, sleep: Callable[[float], None] = time.sleep) -> bool:
    """Run the job for about ``seconds`` (TRACERELAY_BACKFILL_SLICE_S); True when it should go on
    (in a new task)."""
    if seconds is None:
        seconds = float(settings.TRACERELAY_BACKFILL_SLICE_S)
    token = claim(backfill_id)
    if token is None:
        return False
    job = Backfill.objects.select_related("integration").get(pk=backfill_id)
    try:
        runner = _Runner(job, token, sleep)
        if job.total == 0 and job.cursor is None:  # counted once, at the start
            job.total = runner.window().count()
            runner.write(total=job.total)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            step = runner.step()
            if not Backfill.objects.filter(pk=backfill_id, claim_token=token, status=BackfillStatus.RUNNING).exists():
                return False  # cancelled, or taken over
            if step.done:
                if runner.finish():
                    return False
                step.wait_s = WAIT_S
            counts = outcome_counts(backfill_id)
            runner.write(sent=counts["sent"], failed=counts["failed"])
            if step.wait_s:
                sleep(min(step.wait_s, max(0.0, deadline - time.monotonic())))
    except Exception as exc:
        log.exception("backfill %s failed", backfill_id)
        Backfill.objects.filter(pk=backfill_id, claim_token=token, status=BackfillStatus.RUNNING).update(
            status=BackfillStatus.FAILED, error=f"{type(exc).__name__}: {exc}"[:2000], finished_at=timezone.now()
        )
        return False
    # Hand the job on: free the claim so that the next task (or the sweep) can take it.
    Backfill.objects.filter(pk=backfill_id, claim_token=token).update(heartbeat_at=None)
    return True


def sweep_backfills() -> int:
    """Publish the jobs no task holds: running ones whose heartbeat went stale (their worker died),
    pending ones never started (their publish was lost). The claim makes a second task a no-op."""
    stale = stale_before()
    ids = list(
        Backfill.objects.filter(status__in=BACKFILL_ACTIVE)
        .filter(Q(heartbeat_at__lt=stale) | Q(heartbeat_at__isnull=True, created_at__lt=stale))
        .values_list("pk", flat=True)[:1000]
    )
    for backfill_id in ids:
        publish_job(backfill_id)
    return len(ids)
