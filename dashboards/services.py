"""Board writes: create, change (the whole board, or its widgets from the dashboard's forms),
duplicate and delete, each audited.

A change names the version it was made from (``expected_version``, the pages always do): the UPDATE
applies only while the stored board still has that version, so two people editing one board never
silently overwrite each other's widgets; the second gets `StaleBoard` and the board as it is now.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from accounts.services import audit

from .definition import Board
from .models import Dashboard


class StaleBoard(Exception):
    """The board changed since the version the edit was made from."""


def board_of(dashboard: Dashboard) -> Board:
    return Board(name=dashboard.name, widgets=list(dashboard.widgets or []))


@transaction.atomic
def dashboard_create(*, team_id: int, board: Board, actor: str, user: Any = None) -> Dashboard:
    dashboard = Dashboard.objects.create(team_id=team_id, name=board.name, widgets=board.widgets, created_by=user)
    audit(
        team=team_id,
        actor=actor,
        action="dashboard.create",
        target=f"dashboard:{dashboard.pk}",
        data={"name": dashboard.name, "widgets": len(board.widgets)},
    )
    return dashboard


@transaction.atomic
def dashboard_update(
    *, dashboard: Dashboard, board: Board, actor: str, expected_version: int | None = None
) -> Dashboard:
    """Store ``board`` over ``dashboard``; with ``expected_version``, only if the board is still at it."""
    now = timezone.now()
    rows = Dashboard.objects.filter(pk=dashboard.pk)
    if expected_version is not None:
        rows = rows.filter(version=expected_version)
    changed = rows.update(name=board.name, widgets=board.widgets, updated_at=now, version=F("version") + 1)
    if not changed:
        raise StaleBoard(dashboard.pk)
    dashboard.refresh_from_db()
    audit(
        team=dashboard.team_id,
        actor=actor,
        action="dashboard.update",
        target=f"dashboard:{dashboard.pk}",
        data={"name": dashboard.name, "widgets": len(board.widgets)},
    )
    return dashboard


@transaction.atomic
def dashboard_duplicate(*, dashboard: Dashboard, actor: str, user: Any = None) -> Dashboard:
    name = f"{dashboard.name} (copy)"[:200]
    return dashboard_create(
        team_id=dashboard.team_id, board=Board(name=name, widgets=list(dashboard.widgets)), actor=actor, user=user
    )


@transaction.atomic
def dashboard_delete(*, dashboard: Dashboard, actor: str) -> None:
    audit(
        team=dashboard.team_id,
        actor=actor,
        action="dashboard.delete",
        target=f"dashboard:{dashboard.pk}",
        data={"name": dashboard.name},
    )
    dashboard.delete()
