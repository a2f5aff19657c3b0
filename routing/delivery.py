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
  ``failed`` with a new row for the next fallback destination, or ``dead`` (the dead letter, replayable).

States: pending → sending → delivered | pending (retry) | failed (a fallback carries on) | dead.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import random
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

import httpx
from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import F, Field, Q
from django.utils import timezone

from config import invalidation
from integrations.exporters.base import Exporter, ExportError, Target
from integrations.models import Integration, default_retry_policy
from integrations.registry import exporter_class
from integrations.selectors import resolve_target
from traces.models import Trace
from traces.records import TraceRecord

from . import outbox
from .models import Delivery, DeliveryStatus

log = logging.getLogger(__name__)

# A countdown task can arrive a little early (clock skew between hosts, timer granularity).
EARLY_SLACK = timedelta(seconds=1)
# The longest Retry-After we honour: past this, a destination is asking for something else.
MAX_RETRY_AFTER_S = 3600.0
# Rows per sweeper run (it runs again in a few seconds if there were more).
SWEEP_LIMIT = 10_000
LAST_ERROR_MAX = 2000


# ---------------------------------------------------------------------------------------------
# Retry policy and backoff


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_attempts: int = 8
    base_delay_s: float = 1.0
    max_delay_s: float = 300.0

    @classmethod
    def from_integration(cls, integration: Integration | None) -> RetryPolicy:
        raw: Mapping[str, Any] = (integration.retry_policy if integration is not None else None) or {}
        default = default_retry_policy()

        def number(name: str) -> float:
            try:
                value = float(raw.get(name, default[name]))
            except (TypeError, ValueError):
                value = float(default[name])
            return value if value >= 0 else float(default[name])

        return cls(
            max_attempts=max(1, int(number("max_attempts"))),
            base_delay_s=number("base_delay_s"),
            max_delay_s=max(number("max_delay_s"), number("base_delay_s")),
        )


