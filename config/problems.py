"""RFC 9457 problem details for every API failure.

`exception_handler` is DRF's hook; `problem_response` serves plain Django views and the
middleware-level 404/500 handlers so the API never answers with an HTML page.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404, JsonResponse
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions, serializers
from rest_framework.response import Response

PROBLEM_CONTENT_TYPE = "application/problem+json"
TYPE_BASE = "https://tracerelay.dev/problems/"


class Problem(exceptions.APIException):
    """An API error with a stable `type` slug, a status, and optional field errors."""

    def __init__(
        self,
        status_code: int,
        slug: str,
        detail: str,
        *,
        title: str | None = None,
        errors: dict[str, list[str]] | None = None,
        headers: dict[str, str] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(detail)
        self.status_code = status_code
        self.slug = slug
        self.title = title
        self.errors = errors
        self.headers = headers or {}
        self.extra = extra


class InvalidInput(Exception):
    """A service refusing its input: ``errors`` maps field → messages (the API answers 400 with them)."""

    def __init__(self, errors: Mapping[str, list[str]]) -> None:
        super().__init__("; ".join(f"{k}: {', '.join(v)}" for k, v in errors.items()))
        self.errors = dict(errors)


def problem_body(status_code: int, slug: str, detail: str, *, title: str | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": TYPE_BASE + slug,
        "title": title or _default_title(status_code),
        "status": status_code,
        "detail": detail,
    }
    body.update({k: v for k, v in extra.items() if v is not None})
    return body


def problem_response(status_code: int, slug: str | None, detail: str, **extra: Any) -> JsonResponse:
    headers = extra.pop("headers", None) or {}
    body = problem_body(status_code, slug or _SLUGS.get(status_code, "error"), detail, **extra)
    response = JsonResponse(body, status=status_code)
    response["Content-Type"] = PROBLEM_CONTENT_TYPE
    for name, value in headers.items():
        response[name] = value
    return response


_SLUGS = {
    400: "bad-request",
    401: "unauthorized",
    403: "forbidden",
    404: "not-found",
    405: "method-not-allowed",
    406: "not-acceptable",
    409: "conflict",
    412: "precondition-failed",
    413: "payload-too-large",
    415: "unsupported-media-type",
    422: "unprocessable",
    428: "precondition-required",
    429: "rate-limited",
    500: "internal-error",
    502: "bad-gateway",
    503: "unavailable",
    504: "gateway-timeout",
}


def _default_title(status_code: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status_code).phrase
    except ValueError:
        return "Error"


def flatten_errors(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """DRF's nested error detail → ``{"rules[2].destinations[0].name": [...]}``. DRF reports list items
    under integer keys; they read as ``[i]``, and keys already built as paths are kept whole."""
    out: dict[str, list[str]] = {}
    if isinstance(detail, Mapping):
        for key, value in detail.items():
            if isinstance(key, int):
                path = f"{prefix}[{key}]"
            elif key in ("non_field_errors", ""):
                path = prefix
            else:
                path = f"{prefix}.{key}" if prefix else str(key)
            for k, v in flatten_errors(value, path).items():
                out.setdefault(k, []).extend(v)
    elif isinstance(detail, list):
        if all(not isinstance(item, Mapping | list) for item in detail):
            out.setdefault(prefix, []).extend(str(item) for item in detail)
        else:
            for i, item in enumerate(detail):
                for k, v in flatten_errors(item, f"{prefix}[{i}]").items():
                    out.setdefault(k, []).extend(v)
    else:
        out.setdefault(prefix, []).append(str(detail))
    return out


def validation_problem(errors: dict[str, list[str]], *, title: str = "Invalid request") -> Problem:
    """A 400 whose detail quotes the first field error; ``errors`` carries them all."""
    field, messages = next(iter(errors.items()), ("", ["Invalid input."]))
    where = f"{field}: " if field else ""
    return Problem(400, "validation", f"{where}{messages[0]}", title=title, errors=errors)


def empty_body() -> Problem:
    return Problem(400, "empty-body", "The request body is empty: send a JSON object.", title="Empty body")


def json_object(request: Any) -> dict[str, Any]:
    """The request's parsed JSON body, which must be an object (DRF reads no body at all as ``{}``:
    that is an `empty-body` problem here, as it is in config/jsonbody.py)."""
    if request.stream is None:
        raise empty_body()
    if not isinstance(request.data, dict):
        raise Problem(400, "validation", "The body must be a JSON object.", title="Invalid request")
    return request.data


# The challenge every 401 carries (RFC 9110 §11.6.1), whichever door answered it.
BEARER_CHALLENGE = 'Bearer realm="api"'


def problem_parts(exc: Problem) -> tuple[dict[str, Any], dict[str, str]]:
    """A `Problem` as its body and headers: the one rendering behind DRF's handler and the bare-ASGI doors."""
    body = problem_body(exc.status_code, exc.slug, str(exc.detail), title=exc.title, errors=exc.errors, **exc.extra)
    headers = dict(exc.headers)
    if exc.status_code == 401:
        headers["WWW-Authenticate"] = BEARER_CHALLENGE
    return body, headers


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    if not isinstance(exc, exceptions.APIException):
        return None  # a real bug: let Django log it; handler500 renders problem+json

    headers: dict[str, str] = {}
    if isinstance(exc, Problem):
        body, headers = problem_parts(exc)
    elif isinstance(exc, exceptions.ValidationError):
        return exception_handler(validation_problem(flatten_errors(exc.detail)), context)
    else:
        code = exc.status_code
        body = problem_body(code, _SLUGS.get(code, "error"), str(exc.detail))
    wait = getattr(exc, "wait", None)
    if isinstance(exc, exceptions.Throttled) and wait is not None:
        headers["Retry-After"] = str(int(wait) + 1)
    if body["status"] == 401:  # DRF's own NotAuthenticated / AuthenticationFailed
        headers["WWW-Authenticate"] = BEARER_CHALLENGE
    return Response(body, status=body["status"], headers=headers, content_type=PROBLEM_CONTENT_TYPE)


