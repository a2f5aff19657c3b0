"""The reports API (issue 10, Reports).

GET    /api/v1/reports                                  list
POST   /api/v1/reports                                  create (and schedule)
GET    /api/v1/reports/{id}                             one
PATCH  /api/v1/reports/{id}                             change (fields given)
DELETE /api/v1/reports/{id}                             delete (its schedule and runs too)
POST   /api/v1/reports/{id}/run                         run now → 202 with the run
GET    /api/v1/reports/{id}/runs                        newest first
GET    /api/v1/reports/{id}/runs/{run_id}               one run
GET    /api/v1/reports/{id}/runs/{run_id}/{csv|pdf}     download
"""

from __future__ import annotations

from collections.abc import Iterable

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.views import APIView

from accounts.models import Scope
from accounts.permissions import principal_of, scoped
from config.problems import Problem, json_object, problem_responses, validation_problem
from traces.api import json_response

from . import selectors, services
from .definition import DefinitionError, parse_definition
from .models import Report, ReportRun
from .serializers import ReportInSerializer, ReportListSerializer, ReportOutSerializer, RunListSerializer, RunSerializer

TAG = "Reports"
ReportPermission = scoped(Scope.REPORTS_READ, Scope.REPORTS_WRITE)
EXAMPLE = OpenApiExample(
    "Weekly cost by model",
    value={
        "name": "Weekly cost by model",
        "filters": {"environment": "production"},
        "group_by": "model",
        "interval": "day",
        "time_range": "7d",
        "formats": ["csv", "pdf"],
        "recipients": ["finance@example.com"],
        "schedule": "0 8 * * 1",
    },
    request_only=True,
)


def _report(request: Request, report_id: int) -> Report:
    report = selectors.report_for_team(principal_of(request).team_id, report_id)
    if report is None:
        raise Problem(404, "not-found", f"No report {report_id} in this team.")
    return report


def _run(report: Report, run_id: int, *, with_files: bool = False) -> ReportRun:
    run = selectors.run_for_report(report, run_id, with_files=with_files)
    if run is None:
        raise Problem(404, "not-found", f"No run {run_id} of report {report.pk}.")
    return run


def _run_body(request: Request, run: ReportRun, report: Report) -> dict[str, object]:
    return selectors.run_json(run, list(report.formats), request.build_absolute_uri)


def _invalid(exc: DefinitionError) -> Problem:
    return validation_problem(exc.errors, title="Invalid report")


class ReportListCreate(APIView):
    permission_classes = [ReportPermission]

    @extend_schema(
        tags=[TAG],
        operation_id="reports_list",
        summary="List reports",
        responses={200: ReportListSerializer, **problem_responses(401, 403)},
    )
    def get(self, request: Request) -> HttpResponse:
        reports = selectors.reports_for_team(principal_of(request).team_id)
        return json_response({"data": [selectors.report_json(r) for r in reports]})

    @extend_schema(
        tags=[TAG],
        operation_id="reports_create",
        summary="Create a report (run now or on a schedule)",
        description="The period is `time_range` (before each run; default `7d`) or a fixed `since`/`until`; "
        "a scheduled report needs `time_range`. `filters` are the trace feed's, checked as the feed checks "
        "them; the interval must give at most 1,500 points over the period. Errors name the field "
        "(`filters.<parameter>` for a filter).",
        request=ReportInSerializer,
        examples=[EXAMPLE],
        responses={201: ReportOutSerializer, **problem_responses(400, 401, 403, 415)},
    )
    def post(self, request: Request) -> HttpResponse:
        principal = principal_of(request)
        try:
            definition = parse_definition(json_object(request))
        except DefinitionError as exc:
            raise _invalid(exc)
        report = services.report_create(team_id=principal.team_id, definition=definition, actor=principal.actor)
        return json_response(selectors.report_json(report), status=201)


class ReportDetail(APIView):
    permission_classes = [ReportPermission]

    @extend_schema(
        tags=[TAG],
        operation_id="reports_retrieve",
        summary="One report",
        responses={200: ReportOutSerializer, **problem_responses(401, 403, 404)},
    )
    def get(self, request: Request, report_id: int) -> HttpResponse:
        return json_response(selectors.report_json(_report(request, report_id)))

    @extend_schema(
        tags=[TAG],
        operation_id="reports_partial_update",
        summary="Change a report",
        description="Fields left out stay. Giving `since`/`until` replaces a `time_range`, and the other way "
        "round; `schedule: null` unschedules.",
        request=ReportInSerializer,
        responses={200: ReportOutSerializer, **problem_responses(400, 401, 403, 404, 415)},
    )
    def patch(self, request: Request, report_id: int) -> HttpResponse:
        report = _report(request, report_id)
        try:
            definition = parse_definition(json_object(request), base=services.definition_of(report))
        except DefinitionError as exc:
            raise _invalid(exc)
        services.report_update(report=report, definition=definition, actor=principal_of(request).actor)
        return json_response(selectors.report_json(report))

    @extend_schema(
        tags=[TAG],
        operation_id="reports_destroy",
        summary="Delete a report, its schedule and its runs",
        responses={204: None, **problem_responses(401, 403, 404)},
    )
    def delete(self, request: Request, report_id: int) -> HttpResponse:
        services.report_delete(report=_report(request, report_id), actor=principal_of(request).actor)
        return HttpResponse(status=204)


