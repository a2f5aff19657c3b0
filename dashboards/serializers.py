"""Dashboard API shapes, for the OpenAPI document (`dashboards.definition` does the checking). The
request shapes are closed (``closed = True``: unknown fields are refused, as `parse_board` does)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from analytics.plan import INTERVALS
from analytics.slices import GROUP_BY
from config.fields import NAME_PATTERN
from traces.serializers import FILTER_VALUE_SCHEMA

from .definition import (
    CHARTS,
    FILTER_KEYS,
    MAX_NAME,
    MAX_TITLE,
    MAX_WIDGETS,
    METRICS,
    PER_INTERVAL,
    TIME_RANGES,
)

FILTERS_SCHEMA = {
    "type": "object",
    "nullable": True,
    "description": "The analytics API's (the trace feed's) filter parameters, checked as it checks them: "
    f"{', '.join(FILTER_KEYS)}, and `metadata.<key>`; other names, and since/until/time_range (the widget's "
    "`time_range` says the period), are refused. Kept as given. null: none.",
    "properties": {key: FILTER_VALUE_SCHEMA for key in FILTER_KEYS},
    "additionalProperties": FILTER_VALUE_SCHEMA,
}


@extend_schema_field(FILTERS_SCHEMA)
class FiltersField(serializers.JSONField):
    pass


class WidgetSerializer(serializers.Serializer):
    closed = True
    title = serializers.RegexField(NAME_PATTERN, max_length=MAX_TITLE, help_text="1-200 characters, one line.")
    metric = serializers.ChoiceField(
        choices=list(METRICS),
        help_text="The figure shown: a field of the analytics answer's `totals`, or `latency_`/`ttft_` + "
        "p50, p90, p95, p99 or mean, or `score_avg`/`score_count` of the score named in `score`. A line (and a "
        f"bar or table without group_by) needs one kept per interval: {', '.join(PER_INTERVAL)}.",
    )
    filters = FiltersField(required=False)
    group_by = serializers.ChoiceField(
        choices=list(GROUP_BY),
        required=False,
        allow_null=True,
        help_text="A line per group (the 6 largest by cost), or a bar or table row per group (the 10 largest). "
        "Not with `number`.",
    )
    interval = serializers.ChoiceField(
        choices=list(INTERVALS),
        required=False,
        allow_null=True,
        help_text="The series step (null: chosen from the range, as the analytics API does).",
    )
    time_range = serializers.ChoiceField(
        choices=list(TIME_RANGES), required=False, allow_null=True, help_text="The range before now; default `24h`."
    )
    chart = serializers.ChoiceField(choices=list(CHARTS))
    score = serializers.RegexField(
        r"^[A-Za-z0-9_.:-]{1,200}$",
        required=False,
        allow_null=True,
        help_text="With metric `score_avg` or `score_count` (and only then): the score's name.",
    )


class DashboardInSerializer(serializers.Serializer):
    closed = True
    name = serializers.RegexField(NAME_PATTERN, max_length=MAX_NAME, help_text="1-200 characters, one line.")
    widgets = WidgetSerializer(
        many=True, required=False, help_text=f"In the order shown; at most {MAX_WIDGETS}. A PATCH replaces the list."
    )


class WidgetOutSerializer(serializers.Serializer):
    title = serializers.CharField()
    metric = serializers.ChoiceField(choices=list(METRICS))
    filters = FiltersField()
    group_by = serializers.CharField(allow_null=True)
    interval = serializers.CharField(allow_null=True)
    time_range = serializers.ChoiceField(choices=list(TIME_RANGES))
    chart = serializers.ChoiceField(choices=list(CHARTS))
    score = serializers.CharField(required=False, help_text="Only for a score metric: the score's name.")


class DashboardOutSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    widgets = WidgetOutSerializer(many=True)
    version = serializers.IntegerField(help_text="Goes up by one at each change.")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class DashboardListSerializer(serializers.Serializer):
    data = DashboardOutSerializer(many=True)  # type: ignore[assignment]
