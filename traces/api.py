"""The trace API: ingest one or a batch, the filtered feed, one trace, and the sample `/plants`.

Views parse JSON themselves with orjson and write responses with it: the ingest path is hot, and
DRF's parser/renderer/serializer layers would be most of its cost (bench/ingest.py measures it).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.views import APIView

from accounts.models import Scope
from accounts.permissions import principal_of, scoped
from config.jsoncodec import dumps
from config.problems import Problem, problem_responses
from delivery.selectors import trace_deliveries
from pipeline.services import traces_ingest, traces_store

from . import selectors
from .filters import FILTER_PARAMS, KIND_PATTERN, STATUS_PATTERN, FilterError, parse_trace_filter
from .ingest import check_json_headers, ingest_answer, ingest_payload, parse_json
from .selectors import FLOOR_CURSOR, encode_cursor
from .serializers import (
    BatchInSerializer,
    BatchResultSerializer,
    PlantSerializer,
    TraceDetailSerializer,
    TraceFullSerializer,
    TraceInSerializer,
    TracePageSerializer,
    delivery_json,
    plant_json,
    trace_json,
)

TAG = "Trace Management"
PLANTS_MAX = 10_000  # a larger limit is as good as this one: no team has that many plants
JSON = "application/json"


def json_response(body: Any, status: int = 200) -> HttpResponse:
    return HttpResponse(dumps(body), status=status, content_type=JSON)


def read_json_body(request: HttpRequest | Request, max_bytes: int, what: str) -> Any:
    """The request body as JSON (gzip or not): 415 unless it is application/json, 413 over ``max_bytes``
    (decompressed), 400 if empty, malformed or too deep (config/jsonbody.py)."""
    request = getattr(request, "_request", request)  # DRF's Request wraps Django's
    encoding = request.headers.get("Content-Encoding", "")
    check_json_headers(request.content_type or "", request.META.get("CONTENT_LENGTH"), max_bytes, what, encoding)
    return parse_json(request.body, max_bytes, what, encoding)


def parse_limit(raw: str | None, *, default: int | None, maximum: int) -> int | None:
    """`limit`: a positive integer (capped at ``maximum``); anything else is a 400 naming it."""
    if raw is None:
        return default
    raw = raw.strip()
    if not raw.isascii() or not raw.isdigit() or len(raw) > 1000 or int(raw) < 1:
        message = "Must be a positive integer."
        raise Problem(400, "invalid-parameter", message, errors={"limit": [message]}, parameter="limit")
    return min(int(raw), maximum)


def reject_unknown_parameters(params: Any, known: Iterable[str], *, prefixes: tuple[str, ...] = ()) -> None:
    """A misspelt filter must not silently match everything: unknown query parameters are a 400."""
    allowed = set(known)
    for name in params:
        if name not in allowed and not (prefixes and name.startswith(prefixes)):
            message = f"Unknown query parameter. Known: {', '.join(sorted(allowed | {p + '<key>' for p in prefixes}))}."
            raise Problem(400, "invalid-parameter", message, errors={name: [message]}, parameter=name)


def _filter_or_400(params: Any) -> Any:
    try:
        return parse_trace_filter(params)
    except FilterError as exc:
        raise Problem(400, "invalid-parameter", exc.message, errors={exc.param: [exc.message]}, parameter=exc.param)


_COST = {"type": "number", "minimum": 0, "maximum": 99999999}
_MS = {"type": "integer", "minimum": 0, "maximum": 2147483647}
_TEXT = {"type": "string", "maxLength": 200}
_TIME = {"type": "string", "format": "date-time"}
# A cursor is URL-safe base64 without padding; only one this API gave out (`next_cursor`) is accepted.
CURSOR = {"type": "string", "pattern": "^[A-Za-z0-9_-]*$", "maxLength": 400}
FILTER_PARAMETERS = [
    OpenApiParameter("model", _TEXT, description="Exact model name, or a prefix ending in `*` (`gpt-4*`)."),
    OpenApiParameter("provider", _TEXT, description="Provider (`openai`); matched in lowercase."),
    OpenApiParameter(
        "status",
        {"type": "string", "pattern": STATUS_PATTERN},
        description="`success`, `error` (also `failed`) or `rate_limited`; several separated by commas.",
    ),
    OpenApiParameter("cost_min", _COST, description="Lowest cost in USD (inclusive)."),
    OpenApiParameter("cost_max", _COST, description="Highest cost in USD (inclusive)."),
    OpenApiParameter("latency_min", _MS, description="Lowest latency in ms (inclusive)."),
    OpenApiParameter("latency_max", _MS, description="Highest latency in ms (inclusive)."),
    OpenApiParameter(
        "destination",
        {"type": "array", "items": _TEXT},
        description="Routed to this destination; repeat (or use commas) for all of.",
    ),
    OpenApiParameter(
        "tag", {"type": "array", "items": _TEXT}, description="Carries this tag; repeat (or use commas) for all of."
    ),
    OpenApiParameter(
        "metadata.<key>",
        _TEXT,
        description="`metadata.<key>=<value>`: the metadata key equals the value (as text, or as the same "
        "number/boolean/null). Any number of them.",
    ),
    OpenApiParameter(
        "score.<name>",
        _TEXT,
        description="`score.<name>=<value>`: has a score of that name equal to the number, `true`/`false` or "
        "category; `score.<name>.min=<n>` / `score.<name>.max=<n>`: its number (a boolean counts 1/0) at "
        "least / at most n.",
    ),
    OpenApiParameter("environment", _TEXT, description="`production`, `development`, `ci` or your own."),
    OpenApiParameter("session_id", _TEXT, description="Calls of this session (`session_id`)."),
    OpenApiParameter("service_name", _TEXT, description="Calls of this service (`service_name`, exact)."),
    OpenApiParameter("user_id", _TEXT, description="Calls of this end user (`user_id`)."),
    OpenApiParameter(
        "since",
        _TIME,
        description="At or after this time (ISO 8601 / RFC 3339, e.g. 2025-01-31T12:00:00Z; without an offset: UTC). "
        "Must be earlier than `until` (a 400 otherwise).",
    ),
    OpenApiParameter("until", _TIME, description="Before this time (ISO 8601 / RFC 3339)."),
    OpenApiParameter(
        "time_range",
        str,
        enum=["1h", "24h", "7d", "30d", "custom"],
        description="The last hour, day, week or month; `custom`: only `since`/`until`.",
    ),
    OpenApiParameter(
        "unpriced",
        bool,
        description="`true`: only traces whose model has no price (their cost is unknown, not $0); "
        "`false`: only priced ones.",
    ),
    OpenApiParameter(
        "usage_estimated",
        bool,
        description="`true`: only traces whose token usage was missing and has been estimated; `false`: the others.",
    ),
    OpenApiParameter(
        "run_id",
        {"type": "string", "maxLength": 128},
        description="The spans of this run (docs/runs.md); a record sent without `run_id` is the run of its own id.",
    ),
    OpenApiParameter(
        "kind",
        {"type": "string", "pattern": KIND_PATTERN},
        description="Spans of this kind: `llm`, `embedding` (the calls), `agent`, `tool`, `retrieval`, `chain`, "
        "`workflow`, `guardrail`, `event`, `other`; several separated by commas.",
    ),
]


class TraceListCreate(APIView):
    permission_classes = [scoped(Scope.TRACES_READ, Scope.INGEST)]

    @extend_schema(
        tags=[TAG],
        operation_id="traces_list",
        summary="List traces (the feed)",
        parameters=[
            *FILTER_PARAMETERS,
            OpenApiParameter(
                "limit", {"type": "integer", "minimum": 1}, description="Page size (default 50, at most 500)."
            ),
            OpenApiParameter(
                "cursor",
                CURSOR,
                description="`next_cursor` of the previous page, unchanged; any other value is a 400.",
            ),
            OpenApiParameter(
                "after",
                str,
                description="Tailing: `newest_cursor` of an earlier answer. Only traces newer than it, newest "
                "first, at most `limit` of them (the oldest of a larger burst first: poll again with the new "
                "`newest_cursor` for the rest). Not with `cursor`.",
            ),
        ],
        responses={200: TracePageSerializer, **problem_responses(400, 401, 403)},
    )
    def get(self, request: Request) -> HttpResponse:
        principal = principal_of(request)
        params = request.query_params
        reject_unknown_parameters(
            params, (*FILTER_PARAMS, "limit", "cursor", "after"), prefixes=("metadata.", "score.")
        )
        trace_filter = _filter_or_400(params)
        limit = parse_limit(params.get("limit"), default=50, maximum=500)
        if params.get("after") is not None:
            return self._newer(principal.team_id, trace_filter, params["after"], limit or 50, params.get("cursor"))
        try:
            rows, next_cursor = selectors.trace_page(
                team_id=principal.team_id,
                trace_filter=trace_filter,
                limit=limit or 50,
                cursor=request.query_params.get("cursor"),
            )
        except selectors.CursorError as exc:
            raise Problem(400, "invalid-parameter", str(exc), errors={"cursor": [str(exc)]}, parameter="cursor")
        newest = None if request.query_params.get("cursor") else (encode_cursor(rows[0]) if rows else FLOOR_CURSOR)
        body = {"data": [trace_json(t, full=False) for t in rows], "next_cursor": next_cursor, "newest_cursor": newest}
        return json_response(body)

    @staticmethod
    def _newer(team_id: int, trace_filter: Any, after: str, limit: int, cursor: str | None) -> HttpResponse:
        if cursor is not None:
            message = "Pass either `cursor` (older pages) or `after` (newer traces), not both."
            raise Problem(400, "invalid-parameter", message, errors={"after": [message]}, parameter="after")
        try:
            rows, newest = selectors.traces_newer(team_id=team_id, trace_filter=trace_filter, after=after, limit=limit)
        except selectors.CursorError as exc:
            raise Problem(400, "invalid-parameter", str(exc), errors={"after": [str(exc)]}, parameter="after")
        body = {"data": [trace_json(t, full=False) for t in rows], "next_cursor": None, "newest_cursor": newest}
        return json_response(body)

    @extend_schema(
        tags=[TAG],
        operation_id="traces_create",
        summary="Send one trace",
        description="Stores, prices and routes one trace. 201 with the stored trace; sending an `id` that is "
        "already stored returns that trace with 200 and stores nothing. The body may be gzipped "
        "(`Content-Encoding: gzip`); the 1 MiB limit applies to it decompressed.",
        request=TraceInSerializer,
        responses={
            201: TraceFullSerializer,
            200: TraceFullSerializer,
            **problem_responses(400, 401, 403, 413, 415, 503),
        },
        examples=[
            OpenApiExample(
                "A chat completion",
                value={
                    "model": "gpt-4o",
                    "provider": "openai",
                    "prompt_tokens": 120,
                    "completion_tokens": 48,
                    "total_tokens": 168,
                    "latency_ms": 840,
                    "timestamp": "2025-01-31T12:00:00Z",
                    "tags": ["checkout"],
                    "metadata": {"customer": "acme"},
                },
                request_only=True,
            )
        ],
    )
    def post(self, request: Request) -> HttpResponse:
        """The DRF door of `POST /api/v1/traces` (under ASGI, traces.ingest.mount answers first): the
        same core as the bare-ASGI door, stored here in the request's thread rather than group-committed."""
        pending = ingest_payload(principal_of(request), read_json_body(request, settings.TRACE_MAX_BYTES, "A trace"))
        [(row, created)] = traces_store([pending])
        status, body = ingest_answer(row, created)
        return json_response(body, status=status)


