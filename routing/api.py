"""The routing API: the rule set (GET/PUT, one rule), the sampling policy (GET/PUT) and the dry run.

PUTs replace the whole document after validating all of it, carry an ETag
(``"rules-v<version>"`` / ``"sampling-v<version>"``) and honour ``If-Match`` (412 when stale).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

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
from config.jsoncodec import iso
from config.problems import PROBLEM_CONTENT_TYPE, Problem, ProblemSerializer, problem_responses

from . import selectors, services
from .dry_run import routing_dry_run
from .models import RoutingRule, RuleSet, SamplingPolicy
from .serializers import (
    MAX_TEST_TRACES,
    RoutingRuleOutSerializer,
    RoutingRuleSerializer,
    RoutingRuleSetOutSerializer,
    RoutingRuleSetSerializer,
    RoutingTestRequestSerializer,
    RoutingTestResponseSerializer,
    SamplingPolicyOutSerializer,
    SamplingPolicySerializer,
)
from .validation import rules_context, validation_problem

TAG = "Routing"

# ---------------------------------------------------------------------------------------------
# Helpers


def etag(kind: str, version: int) -> str:
    return f'"{kind}-v{version}"'


def if_match_versions(request: Request, kind: str) -> set[int] | None:
    """The versions ``If-Match`` accepts; None when absent or ``*``. An ETag of another kind, or
    one that is not ours at all, can never match: that is a 412 too."""
    header = request.headers.get("If-Match")
    if header is None or header.strip() == "*":
        return None
    versions: set[int] = set()
    for part in header.split(","):
        tag = part.strip().removeprefix("W/").strip('"')
        match = re.fullmatch(rf"(?:{kind}-v)?(\d{{1,9}})", tag)
        if match:
            versions.add(int(match.group(1)))
    return versions


def _stale(kind: str, what: str, current: int, header: str | None) -> Problem:
    return Problem(
        412,
        "precondition-failed",
        f"The {what} is at version {current} ({etag(kind, current)}); If-Match was {header}. "
        "GET it again, reapply your change and retry.",
        current_version=current,
        headers={"ETag": etag(kind, current)},
    )


def _check_precondition(request: Request, kind: str, what: str, current: int) -> set[int] | None:
    expected = if_match_versions(request, kind)
    if expected is not None and current not in expected:
        raise _stale(kind, what, current, request.headers.get("If-Match"))
    return expected


def rule_json(rule: RoutingRule) -> dict[str, Any]:
    body = selectors.rule_as_dict(rule)
    body["created_at"] = iso(rule.created_at)
    body["updated_at"] = iso(rule.updated_at)
    return body


def rule_set_json(header: RuleSet, rules: Collection[RoutingRule]) -> dict[str, Any]:
    return {
        "version": header.version,
        "updated_at": iso(header.updated_at) if header.pk else None,
        "updated_by": header.updated_by,
        "rules": [rule_json(r) for r in rules],
    }


def policy_json(policy: SamplingPolicy) -> dict[str, Any]:
    return {
        "default_sample_rate": policy.default_sample_rate,
        "rules": list(policy.rules or []),
        "version": policy.version,
        "updated_at": iso(policy.updated_at) if policy.pk else None,
    }


# ---------------------------------------------------------------------------------------------
# OpenAPI bits

IF_MATCH = OpenApiParameter(
    "If-Match",
    OpenApiTypes.STR,
    location=OpenApiParameter.HEADER,
    required=False,
    description="Store only if the current ETag is this one (from a GET); else 412. `*` or absent: always.",
)


def etag_header(kind: str) -> OpenApiParameter:
    return OpenApiParameter(
        "ETag",
        OpenApiTypes.STR,
        location=OpenApiParameter.HEADER,
        response=[200],
        description=f'The version of the {kind} document: `"{kind}-v<version>"`.',
    )


RULES_EXAMPLE = {
    "rules": [
        {
            "name": "errors everywhere",
            "priority": 10,
            "conditions": {"error": True},
            "destinations": [
                {"name": "langfuse", "fallback": [{"name": "webhook", "url": "https://hooks.example.com/llm"}]},
                "datadog",
            ],
        },
        {
            "name": "expensive gpt-4",
            "priority": 20,
            "condition": 'model.startsWith("gpt-4") && cost > 0.05',
            "destination": "langsmith",
            "tags": ["expensive"],
        },
        {
            "name": "10% of the rest",
            "priority": 100,
            "destinations": [{"platform": "helicone", "sample_rate": 0.1}],
        },
    ]
}
RULES_OUT_EXAMPLE = {
    "version": 4,
    "updated_at": "2025-01-31T12:00:00Z",
    "updated_by": "key:tr_prod_AbC1",
    "rules": [
        {
            "id": 7,
            "name": "errors everywhere",
            "description": "",
            "priority": 10,
            "enabled": True,
            "conditions": {"error": True},
            "condition": None,
            "destinations": [
                {
                    "name": "langfuse",
                    "sample_rate": 1.0,
                    "tags": [],
                    "fallback": [
                        {"name": "webhook", "sample_rate": 1.0, "tags": [], "url": "https://hooks.example.com/llm"}
                    ],
                }
            ],
            "sample_rate": 1.0,
            "tags": [],
            "stop": False,
            "created_at": "2025-01-30T09:00:00Z",
            "updated_at": "2025-01-31T12:00:00Z",
        }
    ],
}
BAD_RULES_EXAMPLE = {
    "type": "https://tracerelay.dev/problems/validation",
    "title": "Invalid routing rules",
    "status": 400,
    "detail": "Rule 'expensive gpt-4' (rules[1].condition): Syntax error at column 20: the expression ends too early",
    "errors": {
        "rules[1].condition": ["Syntax error at column 20: the expression ends too early"],
        "rules[2].destinations[0].name": [
            "Unknown destination 'helicon': not an integration name or platform of this team. Did you mean "
            "'helicone'? Known: helicone, langfuse, webhook."
        ],
    },
}


# ---------------------------------------------------------------------------------------------
# Views


class RoutingRulesView(APIView):
    permission_classes = [scoped(Scope.RULES_READ, Scope.RULES_WRITE)]

    @extend_schema(
        tags=[TAG],
        operation_id="routing_rules_list",
        summary="Get the rule set",
        description="All of the team's routing rules in evaluation order, with the set's version.",
        parameters=[etag_header("rules")],
        responses={200: RoutingRuleSetOutSerializer, **problem_responses(401, 403)},
        examples=[OpenApiExample("A rule set", value=RULES_OUT_EXAMPLE, response_only=True)],
    )
    def get(self, request: Request) -> Response:
        team_id = principal_of(request).team_id
        header = selectors.rule_set(team_id)
        body = rule_set_json(header, list(selectors.routing_rules(team_id)))
        return Response(body, headers={"ETag": etag("rules", header.version)})

    @extend_schema(
        tags=[TAG],
        operation_id="routing_rules_replace",
        summary="Replace the rule set",
        description="Replaces every rule at once, after validating all of them: one bad rule is a 400 naming it "
        "and nothing changes. Rules sent with their `id` (or an existing name) keep their id; stored rules "
        'missing from the body are deleted. The body is `{"rules": [...]}` or a bare list. Needs a production '
        "key (scope `rules:write`). Send `If-Match` with the ETag of your GET to refuse lost updates (412).",
        parameters=[IF_MATCH, etag_header("rules")],
        # Either shape is read the same way (RoutingRuleSetSerializer.to_internal_value): say so.
        request=PolymorphicProxySerializer(
            component_name="RoutingRuleSetBody",
            serializers=[RoutingRuleSetSerializer, RoutingRuleSerializer(many=True)],
            resource_type_field_name=None,
            many=False,
        ),
        responses={
            200: RoutingRuleSetOutSerializer,
            **problem_responses(401, 403, 412, 415),
            (400, PROBLEM_CONTENT_TYPE): OpenApiResponse(
                ProblemSerializer,
                description="Invalid rules: `errors` maps each bad field's path to messages; nothing was stored.",
                examples=[OpenApiExample("A bad condition and an unknown destination", value=BAD_RULES_EXAMPLE)],
            ),
        },
        examples=[
            OpenApiExample("Three rules", value=RULES_EXAMPLE, request_only=True),
            OpenApiExample("Stored", value=RULES_OUT_EXAMPLE, response_only=True, status_codes=["200"]),
        ],
    )
    def put(self, request: Request) -> Response:
        principal = principal_of(request)
        team_id = principal.team_id
        _check_precondition(request, "rules", "rule set", selectors.rule_set(team_id).version)
        data = request_json(request)
        serializer = RoutingRuleSetSerializer(data=data, context=rules_context(team_id))
        if not serializer.is_valid():
            raise validation_problem(serializer.errors, data, title="Invalid routing rules")
        try:
            header, rules = services.routing_rules_replace(
                team_id=team_id,
                rules=serializer.validated_data["rules"],
                actor=principal.actor,
                expected_versions=if_match_versions(request, "rules"),
            )
        except services.VersionConflict as exc:
            raise _stale("rules", "rule set", exc.current, request.headers.get("If-Match"))
        return Response(rule_set_json(header, rules), headers={"ETag": etag("rules", header.version)})


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
        return Response(rule_json(rule), headers={"ETag": etag("rules", selectors.rule_set(team_id).version)})


class SamplingPolicyView(APIView):
    permission_classes = [scoped(Scope.RULES_READ, Scope.RULES_WRITE)]

    @extend_schema(
        tags=[TAG],
        operation_id="routing_sampling_retrieve",
        summary="Get the sampling policy",
        description="The team-wide rate every destination's rate is multiplied by: the first matching rule's "
        "`sample_rate`, else `default_sample_rate` (1.0 when never set).",
        parameters=[etag_header("sampling")],
        responses={200: SamplingPolicyOutSerializer, **problem_responses(401, 403)},
    )
    def get(self, request: Request) -> Response:
        policy = selectors.sampling_policy(principal_of(request).team_id)
        return Response(policy_json(policy), headers={"ETag": etag("sampling", policy.version)})

    @extend_schema(
        tags=[TAG],
        operation_id="routing_sampling_replace",
        summary="Replace the sampling policy",
        description="Validates everything first (a bad condition is a 400 naming `rules[i].condition` and the "
        "column). Needs scope `rules:write`. Honours `If-Match` like the rule set.",
        parameters=[IF_MATCH, etag_header("sampling")],
        request=SamplingPolicySerializer,
        responses={200: SamplingPolicyOutSerializer, **problem_responses(400, 401, 403, 412, 415)},
        examples=[
            OpenApiExample(
                "Keep 10% of development traffic, 50% of successes",
                value={
                    "default_sample_rate": 1.0,
                    "rules": [
                        {"condition": 'environment == "development"', "sample_rate": 0.1},
                        {"condition": "!error", "sample_rate": 0.5},
                    ],
                },
                request_only=True,
            )
        ],
    )
    def put(self, request: Request) -> Response:
        principal = principal_of(request)
        team_id = principal.team_id
        _check_precondition(request, "sampling", "sampling policy", selectors.sampling_policy(team_id).version)
        data = request_json(request)
        serializer = SamplingPolicySerializer(data=data)
        if not serializer.is_valid():
            raise validation_problem(serializer.errors, data, title="Invalid sampling policy")
        try:
            policy = services.sampling_policy_replace(
                team_id=team_id,
                default_sample_rate=serializer.validated_data["default_sample_rate"],
                rules=serializer.validated_data["rules"],
                actor=principal.actor,
                expected_versions=if_match_versions(request, "sampling"),
            )
        except services.VersionConflict as exc:
            raise _stale("sampling", "sampling policy", exc.current, request.headers.get("If-Match"))
        return Response(policy_json(policy), headers={"ETag": etag("sampling", policy.version)})


TEST_KEYS = frozenset({"trace", "traces", "rules", "sampling"})


class RoutingTestView(APIView):
    permission_classes = [scoped(Scope.RULES_TEST)]

    @extend_schema(
        tags=[TAG],
        operation_id="routing_test",
        summary="Dry-run routing",
        description="Where would these traces go, and why? Send one trace as the body, or "
        f'`{{"traces": [...]}}` (up to {MAX_TEST_TRACES}). Each is normalised and priced like an ingested one '
        "(so cost conditions see the computed cost) but nothing is stored or sent. Add `rules` and/or `sampling` "
        "to try a change before saving it. Give traces an `id` for repeatable sampling: the sample point comes "
        "from the id, and a trace without one gets a new id each time.",
        request=RoutingTestRequestSerializer,
        responses={200: RoutingTestResponseSerializer, **problem_responses(400, 401, 403, 413, 415)},
        examples=[
            OpenApiExample(
                "One trace",
                value={
                    "id": "checkout-42",
                    "model": "gpt-4o",
                    "prompt_tokens": 1200,
                    "completion_tokens": 300,
                    "status": "error",
                    "metadata": {"env": "prod"},
                },
                request_only=True,
            ),
            OpenApiExample(
                "Two traces against a candidate rule",
                value={
                    "traces": [{"model": "gpt-4o", "cost": 0.2}, {"model": "gpt-4o-mini"}],
                    "rules": [{"name": "expensive", "condition": "cost > 0.05", "destination": "langfuse"}],
                },
                request_only=True,
            ),
        ],
    )
    def post(self, request: Request) -> Response:
        principal = principal_of(request)
        data = request_json(request)
        candidate_rules: Any = None
        candidate_sampling: Any = None
        single = False
        if isinstance(data, list):
            items, prefix = data, "traces"
        elif isinstance(data, Mapping) and ("traces" in data or "trace" in data):
            unknown = sorted(str(k) for k in data if k not in TEST_KEYS)
            if unknown:
                raise Problem(
                    400,
                    "validation",
                    f"Unknown field '{unknown[0]}'; a dry run takes {', '.join(sorted(TEST_KEYS))}.",
                    title="Invalid request",
                    errors={k: ["Unknown field."] for k in unknown},
                )
            if "traces" in data and "trace" in data:
                raise Problem(400, "validation", "Give 'trace' or 'traces', not both.", title="Invalid request")
            if "traces" in data:
                items, prefix = data["traces"], "traces"
                if not isinstance(items, list):
                    raise _bad("traces", "Must be a list of traces.")
            else:
                items, prefix = [data["trace"]], "trace"
                single = True
            candidate_rules = data.get("rules")
            candidate_sampling = data.get("sampling")
        elif isinstance(data, Mapping):
            candidates = sorted(k for k in ("rules", "sampling") if k in data)
            if candidates:  # beside a bare trace they would read as trace fields and be ignored
                raise _bad(candidates[0], 'Candidate rules and sampling go with {"trace": {...}} or {"traces": [...]}.')
            items, prefix, single = [data], "", True
        else:
            raise _bad("", 'The body must be a trace object, or {"traces": [...]}.')
        if not items:
            raise _bad(prefix, "Send at least one trace.")
        if len(items) > MAX_TEST_TRACES:
            raise Problem(
                413,
                "too-many-traces",
                f"A dry run takes at most {MAX_TEST_TRACES} traces; this one has {len(items)}.",
                limit_traces=MAX_TEST_TRACES,
            )

        result = routing_dry_run(
            principal=principal,
            items=items,
            rules=candidate_rules,
            sampling=candidate_sampling,
            prefix=prefix,
            single=single,
        )
        return Response(result)


def _bad(field: str, message: str) -> Problem:
    detail = f"{field}: {message}" if field else message
    return Problem(400, "validation", detail, title="Invalid request", errors={field: [message]})
