"""The integrations API (interface spec 2.4): configured connections to destinations.

GET    /api/v1/integrations                 list (secrets masked)
POST   /api/v1/integrations                 create
GET    /api/v1/integrations/{id}            one
PATCH  /api/v1/integrations/{id}            change; a secret left out keeps its value, unless an
                                             address changes: then every stored secret is given again
DELETE /api/v1/integrations/{id}            delete
POST   /api/v1/integrations/{id}/test       real connection check → {ok, message, status_code, latency_ms}
POST   /api/v1/integrations/test            the same for an unsaved {platform, config}

Every integration carries `deliveries_24h`, its deliveries by status over the last 24 hours, from
the selector the `/integrations` page uses (`delivery.selectors.recent_delivery_counts`; one grouped
query for a whole list). This module sits with the doors in the import layers for that read.
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
from config.problems import Problem, json_object, problem_responses, validation_problem
from delivery.selectors import recent_delivery_counts

from . import selectors, services
from .exporters.base import CheckResult
from .models import Integration
from .serializers import IntegrationInSerializer, IntegrationPatchSerializer, PlatformField

TAG = "Integrations"

IntegrationPermission = scoped(Scope.INTEGRATIONS_READ, Scope.INTEGRATIONS_WRITE)


# --- serializers ---------------------------------------------------------------------------------


class DeliveryCountsSerializer(serializers.Serializer):
    """Deliveries to the integration created in the 24 hours before the request, by status. A delivery
    counts when it resolved to this integration, or was routed by its name and not tried yet."""

    delivered = serializers.IntegerField(min_value=0)
    failed = serializers.IntegerField(min_value=0, help_text="Gave up here; a fallback destination carried on.")
    dead = serializers.IntegerField(min_value=0, help_text="Dead letters: replayable.")
    pending = serializers.IntegerField(min_value=0, help_text="Waiting to be sent or being sent.")
    dropped = serializers.IntegerField(
        min_value=0, help_text="Not sent on purpose: over its quota, or another environment (replayable)."
    )


class IntegrationOutSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    platform = serializers.CharField()
    config = serializers.DictField(help_text="Secrets masked (`****abcd`).")
    secrets_set = serializers.ListField(child=serializers.CharField(), help_text="Which secret fields hold a value.")
    default_tags = serializers.ListField(child=serializers.CharField())
    metadata_mapping = serializers.DictField(child=serializers.CharField(allow_null=True))
    timeout_s = serializers.FloatField()
    retry_policy = serializers.DictField()
    enabled = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    deliveries_24h = DeliveryCountsSerializer()


class IntegrationListSerializer(serializers.Serializer):
    data = IntegrationOutSerializer(many=True)  # type: ignore[assignment]


class CheckResultSerializer(serializers.Serializer):
    ok = serializers.BooleanField(help_text="True when the destination was reached and accepted the credentials.")
    message = serializers.CharField()
    status_code = serializers.IntegerField(allow_null=True, help_text="The destination's HTTP status, if any.")
    latency_ms = serializers.IntegerField(allow_null=True)


class ConfigCheckSerializer(serializers.Serializer):
    platform = PlatformField()
    name = serializers.CharField(required=False, default="", max_length=100)
    config = serializers.DictField()
    timeout_s = serializers.FloatField(required=False, default=10.0, min_value=0.5, max_value=120)


# --- helpers -------------------------------------------------------------------------------------


def integrations_json(team_id: int, integrations: list[Integration]) -> list[dict[str, Any]]:
    """The integrations as the API shows them, with their 24 h counts (one grouped query for any number of them)."""
    counts = recent_delivery_counts(team_id, [(i.pk, i.name) for i in integrations])
    return [integration_json(i, counts[i.pk]) for i in integrations]


def integration_json(integration: Integration, deliveries_24h: dict[str, int]) -> dict[str, Any]:
    return {
        "id": integration.pk,
        "name": integration.name,
        "platform": integration.platform,
        "config": services.public_config(integration),
        "secrets_set": services.secrets_set(integration),
        "default_tags": list(integration.default_tags or []),
        "metadata_mapping": dict(integration.metadata_mapping or {}),
        "timeout_s": integration.timeout_s,
        "retry_policy": dict(integration.retry_policy or {}),
        "enabled": integration.enabled,
        "created_at": integration.created_at.isoformat(),
        "updated_at": integration.updated_at.isoformat(),
        "deliveries_24h": deliveries_24h,
    }


def check_json(result: CheckResult) -> dict[str, Any]:
    return {
        "ok": result.ok,
        "message": result.message,
        "status_code": result.status_code,
        "latency_ms": result.latency_ms,
    }


def _problem_for(exc: Exception) -> Problem:
    if isinstance(exc, services.NameTaken):
        return Problem(409, "name-taken", str(exc), errors={"name": [str(exc)]})
    assert isinstance(exc, services.InvalidIntegration)
    return validation_problem(exc.errors, title="Invalid integration")


def _get(request: Request, integration_id: int) -> Integration:
    integration = selectors.integration_for_team(principal_of(request).team_id, integration_id)
    if integration is None:
        raise Problem(404, "not-found", f"No integration {integration_id} in this team.")
    return integration


EXAMPLE = OpenApiExample(
    "Langfuse",
    value={
        "name": "langfuse-prod",
        "platform": "langfuse",
        "config": {"publicKey": "pk-lf-…", "secretKey": "sk-lf-…", "host": "https://cloud.langfuse.com"},
        "default_tags": ["tracerelay"],
        "timeout_s": 10,
        "retry_policy": {"max_attempts": 8, "base_delay_s": 1, "max_delay_s": 300},
    },
    request_only=True,
)


# --- views ---------------------------------------------------------------------------------------


class IntegrationListCreate(APIView):
    permission_classes = [IntegrationPermission]

    @extend_schema(
        tags=[TAG],
        operation_id="integrations_list",
        summary="List integrations",
        responses={200: IntegrationListSerializer, **problem_responses(401, 403)},
    )
    def get(self, request: Request) -> Response:
        team_id = principal_of(request).team_id
        return Response({"data": integrations_json(team_id, list(selectors.integrations_for_team(team_id)))})

    @extend_schema(
        tags=[TAG],
        operation_id="integrations_create",
        summary="Create an integration",
        request=IntegrationInSerializer,
        examples=[EXAMPLE],
        responses={201: IntegrationOutSerializer, **problem_responses(400, 401, 403, 409, 415)},
    )
    def post(self, request: Request) -> Response:
        principal = principal_of(request)
        serializer = IntegrationInSerializer(data=json_object(request))
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            integration = services.integration_create(
                team_id=principal.team_id,
                data=services.IntegrationInput(**data),
                actor=principal.actor,
            )
        except (services.NameTaken, services.InvalidIntegration) as exc:
            raise _problem_for(exc)
        return Response(integrations_json(principal.team_id, [integration])[0], status=201)


class IntegrationDetail(APIView):
    permission_classes = [IntegrationPermission]

    @extend_schema(
        tags=[TAG],
        operation_id="integrations_retrieve",
        summary="One integration",
        responses={200: IntegrationOutSerializer, **problem_responses(401, 403, 404)},
    )
    def get(self, request: Request, integration_id: int) -> Response:
        return Response(integrations_json(principal_of(request).team_id, [_get(request, integration_id)])[0])

    @extend_schema(
        tags=[TAG],
        operation_id="integrations_partial_update",
        summary="Change an integration",
        description="Fields left out stay as they are. In `config`, keys given replace, `null` removes one, "
        "and a secret left out (or sent back masked) keeps its stored value. The platform cannot change. "
        "A stored secret only goes to the address it was saved with: a PATCH that changes an address "
        "field (webhook `url`, `host`, `endpoint`, Helicone's `apiUrl`, Datadog's `site`; a trailing "
        "slash, a default port or the host's case is no change) must give every stored secret and "
        "credential header again (or remove it), else a 400 names each one "
        '(`config.secretKey`, `config.headers.Authorization`: "Give the secret again: the address changed").',
        request=IntegrationPatchSerializer,
        responses={200: IntegrationOutSerializer, **problem_responses(400, 401, 403, 404, 409, 415)},
    )
    def patch(self, request: Request, integration_id: int) -> Response:
        principal = principal_of(request)
        integration = _get(request, integration_id)
        serializer = IntegrationPatchSerializer(data=json_object(request))
        serializer.is_valid(raise_exception=True)
        given = set(request.data)
        changes = {k: v for k, v in serializer.validated_data.items() if k in given}
        try:
            services.integration_update(integration=integration, changes=changes, actor=principal.actor)
        except (services.NameTaken, services.InvalidIntegration) as exc:
            raise _problem_for(exc)
        return Response(integrations_json(principal.team_id, [integration])[0])

    @extend_schema(
        tags=[TAG],
        operation_id="integrations_destroy",
        summary="Delete an integration",
        responses={204: None, **problem_responses(401, 403, 404)},
    )
    def delete(self, request: Request, integration_id: int) -> Response:
        services.integration_delete(integration=_get(request, integration_id), actor=principal_of(request).actor)
        return Response(status=204)


class IntegrationTest(APIView):
    permission_classes = [IntegrationPermission]

    @extend_schema(
        tags=[TAG],
        operation_id="integrations_test",
        summary="Test an integration's connection",
        description="Contacts the destination for real (reachability and credentials, writing nothing "
        "where the platform allows; a webhook gets a signed `ping`). The answer is 200 either way; "
        "`ok` tells whether the check passed.",
        request=None,
        responses={200: CheckResultSerializer, **problem_responses(401, 403, 404)},
    )
    def post(self, request: Request, integration_id: int) -> Response:
        result = services.integration_check(integration=_get(request, integration_id))
        return Response(check_json(result))


class ConfigTest(APIView):
    permission_classes = [IntegrationPermission]

    @extend_schema(
        tags=[TAG],
        operation_id="integrations_test_config",
        summary="Test an unsaved integration config",
        request=ConfigCheckSerializer,
        responses={200: CheckResultSerializer, **problem_responses(400, 401, 403, 415)},
    )
    def post(self, request: Request) -> Response:
        serializer = ConfigCheckSerializer(data=json_object(request))
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            result = services.config_check(
                platform=data["platform"], name=data["name"], config=data["config"], timeout_s=data["timeout_s"]
            )
        except services.InvalidIntegration as exc:
            raise _problem_for(exc)
        return Response(check_json(result))
