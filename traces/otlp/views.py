"""`POST /api/v1/otlp/v1/traces`: OTLP/HTTP, protobuf or JSON, gzip or not (docs/otlp.md).

Answers speak OTLP, not problem+json: success is an `ExportTraceServiceResponse` (with
`partial_success` when spans were refused), errors a `google.rpc.Status`, both in the request's
encoding, as the OTLP spec requires of a receiver (OTLP exporters read those bodies).
"""

from __future__ import annotations

import logging

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from accounts.models import Scope
from accounts.principals import KeyPrincipal
from accounts.selectors import principal_for_key

from .services import otlp_export
from .wire import JSON, PROTOBUF, OtlpError, media_type, parse_request, read_body, status_body, success_body

log = logging.getLogger(__name__)

BUSY_RETRY_AFTER = 1  # seconds: a full queue drains in well under that
UNAVAILABLE_RETRY_AFTER = 5  # seconds: the database is away


class _Pending:
    """Requests in this process that are waiting for, or in, their turn to be stored (event loop only)."""

    count = 0


@csrf_exempt
async def otlp_traces(request: HttpRequest) -> HttpResponse:
    answer = PROTOBUF if request.content_type == PROTOBUF else JSON
    if request.method != "POST":
        response = _error(answer, OtlpError(405, "Send spans with POST."))
        response["Allow"] = "POST"
        return response
    if _Pending.count >= settings.OTLP_MAX_PENDING:
        # Each waiting request holds its body in memory: past the bound, shed load and let the
        # exporter retry (OTLP exporters retry 503 after Retry-After) rather than queue without end.
        return _error(answer, OtlpError(503, "The server is busy; retry.", retry_after=BUSY_RETRY_AFTER))
    _Pending.count += 1
    try:
        return await sync_to_async(_export)(request, answer)
    finally:
        _Pending.count -= 1


def _export(request: HttpRequest, answer: str) -> HttpResponse:
    limit = settings.OTLP_MAX_BYTES
    try:
        principal = _authenticate(request)
        media = media_type(request.content_type or "")
        body = read_body(
            request,  # type: ignore[arg-type]  # HttpRequest is a readable stream
            encoding=request.headers.get("Content-Encoding", ""),
            content_length=request.META.get("CONTENT_LENGTH"),
            limit=limit,
        )
        outcome = otlp_export(principal=principal, request=parse_request(body, media))
    except OtlpError as exc:
        return _error(answer, exc)
    except DatabaseError:
        log.exception("storing OTLP spans failed")
        return _error(
            answer, OtlpError(503, "The spans could not be stored; retry.", retry_after=UNAVAILABLE_RETRY_AFTER)
        )
    return HttpResponse(success_body(media, outcome.rejected, outcome.error_message), content_type=media)


def _authenticate(request: HttpRequest) -> KeyPrincipal:
    """`Authorization: Bearer <key>` or `X-Service-Key: <key>` (the proxy's header), with the `ingest` scope."""
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    token = token.strip() if scheme.lower() == "bearer" else ""
    if not token:
        # Another scheme in Authorization (a gateway's own) leaves room for our key in X-Service-Key.
        token = request.headers.get("X-Service-Key", "").strip()
    if not token:
        if header:
            raise OtlpError(401, "Authorization must be 'Bearer <API key>' (or send the key in X-Service-Key).")
        raise OtlpError(401, "Send the API key as 'Authorization: Bearer <key>' or 'X-Service-Key: <key>'.")
    principal = principal_for_key(token)
    if principal is None:
        raise OtlpError(401, "The API key is malformed, unknown or revoked.")
    if not principal.has_scope(Scope.INGEST):
        raise OtlpError(403, f"A {principal.environment} key may not send traces (needs scope '{Scope.INGEST}').")
    return principal


def _error(media: str, exc: OtlpError) -> HttpResponse:
    response = HttpResponse(status_body(media, exc.status, exc.message), status=exc.status, content_type=media)
    if exc.retry_after is not None:
        response["Retry-After"] = str(exc.retry_after)
    if exc.status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="api"'
    return response