class TraceBatch(APIView):
    permission_classes = [scoped(Scope.INGEST)]

    @extend_schema(
        tags=[TAG],
        operation_id="traces_batch",
        summary="Send a batch of traces",
        description="Up to 1,000 traces or 10 MiB. Each item is validated on its own: the valid ones are stored "
        "even when others are refused. The response lists every item's outcome (`status` 201 stored, 200 already "
        "stored under its id, 400/413 refused with `errors`). HTTP status: 200 when no item was refused, 207 "
        '(multi-status) when any was. A body that is not `{"traces": [...]}` is a 400, over a limit a 413. '
        "The body may be gzipped (`Content-Encoding: gzip`); the 10 MiB limit applies to it decompressed.",
        request=BatchInSerializer,
        responses={
            200: BatchResultSerializer,
            207: BatchResultSerializer,
            **problem_responses(400, 401, 403, 413, 415),
        },
    )
    def post(self, request: Request) -> HttpResponse:
        principal = principal_of(request)
        data = read_json_body(request, settings.BATCH_MAX_BYTES, "A batch")
        if not isinstance(data, dict) or not isinstance(data.get("traces"), list):
            raise Problem(
                400,
                "validation",
                'The body must be {"traces": [...]}.',
                title="Invalid request",
                errors={"traces": ["Must be a list of traces."]},
            )
        items = data["traces"]
        if len(items) > settings.BATCH_MAX_TRACES:
            raise Problem(
                413,
                "too-many-traces",
                f"A batch may hold at most {settings.BATCH_MAX_TRACES} traces; this one has {len(items)}.",
                limit_traces=settings.BATCH_MAX_TRACES,
            )
        results = traces_ingest(principal=principal, items=items, source="batch")
        body_results: list[dict[str, Any]] = []
        counts = {"created": 0, "existing": 0, "failed": 0}
        for r in results:
            if r.trace is None:
                counts["failed"] += 1
                body_results.append({"index": r.index, "status": r.status, "id": None, "errors": r.errors})
            else:
                counts["created" if r.created else "existing"] += 1
                cost = float(r.trace.cost) if r.trace.cost is not None else None
                body_results.append(
                    {"index": r.index, "status": r.status, "id": r.trace.trace_id, "cost": cost, "errors": None}
                )
        return json_response({**counts, "results": body_results}, status=207 if counts["failed"] else 200)