class ReportRunNow(APIView):
    permission_classes = [ReportPermission]

    @extend_schema(
        tags=[TAG],
        operation_id="reports_run",
        summary="Run a report now",
        description="Queues a run over the report's period as of now; poll the run for its status and files.",
        request=None,
        responses={202: RunSerializer, **problem_responses(401, 403, 404)},
    )
    def post(self, request: Request, report_id: int) -> HttpResponse:
        report = _report(request, report_id)
        run = services.run_request(report=report)
        return json_response(_run_body(request, run, report), status=202)


class ReportRuns(APIView):
    permission_classes = [ReportPermission]

    @extend_schema(
        tags=[TAG],
        operation_id="reports_runs_list",
        summary="A report's runs, newest first (the last 50)",
        responses={200: RunListSerializer, **problem_responses(401, 403, 404)},
    )
    def get(self, request: Request, report_id: int) -> HttpResponse:
        report = _report(request, report_id)
        runs = selectors.runs_for_report(report)
        return json_response({"data": [_run_body(request, run, report) for run in runs]})


class ReportRunDetail(APIView):
    permission_classes = [ReportPermission]

    @extend_schema(
        tags=[TAG],
        operation_id="reports_runs_retrieve",
        summary="One run: status, error, file URLs",
        responses={200: RunSerializer, **problem_responses(401, 403, 404)},
    )
    def get(self, request: Request, report_id: int, run_id: int) -> HttpResponse:
        report = _report(request, report_id)
        return json_response(_run_body(request, _run(report, run_id), report))


class FileNegotiation(BaseContentNegotiation):
    """A download is not JSON: DRF's negotiation (JSON renderers only) would refuse `Accept: text/csv`
    and serve a CSV to `Accept: application/json`. Errors still render as problem+json; the view
    checks the Accept header against the file's own type."""

    def select_parser(self, request: Request, parsers: Iterable[BaseParser]) -> BaseParser | None:
        return next(iter(parsers), None)

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        renderer = next(iter(renderers))
        return renderer, renderer.media_type


class ReportRunFile(APIView):
    permission_classes = [ReportPermission]
    content_negotiation_class = FileNegotiation

    @extend_schema(
        tags=[TAG],
        operation_id="reports_runs_download",
        summary="Download a run's CSV or PDF",
        description="409 while the run has not succeeded; 404 for a format the report did not ask for; 406 "
        "when the Accept header admits neither the file's type (`text/csv`, `application/pdf`) nor `*/*`.",
        responses={
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.BINARY),
            (200, "application/pdf"): OpenApiResponse(OpenApiTypes.BINARY),
            **problem_responses(401, 403, 404, 406, 409),
        },
    )
    def get(self, request: Request, report_id: int, run_id: int, fmt: str) -> HttpResponse:
        report = _report(request, report_id)
        run = _run(report, run_id, with_files=True)
        mime = services.MIME[fmt]
        if request.headers.get("Accept", "").strip() and not request._request.accepts(mime):
            raise Problem(406, "not-acceptable", f"This download is {mime}: send Accept: {mime} (or */*, or none).")
        return file_response(report, run, fmt)


def file_response(report: Report, run: ReportRun, fmt: str) -> HttpResponse:
    """The download, for the API and the dashboard alike (a Problem when there is none)."""
    data = selectors.run_file(run, fmt)
    if data is None:
        if run.status != "succeeded":
            raise Problem(
                409, "run-not-ready", f"Run {run.pk} is {run.status}: no files yet.", status_of_run=run.status
            )
        raise Problem(404, "not-found", f"Run {run.pk} has no {fmt.upper()} (the report did not ask for it).")
    response = HttpResponse(data, content_type=services.MIME[fmt])
    response["Content-Disposition"] = f'attachment; filename="{services.file_name(run, fmt)}"'
    response["Cache-Control"] = "private, max-age=0"
    return response
