"""The figures one run of a report shows, read once and rendered as CSV and PDF."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from analytics.breakdown import Row, table_for_team
from analytics.selectors import analytics_for_team

from .definition import Definition


@dataclass(frozen=True)
class Content:
    title: str
    team: str
    since: datetime
    until: datetime
    group_by: str
    answer: dict[str, Any]  # the analytics answer (GET /api/v1/analytics's body) for the period
    rows: list[Row]  # one per interval and group (with skip_empty_groups, those with traces only)
    top_models: list[dict[str, Any]]  # groups of the answer by model, largest cost first


def report_content(
    *, team_id: int, team_name: str, definition: Definition, since: datetime, until: datetime
) -> Content:
    answer, rows = table_for_team(team_id=team_id, query=definition.query(since=since, until=until), now=until)
    if definition.skip_empty_groups and definition.group_by:
        rows = [row for row in rows if row.stats.count]  # a group's intervals with no traffic
        answer = {**answer, "groups": [g for g in answer["groups"] or [] if g["count"]]}
    if definition.group_by == "model":
        top_models = answer["groups"] or []
    else:
        by_model = analytics_for_team(
            team_id=team_id, query=definition.query(since=since, until=until, group_by="model"), now=until
        )
        top_models = by_model["groups"] or []
    return Content(definition.name, team_name, since, until, definition.group_by, answer, rows, top_models)
