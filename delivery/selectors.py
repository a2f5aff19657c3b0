"""Reads: the team's deliveries as the API lists them, one delivery, a trace's deliveries."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import F, QuerySet

from .models import Delivery

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
