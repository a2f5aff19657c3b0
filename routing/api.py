"""The routing API: the rule set (GET/PUT, one rule), the sampling policy (GET/PUT) and the dry run.

PUTs replace the whole document after validating all of it, carry an ETag
(``"rules-v<version>"`` / ``"sampling-v<version>"``) and honour ``If-Match`` (412 when stale).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import Scope
from accounts.permissions import principal_of, scoped
from config.jsonbody import request_json
from config.problems import PROBLEM_CONTENT_TYPE, Problem, ProblemSerializer, flatten_errors, problem_responses
from traces.normalize import TraceValidationError, normalize_trace

from . import selectors, services
from .models import RoutingRule, RuleSet, SamplingPolicy
from .router import route
from .serializers import (
    MAX_TEST_TRACES,
    DestinationChecker,
    RoutingRuleOutSerializer,
    RoutingRuleSetOutSerializer,
    RoutingRuleSetSerializer,
    RoutingTestRequestSerializer,
    RoutingTestResponseSerializer,
    SamplingPolicyOutSerializer,
    SamplingPolicySerializer,
)

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


def validation_problem(detail: Any, data: Any, *, title: str, prefix: str = "") -> Problem:
    """Serializer errors → a 400 problem whose detail names the rule (by name) and the field."""
    errors = flatten_errors(detail, prefix)
    path, messages = next(iter(errors.items()), ("", ["Invalid input."]))
    where = f"{path}: " if path else ""
    match = re.match(r"(?:rules)\[(\d+)\]", path.removeprefix(f"{prefix}.") if prefix else path)
    rules = data.get("rules") if isinstance(data, Mapping) else data if isinstance(data, list) else None
    if match and isinstance(rules, list):
        index = int(match.group(1))
        item = rules[index] if index < len(rules) else None
        name = item.get("name") if isinstance(item, Mapping) else None
        if isinstance(name, str) and name.strip():
            where = f"Rule '{name.strip()}' ({path}): "
    return Problem(400, "validation", f"{where}{messages[0]}", title=title, errors=errors)


def _iso(value: Any) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def rule_json(rule: RoutingRule) -> dict[str, Any]:
    body = selectors.rule_as_dict(rule)
    body["created_at"] = _iso(rule.created_at)
    body["updated_at"] = _iso(rule.updated_at)
    return body


def rule_set_json(header: RuleSet, rules: Collection[RoutingRule]) -> dict[str, Any]:
    return {
        "version": header.version,
        "updated_at": _iso(header.updated_at) if header.pk else None,
        "updated_by": header.updated_by,
        "rules": [rule_json(r) for r in rules],
    }


def policy_json(policy: SamplingPolicy) -> dict[str, Any]:
    return {
        "default_sample_rate": policy.default_sample_rate,
        "rules": list(policy.rules or []),
        "version": policy.version,
        "updated_at": _iso(policy.updated_at) if policy.pk else None,
    }


def _rules_context(team_id: int) -> dict[str, Any]:
    return {
        "destination_checker": DestinationChecker(team_id),
        "team_rule_ids": set(RoutingRule.objects.filter(team_id=team_id).values_list("id", flat=True)),
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
        request=RoutingRuleSetSerializer,
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
        serializer = RoutingRuleSetSerializer(data=data, context=_rules_context(team_id))
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

        compiled, rules_version, sampling_version = self._routing(
            principal.team_id, candidate_rules, candidate_sampling, data
        )

        errors: dict[str, list[str]] = {}
        status = 400
        records = []
        for i, item in enumerate(items):
            where = prefix if single else f"{prefix}[{i}]"
            if not isinstance(item, Mapping):
                errors.setdefault(where, []).append("Must be a trace object.")
                continue
            try:
                records.append(
                    normalize_trace(item, team_id=principal.team_id, environment=principal.environment, source="api")
                )
            except TraceValidationError as exc:
                status = 413 if exc.status == 413 else status
                for field, messages in exc.errors.items():
                    errors.setdefault(f"{where}.{field}" if where else field, []).extend(messages)
        if errors:
            path, messages = next(iter(errors.items()))
            detail = f"{path}: {messages[0]}" if path else messages[0]
            slug = "payload-too-large" if status == 413 else "validation"
            raise Problem(status, slug, detail, title="Invalid trace", errors=errors)

        results = []
        for record in records:
            ctx = record.condition_context()
            result = route(ctx, compiled, explain=True)
            results.append(
                {
                    "trace_id": record.trace_id,
                    "trace": ctx,
                    "destinations": result.destinations,
                    "sampled_out": [_decision_json(d) for d in result.sampled_out],
                    "decisions": [_decision_json(d) for d in result.decisions],
                    "matched_rules": list(result.matched_rules),
                    "sample_point": result.sample_point,
                    "policy": {"rate": result.policy_rate, "reason": result.policy_reason},
                    "evaluations": [e.as_dict() for e in result.evaluations],
                    "errors": [{"rule": rule, "error": error} for rule, error in result.errors],
                }
            )
        return Response({"rules_version": rules_version, "sampling_version": sampling_version, "results": results})

    def _routing(self, team_id: int, rules: Any, sampling: Any, data: Any) -> tuple[Any, int | None, int | None]:
        if rules is None and sampling is None:
            compiled = selectors.load_compiled_routing(team_id)
            return compiled, compiled.version, compiled.sampling_version
        if rules is not None:
            serializer = RoutingRuleSetSerializer(data={"rules": rules}, context=_rules_context(team_id))
            if not serializer.is_valid():
                raise validation_problem(serializer.errors, data, title="Invalid routing rules")
            rule_dicts: list[Any] = serializer.validated_data["rules"]
            rules_version: int | None = None
        else:
            rule_dicts = [selectors.rule_as_dict(r) for r in selectors.routing_rules(team_id)]
            rules_version = selectors.rule_set(team_id).version
        if sampling is not None:
            policy_serializer = SamplingPolicySerializer(data=sampling)
            if not policy_serializer.is_valid():
                raise validation_problem(
                    policy_serializer.errors, sampling, title="Invalid sampling policy", prefix="sampling"
                )
            default_rate = policy_serializer.validated_data["default_sample_rate"]
            sampling_rules = policy_serializer.validated_data["rules"]
            sampling_version: int | None = None
        else:
            policy = selectors.sampling_policy(team_id)
            default_rate, sampling_rules, sampling_version = policy.default_sample_rate, policy.rules, policy.version
        compiled = selectors.compile_routing(
            rule_dicts, default_sample_rate=default_rate, sampling_rules=sampling_rules
        )
        return compiled, rules_version, sampling_version


def _decision_json(decision: Any) -> dict[str, Any]:
    return {**decision.as_dict(), "spec": decision.destination.as_dict()}


def _bad(field: str, message: str) -> Problem:
    detail = f"{field}: {message}" if field else message
    return Problem(400, "validation", detail, title="Invalid request", errors={field: [message]})