def handler404(request: Any, exception: Exception | None = None) -> Any:
    if _is_api(request):
        return problem_response(404, "not-found", "No such resource.")
    from django.views.defaults import page_not_found

    return page_not_found(request, exception or Http404())


def handler500(request: Any) -> Any:
    if _is_api(request):
        return problem_response(500, "internal-error", "An internal error occurred; it has been logged.")
    from django.views.defaults import server_error

    return server_error(request)


def handler400(request: Any, exception: Exception | None = None) -> Any:
    """Django's own 400s (a body over DATA_UPLOAD_MAX_MEMORY_SIZE, a bad Host header...)."""
    if _is_api(request):
        from django.core.exceptions import RequestDataTooBig

        if isinstance(exception, RequestDataTooBig):
            return problem_response(413, "payload-too-large", "The request body is too large.")
        return problem_response(400, "bad-request", "The request could not be understood.")
    from django.views.defaults import bad_request

    return bad_request(request, exception or Exception())


def handler403(request: Any, exception: Exception | None = None) -> Any:
    if _is_api(request):
        return problem_response(403, "forbidden", "You may not do this.")
    from django.views.defaults import permission_denied

    return permission_denied(request, exception or PermissionDenied())


def _is_api(request: Any) -> bool:
    path = getattr(request, "path", "")
    return path.startswith("/api/") or path.startswith("/plants")


# --- OpenAPI: the Problem component and the error responses every operation can give -------------


class ProblemSerializer(serializers.Serializer):
    """RFC 9457 problem details (`application/problem+json`)."""

    type = serializers.URLField(help_text="A URI naming the kind of problem, stable across versions.")
    title = serializers.CharField(help_text="A short summary of the kind of problem.")
    status = serializers.IntegerField(help_text="The HTTP status code.")
    detail = serializers.CharField(help_text="What went wrong this time, for a person to read.")
    errors = serializers.DictField(  # type: ignore[assignment]  # a body field, not Serializer.errors
        child=serializers.ListField(child=serializers.CharField()),
        required=False,
        help_text="Field (dotted path, or query parameter) → messages, for validation problems.",
    )

    class Meta:
        ref_name = "Problem"


_PROBLEM_DESCRIPTIONS = {
    "400": "Invalid input: the problem's `errors` name each bad field or parameter. A body that is empty "
    "(`empty-body`), not JSON (`malformed-json`, with `line` and `column`) or nested over 64 levels "
    "(`too-deep`) gets the same problem type on every operation.",
    "401": "Missing, malformed, unknown or revoked API key.",
    "403": "The key's environment does not allow this (development and ci keys are limited).",
    "404": "No such resource for this team.",
    "405": "Method not allowed.",
    "406": "The Accept header admits none of the media types this operation answers with.",
    "409": "Conflict with the current state.",
    "412": "If-Match does not match the current version.",
    "413": "The body is over a size or count limit (named in `detail`).",
    "415": "The body must be application/json, and its Content-Encoding (if any) gzip.",
    "429": "Rate limited: retry after `Retry-After` seconds.",
    "500": "An internal error (logged). Never the result of bad input.",
    "503": "Temporarily unable to store or serve this (the database is unavailable): retry.",
}


def problem_responses(*codes: int) -> dict[tuple[int, str], OpenApiResponse]:
    """`@extend_schema(responses={200: X, **problem_responses(400, 404)})`."""
    return {
        (code, PROBLEM_CONTENT_TYPE): OpenApiResponse(ProblemSerializer, description=_PROBLEM_DESCRIPTIONS[str(code)])
        for code in codes
    }
