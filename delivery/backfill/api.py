"""The backfill API (docs/delivery.md, "Backfill").

POST   /api/v1/integrations/{id}/backfill    start a job → 202 with it
GET    /api/v1/integrations/{id}/backfills   the integration's jobs, newest first
GET    /api/v1/backfills/{id}                one job
DELETE /api/v1/backfills/{id}                cancel it → 202 with it (409 once it has finished)

Reading needs `integrations:read`, writing `integrations:write` (production keys: admins).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import Scope
from accounts.permissions import principal_of, scoped
from config.fields import StrictBooleanField, StrictIntegerField
from config.problems import Problem, json_object, problem_responses
from integrations.models import Integration
from traces.filters import FILTER_PARAMS, FilterError, parse_trace_filter
from traces.serializers import FILTER_VALUE_SCHEMA

from ..models import Backfill, BackfillStatus
from . import selectors
from .services import DEFAULT_PER_SECOND, MAX_PER_SECOND, NotCancellable, backfill_cancel, backfill_start

TAG = "Integrations"
PERIOD_PARAMS = ("since", "until", "time_range")
FILTER_KEYS = tuple(p for p in FILTER_PARAMS if p not in PERIOD_PARAMS)

BackfillPermission = scoped(Scope.INTEGRATIONS_READ, Scope.INTEGRATIONS_WRITE)

FILTERS_SCHEMA = {
    "type": "object",
    "description": "Trace feed filters, with the feed's names and parsing: "
    f"{', '.join(FILTER_KEYS)}, `metadata.<key>` and `score.<name>`. Values as in the feed's query string "
    "(numbers and booleans are taken as their text; a list is joined with commas). The period is since/until.",
    "properties": {key: FILTER_VALUE_SCHEMA for key in FILTER_KEYS},
    "additionalProperties": FILTER_VALUE_SCHEMA,
}


@extend_schema_field(FILTERS_SCHEMA)
class FiltersField(serializers.JSONField):
    pass


def clean_filters(value: Any) -> dict[str, str]:
    """The feed's filters as query-string text, checked by the feed's parser; errors per filter."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise serializers.ValidationError('An object of trace feed filters, e.g. {"model": "gpt-4o*"}.')
    problems: dict[str, list[str]] = {}
    out: dict[str, str] = {}
    for key, raw in value.items():
        known = key in FILTER_KEYS or key.startswith("metadata.") or key.startswith("score.")
        if key in PERIOD_PARAMS:
            problems[key] = ["Give the period as the backfill's since and until, not as a filter."]
        elif not known:
            problems[key] = [f"Unknown filter; known: {', '.join(FILTER_KEYS)}, metadata.<key>, score.<name>."]
        elif isinstance(raw, bool):
            out[key] = "true" if raw else "false"
        elif isinstance(raw, str | int | float):
            out[key] = str(raw)
        elif isinstance(raw, list) and all(isinstance(v, str) for v in raw):
            out[key] = ",".join(raw)
        else:
            problems[key] = ["A string, number, boolean or list of strings."]
    if problems:
        raise serializers.ValidationError(problems)
    try:
        parse_trace_filter(out)
    except FilterError as exc:
        raise serializers.ValidationError({exc.param: [exc.message]})
    return out


class BackfillInSerializer(serializers.Serializer):
    closed = True
    since = serializers.DateTimeField(help_text="Traces whose time is at or after this (ISO 8601).")
    until = serializers.DateTimeField(help_text="… and before this.")
    filters = FiltersField(required=False, allow_null=True)
    apply_rules = StrictBooleanField(
        help_text="true: what today's routing rules send to this integration (conditions, sampling); "
        "false: every trace matching the filters."
    )
    max_per_second = StrictIntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=MAX_PER_SECOND,
        help_text=f"Traces written to the outbox per second at most (default {DEFAULT_PER_SECOND}).",
    )

    def validate_filters(self, value: Any) -> dict[str, str]:
        return clean_filters(value)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(str(k) for k in self.initial_data if k not in self.fields)
        if unknown:
            raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
        if attrs["since"] >= attrs["until"]:
            raise serializers.ValidationError({"since": ["Must be earlier than until."]})
        return attrs


class BackfillSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    integration = serializers.IntegerField(source="integration_id")
    status = serializers.ChoiceField(choices=BackfillStatus.choices)
    total = serializers.IntegerField(
        help_text="Traces in the period matching the filters (counted at the start), "
        "plus the spans of their runs from outside it (added as they are sent)."
    )
    sent = serializers.IntegerField(help_text="Delivered by this backfill.")
    skipped = serializers.IntegerField(
        help_text="Already at this destination (live or an earlier backfill), or not routed here by the rules."
    )
    failed = serializers.IntegerField(help_text="Gave up: dead-lettered, dropped, or handed to a fallback.")
    since = serializers.DateTimeField()
    until = serializers.DateTimeField()
    filters = FiltersField()
    apply_rules = serializers.BooleanField()
    max_per_second = serializers.IntegerField()
    created_by = serializers.CharField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    error = serializers.CharField(help_text="Why a failed job stopped; empty otherwise.")


def backfill_json(job: Backfill) -> dict[str, Any]:
    return dict(BackfillSerializer(selectors.with_live_counts(job)).data)


def _integration(team_id: int, integration_id: int) -> Integration:
    found = Integration.objects.filter(team_id=team_id, pk=integration_id).first()
    if found is None:
        raise Problem(404, "not-found", f"No integration {integration_id} in this team.")
    return found


def _job(team_id: int, backfill_id: int) -> Backfill:
    job = selectors.backfill_for(team_id, backfill_id)
    if job is None:
        raise Problem(404, "not-found", f"No backfill {backfill_id} in this team.")
    return job


class BackfillStart(APIView):
    permission_classes = [BackfillPermission]

    @extend_schema(
        tags=[TAG],
        operation_id="integrations_backfill",
        summary="Send stored traces to this integration",
        description="Starts a job on the backfill queue. A trace this integration already has a delivery "
        "for (live, or by an earlier backfill, in any state) is skipped, so a second backfill sends nothing "
        "twice. Runs go whole: the structural spans of a sent span's run go too.",
        request={"application/json": BackfillInSerializer},
        responses={202: BackfillSerializer, **problem_responses(400, 401, 403, 404, 415)},
    )
    def post(self, request: Request, integration_id: int) -> Response:
        principal = principal_of(request)
        body = BackfillInSerializer(data=json_object(request))
        body.is_valid(raise_exception=True)  # a bad body is answered before the look-up
        data = body.validated_data
        job = backfill_start(
            integration=_integration(principal.team_id, integration_id),
            since=data["since"],
            until=data["until"],
            filters=data.get("filters") or {},
            apply_rules=data["apply_rules"],
            max_per_second=data.get("max_per_second"),
            actor=principal.actor,
        )
        return Response(backfill_json(job), status=202)


class BackfillList(APIView):
    permission_classes = [BackfillPermission]

    @extend_schema(
        tags=[TAG],
        operation_id="integrations_backfills",
        summary="This integration's backfills, newest first (the last 50)",
        responses={
            200: inline_serializer("BackfillList", {"data": BackfillSerializer(many=True)}),
            **problem_responses(401, 403, 404),
        },
    )
    def get(self, request: Request, integration_id: int) -> Response:
        team_id = principal_of(request).team_id
        integration = _integration(team_id, integration_id)
        return Response({"data": [backfill_json(j) for j in selectors.backfills_of(team_id, integration.pk)]})


class BackfillDetail(APIView):
    permission_classes = [BackfillPermission]

    @extend_schema(
        tags=[TAG],
        operation_id="backfills_retrieve",
        summary="One backfill, with its progress",
        responses={200: BackfillSerializer, **problem_responses(401, 403, 404)},
    )
    def get(self, request: Request, backfill_id: int) -> Response:
        return Response(backfill_json(_job(principal_of(request).team_id, backfill_id)))

    @extend_schema(
        tags=[TAG],
        operation_id="backfills_cancel",
        summary="Cancel a backfill",
        description="Stops a pending or running job; its deliveries not yet sent are withdrawn. A finished "
        "job (succeeded, failed, cancelled) answers 409 `not-cancellable`.",
        responses={202: BackfillSerializer, **problem_responses(401, 403, 404, 409)},
    )
    def delete(self, request: Request, backfill_id: int) -> Response:
        principal = principal_of(request)
        job = _job(principal.team_id, backfill_id)
        try:
            job = backfill_cancel(job=job, actor=principal.actor)
        except NotCancellable as exc:
            raise Problem(409, "not-cancellable", str(exc), current_status=exc.status)
        return Response(backfill_json(job), status=202)
