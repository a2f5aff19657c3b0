"""Request-body handling Django and DRF leave out (see config/jsonbody.py for the parser itself)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.utils.deprecation import MiddlewareMixin

from config.jsonbody import compressed_limit, read_capped
from config.problems import Problem, problem_response

_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class ChunkedBodyMiddleware(MiddlewareMixin):
    """A chunked request body (no Content-Length) under /api/, read here with a cap.

    DRF takes a request without Content-Length for one without a body: it never parses it, so a
    chunked JSON body read as ``{}`` (and a 100 MB one answered 400, not 413). Here the body is read
    up to the request-wide limit (413 past it) and its length set, so DRF parses it like any other.
    """

    def process_request(self, request: HttpRequest) -> Any:
        meta = request.META
        if (
            request.method not in _BODY_METHODS
            or meta.get("CONTENT_LENGTH")
            or "chunked" not in meta.get("HTTP_TRANSFER_ENCODING", "").lower()
            or not request.path.startswith("/api/")
        ):
            return None
        limit = compressed_limit(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        try:
            body = read_capped(request, limit, "The body")  # type: ignore[arg-type]  # HttpRequest is file-like
        except Problem as exc:
            return problem_response(exc.status_code, exc.slug, str(exc.detail), **exc.extra)
        request._body = body  # type: ignore[attr-defined]  # what HttpRequest.body caches; DRF reads it from there
        meta["CONTENT_LENGTH"] = str(len(body))
        return None