class TraceDetail(APIView):
    permission_classes = [scoped(Scope.TRACES_READ)]

    @extend_schema(
        tags=[TAG],
        operation_id="traces_retrieve",
        summary="Get one trace",
        description="By its id (yours or `trc_…`), with input, output, routing decisions and delivery status "
        "per destination. Another team's trace is a 404, like one that does not exist.",
        responses={200: TraceDetailSerializer, **problem_responses(401, 403, 404)},
    )
    def get(self, request: Request, trace_id: str) -> HttpResponse:
        principal = principal_of(request)
        trace = selectors.trace_get(team_id=principal.team_id, trace_id=trace_id)
        if trace is None:
            raise Problem(404, "not-found", f"No trace '{trace_id[:128]}' in this team.")
        body = trace_json(trace)
        body["deliveries"] = [delivery_json(d) for d in trace_deliveries(trace.pk)]
        return json_response(body)


class PlantList(APIView):
    permission_classes = [scoped(Scope.TRACES_READ)]

    @extend_schema(
        tags=[TAG],
        operation_id="plants_list",
        summary="List plants (sample endpoint)",
        description="The interface reference's sample record: the caller's team's plants, oldest first.",
        parameters=[
            OpenApiParameter(
                "limit", {"type": "integer", "minimum": 1}, description="Return at most this many (a positive integer)."
            )
        ],
        responses={200: PlantSerializer(many=True), **problem_responses(400, 401, 403)},
    )
    def get(self, request: Request) -> HttpResponse:
        principal = principal_of(request)
        reject_unknown_parameters(request.query_params, ("limit",))
        limit = parse_limit(request.query_params.get("limit"), default=None, maximum=PLANTS_MAX)
        return json_response([plant_json(p) for p in selectors.plants_for_team(principal.team_id, limit=limit)])
