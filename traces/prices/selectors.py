"""Reads of a team's prices, and of the models its calls used that nothing prices. The Trace model is
looked up by name: `traces.models` imports this package's models, so importing it back would make a
cycle (import-linter's acyclic-siblings contract)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.apps import apps
from django.db.models import Count, QuerySet

from .models import TeamPrice

UNPRICED_DAYS = 30
UNPRICED_LIMIT = 100


def prices_for_team(team_id: int) -> QuerySet[TeamPrice]:
    return TeamPrice.objects.filter(team_id=team_id).order_by("model", "provider", "effective_from", "id")


def price_for_team(team_id: int, price_id: int) -> TeamPrice | None:
    return TeamPrice.objects.filter(team_id=team_id, pk=price_id).first()


@dataclass(frozen=True)
class UnpricedModel:
    provider: str
    model: str
    calls: int


def unpriced_models(team_id: int, *, days: int = UNPRICED_DAYS, limit: int = UNPRICED_LIMIT) -> list[UnpricedModel]:
    """The (provider, model) pairs of the team's unpriced calls in the last ``days``, most calls first.
    Read from the partial index `trace_unpriced` alone (team, timestamp; provider and model included):
    only unpriced rows are in it."""
    trace = apps.get_model("traces", "Trace")
    since = datetime.now(tz=UTC) - timedelta(days=days)
    rows = (
        trace.objects.filter(team_id=team_id, unpriced=True, timestamp__gte=since)
        .values("provider", "model")
        .annotate(calls=Count("*"))
        .order_by("-calls", "model", "provider")[:limit]
    )
    return [UnpricedModel(r["provider"], r["model"], r["calls"]) for r in rows]
