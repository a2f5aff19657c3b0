"""Reads: the team's deliveries as the API lists them, one delivery, a trace's deliveries."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, F, Q, QuerySet
from django.utils import timezone

from .models import Delivery, DeliveryStatus, DeliveryWorker
from .sweeper import expired_workers

# The columns the API shows (annotated with the trace's public id and the integration's name).
ROW_FIELDS = (
    "id",
    "public_trace_id",
    "destination",
    "integration_name",
    "rule_name",
    "status",
    "attempts",
    "next_attempt_at",
    "last_error",
    "last_status_code",
    "reason",
    "fallback_of_id",
    "replay_count",
    "replayed_at",
    "created_at",
    "updated_at",
    "delivered_at",
)


def deliveries_for_team(team_id: int) -> QuerySet[Delivery]:
    return Delivery.objects.filter(team_id=team_id).annotate(
        public_trace_id=F("trace__trace_id"), integration_name=F("integration__name")
    )


def delivery_row(team_id: int, delivery_id: int) -> dict[str, Any] | None:
    return deliveries_for_team(team_id).filter(pk=delivery_id).values(*ROW_FIELDS).first()


def team_delivery(team_id: int, delivery_id: int) -> Delivery | None:
    return Delivery.objects.filter(team_id=team_id, pk=delivery_id).first()


def delivery_page(team_id: int, filters: Mapping[str, Any], *, limit: int) -> tuple[list[dict[str, Any]], bool]:
    """Up to ``limit`` rows newest first, below the cursor's id, and whether there are more."""
    qs = deliveries_for_team(team_id)
    if "status" in filters:
        qs = qs.filter(status=filters["status"])
    if "reason" in filters:
        qs = qs.filter(reason=filters["reason"])
    if "destination" in filters:
        qs = qs.filter(destination=filters["destination"])
    if "trace" in filters:
        qs = qs.filter(trace__trace_id=filters["trace"])
    if "since" in filters:
        qs = qs.filter(created_at__gte=filters["since"])
    if "until" in filters:
        qs = qs.filter(created_at__lt=filters["until"])
    if "cursor" in filters:
        qs = qs.filter(pk__lt=filters["cursor"])
    rows = list(qs.order_by("-pk").values(*ROW_FIELDS)[: limit + 1])
    return rows[:limit], len(rows) > limit


def trace_deliveries(trace_pk: Any) -> list[Delivery]:
    """A trace's deliveries, oldest first (the trace detail shows them)."""
    return list(Delivery.objects.filter(trace_id=trace_pk).select_related("fallback_of").order_by("id"))


def of_integration(integration_id: int, name: str) -> Q:
    """The deliveries of one integration: resolved to it, or routed by its name and not tried yet
    (the row learns its integration on the first attempt)."""
    return Q(integration_id=integration_id) | Q(integration__isnull=True, destination=name)


# What the integrations page counts: sending is still pending to the user.
COUNTED: dict[str, str] = {
    DeliveryStatus.PENDING: "pending",
    DeliveryStatus.SENDING: "pending",
    DeliveryStatus.DELIVERED: "delivered",
    DeliveryStatus.FAILED: "failed",
    DeliveryStatus.DEAD: "dead",
    DeliveryStatus.DROPPED: "dropped",
}


def integration_delivery_counts(
    team_id: int, integrations: Iterable[tuple[int, str]], *, since: datetime
) -> dict[int, dict[str, int]]:
    """(integration id, name) pairs → {id: {delivered, failed, dead, pending, dropped}} of the
    deliveries created since ``since``, one grouped query for them all."""
    pairs = list(integrations)
    counts = {pk: dict.fromkeys(("delivered", "failed", "dead", "pending", "dropped"), 0) for pk, _ in pairs}
    if not pairs:
        return counts
    by_name = {name: pk for pk, name in pairs}
    match = Q()
    for integration_id, name in pairs:
        match |= of_integration(integration_id, name)
    rows = (
        Delivery.objects.filter(match, team_id=team_id, created_at__gte=since)
        .values("integration_id", "destination", "status")
        .annotate(n=Count("*"))  # not COUNT(id): the index `delivery_team_created` has all it reads
    )
    for row in rows:
        resolved: int | None = row["integration_id"]
        owner = resolved if resolved in counts else by_name.get(row["destination"])
        if owner is not None:
            counts[owner][COUNTED[row["status"]]] += row["n"]
    return counts


# The window of an integration's recent counts (the integrations pages and the integrations API).
RECENT_WINDOW = timedelta(hours=24)


def recent_delivery_counts(
    team_id: int, integrations: Iterable[tuple[int, str]], *, now: datetime | None = None
) -> dict[int, dict[str, int]]:
    """`integration_delivery_counts` of the deliveries created in the ``RECENT_WINDOW`` up to
    ``now`` (default: now), the start included."""
    return integration_delivery_counts(team_id, integrations, since=(now or timezone.now()) - RECENT_WINDOW)


def dead_letters(team_id: int, integration_id: int, name: str, *, limit: int) -> tuple[list[Delivery], int]:
    """An integration's dead deliveries, newest first (at most ``limit``), and how many there are."""
    qs = Delivery.objects.filter(of_integration(integration_id, name), team_id=team_id, status=DeliveryStatus.DEAD)
    rows: list[Delivery] = list(
        qs.annotate(public_trace_id=F("trace__trace_id"), trace_model=F("trace__model")).order_by("-id")[:limit]
    )
    total = len(rows) if len(rows) < limit else qs.count()
    return rows, total


def latest_trace_of_integration(team_id: int, integration_id: int, name: str) -> Any:
    """The trace of the newest delivery of an integration (its page previews the transform on it)."""
    return (
        Delivery.objects.filter(of_integration(integration_id, name), team_id=team_id)
        .order_by("-id")
        .values_list("trace_id", flat=True)
        .first()
    )


def integration_delivery(team_id: int, integration_id: int, name: str, delivery_id: int) -> Delivery | None:
    return Delivery.objects.filter(of_integration(integration_id, name), team_id=team_id, pk=delivery_id).first()


def worker_counts() -> dict[str, int]:
    """Delivery worker processes by lease state: ``alive`` (renewed within the lease) and
    ``expired`` (stopped renewing; what they held is being taken over)."""
    total = DeliveryWorker.objects.count()
    expired = expired_workers().count()
    return {"alive": total - expired, "expired": expired}
