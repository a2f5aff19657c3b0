"""The upstreams API: a team's named LLM upstreams for the proxy (docs/proxy.md).

GET    /api/v1/upstreams          list (provider keys and credential headers masked)
POST   /api/v1/upstreams          create
GET    /api/v1/upstreams/{id}     one
PATCH  /api/v1/upstreams/{id}     change; a key or credential header sent back masked keeps its value,
                                  unless base_url changes: then every stored secret is given again
DELETE /api/v1/upstreams/{id}     delete

Reading needs the integrations:read scope (production and development keys); writing needs
integrations:write (production keys only).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import Scope
from accounts.permissions import principal_of, scoped
from config.fields import StrictBooleanField, StrictCharField
from config.problems import Problem, json_object, problem_responses, validation_problem

from . import services
from .models import Upstream, UpstreamKind
from .selectors import upstream_for_team, upstreams_for_team

TAG = "Proxy upstreams"
UpstreamPermission = scoped(Scope.INTEGRATIONS_READ, Scope.INTEGRATIONS_WRITE)


class UpstreamInSerializer(serializers.Serializer):
    name = StrictCharField(
        max_length=50,
        help_text="Lowercase slug; chosen with `X-Service-Upstream: <name>` or `/api/v1/proxy/u/<name>/`.",
    )
    kind = serializers.ChoiceField(
        choices=UpstreamKind.choices,
        default=UpstreamKind.OPENAI,
        help_text="`openai` for any OpenAI-compatible server (Groq, OpenRouter, vLLM, Ollama…), `azure`, `anthropic`.",
    )
    base_url = StrictCharField(
        max_length=500, help_text="The proxied path is appended: e.g. `https://api.groq.com/openai/v1`."
    )
    provider = StrictCharField(
        max_length=64, required=False, default="", allow_blank=True, help_text="Stamped on traces; inferred if blank."
    )
    api_key = StrictCharField(
        required=False,
        default="",
        allow_blank=True,
        allow_null=True,
        write_only=True,
        help_text="Provider key sent when the client sends no credentials. Stored encrypted, shown masked.",
    )
    headers = serializers.DictField(
        child=StrictCharField(allow_blank=True),
        required=False,
        default=dict,
        help_text="Extra headers for every call (the client's own win). Credential headers are stored encrypted.",
    )
    is_default = StrictBooleanField(
        required=False,
        default=False,
        help_text="Use for calls that name no upstream (one default for OpenAI-style paths, one for Anthropic).",
    )


class UpstreamPatchSerializer(UpstreamInSerializer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["partial"] = True
        super().__init__(*args, **kwargs)


class UpstreamOutSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.CharField()
    base_url = serializers.CharField()
    provider = serializers.CharField()
    api_key = serializers.CharField(allow_null=True, help_text="Masked (`****abcd`), or null when none is stored.")
    headers = serializers.DictField(child=serializers.CharField(), help_text="Credential headers masked.")
    is_default = serializers.BooleanField()
    proxy_path = serializers.CharField(help_text="The proxy base URL path that always selects this upstream.")
    created_at = serializers.DateTimeField()


class UpstreamListSerializer(serializers.Serializer):
    data = UpstreamOutSerializer(many=True)  # type: ignore[assignment]  # a nested field, as DRF means it


def upstream_json(upstream: Upstream) -> dict[str, Any]:
    return {
        "id": upstream.pk,
        "name": upstream.name,
        "kind": upstream.kind,
        "base_url": upstream.base_url,
        "provider": upstream.provider,
        "api_key": services.masked_key(upstream),
        "headers": services.public_headers(upstream),
        "is_default": upstream.is_default,
        "proxy_path": f"/api/v1/proxy/u/{upstream.name}",
        "created_at": upstream.created_at.isoformat(),
    }


def _problem_for(exc: Exception) -> Problem:
    if isinstance(exc, services.UpstreamNameTaken):
        return Problem(409, "name-taken", str(exc), errors={"name": [str(exc)]})
    assert isinstance(exc, services.InvalidUpstream)
    return validation_problem(exc.errors, title="Invalid upstream")


def _get(request: Request, upstream_id: int) -> Upstream:
    upstream = upstream_for_team(principal_of(request).team_id, upstream_id)
    if upstream is None:
        raise Problem(404, "not-found", f"No upstream {upstream_id} in this team.")
    return upstream


EXAMPLE = OpenApiExample(
    "Groq",
    value={
        "name": "groq",
        "kind": "openai",
        "base_url": "https://api.groq.com/openai/v1",
        "provider": "groq",
        "api_key": "gsk_…",
    },
    request_only=True,
)


class UpstreamListCreate(APIView):
    permission_classes = [UpstreamPermission]

    @extend_schema(
        tags=[TAG],
        operation_id="upstreams_list",
        summary="List proxy upstreams",
        responses={200: UpstreamListSerializer, **problem_responses(401, 403)},
    )
    def get(self, request: Request) -> Response:
        return Response({"data": [upstream_json(u) for u in upstreams_for_team(principal_of(request).team_id)]})

    @extend_schema(
        tags=[TAG],
        operation_id="upstreams_create",
        summary="Create a proxy upstream",
        request=UpstreamInSerializer,
        examples=[EXAMPLE],
        responses={201: UpstreamOutSerializer, **problem_responses(400, 401, 403, 409, 415)},
    )
    def post(self, request: Request) -> Response:
        principal = principal_of(request)
        serializer = UpstreamInSerializer(data=json_object(request))
        serializer.is_valid(raise_exception=True)
        data = {**serializer.validated_data, "api_key": serializer.validated_data.get("api_key") or ""}
        try:
            upstream = services.upstream_create(
                team_id=principal.team_id, data=services.UpstreamInput(**data), actor=principal.actor
            )
        except (services.UpstreamNameTaken, services.InvalidUpstream) as exc:
            raise _problem_for(exc)
        return Response(upstream_json(upstream), status=201)


class UpstreamDetail(APIView):
    permission_classes = [UpstreamPermission]

    @extend_schema(
        tags=[TAG],
        operation_id="upstreams_retrieve",
        summary="One proxy upstream",
        responses={200: UpstreamOutSerializer, **problem_responses(401, 403, 404)},
    )
    def get(self, request: Request, upstream_id: int) -> Response:
        return Response(upstream_json(_get(request, upstream_id)))

    @extend_schema(
        tags=[TAG],
        operation_id="upstreams_partial_update",
        summary="Change a proxy upstream",
        description="Fields left out stay as they are. `api_key` sent back masked keeps the stored key; "
        '`""` or null removes it. `headers` replaces the whole set (masked values keep theirs). '
        "A stored secret only goes to the address it was saved with: a PATCH that changes `base_url` "
        "(a trailing slash, a default port or the host's case is no change) must give the stored "
        "`api_key` and every stored credential header again (or remove them), else a 400 names each "
        'one (`api_key`, `headers.authorization`: "Give the secret again: the address changed").',
        request=UpstreamPatchSerializer,
        responses={200: UpstreamOutSerializer, **problem_responses(400, 401, 403, 404, 409, 415)},
    )
    def patch(self, request: Request, upstream_id: int) -> Response:
        principal = principal_of(request)
        upstream = _get(request, upstream_id)
        serializer = UpstreamPatchSerializer(data=json_object(request))
        serializer.is_valid(raise_exception=True)
        given = set(request.data)
        changes = {k: v for k, v in serializer.validated_data.items() if k in given}
        try:
            services.upstream_update(upstream=upstream, changes=changes, actor=principal.actor)
        except (services.UpstreamNameTaken, services.InvalidUpstream) as exc:
            raise _problem_for(exc)
        return Response(upstream_json(upstream))

    @extend_schema(
        tags=[TAG],
        operation_id="upstreams_destroy",
        summary="Delete a proxy upstream",
        responses={204: None, **problem_responses(401, 403, 404)},
    )
    def delete(self, request: Request, upstream_id: int) -> Response:
        services.upstream_delete(upstream=_get(request, upstream_id), actor=principal_of(request).actor)
        return Response(status=204)
