"""The dry run: where would these traces go, and why (nothing is stored or sent)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import Scope
from accounts.permissions import principal_of, scoped
from config.jsonbody import request_json
from config.problems import problem_responses

from ..dry_run import dry_run_request, routing_dry_run, rule_problem
from ..edits import RuleNotFound, RuleSetInvalid
from ..serializers import MAX_TEST_TRACES, RoutingTestResponseSerializer
from .common import TAG

# The body is one trace, or {"trace"|"traces", "rules"? or "rule"?, "sampling"?} (routing.dry_run.dry_run_request):
# two disjoint shapes, told apart by the wrapper's keys, which a bare trace must not have.
# (Raw schema: the components it names are those of POST /traces, PUT /routing/rules and PUT /routing/sampling.)
WRAPPER_KEYS = ("trace", "traces", "rules", "rule", "sampling")
TRACE = {"$ref": "#/components/schemas/TraceInRequest"}
DRY_RUN_BODY = {
    "oneOf": [
        {
            "type": "object",
            "description": "Traces to route, with candidate rules and sampling to try instead of the saved ones.",
            "properties": {
                "trace": {**TRACE, "description": "One trace."},
                "traces": {"type": "array", "items": TRACE, "minItems": 1, "maxItems": MAX_TEST_TRACES},
                "rules": {
                    "type": "array",
                    "items": {"$ref": "#/components/schemas/RoutingRuleRequest"},
                    "nullable": True,
                    "description": "Try these rules instead of the stored ones (nothing is stored); null or "
                    "absent: the stored ones. Not with `rule`.",
                },
                "rule": {
                    "allOf": [{"$ref": "#/components/schemas/RoutingRuleRequest"}],
                    "nullable": True,
                    "description": "Try one rule among the stored ones (nothing is stored): in place of the stored "
                    "rule its `id` names, or, without an `id`, added after the last one (without a `priority`: "
                    "the replaced rule's, or 10 after the last). Validated with the stored rules as saving it "
                    "would be: its errors are named `rule.<field>`, and an `id` that is no rule of the team is "
                    "a 400 at `rule.id`. Not with `rules`.",
                },
                "sampling": {
                    "allOf": [{"$ref": "#/components/schemas/SamplingPolicyRequest"}],
                    "nullable": True,
                    "description": "Try this sampling policy instead of the stored one; null or absent: the stored.",
                },
            },
            "additionalProperties": False,
            "oneOf": [{"required": ["trace"]}, {"required": ["traces"]}],
        },
        {
            "allOf": [TRACE],
            "not": {"anyOf": [{"required": [key]} for key in WRAPPER_KEYS]},
            "description": "One trace, routed by the saved rules and sampling.",
        },
    ]
}


class RoutingTestView(APIView):
    permission_classes = [scoped(Scope.RULES_TEST)]

    @extend_schema(
        tags=[TAG],
        operation_id="routing_test",
        summary="Dry-run routing",
        description="Where would these traces go, and why? Send one trace as the body, or "
        f'`{{"traces": [...]}}` (up to {MAX_TEST_TRACES}). Each is normalised and priced like an ingested one '
        "(so cost conditions see the computed cost) but nothing is stored or sent. Add `rules` and/or `sampling` "
        "to try a change before saving it, or `rule` to try one new or edited rule among the saved ones. Give "
        "traces an `id` for repeatable sampling: the sample point comes "
        "from the id, and a trace without one gets a new id each time.",
        request={"application/json": DRY_RUN_BODY},
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
                "An edited rule 12 among the saved ones",
                value={
                    "trace": {"model": "gpt-4o", "status": "error"},
                    "rule": {"id": 12, "name": "errors", "condition": "error", "destination": "langfuse"},
                },
                request_only=True,
            ),
            OpenApiExample(
                "Two traces against a candidate rule set",
                value={
                    "traces": [{"model": "gpt-4o", "cost": 0.2}, {"model": "gpt-4o-mini"}],
                    "rules": [{"name": "expensive", "condition": "cost > 0.05", "destination": "langfuse"}],
                },
                request_only=True,
            ),
        ],
    )
    def post(self, request: Request) -> Response:
        body = dry_run_request(request_json(request))
        try:
            result = routing_dry_run(
                principal=principal_of(request),
                items=body.items,
                rules=body.rules,
                sampling=body.sampling,
                prefix=body.prefix,
                single=body.single,
                rule=body.rule,
            )
        except (RuleSetInvalid, RuleNotFound) as exc:
            raise rule_problem(exc) from None
        return Response(result)
