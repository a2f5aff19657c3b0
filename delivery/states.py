"""Row state changes, each a conditional UPDATE.

States: pending → sending → delivered | pending (retry) | failed (a fallback carries on) | dead.
A worker claims rows (pending & due → sending, stamped with a fresh token) and writes an outcome
only where the token is still its own.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import F, Field
from django.utils import timezone

from integrations.exporters.base import ExportError

from . import lease, outbox
from .models import Delivery, DeliveryStatus
from .policy import RetryPolicy, backoff_delay

# A countdown task can arrive a little early (clock skew between hosts, timer granularity).
EARLY_SLACK = timedelta(seconds=1)


@dataclass
class DeliveryReport:
    """What one `deliver_batch` call did (for logs, tests and the bench)."""

    delivered: int = 0
    retried: int = 0
    failed: int = 0  # gave up here, a fallback row took over
    dead: int = 0
    deferred: int = 0  # circuit open: rescheduled without an attempt
    skipped: int = 0  # not pending, not due, or claimed by someone else
    dropped: int = 0  # not sent on purpose (over quota, another environment): `Delivery.reason`
    held: int = 0  # over quota with over_quota "delay": pending again when the window has room
    fallbacks: list[int] = field(default_factory=list)


def claim(
    rows: Sequence[Mapping[str, Any]], *, batch_id: uuid.UUID | None = None, whole: bool = False
) -> tuple[uuid.UUID, list[dict[str, Any]]]:
    """pending & due → sending with a fresh token, in ONE statement; returns the rows this call won
    (the given row dicts, with their new ``attempts``).

    The WHERE on status makes the UPDATE the lock: of two workers racing for a row, the second's
    UPDATE finds it no longer pending (Postgres re-checks the condition once the first commits).
    SKIP LOCKED also spares the loser from waiting on rows being claimed. RETURNING says which rows
    were won without a second query.

    The rows are stamped with this process's lease (`lease.current`: a dead worker's claims are
    taken over within seconds) and, when ``batch_id`` is given, with the batch they are sent in
    (None leaves the rows' batch as it was: a claim to give up, retry or defer, not to send).
    ``whole``: the rows are one batch re-formed for a re-send; they are locked in id order and a
    locked row is waited for instead of skipped, so that of two workers racing for the same batch
    one wins all of it and the other none (SKIP LOCKED could split it between them).
    """
    token = uuid.uuid4()
    by_id = {int(r["id"]): r for r in rows}
    if not by_id:
        return token, []
    ids = sorted(by_id)
    now = timezone.now()
    meta = Delivery._meta
    table = connection.ops.quote_name(meta.db_table)

    def prep(name: str, value: Any) -> Any:
        field = meta.get_field(name)
        assert isinstance(field, Field)
        return field.get_db_prep_value(value, connection)

    marks = ", ".join(["%s"] * len(ids))
    set_sql = (
        "status = %s, claimed_at = %s, claim_token = %s, claimed_by = %s, updated_at = %s, attempts = attempts + 1"
    )
    set_params = [
        DeliveryStatus.SENDING.value,
        prep("claimed_at", now),
        prep("claim_token", token),
        prep("claimed_by", lease.current()),
        prep("updated_at", now),
    ]
    if batch_id is not None:
        set_sql += ", batch_id = %s"
        set_params.append(prep("batch_id", batch_id))
    due_params = [DeliveryStatus.PENDING.value, prep("next_attempt_at", now + EARLY_SLACK)]
    # Lock by primary key only, and test status on the locked copy: a condition on status that the
    # planner could answer from the in-flight index would scan every pending row of a backlog.
    lock = "ORDER BY id FOR UPDATE" if whole else "FOR UPDATE SKIP LOCKED"
    sql = (
        f"WITH locked AS MATERIALIZED (SELECT id, status, next_attempt_at FROM {table}"
        f" WHERE id IN ({marks}) {lock})"
        f" UPDATE {table} SET {set_sql} FROM locked WHERE {table}.id = locked.id"
        f" AND locked.status = %s AND locked.next_attempt_at <= %s RETURNING {table}.id, {table}.attempts"
    )
    params = [*ids, *set_params, *due_params]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        won = cursor.fetchall()
    # In id order, whatever order the plan updated them in: a batch re-sent is the same request.
    return token, [{**by_id[int(pk)], "attempts": int(attempts)} for pk, attempts in sorted(won)]


def mine(token: uuid.UUID, rows: Iterable[Mapping[str, Any]]) -> Any:
    """Rows still claimed by this token: a row the sweeper took back (claim expired) is left alone.

    The token alone says "sending, by me" (every outcome clears it); a condition on status here
    would let the planner pick the in-flight index and scan the whole backlog.
    """
    return Delivery.objects.filter(pk__in=[r["id"] for r in rows], claim_token=token)


def retry(
    rows: list[dict[str, Any]],
    token: uuid.UUID,
    message: str,
    error: ExportError,
    policy: RetryPolicy,
    integration_id: int | None,
) -> int:
    """A transient failure: the rows are pending again after one backoff delay, all of them at the
    same moment (they were claimed together, as one batch: the re-send re-forms it whole)."""
    if not rows:
        return 0
    now = timezone.now()
    delay = backoff_delay(max(r["attempts"] for r in rows), policy, retry_after=error.retry_after)
    changed = mine(token, rows).update(
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
        outbox.publish([r["id"] for r in rows], countdown=delay)
    return int(changed)


def wait(rows: list[dict[str, Any]], token: uuid.UUID, reason: str, seconds: float) -> int:
    """Claimed rows that cannot be sent yet (a span whose parent has not arrived, for a destination
    that needs it first): pending again in ``seconds``, the claim's attempt given back."""
    if not rows:
        return 0
    now = timezone.now()
    changed = mine(token, rows).update(
        status=DeliveryStatus.PENDING,
        claim_token=None,
        attempts=F("attempts") - 1,
        next_attempt_at=now + timedelta(seconds=seconds),
        dispatched_at=now,
        last_error=reason,
        updated_at=now,
    )
    if changed:
        outbox.publish([r["id"] for r in rows], countdown=seconds)
    return int(changed)


def defer(rows: list[dict[str, Any]], retry_at: float) -> int:
    """Circuit open: move pending rows to when it may close, without spending an attempt.

    Claimed first (so no other worker's row is touched), then released with the claim's attempt
    given back: both statements go by primary key and token, never by a scan of pending rows.
    """
    now = timezone.now()
    when = datetime.fromtimestamp(retry_at, tz=now.tzinfo) + timedelta(seconds=random.uniform(0, 0.5))
    token, claimed = claim(rows)
    if not claimed:
        return 0
    changed = mine(token, claimed).update(
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


def drop(
    rows: list[dict[str, Any]],
    token: uuid.UUID,
    reason: str,
    message: str,
    integration_id: int | None,
    report: DeliveryReport,
) -> None:
    """Not sent, on purpose: dropped with the reason (`DropReason`), no fallback; replayable."""
    if not rows:
        return
    report.dropped += mine(token, rows).update(
        status=DeliveryStatus.DROPPED,
        reason=reason,
        claim_token=None,
        last_error=message,
        last_status_code=None,
        integration_id=integration_id,
        updated_at=timezone.now(),
    )


def hold(rows: list[dict[str, Any]], token: uuid.UUID, until: float, report: DeliveryReport) -> None:
    """Claimed rows back to pending at ``until`` (epoch seconds) without spending an attempt: the
    quota's ``delay``. They leave their batch (sent with whatever is due then)."""
    if not rows:
        return
    now = timezone.now()
    when = datetime.fromtimestamp(until, tz=now.tzinfo) + timedelta(seconds=random.uniform(0, 1.0))
    changed = mine(token, rows).update(
        status=DeliveryStatus.PENDING,
        claim_token=None,
        attempts=F("attempts") - 1,
        batch_id=None,
        next_attempt_at=when,
        dispatched_at=now,
        updated_at=now,
    )
    report.held += changed
    if changed:
        outbox.publish([r["id"] for r in rows], countdown=max(0.0, (when - now).total_seconds()))


def give_up(
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
            report.failed += mine(token, [r for r in rows if r["id"] in handed]).update(
                status=DeliveryStatus.FAILED, **common
            )
        report.dead += mine(token, [r for r in rows if r["id"] not in handed]).update(
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