def backoff_delay(
    attempt: int, policy: RetryPolicy, *, retry_after: float | None = None, rng: random.Random | None = None
) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1-based).

    Full jitter (AWS architecture blog, "Exponential Backoff and Jitter"): a uniform draw in
    [0, min(max_delay, base × 2^(attempt-1))], so a burst of failures spreads out instead of retrying in
    lockstep. A destination's Retry-After is a floor: we never come back sooner than it asked.
    """
    ceiling = min(policy.max_delay_s, policy.base_delay_s * (2 ** max(0, attempt - 1)))
    delay = (rng or random).uniform(0, ceiling)
    if retry_after is not None and retry_after > 0:
        delay = max(delay, min(float(retry_after), MAX_RETRY_AFTER_S))
    return delay


# ---------------------------------------------------------------------------------------------
# Circuit breaker per (team, destination), in the shared cache (Redis in production)


@dataclass(frozen=True, slots=True)
class Permit:
    allowed: bool
    probe: bool = False
    retry_at: float = 0.0  # epoch seconds; when not allowed


class CircuitBreaker:
    """Closed → (N consecutive transient failures) → open for a cool-down → half-open: one probe.

    The probe's success closes the circuit; its failure opens it for another cool-down. While open,
    rows are rescheduled without calling the destination, so an outage does not burn their attempts.
    """

    def __init__(
        self, team_id: int, destination: str, *, threshold: int | None = None, cooldown_s: float | None = None
    ):
        digest = hashlib.blake2b(destination.encode(), digest_size=8).hexdigest()
        base = f"routing:cb:{team_id}:{digest}"
        self.open_key, self.fails_key, self.probe_key = f"{base}:open", f"{base}:fails", f"{base}:probe"
        self.threshold = threshold or int(settings.TRACERELAY_BREAKER_FAILURES)
        self.cooldown_s = cooldown_s if cooldown_s is not None else float(settings.TRACERELAY_BREAKER_COOLDOWN_S)
        self._dirty = True  # unknown state: a success must clear the keys

    def acquire(self) -> Permit:
        state = cache.get_many([self.open_key, self.fails_key])
        opened_until = state.get(self.open_key)
        self._dirty = bool(state)
        if opened_until is None:
            return Permit(True)
        now = time.time()
        if now < opened_until:
            return Permit(False, retry_at=opened_until)
        # Half-open: the first to take the probe slot sends; everyone else waits for its verdict.
        if cache.add(self.probe_key, 1, timeout=max(5, int(self.cooldown_s))):
            return Permit(True, probe=True)
        return Permit(False, retry_at=now + min(self.cooldown_s, 2.0))

    def record_success(self) -> None:
        if self._dirty:
            cache.delete_many([self.open_key, self.fails_key, self.probe_key])
            self._dirty = False

    def record_failure(self, *, probe: bool = False) -> None:
        self._dirty = True
        try:
            failures = cache.incr(self.fails_key)
        except ValueError:
            cache.add(self.fails_key, 0, timeout=3600)
            failures = cache.incr(self.fails_key)
        if probe or failures >= self.threshold:
            # The key outlives the cool-down so the half-open state (and its probe) can be seen.
            cache.set(self.open_key, time.time() + self.cooldown_s, timeout=int(self.cooldown_s) + 600)
            cache.delete(self.probe_key)

    def is_open(self) -> bool:
        opened_until = cache.get(self.open_key)
        return opened_until is not None and time.time() < opened_until


# ---------------------------------------------------------------------------------------------
# One HTTP client per worker process (connection pooling across tasks)

_client: httpx.Client | None = None
_client_pid: int | None = None
_client_lock = threading.Lock()


def http_client() -> httpx.Client:
    """The process's shared client. Recreated after a fork: sockets must not cross processes."""
    global _client, _client_pid
    import os

    pid = os.getpid()
    if _client is None or _client_pid != pid:
        with _client_lock:
            if _client is None or _client_pid != pid:
                _client = httpx.Client(
                    timeout=httpx.Timeout(10.0),
                    limits=httpx.Limits(max_connections=100, max_keepalive_connections=20),
                    follow_redirects=False,
                    headers={"User-Agent": "tracerelay-delivery/1"},
                )
                _client_pid = pid
    return _client


def close_http_client() -> None:
    global _client
    if _client is not None:
        _client.close()
        _client = None


# ---------------------------------------------------------------------------------------------
# The batch run


@dataclass
class DeliveryReport:
    """What one `deliver_batch` call did (for logs, tests and the bench)."""

    delivered: int = 0
    retried: int = 0
    failed: int = 0  # gave up here, a fallback row took over
    dead: int = 0
    deferred: int = 0  # circuit open: rescheduled without an attempt
    skipped: int = 0  # not pending, not due, or claimed by someone else
    fallbacks: list[int] = field(default_factory=list)


