"""Re-pricing jobs (docs/pricing.md, "Re-pricing"): ask for one (`job_create`), carry it out
(`job_run`, the worker), and take over jobs whose worker went away (`sweep`, beat).

A job walks its team's calls (kinds `llm` and `embedding`: what ingest prices) in the range, in
keyset chunks of (timestamp, id), and prices each again with `traces.pricing.price`, the call ingest
makes (today's genai-prices and team prices). Each chunk is one transaction that
* updates the traces whose cost, unpriced flag, price source or version changed;
* corrects what was summed from them: the analytics rollups (for traces the fold has counted
  already; a pending trace is folded later with its new cost) and the runs' summaries;
* with ``redeliver``, sets the delivered rows of the traces whose cost changed pending again;
* moves the job's cursor and counters, renewing its claim.
It holds the analytics fold's lock, so a fold never reads rows halfway through a correction. Once
done, the team's cost and unpriced alerts whose window overlaps the range are evaluated again, and
the audit log records the job.
"""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import BooleanField, F, Q, QuerySet
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce
from django.utils import timezone

from accounts.services import audit
from alerts import services as alert_services
from alerts.models import Alert, Metric
from alerts.windows import window_at
from analytics import rollups, snapshots
from analytics.models import PendingBatch
from analytics.stats import cost_units
from config.celery import Queue, app
from delivery.services import deliveries_resend
from traces.models import CALL_KINDS, Trace
from traces.pricing import price
from traces.runs import summary
from traces.usage import DETAIL_FIELDS, TokenDetails

from .definition import JobSpec
from .models import JobStatus, RepriceJob

log = logging.getLogger(__name__)

RUN_TASK = "repricing.run"
ALERT_METRICS = (Metric.COST, Metric.UNPRICED)
_COLUMNS = (
    "id",
    "timestamp",
    "run_id",
    "model",
    "provider",
    "status",
    "environment",
    "service_name",
    "tags",
    "prompt_tokens",
    "completion_tokens",
    *DETAIL_FIELDS,
    "cost",
    "unpriced",
    "price_source",
    "price_version",
)


def chunk_size() -> int:
    """Traces per chunk (one transaction each): TRACERELAY_REPRICE_CHUNK."""
    return max(1, settings.TRACERELAY_REPRICE_CHUNK)


def stale_after() -> timedelta:
    """A claim not renewed for this long is taken over: TRACERELAY_REPRICE_STALE_S."""
    return timedelta(seconds=settings.TRACERELAY_REPRICE_STALE_S)


class LostClaim(Exception):
    """Another worker took the job over (this one was silent for longer than stale_after())."""


def job_create(*, team_id: int, spec: JobSpec, actor: str) -> RepriceJob:
    """A pending job, queued once the transaction commits."""
    job = RepriceJob.objects.create(
        team_id=team_id,
        actor=actor,
        since=spec.since,
        until=spec.until,
        model=spec.model,
        redeliver=spec.redeliver,
        heartbeat_at=timezone.now(),  # (the sweeper re-queues a pending job not claimed by stale_after())
    )
    transaction.on_commit(lambda: dispatch(job.pk))
    return job


def dispatch(job_id: int) -> None:
    try:
        app.send_task(RUN_TASK, args=[job_id], queue=str(Queue.REPORTS), retry=False)
    except Exception:  # the broker is down: the sweeper sends it again
        log.exception("repricing: could not queue job %s", job_id)


def traces_of(job: RepriceJob) -> QuerySet[Trace]:
    """The job's calls: the team's `llm` and `embedding` spans in [since, until), of its model."""
    qs = Trace._base_manager.filter(
        team_id=job.team_id, timestamp__gte=job.since, timestamp__lt=job.until, kind__in=CALL_KINDS
    )
    if job.model.endswith("*"):
        qs = qs.filter(model__startswith=job.model[:-1])
    elif job.model:
        qs = qs.filter(model=job.model)
    return qs


def claim(job_id: int, *, now: datetime | None = None) -> uuid.UUID | None:
    """Take the job (pending, or running with a claim silent past stale_after()); the claim's token,
    or None when it is done or another worker holds it. One conditional UPDATE: two workers never
    both get it."""
    now = now or timezone.now()
    token = uuid.uuid4()
    taken = RepriceJob.objects.filter(
        Q(status=JobStatus.PENDING) | Q(status=JobStatus.RUNNING, heartbeat_at__lt=now - stale_after()), pk=job_id
    ).update(
        status=JobStatus.RUNNING,
        claim_token=token,
        heartbeat_at=now,
        started_at=Coalesce(F("started_at"), now),
        attempts=F("attempts") + 1,
    )
    return token if taken else None


