"""What the run API sends: `run_json` for a list item (from a `Run` summary row); a run's detail is
built by Postgres (`selectors.run_spans`). The Serializer classes describe both for the OpenAPI
document only (the schema fuzz test checks answers against them)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import inline_serializer
from rest_framework import serializers

from config.jsoncodec import iso

from ..models import Kind, Run, Status
from ..serializers import TraceErrorSerializer
from .selectors import duration_ms, money


def run_json(run: Run) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "name": run.name,
        "root_id": run.root_id or None,
        "started_at": iso(run.started_at),
        "duration_ms": duration_ms(run.started_at, run.ended_at),
        "status": "error" if run.errors else "success",
        "spans": run.spans,
        "errors": run.errors,
        "llm_calls": run.llm_calls,
        "cost": money(run.cost, run.llm_calls, run.unpriced_calls),
        "unpriced_calls": run.unpriced_calls,
        "prompt_tokens": run.prompt_tokens,
        "completion_tokens": run.completion_tokens,
        "user_id": run.user_id,
        "session_id": run.session_id,
    }


# --- OpenAPI descriptions ----------------------------------------------------------------------

_COST_HELP = "USD of the run's priced calls; null when it has calls and none is priced (never a silent 0)."


class RunSummarySerializer(serializers.Serializer):
    run_id = serializers.CharField()
    name = serializers.CharField(allow_blank=True, help_text="The root span's name (blank until the root arrives).")
    root_id = serializers.CharField(allow_null=True, help_text="The root span's `id`; null until it arrives.")
    started_at = serializers.DateTimeField(help_text="The earliest span's timestamp.")
    duration_ms = serializers.IntegerField(help_text="From the earliest span's start to the latest span's end.")
    status = serializers.ChoiceField(choices=["success", "error"], help_text="`error` if any span failed.")
    spans = serializers.IntegerField(help_text="Spans of every kind.")
    errors = serializers.IntegerField(help_text="Spans whose status is not success.")  # type: ignore[assignment]
    llm_calls = serializers.IntegerField(help_text="`llm` and `embedding` spans: the calls.")
    cost = serializers.FloatField(allow_null=True, help_text=_COST_HELP)
    unpriced_calls = serializers.IntegerField(help_text="Calls whose model has no known price (not in `cost`).")
    prompt_tokens = serializers.IntegerField(help_text="Of the calls only: a structural span's usage is not added.")
    completion_tokens = serializers.IntegerField(help_text="Of the calls only.")
    user_id = serializers.CharField(allow_blank=True, help_text="The root's, else the first a span carried.")
    session_id = serializers.CharField(allow_blank=True, help_text="The root's, else the first a span carried.")


RunPageSerializer = inline_serializer(
    "RunSummaryPage",
    {
        "data": RunSummarySerializer(many=True, help_text="Newest first (by `started_at`)."),
        "next_cursor": serializers.CharField(
            allow_null=True, help_text="Pass as `cursor` for the next page; null at end."
        ),
    },
)


class RunSpanSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="The span's `id` (a trace id: GET /api/v1/traces/{id} has its input/output).")
    parent_id = serializers.CharField(allow_null=True, help_text="The parent span's `id`; null for a root.")
    kind = serializers.ChoiceField(choices=Kind.choices)
    name = serializers.CharField(allow_blank=True)
    model = serializers.CharField(allow_blank=True)
    provider = serializers.CharField(allow_blank=True)
    status = serializers.ChoiceField(choices=Status.choices)
    error = TraceErrorSerializer(allow_null=True)
    timestamp = serializers.DateTimeField(help_text="When the span started.")
    latency_ms = serializers.IntegerField(allow_null=True, help_text="Its duration.")
    time_to_first_token_ms = serializers.IntegerField(allow_null=True)
    cost = serializers.FloatField(allow_null=True, help_text="A call's USD; null when unpriced and for other kinds.")
    unpriced = serializers.BooleanField(help_text="A call without a known price; never true for other kinds.")
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    total_tokens = serializers.IntegerField()
    usage_estimated = serializers.BooleanField()
    service_name = serializers.CharField(allow_blank=True)
    user_id = serializers.CharField(allow_blank=True)
    session_id = serializers.CharField(allow_blank=True)


class RunTotalsSerializer(serializers.Serializer):
    spans = serializers.IntegerField()
    llm_calls = serializers.IntegerField(help_text="`llm` and `embedding` spans.")
    cost = serializers.FloatField(allow_null=True, help_text=_COST_HELP)
    unpriced_calls = serializers.IntegerField()
    prompt_tokens = serializers.IntegerField(help_text="Of the calls only.")
    completion_tokens = serializers.IntegerField(help_text="Of the calls only.")
    duration_ms = serializers.IntegerField(help_text="From the earliest span's start to the latest span's end.")
    errors = serializers.IntegerField(help_text="Spans whose status is not success.")  # type: ignore[assignment]


class RunDetailSerializer(serializers.Serializer):
    run_id = serializers.CharField()
    spans = RunSpanSerializer(
        many=True,
        help_text="Every span of the run, oldest first (by timestamp, then id), without input/output: GET "
        "/api/v1/traces/{id} for those. A span's parent may be missing while it has not arrived yet.",
    )
    totals = RunTotalsSerializer()
    truncated = serializers.BooleanField(
        help_text="True only for a run of more than 100,000 spans: `spans` holds its first 100,000; "
        "`totals` count them all."
    )
