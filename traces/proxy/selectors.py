"""Reads of a team's proxy upstreams (for the API; the proxy itself reads them via upstreams.py)."""

from __future__ import annotations

from django.db.models import QuerySet

from .models import Upstream


def upstreams_for_team(team_id: int) -> QuerySet[Upstream]:
    return Upstream.objects.filter(team_id=team_id).order_by("name")


def upstream_for_team(team_id: int, upstream_id: int) -> Upstream | None:
    return Upstream.objects.filter(team_id=team_id, pk=upstream_id).first()