def job_run(*, job_id: int, chunks: int | None = None) -> RepriceJob | None:
    """Claim the job and carry it out from its cursor; None when it was not ours to run. ``chunks``
    stops after that many chunks, the job left running as by a worker that stopped there (the
    restart tests)."""
    token = claim(job_id)
    if token is None:
        return None
    job = RepriceJob.objects.get(pk=job_id)
    try:
        if job.traces_total is None:
            total = traces_of(job).count()
            RepriceJob.objects.filter(pk=job_id, claim_token=token).update(traces_total=total)
        done = 0
        while chunks is None or done < chunks:
            if not _chunk(job_id, token):
                break
            done += 1
        else:
            return RepriceJob.objects.get(pk=job_id)
        _finish(job_id, token)
    except LostClaim:
        log.warning("repricing: job %s was taken over by another worker", job_id)
    except Exception as exc:
        log.exception("repricing: job %s failed", job_id)
        _fail(job_id, token, exc)
    return RepriceJob.objects.get(pk=job_id)


def _chunk(job_id: int, token: uuid.UUID) -> bool:
    """Re-price the next chunk of the job's traces; False when none were left."""
    with transaction.atomic():
        job = RepriceJob.objects.select_for_update().filter(pk=job_id, claim_token=token).first()
        if job is None or job.status != JobStatus.RUNNING:
            raise LostClaim(job_id)
        rollups.wait_fold_lock()  # a fold adds rows read before: never between its read and write
        pending_sql, params = snapshots.pending_where(snapshots.stored())
        qs = traces_of(job)
        if job.cursor_at is not None:
            qs = qs.filter(Q(timestamp__gt=job.cursor_at) | Q(timestamp=job.cursor_at, id__gt=job.cursor_id))
        qs = qs.annotate(
            pending=RawSQL(f"coalesce({pending_sql}, false)", params, output_field=BooleanField()),
            legacy=RawSQL(f"{snapshots.COLUMN} IS NULL", [], output_field=BooleanField()),
        )
        rows = list(
            qs.order_by("timestamp", "id").select_for_update().values(*_COLUMNS, "pending", "legacy")[: chunk_size()]
        )
        if not rows:
            return False
        pending = _legacy_pending([row["id"] for row in rows if row["legacy"]])
        updates: list[tuple[Any, Decimal | None, bool, str, str]] = []
        changed_ids: list[Any] = []
        folded: list[rollups.CostChange] = []
        runs: dict[str, tuple[Decimal, int]] = defaultdict(lambda: (Decimal(0), 0))
        by_model: dict[str, dict[str, Any]] = dict(job.by_model or {})
        before_sum = after_sum = Decimal(0)
        for row in rows:
            new = price(
                model=row["model"],
                provider=row["provider"],
                prompt_tokens=row["prompt_tokens"],
                completion_tokens=row["completion_tokens"],
                timestamp=row["timestamp"],
                details=TokenDetails.of(row),
                team_id=job.team_id,
            )
            old_cost, new_cost = row["cost"], new.cost
            before_sum += old_cost or 0
            after_sum += new_cost or 0
            cost_changed = old_cost != new_cost or row["unpriced"] != new.unpriced
            entry = by_model.setdefault(
                row["model"], {"traces": 0, "changed": 0, "cost_before": "0", "cost_after": "0"}
            )
            entry["traces"] += 1
            entry["changed"] += cost_changed
            entry["cost_before"] = str(Decimal(entry["cost_before"]) + (old_cost or 0))
            entry["cost_after"] = str(Decimal(entry["cost_after"]) + (new_cost or 0))
            if not cost_changed and row["price_source"] == new.source and row["price_version"] == new.version:
                continue
            updates.append((row["id"], new_cost, new.unpriced, new.source, new.version))
            if not cost_changed:
                continue  # (a newer price version, the same figures: nothing summed changes)
            changed_ids.append(row["id"])
            if not row["pending"] and not (row["legacy"] and row["id"] in pending):
                folded.append(
                    (
                        job.team_id,
                        row["timestamp"],
                        row["model"],
                        row["provider"],
                        row["status"],
                        row["environment"],
                        row["service_name"],
                        row["tags"],
                        cost_units(new_cost) - cost_units(old_cost),
                        int(new.unpriced) - int(row["unpriced"]),
                    )
                )
            d_cost, d_unpriced = runs[row["run_id"]]
            runs[row["run_id"]] = (
                d_cost + _run_cost(new_cost, new.unpriced) - _run_cost(old_cost, row["unpriced"]),
                d_unpriced + _run_unpriced(new_cost, new.unpriced) - _run_unpriced(old_cost, row["unpriced"]),
            )
        _store_prices(updates)
        rollups.correct_costs(folded)
        summary.correct_costs(job.team_id, dict(runs))
        requeued = deliveries_resend(trace_ids=changed_ids) if job.redeliver else 0
        last = rows[-1]
        RepriceJob.objects.filter(pk=job_id, claim_token=token).update(
            cursor_at=last["timestamp"],
            cursor_id=last["id"],
            traces_done=F("traces_done") + len(rows),
            traces_changed=F("traces_changed") + len(changed_ids),
            deliveries_requeued=F("deliveries_requeued") + requeued,
            cost_before=F("cost_before") + before_sum,
            cost_after=F("cost_after") + after_sum,
            by_model=by_model,
            heartbeat_at=timezone.now(),
        )
    return True