_ROW_FIELDS = ("id", "team_id", "trace_id", "destination", "spec", "rule_name", "next_attempt_at", "attempts")


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
    # By primary key only (status is tested here): see `_claim` on why the status index is avoided.
    rows = Delivery.objects.filter(pk__in=ids).values(*_ROW_FIELDS, "status")
    due = [r for r in rows if r["status"] == DeliveryStatus.PENDING and r["next_attempt_at"] <= now + EARLY_SLACK]
    report.skipped += len(ids) - len(due)

    groups: dict[tuple[int, str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in due:
        groups[(row["team_id"], row["destination"], _spec_key(row["spec"]))].append(row)

    http = client or http_client()
    for (team_id, destination, _), group in groups.items():
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
        for chunk in _chunks(rows, 500):
            token, claimed = _claim(chunk)
            if claimed:
                _give_up(claimed, token, message, None, None, report)
            report.skipped += len(chunk) - len(claimed)
        return
    except Exception as exc:  # e.g. a secret that no configured Fernet key decrypts: fixable, so retry
        log.exception("cannot prepare destination %r of team %s", destination, team_id)
        error = ExportError(f"cannot prepare destination {destination!r}: {type(exc).__name__}: {exc}")
        for chunk in _chunks(rows, 500):
            token, claimed = _claim(chunk)
            report.skipped += len(chunk) - len(claimed)
            if claimed:
                _failed(claimed, token, error, RetryPolicy.from_integration(None), None, report)
        return

    breaker = CircuitBreaker(team_id, destination)
    size = max(1, int(getattr(sender.exporter, "max_batch", 100)))
    pending = list(rows)
    while pending:
        permit = breaker.acquire()
        if not permit.allowed:
            report.deferred += _defer(pending, permit.retry_at)
            return
        chunk, pending = (pending[:1], pending[1:]) if permit.probe else (pending[:size], pending[size:])
        _send_chunk(chunk, sender, breaker, permit.probe, report)


def _send_chunk(
    rows: list[dict[str, Any]], sender: _Sender, breaker: CircuitBreaker, probe: bool, report: DeliveryReport
) -> None:
    token, claimed = _claim(rows)
    report.skipped += len(rows) - len(claimed)
    if not claimed:
        if probe:
            cache.delete(breaker.probe_key)
        return
    records_by_trace = _records([r["trace_id"] for r in claimed])
    present = [r for r in claimed if r["trace_id"] in records_by_trace]
    records = [records_by_trace[r["trace_id"]] for r in present]
    integration_id = sender.integration.pk if sender.integration is not None else None
    try:
        sender.exporter.export(records)
    except ExportError as exc:
        error: ExportError = exc
    except httpx.HTTPError as exc:  # an exporter that let a transport error through: transient
        error = ExportError(f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # a bug in an exporter must not leave rows stuck in "sending"
        log.exception("exporter %s crashed", sender.target.platform)
        error = ExportError(f"exporter error: {type(exc).__name__}: {exc}")
    else:
        now = timezone.now()
        report.delivered += _mine(token, present).update(
            status=DeliveryStatus.DELIVERED,
            delivered_at=now,
            updated_at=now,
            claim_token=None,
            integration_id=integration_id,
        )
        breaker.record_success()
        return

    message = _error_text(error)
    if error.permanent:
        if probe:  # the destination answered: it is up, whatever it thought of this batch
            breaker.record_success()
        _give_up(present, token, message, error.status_code, integration_id, report)
        return
    breaker.record_failure(probe=probe)
    _failed(present, token, error, sender.policy, integration_id, report)


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
        _give_up(exhausted, token, note, error.status_code, integration_id, report)
    if retrying:
        report.retried += _retry(retrying, token, message, error, policy, integration_id)


@functools.cache
def _record_columns() -> tuple[str, ...]:
    """The Trace columns a `TraceRecord` is made of (not the routing decisions and other bulk)."""
    wanted = {f.name for f in dataclasses.fields(TraceRecord)}
    return ("id", *(f.attname for f in Trace._meta.concrete_fields if f.attname in wanted))


def _records(trace_pks: Sequence[Any]) -> dict[Any, TraceRecord]:
    """The traces as exporters see them; plain values, not model instances (this is the hot path)."""
    rows = Trace.objects.filter(pk__in=list(trace_pks)).values(*_record_columns())
    return {row["id"]: TraceRecord.from_trace(SimpleNamespace(**row)) for row in rows}


def _error_text(error: ExportError) -> str:
    text = error.message or str(error) or type(error).__name__
    if error.status_code and str(error.status_code) not in text:
        text = f"HTTP {error.status_code}: {text}"
    return text[:LAST_ERROR_MAX]


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# ---------------------------------------------------------------------------------------------
# Row state changes (each a conditional UPDATE)


def _claim(rows: Sequence[Mapping[str, Any]]) -> tuple[uuid.UUID, list[dict[str, Any]]]:
    """pending & due → sending with a fresh token, in ONE statement; returns the rows this call won
    (the given row dicts, with their new ``attempts``).

    The WHERE on status makes the UPDATE the lock: of two workers racing for a row, the second's
    UPDATE finds it no longer pending (Postgres re-checks the condition once the first commits).
    On Postgres, SKIP LOCKED also spares the loser from waiting on rows being claimed. RETURNING
    says which rows were won without a second query (Postgres, and SQLite ≥ 3.35).
    """
    token = uuid.uuid4()
    by_id = {int(r["id"]): r for r in rows}
    if not by_id:
        return token, []
    ids = list(by_id)
    now = timezone.now()
    meta = Delivery._meta
    table = connection.ops.quote_name(meta.db_table)

    def prep(name: str, value: Any) -> Any:
        field = meta.get_field(name)
        assert isinstance(field, Field)
        return field.get_db_prep_value(value, connection)

    marks = ", ".join(["%s"] * len(ids))
    set_sql = "status = %s, claimed_at = %s, claim_token = %s, updated_at = %s, attempts = attempts + 1"
    set_params = [
        DeliveryStatus.SENDING.value,
        prep("claimed_at", now),
        prep("claim_token", token),
        prep("updated_at", now),
    ]
    due_params = [DeliveryStatus.PENDING.value, prep("next_attempt_at", now + EARLY_SLACK)]
    if connection.features.has_select_for_update_skip_locked:
        # Lock by primary key only, and test status on the locked copy: a condition on status that
        # the planner could answer from the in-flight index would scan every pending row of a backlog.
        sql = (
            f"WITH locked AS MATERIALIZED (SELECT id, status, next_attempt_at FROM {table}"
            f" WHERE id IN ({marks}) FOR UPDATE SKIP LOCKED)"
            f" UPDATE {table} SET {set_sql} FROM locked WHERE {table}.id = locked.id"
            f" AND locked.status = %s AND locked.next_attempt_at <= %s RETURNING {table}.id, {table}.attempts"
        )
        params = [*ids, *set_params, *due_params]
    else:
        sql = (
            f"UPDATE {table} SET {set_sql} WHERE id IN ({marks}) AND status = %s AND next_attempt_at <= %s"
            " RETURNING id, attempts"
        )
        params = [*set_params, *ids, *due_params]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        won = cursor.fetchall()
    return token, [{**by_id[int(pk)], "attempts": int(attempts)} for pk, attempts in won]


def _mine(token: uuid.UUID, rows: Iterable[Mapping[str, Any]]) -> Any:
    """Rows still claimed by this token: a row the sweeper took back (claim expired) is left alone.

    The token alone says "sending, by me" (every outcome clears it); a condition on status here
    would let the planner pick the in-flight index and scan the whole backlog.
    """
    return Delivery.objects.filter(pk__in=[r["id"] for r in rows], claim_token=token)


def _retry(
    rows: list[dict[str, Any]],
    token: uuid.UUID,
    message: str,
    error: ExportError,
    policy: RetryPolicy,
    integration_id: int | None,
) -> int:
    now = timezone.now()
    count = 0
    by_attempt: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_attempt[row["attempts"]].append(row)
    for attempt, same in by_attempt.items():
        delay = backoff_delay(attempt, policy, retry_after=error.retry_after)
        changed = _mine(token, same).update(
            status=DeliveryStatus.PENDING,
            next_attempt_at=now + timedelta(seconds=delay),
            dispatched_at=now,
            claim_token=None,
            last_error=message,
            last_status_code=error.status_code,
            integration_id=integration_id,
            updated_at=now,
        )
        if changed:
            outbox.publish([r["id"] for r in same], countdown=delay)
        count += changed
    return count


def _defer(rows: list[dict[str, Any]], retry_at: float) -> int:
    """Circuit open: move pending rows to when it may close, without spending an attempt.

    Claimed first (so no other worker's row is touched), then released with the claim's attempt
    given back: both statements go by primary key and token, never by a scan of pending rows.
    """
    now = timezone.now()
    when = datetime.fromtimestamp(retry_at, tz=now.tzinfo) + timedelta(seconds=random.uniform(0, 0.5))
    token, claimed = _claim(rows)
    if not claimed:
        return 0
    changed = _mine(token, claimed).update(
        status=DeliveryStatus.PENDING,
        claim_token=None,
        attempts=F("attempts") - 1,
        next_attempt_at=when,
        dispatched_at=now,
        updated_at=now,
    )
    if changed:
        outbox.publish([r["id"] for r in claimed], countdown=max(0.0, (when - now).total_seconds()))
    return int(changed)


def _give_up(
    rows: list[dict[str, Any]],
    token: uuid.UUID,
    message: str,
    status_code: int | None,
    integration_id: int | None,
    report: DeliveryReport,
) -> None:
    """This destination is done with these rows: hand each to its next fallback, else dead-letter it."""
    now = timezone.now()
    with transaction.atomic():
        fallbacks = _fallback_rows(rows, now)
        created = Delivery.objects.bulk_create(fallbacks, ignore_conflicts=True) if fallbacks else []
        handed = set()
        new_ids: list[int] = []
        if created:
            # created_at=now singles out the rows made here (not a replayed row's older fallbacks).
            made = Delivery.objects.filter(fallback_of_id__in=[r["id"] for r in rows], created_at=now).values_list(
                "pk", "fallback_of_id"
            )
            for pk, parent in made:
                handed.add(parent)
                new_ids.append(pk)
        common = {
            "claim_token": None,
            "last_error": message,
            "last_status_code": status_code,
            "integration_id": integration_id,
            "updated_at": now,
        }
        if handed:
            report.failed += _mine(token, [r for r in rows if r["id"] in handed]).update(
                status=DeliveryStatus.FAILED, **common
            )
        report.dead += _mine(token, [r for r in rows if r["id"] not in handed]).update(
            status=DeliveryStatus.DEAD, **common
        )
        if new_ids:
            report.fallbacks.extend(new_ids)
            outbox.enqueue_on_commit(new_ids)


def _fallback_rows(rows: list[dict[str, Any]], now: datetime) -> list[Delivery]:
    """For each row, the first fallback destination the trace has no row for yet.

    A fallback row's own chain is its spec's fallbacks followed by the rest of the parent's list,
    so "fallback: [a, b]" tries a (and a's own fallbacks), then b.
    """
    chains = {r["id"]: list(r["spec"].get("fallback") or []) for r in rows}
    if not any(chains.values()):
        return []
    names = {str(f.get("name", "")) for chain in chains.values() for f in chain}
    taken: set[tuple[Any, str]] = set(
        Delivery.objects.filter(trace_id__in=[r["trace_id"] for r in rows], destination__in=names).values_list(
            "trace_id", "destination"
        )
    )
    out: list[Delivery] = []
    for row in rows:
        chain = chains[row["id"]]
        while chain:
            head, chain = chain[0], chain[1:]
            name = str(head.get("name", ""))
            if not name or (row["trace_id"], name) in taken:
                continue
            spec = {**head, "fallback": [*(head.get("fallback") or []), *chain]}
            out.append(
                Delivery(
                    team_id=row["team_id"],
                    trace_id=row["trace_id"],
                    destination=name,
                    spec=spec,
                    rule_name=row["rule_name"],
                    fallback_of_id=row["id"],
                    status=DeliveryStatus.PENDING,
                    next_attempt_at=now,
                    created_at=now,
                    updated_at=now,
                )
            )
            taken.add((row["trace_id"], name))
            break
    return out


# ---------------------------------------------------------------------------------------------
# The sweeper


@dataclass
class SweepReport:
    reclaimed: int = 0  # sending rows whose worker vanished (claim expired)
    dispatched: int = 0  # pending, due rows handed to the broker again


def sweep(*, now: datetime | None = None, limit: int = SWEEP_LIMIT) -> SweepReport:
    """Re-dispatch outbox rows whose task was lost: due but never picked up (the on_commit publish
    failed, the broker lost the message), or claimed by a worker that died mid-send."""
    now = now or timezone.now()
    report = SweepReport()
    claim_timeout = timedelta(seconds=float(settings.TRACERELAY_DELIVERY_CLAIM_TIMEOUT_S))
    grace = timedelta(seconds=float(settings.TRACERELAY_OUTBOX_SWEEP_GRACE_S))

    stale = list(
        Delivery.objects.filter(status=DeliveryStatus.SENDING, claimed_at__lt=now - claim_timeout).values_list(
            "pk", flat=True
        )[:limit]
    )
    if stale:
        report.reclaimed = Delivery.objects.filter(
            pk__in=stale, status=DeliveryStatus.SENDING, claimed_at__lt=now - claim_timeout
        ).update(
            status=DeliveryStatus.PENDING,
            claim_token=None,
            next_attempt_at=now,
            dispatched_at=now,
            last_error="the worker sending this row stopped before recording an outcome; sending again",
            updated_at=now,
        )

    lost = list(
        Delivery.objects.filter(status=DeliveryStatus.PENDING, next_attempt_at__lte=now - grace)
        .filter(Q(dispatched_at__isnull=True) | Q(dispatched_at__lte=now - grace))
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:limit]
    )
    if lost:
        Delivery.objects.filter(pk__in=lost).update(dispatched_at=now)
    ids = [*stale, *lost]
    if ids and outbox.publish(ids):
        report.dispatched = len(ids)
    return report


# ---------------------------------------------------------------------------------------------
# Replay (services for the API and the dashboard)

REPLAYABLE = (DeliveryStatus.DEAD, DeliveryStatus.FAILED)


class NotReplayable(Exception):
    def __init__(self, status: str) -> None:
        super().__init__(f"only dead or failed deliveries can be replayed; this one is {status}")
        self.status = status


def _replay_values(now: datetime) -> dict[str, Any]:
    return {
        "status": DeliveryStatus.PENDING,
        "attempts": 0,
        "next_attempt_at": now,
        "dispatched_at": now,
        "claim_token": None,
        "claimed_at": None,
        "replay_count": F("replay_count") + 1,
        "replayed_at": now,
        "updated_at": now,
    }


def delivery_replay(*, delivery: Delivery) -> Delivery:
    """A dead or failed row → a fresh pending attempt (delivered once: a second replay finds it pending)."""
    now = timezone.now()
    with transaction.atomic():
        changed = Delivery.objects.filter(pk=delivery.pk, status__in=REPLAYABLE).update(**_replay_values(now))
        if not changed:
            delivery.refresh_from_db(fields=["status"])
            raise NotReplayable(delivery.status)
        _breaker_reset(delivery.team_id, delivery.destination)
        outbox.enqueue_on_commit([delivery.pk])
    delivery.refresh_from_db()
    return delivery


def deliveries_replay_dead(*, team_id: int, destination: str | None = None, since: datetime | None = None) -> int:
    """Every dead letter of the team (optionally one destination's, or those dead-lettered since a time)
    → pending again. Returns how many were replayed."""
    now = timezone.now()
    qs = Delivery.objects.filter(team_id=team_id, status=DeliveryStatus.DEAD)
    if destination:
        qs = qs.filter(destination=destination)
    if since is not None:
        qs = qs.filter(updated_at__gte=since)
    total, last_pk = 0, 0
    destinations: set[str] = set()
    while True:
        batch = list(qs.filter(pk__gt=last_pk).order_by("pk").values_list("pk", "destination")[:1000])
        if not batch:
            break
        ids = [pk for pk, _ in batch]
        last_pk = ids[-1]
        destinations.update(name for _, name in batch)
        with transaction.atomic():
            total += Delivery.objects.filter(pk__in=ids, status=DeliveryStatus.DEAD).update(**_replay_values(now))
            outbox.enqueue_on_commit(ids)
    for name in destinations:
        _breaker_reset(team_id, name)
    return total


def _breaker_reset(team_id: int, destination: str) -> None:
    # A replay is an operator saying "it is fixed": let it through without waiting out a cool-down.
    breaker = CircuitBreaker(team_id, destination)
    cache.delete_many([breaker.open_key, breaker.fails_key, breaker.probe_key])
