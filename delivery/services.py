"""Writes for the API and the admin: replay of dead and failed deliveries, each with its audit record."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from accounts.services import audit

from . import outbox
from .breaker import breaker_reset
from .models import Delivery, DeliveryStatus
from .selectors import of_integration

REPLAYABLE = (DeliveryStatus.DEAD, DeliveryStatus.FAILED, DeliveryStatus.DROPPED)


class NotReplayable(Exception):
    def __init__(self, status: str) -> None:
        super().__init__(f"only dead, failed or dropped deliveries can be replayed; this one is {status}")
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
        "reason": "",
        "updated_at": now,
    }


def delivery_replay(*, delivery: Delivery, actor: str) -> Delivery:
    """A dead or failed row → a fresh pending attempt (delivered once: a second replay finds it pending).

    The audit record is written here, so every door (API, admin) records the replay the same way.
    """
    now = timezone.now()
    with transaction.atomic():
        changed = Delivery.objects.filter(pk=delivery.pk, status__in=REPLAYABLE).update(**_replay_values(now))
        if not changed:
            delivery.refresh_from_db(fields=["status"])
            raise NotReplayable(delivery.status)
        breaker_reset(delivery.team_id, delivery.destination)
        outbox.enqueue_on_commit([delivery.pk])
        audit(team=delivery.team_id, actor=actor, action="delivery.replay", target=str(delivery.pk))
    delivery.refresh_from_db()
    return delivery


def deliveries_replay_dead(
    *,
    team_id: int,
    actor: str,
    destination: str | None = None,
    since: datetime | None = None,
    integration: tuple[int, str] | None = None,
) -> int:
    """Every dead letter of the team (optionally one destination's, one integration's given as
    (id, name), or those dead-lettered since a time) → pending again. Returns how many were
    replayed; the audit record says so."""
    now = timezone.now()
    qs = Delivery.objects.filter(team_id=team_id, status=DeliveryStatus.DEAD)
    if destination:
        qs = qs.filter(destination=destination)
    if integration is not None:
        qs = qs.filter(of_integration(*integration))
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
        breaker_reset(team_id, name)
    audit(
        team=team_id,
        actor=actor,
        action="delivery.replay_dead",
        data={
            "destination": destination,
            "integration": integration[1] if integration else None,
            "since": since.isoformat() if since else None,
            "replayed": total,
        },
    )
    return total


def deliveries_resend(*, trace_ids: Sequence[Any]) -> int:
    """The delivered rows of these traces → pending again, so each destination receives the trace as
    it is now (re-pricing's ``redeliver``: docs/pricing.md). The unique (trace, destination) row is
    reset, not copied; its batch is forgotten, so the send is a new one (a new webhook delivery id)
    and not a retry the destination would drop as seen. Rows still waiting, failed, dead or dropped
    are left as they are: a waiting row sends the trace as it is now anyway. How many were reset.
    Call it in the caller's transaction: the tasks are published once it commits."""
    if not trace_ids:
        return 0
    now = timezone.now()
    ids = list(
        Delivery.objects.filter(trace_id__in=list(trace_ids), status=DeliveryStatus.DELIVERED).values_list(
            "pk", flat=True
        )
    )
    if not ids:
        return 0
    changed = Delivery.objects.filter(pk__in=ids, status=DeliveryStatus.DELIVERED).update(
        **_replay_values(now), batch_id=None
    )
    outbox.enqueue_on_commit(ids)
    return changed
