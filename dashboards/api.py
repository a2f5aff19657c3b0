"""The dashboards API (issue 24, item 8).

GET    /api/v1/dashboards          the team's boards
POST   /api/v1/dashboards          create {"name", "widgets": [...]}
GET    /api/v1/dashboards/{id}     one
PATCH  /api/v1/dashboards/{id}     change the fields given (``widgets`` replaces the list, in its order)
DELETE /api/v1/dashboards/{id}     delete
"""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.request import Request
from rest_framework.views import APIView

from accounts.models import Scope
from accounts.permissions import principal_of, scoped
from config.problems import Problem, json_object, problem_responses, validation_problem
from traces.api import json_response

from . import selectors, services
from .definition import BoardError, parse_board
from .models import Dashboard
from .serializers import DashboardInSerializer, DashboardListSerializer, DashboardOutSerializer

TAG = "Dashboards"
DashboardPermission = scoped(Scope.DASHBOARDS_READ, Scope.DASHBOARDS_WRITE)
EXAMPLE = OpenApiExample(
    "Spend board",
    value={
        "name": "Spend",
        "widgets": [
            {
                "title": "Cost today",
                "metric": "cost",
                "filters": {},
                "group_by": None,
                "interval": None,
                "time_range": "24h",
                "chart": "number",
            },
            {
                "title": "Cost by model",
                "metric": "cost",
                "filters": {"environment": "production"},
                "group_by": "model",
                "interval": "day",
                "time_range": "7d",
                "chart": "line",
            },
        ],
    },
    request_only=True,
)
ERRORS = (
    "Errors name the field: `name`, `widgets`, `widgets[<index>].<field>` (`widgets[2].metric`) and "
    "`widgets[<index>].filters.<parameter>` for a filter."
)


def _dashboard(request: Request, dashboard_id: int) -> Dashboard:
    dashboard = selectors.dashboard_for_team(principal_of(request).team_id, dashboard_id)
    if dashboard is None:
        raise Problem(404, "not-found", f"No dashboard {dashboard_id} in this team.")
    return dashboard


def _invalid(exc: BoardError) -> Problem:
    return validation_problem(exc.errors, title="Invalid dashboard")


class DashboardListCreate(APIView):
    permission_classes = [DashboardPermission]

    @extend_schema(
        tags=[TAG],
        operation_id="dashboards_list",
        summary="List the team's dashboards",
        responses={200: DashboardListSerializer, **problem_responses(401, 403)},
    )
    def get(self, request: Request) -> HttpResponse:
        boards = selectors.dashboards_for_team(principal_of(request).team_id)
        return json_response({"data": [selectors.dashboard_json(d) for d in boards]})

    @extend_schema(
        tags=[TAG],
        operation_id="dashboards_create",
        summary="Create a dashboard",
        description="Each widget is one question to the analytics API (`metric`, `filters`, `group_by`, "
        "`interval`, `time_range`) drawn as `number`, `line`, `bar` or `table`; its filters, group-by, interval "
        "and range are checked as `GET /api/v1/analytics` checks them. " + ERRORS,
        request=DashboardInSerializer,
        examples=[EXAMPLE],
        responses={201: DashboardOutSerializer, **problem_responses(400, 401, 403, 415)},
    )
    def post(self, request: Request) -> HttpResponse:
        principal = principal_of(request)
        try:
            board = parse_board(json_object(request))
        except BoardError as exc:
            raise _invalid(exc)
        dashboard = services.dashboard_create(team_id=principal.team_id, board=board, actor=principal.actor)
        return json_response(selectors.dashboard_json(dashboard), status=201)


class DashboardDetail(APIView):
    permission_classes = [DashboardPermission]

    @extend_schema(
        tags=[TAG],
        operation_id="dashboards_retrieve",
        summary="One dashboard with its widgets",
        responses={200: DashboardOutSerializer, **problem_responses(401, 403, 404)},
    )
    def get(self, request: Request, dashboard_id: int) -> HttpResponse:
        return json_response(selectors.dashboard_json(_dashboard(request, dashboard_id)))

    @extend_schema(
        tags=[TAG],
        operation_id="dashboards_partial_update",
        summary="Change a dashboard",
        description="Fields left out stay; `widgets` replaces the whole list, in its order (reorder, add or "
        "remove widgets by sending the list as it should be). " + ERRORS,
        request=DashboardInSerializer,
        responses={200: DashboardOutSerializer, **problem_responses(400, 401, 403, 404, 415)},
    )
    def patch(self, request: Request, dashboard_id: int) -> HttpResponse:
        dashboard = _dashboard(request, dashboard_id)
        try:
            board = parse_board(json_object(request), base=services.board_of(dashboard))
        except BoardError as exc:
            raise _invalid(exc)
        services.dashboard_update(dashboard=dashboard, board=board, actor=principal_of(request).actor)
        return json_response(selectors.dashboard_json(dashboard))

    @extend_schema(
        tags=[TAG],
        operation_id="dashboards_destroy",
        summary="Delete a dashboard",
        responses={204: None, **problem_responses(401, 403, 404)},
    )
    def delete(self, request: Request, dashboard_id: int) -> HttpResponse:
        services.dashboard_delete(dashboard=_dashboard(request, dashboard_id), actor=principal_of(request).actor)
        return HttpResponse(status=204)
