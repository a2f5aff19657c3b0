"""The rule set (GET/PUT), one rule (GET), and the rules one service registered (GET/PUT)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
)
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import Scope
from accounts.permissions import principal_of, scoped
from config.jsonbody import request_json
from config.problems import PROBLEM_CONTENT_TYPE, Problem, ProblemSerializer, problem_responses

from .. import selectors, services
from ..serializers import (
    RoutingRuleOutSerializer,
    RoutingRuleSerializer,
    RoutingRuleSetOutSerializer,
    RoutingRuleSetSerializer,
)
from ..validation import rules_context, validation_problem
from .common import IF_MATCH, TAG, etag_header, if_match, rule_json, rule_set_json, tagged
from .examples import BAD_RULES_EXAMPLE, RULES_EXAMPLE, RULES_OUT_EXAMPLE, SERVICE_RULES_EXAMPLE

MAX_SERVICE_NAME = 200  # as a trace's service_name

# Either shape is read the same way (RoutingRuleSetSerializer.to_internal_value): say so.
RULE_SET_BODY = PolymorphicProxySerializer(
    component_name="RoutingRuleSetBody",
    serializers=[RoutingRuleSetSerializer, RoutingRuleSerializer(many=True)],
    resource_type_field_name=None,
    many=False,
)
BAD_RULES_RESPONSE = OpenApiResponse(
    ProblemSerializer,
    description="Invalid rules: `errors` maps each bad field's path to messages; nothing was stored. Checked "
    "before `If-Match`.",
    examples=[OpenApiExample("A bad condition and an unknown destination", value=BAD_RULES_EXAMPLE)],
)
CROSS_FIELD_RULES = (
    "Checked beyond the schema (400 `validation`, naming each field): a condition must compile; a destination "
    "must name one of the team's integrations or platforms (`webhook` always exists), with `url` on webhooks "
    "only; rule names are unique; a rule's `id` must be one of the rules this PUT replaces; `destination` and "
    "`destinations`, `condition` and `conditions` are alternatives."
)


def _validated_rules(request: Request, team_id: int, service: str | None) -> list[dict]:
    data = request_json(request)
    serializer = RoutingRuleSetSerializer(data=data, context=rules_context(team_id, service))
    if not serializer.is_valid():
        raise validation_problem(serializer.errors, data, title="Invalid routing rules")
    return serializer.validated_data["rules"]


class RoutingRulesView(APIView):
    permission_classes = [scoped(Scope.RULES_READ, Scope.RULES_WRITE)]

    @extend_schema(
        tags=[TAG],
        operation_id="routing_rules_list",
        summary="Get the rule set",
        description="All of the team's routing rules in evaluation order, with the set's version. Rules a "
        "service registered carry its name in `service`.",
        parameters=[etag_header("rules")],
        responses={200: RoutingRuleSetOutSerializer, **problem_responses(401, 403)},
        examples=[OpenApiExample("A rule set", value=RULES_OUT_EXAMPLE, response_only=True)],
    )
    def get(self, request: Request) -> Response:
        team_id = principal_of(request).team_id
        header = selectors.rule_set(team_id)
        return tagged(rule_set_json(header, list(selectors.routing_rules(team_id))), "rules", header.version)

    @extend_schema(
        tags=[TAG],
        operation_id="routing_rules_replace",
        summary="Replace the rule set",
        description="Replaces every rule at once, after validating all of them: one bad rule is a 400 naming it "
        "and nothing changes. Rules sent with their `id` (or an existing name) keep their id (and their owning "
        'service); stored rules missing from the body are deleted. The body is `{"rules": [...]}` or a bare list. '
        "Needs a production key (scope `rules:write`). Send `If-Match` with the ETag of your GET to refuse lost "
        f"updates (412; the body is validated first). {CROSS_FIELD_RULES}",
        parameters=[IF_MATCH, etag_header("rules")],
        request=RULE_SET_BODY,
        responses={
            200: RoutingRuleSetOutSerializer,
            **problem_responses(401, 403, 412, 415),
            (400, PROBLEM_CONTENT_TYPE): BAD_RULES_RESPONSE,
        },
        examples=[
            OpenApiExample("Three rules", value=RULES_EXAMPLE, request_only=True),
            OpenApiExample("Stored", value=RULES_OUT_EXAMPLE, response_only=True, status_codes=["200"]),
        ],
    )
    def put(self, request: Request) -> Response:
        principal = principal_of(request)
        rules = _validated_rules(request, principal.team_id, None)
        with if_match(request, "rules") as expected:
            header, stored = services.routing_rules_replace(
                team_id=principal.team_id, rules=rules, actor=principal.actor, expected_versions=expected
            )
        return tagged(rule_set_json(header, stored), "rules", header.version)


class RoutingRuleDetailView(APIView):
    permission_classes = [scoped(Scope.RULES_READ)]

    @extend_schema(
        tags=[TAG],
        operation_id="routing_rules_retrieve",
        summary="Get one rule",
        description="One rule by id. Another team's rule is a 404, like one that does not exist.",
        parameters=[etag_header("rules")],
        responses={200: RoutingRuleOutSerializer, **problem_responses(401, 403, 404)},
    )
    def get(self, request: Request, rule_id: int) -> Response:
        team_id = principal_of(request).team_id
        rule = selectors.routing_rule(team_id, rule_id)
        if rule is None:
            raise Problem(404, "not-found", f"No routing rule {rule_id} in this team.")
        return tagged(rule_json(rule), "rules", selectors.rule_set(team_id).version)


SERVICE_NAME = OpenApiParameter(
    "service_name",
    OpenApiTypes.STR,
    location=OpenApiParameter.PATH,
    description="The service's name, as its traces' `service_name` (the SDK's `service_name`), 1-200 characters.",
    pattern=r"^[^\x00-\x1f\x7f]{1,200}$",
)


def _service(name: str) -> str:
    if not name.strip() or len(name) > MAX_SERVICE_NAME or any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise Problem(
            400,
            "invalid-parameter",
            f"A service name is 1-{MAX_SERVICE_NAME} characters, not blank, without control characters.",
            parameter="service_name",
            errors={"service_name": ["Invalid service name."]},
        )
    return name


class ServiceRulesView(APIView):
    """The rules one service owns: what the SDK's ``routing_rules=[...]`` registers."""

    permission_classes = [scoped(Scope.RULES_READ, Scope.RULES_WRITE)]

    @extend_schema(
        tags=[TAG],
        operation_id="routing_service_rules_list",
        summary="Get one service's rules",
        description="The rules this service registered, in evaluation order, with the whole rule set's version "
        "(a service with no rules: an empty list).",
        parameters=[SERVICE_NAME, etag_header("rules")],
        responses={200: RoutingRuleSetOutSerializer, **problem_responses(400, 401, 403)},
    )
    def get(self, request: Request, service_name: str) -> Response:
        team_id = principal_of(request).team_id
        service = _service(service_name)
        header = selectors.rule_set(team_id)
        return tagged(rule_set_json(header, list(selectors.service_rules(team_id, service))), "rules", header.version)

    @extend_schema(
        tags=[TAG],
        operation_id="routing_service_rules_replace",
        summary="Replace one service's rules",
        description="Replaces only the rules owned by this service (the SDK sends its `routing_rules` here once "
        "at start); every other rule, the team's own and other services', stays as it is, with its priority. "
        "Rules are in the shape of `PUT /routing/rules` and validated the same way; a rule's priority defaults "
        "to its position in the list (1, 2, 3 …), which places it among the other rules by number. A name "
        "another owner's rule holds is a 400. Needs a production key (scope `rules:write`); moves the rule "
        "set's version on (the ETag), and every process routes by the new rules at once. Honours `If-Match` "
        f"like the rule set, after validating the body. {CROSS_FIELD_RULES}",
        parameters=[SERVICE_NAME, IF_MATCH, etag_header("rules")],
        request=RULE_SET_BODY,
        responses={
            200: RoutingRuleSetOutSerializer,
            **problem_responses(401, 403, 412, 415),
            (400, PROBLEM_CONTENT_TYPE): BAD_RULES_RESPONSE,
        },
        examples=[OpenApiExample("A service's rules", value=SERVICE_RULES_EXAMPLE, request_only=True)],
    )
    def put(self, request: Request, service_name: str) -> Response:
        principal = principal_of(request)
        service = _service(service_name)
        rules = _validated_rules(request, principal.team_id, service)
        with if_match(request, "rules") as expected:
            header, stored = services.service_rules_replace(
                team_id=principal.team_id,
                service=service,
                rules=rules,
                actor=principal.actor,
                expected_versions=expected,
            )
        return tagged(rule_set_json(header, stored), "rules", header.version)
