"""The average of a numeric score over time (docs/analytics.md#scores): `GET /api/v1/analytics?score=<name>`,
the analytics page's "Score: <name>" chart and the dashboards' `score_avg`/`score_count` widgets.

Read from the Score table directly (scores are far fewer than traces: no rollup): a range of the
`score_team_time` index (the trace's time, copied onto each score when it is stored), each score's
trace checked against the feed's other filters by its key (`TraceFilter.apply`, the feed's own
filtering) when there are any, bucketed in Postgres into the plan's intervals (`width_bucket` over
the interval starts, so days in a time zone are the same days as the other series'). A boolean score
counts 1 or 0 (its average is the share of `true`); a categorical one has no number and is not counted.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

from django.contrib.postgres.fields import ArrayField
from django.db.models import Avg, Count, Exists, F, FloatField, Func, IntegerField, OuterRef, Q, Sum, Value
from django.db.models.functions import Cast, Extract

from traces.models import Score, Trace
from traces.scores import NAME_MAX, NAME_PATTERN

from . import plan as planning


class ScoreNameError(ValueError):
    pass


def check_score_name(name: str) -> str:
    if not name or len(name) > NAME_MAX or not NAME_PATTERN.match(name):
        raise ScoreNameError(f"A score's name: 1-{NAME_MAX} letters, digits, '_', '.', ':' or '-'.")
    return name


def score_figures(*, team_id: int, trace_filter: Any, plan: planning.TimePlan, name: str) -> dict[str, Any]:
    """``{"name", "count", "avg", "series": [{"t", "count", "avg"}]}`` over the plan's range and
    intervals: the scores named ``name`` (with a number) of the traces ``trace_filter`` selects."""
    starts = plan.starts
    in_range = dataclasses.replace(
        trace_filter, since=datetime.fromtimestamp(plan.since, UTC), until=datetime.fromtimestamp(plan.until, UTC)
    )
    # Driven by the scores: a range of `score_team_time` (the trace's time, copied onto the score), and
    # only when the filter says more than the time, each score's trace checked by its primary key.
    untimed = dataclasses.replace(trace_filter, since=None, until=None)
    trace = in_range.apply(Trace.objects.filter(team_id=team_id, pk=OuterRef("trace_id")))
    bucket = Func(
        Cast(Extract(F("trace_timestamp"), "epoch"), FloatField()),
        Value([float(s) for s in starts], output_field=ArrayField(FloatField())),
        function="width_bucket",
        output_field=IntegerField(),
    )
    rows = (
        Score.objects.filter(
            team_id=team_id,
            name=name,
            number__isnull=False,
            trace_timestamp__gte=in_range.since,
            trace_timestamp__lt=in_range.until,
        )
        .filter(Exists(trace) if untimed != type(trace_filter)() else Q())
        .annotate(bucket=bucket)
        .values("bucket")
        .annotate(n=Count("pk"), avg=Avg("number"), total=Sum("number"))
        .order_by()
    )
    per_bucket = {row["bucket"]: row for row in rows}
    series, count, total = [], 0, 0.0
    for i, start in enumerate(starts[:-1]):
        row = per_bucket.get(i + 1)  # width_bucket: 1 for [starts[0], starts[1])
        n = row["n"] if row else 0
        series.append({"t": planning.iso(start), "count": n, "avg": row["avg"] if row else None})
        count += n
        total += row["total"] if row else 0.0
    return {"name": name, "count": count, "avg": total / count if count else None, "series": series}
