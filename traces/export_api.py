"""`GET /api/v1/traces/export` and `POST /api/v1/traces/import` (docs/export.md)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.views import APIView

from accounts.models import Scope
from accounts.permissions import principal_of, scoped
from config.problems import Problem, problem_responses

from .api import FILTER_PARAMETERS, TAG, _filter_or_400, json_response, reject_unknown_parameters
from .export import CSV_COLUMNS, FORMATS, IMPORT_MEDIA_TYPES, export_response, read_import_body, traces_import
from .filters import FILTER_PARAMS

_LINES = {
    "type": "string",
    "description": "One trace a line: the webhook's trace shape (docs/destinations/webhook.md).",
}
_CSV = {"type": "string", "description": f"A header line, then one trace a line. Columns: {', '.join(CSV_COLUMNS)}."}
IMPORT_RESULT = {
    "type": "object",
    "required": ["imported", "skipped", "failed", "errors"],
    "properties": {
        "imported": {"type": "integer", "description": "Lines stored as new traces."},
        "skipped": {"type": "integer", "description": "Lines whose trace id this team stores already."},
        "failed": {"type": "integer", "description": "Lines refused (not JSON, not a valid trace)."},
        "errors": {
            "type": "array",
            "description": "The refused lines (the first 1,000), by line number from 1.",
            "items": {
                "type": "object",
                "required": ["line", "detail"],
                "properties": {"line": {"type": "integer"}, "detail": {"type": "string"}},
            },
        },
    },
}
_TRUE_FALSE = {"type": "boolean", "default": False}


def _flag(request: Request, name: str) -> bool:
    raw = request.query_params.get(name)
    if raw is None:
        return False
    if raw.lower() in ("true", "1"):
        return True
    if raw.lower() in ("false", "0"):
        return False
    message = "Use true or false."
    raise Problem(400, "invalid-parameter", message, errors={name: [message]}, parameter=name)


class FormatIsOurs(DefaultContentNegotiation):
    """`format` is the export's parameter here, not DRF's renderer override (a 404 for `jsonl`): the
    view writes its own response, and errors are problem+json by the first renderer."""

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        first = next(iter(renderers))
        return first, first.media_type


class TraceExport(APIView):
    permission_classes = [scoped(Scope.TRACES_READ)]
    content_negotiation_class = FormatIsOurs

    @extend_schema(
        tags=[TAG],
        operation_id="traces_export",
        summary="Export traces",
        description="Every trace the feed (`GET /api/v1/traces`) lists for the same filters, all pages, newest "
        "first, streamed: `jsonl` (default), one JSON object a line in the webhook's trace shape, or `csv` with a "
        "fixed column list. Compressed with gzip (`Content-Encoding: gzip`) when the request's `Accept-Encoding` "
        "takes gzip. An attachment named `traces-<date>.<format>`.",
        parameters=[
            OpenApiParameter("format", str, enum=list(FORMATS), description="`jsonl` (default) or `csv`."),
            *FILTER_PARAMETERS,
        ],
        responses={
            (200, "application/x-ndjson"): OpenApiResponse(_LINES, description="JSON Lines (`format=jsonl`)."),
            (200, "text/csv"): OpenApiResponse(_CSV, description="CSV (`format=csv`)."),
            **problem_responses(400, 401, 403),
        },
    )
    def get(self, request: Request) -> StreamingHttpResponse:
        principal = principal_of(request)
        params = request.query_params
        reject_unknown_parameters(params, (*FILTER_PARAMS, "format"), prefixes=("metadata.", "score."))
        fmt = params.get("format", "jsonl")
        if fmt not in FORMATS:
            message = f"Use one of {', '.join(FORMATS)}."
            raise Problem(400, "invalid-parameter", message, errors={"format": [message]}, parameter="format")
        trace_filter = _filter_or_400(params)
        return export_response(request._request, team_id=principal.team_id, trace_filter=trace_filter, fmt=fmt)


class TraceImport(APIView):
    permission_classes = [scoped(Scope.INGEST)]

    @extend_schema(
        tags=[TAG],
        operation_id="traces_import",
        summary="Import exported traces",
        description="Takes an export's JSON Lines back (`application/x-ndjson` or `application/jsonl`, gzipped or "
        "not; at most TRACERELAY_IMPORT_MAX_BYTES, 64 MiB by default, decompressed). Each line is validated and "
        "stored as a trace would be sent, idempotent by id: a trace id the team stores already is skipped. The "
        "exported cost is kept (`price_source` `import`) unless `reprice=true`; imported traces are routed to no "
        "destination unless `route=true`. A bad line is counted and listed, never losing the others: 200 when "
        "none failed, 207 when any did.",
        parameters=[
            OpenApiParameter("route", _TRUE_FALSE, description="`true`: route each new trace by today's rules."),
            OpenApiParameter("reprice", _TRUE_FALSE, description="`true`: price each trace by today's prices."),
        ],
        request={media: {"type": "string", "pattern": r"\S"} for media in IMPORT_MEDIA_TYPES},
        responses={
            200: OpenApiResponse(IMPORT_RESULT, description="Every line stored or skipped."),
            207: OpenApiResponse(IMPORT_RESULT, description="Some lines refused (`errors`)."),
            **problem_responses(400, 401, 403, 413, 415),
        },
    )
    def post(self, request: Request) -> HttpResponse:
        principal = principal_of(request)
        reject_unknown_parameters(request.query_params, ("route", "reprice"))
        route, reprice = _flag(request, "route"), _flag(request, "reprice")
        body = read_import_body(request._request)
        outcome = traces_import(principal=principal, body=body, route=route, reprice=reprice)
        return json_response(outcome.as_dict(), status=207 if outcome.failed else 200)


def require_import_body(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """drf-spectacular post-processing hook: an import's body is required (an empty one is the
    `empty-body` problem), which a raw schema in `extend_schema(request=...)` cannot say."""
    operation = result.get("paths", {}).get("/api/v1/traces/import", {}).get("post")
    if operation and "requestBody" in operation:
        operation["requestBody"]["required"] = True
    return result
