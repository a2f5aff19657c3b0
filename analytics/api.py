"""GET /api/v1/analytics: parse, call the selector, render."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.views import APIView

from accounts.models import Scope
from accounts.permissions import principal_of, scoped
from config.problems import Problem, problem_responses
from traces.api import FILTER_PARAMETERS, json_response, parse_limit, reject_unknown_parameters
from traces.filters import FILTER_PARAMS, FilterError

from . import selectors
from .serializers import AnalyticsSerializer
from .slices import GROUP_BY

TAG = "Analytics"


class Analytics(APIView):
    permission_classes = [scoped(Scope.ANALYTICS_READ)]

    @extend_schema(
        tags=[TAG],
        operation_id="analytics",
        summary="Counts, tokens, cost, latency percentiles, series, groups, queues, rate limits",
        description="Takes every filter of the trace feed. The range (default: the last 24 hours) is widened "
        "to whole intervals; `range` says what was counted. Counts and sums are exact; percentiles are "
        "within 1% of the exact value (lower nearest rank). Answered from rollups, except for cost, latency, "
        "destination and metadata filters, `group_by=user|destination` and tags combined with other filters, "
        "which count the raw traces: over more than the raw-scan limit (TRACERELAY_ANALYTICS_RAW_SCAN_MAX) "
        "matching traces that is a 400.",
        parameters=[
            *FILTER_PARAMETERS,
            OpenApiParameter(
                "interval",
                str,
                enum=["minute", "hour", "day"],
                description="Series step. Default: minute up to 3 hours, hour up to 8 days, day beyond.",
            ),
            OpenApiParameter("group_by", str, enum=list(GROUP_BY), description="Add `groups`, one per value."),
            OpenApiParameter(
                "limit",
                {"type": "integer", "minimum": 1},
                description=f"Groups returned (default {selectors.GROUP_LIMIT_DEFAULT}, "
                f"at most {selectors.GROUP_LIMIT_MAX}).",
            ),
            OpenApiParameter("tz", str, description="IANA time zone for day boundaries (default UTC)."),
            OpenApiParameter(
                "score",
                {"type": "string", "pattern": "^[A-Za-z0-9_.:-]{1,200}$"},
                description="A score's name: adds `score`, its average (a boolean counts 1/0) and count over the "
                "range and per interval, on the traces the filters select. Read from the scores themselves.",
            ),
        ],
        responses={200: AnalyticsSerializer, **problem_responses(400, 401, 403)},
    )
    def get(self, request: Request) -> HttpResponse:
        principal = principal_of(request)
        params = request.query_params
        reject_unknown_parameters(params, (*FILTER_PARAMS, *selectors.PARAMS), prefixes=("metadata.", "score."))
        limit = parse_limit(params.get("limit"), default=None, maximum=selectors.GROUP_LIMIT_MAX)
        try:
            query = selectors.parse_query(params, now=None, limit=limit)
            body = selectors.analytics_for_team(team_id=principal.team_id, query=query)
        except (FilterError, selectors.AnalyticsError) as exc:
            extra = getattr(exc, "extra", {})
            raise Problem(
                400, "invalid-parameter", exc.message, errors={exc.param: [exc.message]}, parameter=exc.param, **extra
            )
        return json_response(body)
