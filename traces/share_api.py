"""Public links API (docs/sharing.md): `/api/v1/traces/{id}/share`."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.views import APIView

from accounts.models import Scope
from accounts.permissions import principal_of, scoped
from config.jsoncodec import iso
from config.problems import InvalidInput, Problem, problem_responses

from .api import json_response, read_json_body
from .score_api import trace_or_404
from .sharing import MAX_DAYS, PATH, live_links, parse_expiry, share_create, share_revoke

TAG = "Public links"
BODY_MAX = 64 * 1024  # as the other small bodies: a deep or bad body gets the same problem everywhere

SHARE_IN = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "expires_in_days": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_DAYS,
            "default": 7,
            "description": "Days until the link stops working (7 by default, at most 90).",
        }
    },
}
SHARE_OUT = {
    "type": "object",
    "required": ["url", "expires_at"],
    "properties": {
        "url": {"type": "string", "format": "uri", "description": "Opens the read-only page without signing in."},
        "expires_at": {"type": "string", "format": "date-time"},
    },
}
LINK_OUT = {
    "type": "object",
    "required": ["id", "created_at", "created_by", "expires_at"],
    "properties": {
        "id": {"type": "integer"},
        "created_at": {"type": "string", "format": "date-time"},
        "created_by": {"type": "string"},
        "expires_at": {"type": "string", "format": "date-time"},
    },
}


class TraceShare(APIView):
    permission_classes = [scoped(Scope.TRACES_READ)]

    @extend_schema(
        tags=[TAG],
        operation_id="trace_share_list",
        summary="List a trace's live public links",
        description="Their ids and expiry; never their URL (the token is stored hashed, shown once).",
        responses={200: {"type": "array", "items": LINK_OUT}, **problem_responses(401, 403, 404)},
    )
    def get(self, request: Request, trace_id: str) -> HttpResponse:
        trace = trace_or_404(principal_of(request).team_id, trace_id)
        return json_response(
            [
                {
                    "id": link.pk,
                    "created_at": iso(link.created_at),
                    "created_by": link.created_by,
                    "expires_at": iso(link.expires_at),
                }
                for link in live_links(trace)
            ]
        )

    @extend_schema(
        tags=[TAG],
        operation_id="trace_share_create",
        summary="Make a public link to a trace",
        description="A read-only page anyone with the URL opens without signing in: the conversation, model, "
        "tokens, cost, latency and status (or the run's spans), with the team's PII policy applied, no metadata, "
        "no routing or delivery detail. The URL is shown once. Audited (`trace.share`).",
        request={"application/json": SHARE_IN},
        responses={201: SHARE_OUT, **problem_responses(400, 401, 403, 404, 413, 415)},
    )
    def post(self, request: Request, trace_id: str) -> HttpResponse:
        principal = principal_of(request)
        body = read_json_body(request, BODY_MAX, "share request") if request.body else {}
        trace = trace_or_404(principal.team_id, trace_id)
        try:
            days = parse_expiry(body)
        except InvalidInput as exc:
            raise Problem(400, "invalid-share", "The share request is not valid.", errors=exc.errors)
        link, token = share_create(trace=trace, days=days, actor=principal.actor)
        url = request.build_absolute_uri(PATH + token)
        return json_response({"url": url, "expires_at": iso(link.expires_at)}, status=201)

    @extend_schema(
        tags=[TAG],
        operation_id="trace_share_revoke",
        summary="Revoke a trace's public links",
        description="Every live link of the trace stops working at once. Audited (`trace.unshare`).",
        request=None,
        responses={204: None, **problem_responses(401, 403, 404)},
    )
    def delete(self, request: Request, trace_id: str) -> HttpResponse:
        principal = principal_of(request)
        trace = trace_or_404(principal.team_id, trace_id)
        share_revoke(trace=trace, actor=principal.actor)
        return HttpResponse(status=204)


class TraceShareLink(APIView):
    permission_classes = [scoped(Scope.TRACES_READ)]

    @extend_schema(
        tags=[TAG],
        operation_id="trace_share_link_revoke",
        summary="Revoke one public link",
        request=None,
        responses={204: None, **problem_responses(401, 403, 404)},
    )
    def delete(self, request: Request, trace_id: str, link_id: int) -> HttpResponse:
        principal = principal_of(request)
        trace = trace_or_404(principal.team_id, trace_id)
        if not share_revoke(trace=trace, actor=principal.actor, link_id=link_id):
            raise Problem(404, "not-found", f"No live link {link_id} on this trace.")
        return HttpResponse(status=204)