def _store_prices(updates: list[tuple[Any, Decimal | None, bool, str, str]]) -> None:
    """One UPDATE for the chunk's changed traces (id, cost, unpriced, price_source, price_version). (Django's
    bulk_update writes a CASE per column per row: 6 s of a 7 s chunk of 500, all of it compiling it.)"""
    if not updates:
        return
    ids, costs, unpriced, sources, versions = (list(column) for column in zip(*updates, strict=True))
    table = connection.ops.quote_name(Trace._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} t SET cost = v.cost, unpriced = v.unpriced, price_source = v.source,"
            " price_version = v.version FROM unnest(%s::uuid[], %s::numeric[], %s::boolean[], %s::text[], %s::text[])"
            " AS v(id, cost, unpriced, source, version) WHERE t.id = v.id",
            [ids, costs, unpriced, sources, versions],
        )


def _run_cost(cost: Decimal | None, unpriced: bool) -> Decimal:
    return Decimal(0) if unpriced or cost is None else cost  # (as traces.runs.summary sums)


def _run_unpriced(cost: Decimal | None, unpriced: bool) -> int:
    return int(unpriced or cost is None)


def _legacy_pending(ids: list[Any]) -> set[Any]:
    """Of traces without a ``rollup_xid`` (stored by a process of the release before last, in a
    rolling deploy), those a pending batch still names: the fold will count them as they are now."""
    if not ids:
        return set()
    table = connection.ops.quote_name(PendingBatch._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT DISTINCT t FROM {table}, unnest(trace_ids) t"
            " WHERE trace_ids && %s::uuid[] AND t = ANY(%s::uuid[])",
            [ids, ids],
        )
        return {row[0] for row in cursor.fetchall()}


def _finish(job_id: int, token: uuid.UUID) -> None:
    now = timezone.now()
    with transaction.atomic():
        job = RepriceJob.objects.select_for_update().filter(pk=job_id, claim_token=token).first()
        if job is None:
            raise LostClaim(job_id)
        job.status, job.finished_at, job.heartbeat_at = JobStatus.SUCCEEDED, now, now
        job.save(update_fields=["status", "finished_at", "heartbeat_at"])
        _audit(job)
    if job.traces_changed:
        try:
            reevaluate_alerts(job, now=now)
        except Exception:  # the job is done; the next beat evaluates them anyway
            log.exception("repricing: job %s: evaluating the team's alerts failed", job_id)


def _fail(job_id: int, token: uuid.UUID, exc: Exception) -> None:
    now = timezone.now()
    with transaction.atomic():
        job = RepriceJob.objects.select_for_update().filter(pk=job_id, claim_token=token).first()
        if job is None:
            return
        job.status, job.finished_at, job.error = JobStatus.FAILED, now, f"{type(exc).__name__}: {exc}"[:2000]
        job.save(update_fields=["status", "finished_at", "error"])
        _audit(job)


def _audit(job: RepriceJob) -> None:
    audit(
        team=job.team_id,
        actor=job.actor,
        action="prices.reprice",
        target=f"reprice:{job.pk}",
        data={
            "status": job.status,
            "since": job.since.isoformat(),
            "until": job.until.isoformat(),
            "model": job.model or None,
            "redeliver": job.redeliver,
            "traces_done": job.traces_done,
            "traces_changed": job.traces_changed,
            "deliveries_requeued": job.deliveries_requeued,
            "cost_before": str(job.cost_before),
            "cost_after": str(job.cost_after),
            "by_model": job.by_model,
        },
    )


def reevaluate_alerts(job: RepriceJob, *, now: datetime) -> int:
    """Evaluate again, now, the team's enabled cost and unpriced alerts whose current window overlaps
    the job's range: their value (`last_value`) and state follow the corrected figures at once, and
    one that is now over (or back under) its threshold fires (or resolves) as it would on the next
    beat. Windows read the rollups and traces themselves (alerts/windows.py), so the next evaluation
    would see the same; this one does not wait for it. How many were evaluated."""
    evaluated = 0
    alerts = Alert.objects.filter(team_id=job.team_id, enabled=True, metric__in=ALERT_METRICS)
    for alert in alerts:
        start, end = window_at(alert, now)
        if start < job.until and job.since < end:
            alert_services.evaluate(alert.pk, now)
            evaluated += 1
    return evaluated


def sweep(*, now: datetime | None = None) -> list[int]:
    """Queue again the jobs no worker is carrying out: pending ones never claimed (the broker lost
    the task) and running ones whose claim went silent (the worker died). A worker claims a running
    job only once it is stale, so a job queued twice runs once. The ids queued."""
    now = now or timezone.now()
    stale = RepriceJob.objects.filter(
        status__in=[JobStatus.PENDING, JobStatus.RUNNING], heartbeat_at__lt=now - stale_after()
    ).values_list("pk", flat=True)
    ids = list(stale[:100])
    for job_id in ids:
        dispatch(job_id)
    return ids
