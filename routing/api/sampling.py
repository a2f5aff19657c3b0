"""The team's sampling policy (GET/PUT)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import Scope
from accounts.permissions import principal_of, scoped
from config.jsonbody import request_json
from config.problems import problem_responses

from .. import selectors, services
from ..serializers import SamplingPolicyOutSerializer, SamplingPolicySerializer
from ..validation import validation_problem
from .common import IF_MATCH, TAG, etag_header, if_match, policy_json, tagged


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
        return tagged(policy_json(policy), "sampling", policy.version)

    @extend_schema(
        tags=[TAG],
        operation_id="routing_sampling_replace",
        summary="Replace the sampling policy",
        description="Validates everything first (a bad condition is a 400 naming `rules[i].condition` and the "
        "column; beyond the schema, each condition must compile). Needs scope `rules:write`. Honours `If-Match` "
        "like the rule set, after validating the body.",
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
        data = request_json(request)
        serializer = SamplingPolicySerializer(data=data)
        if not serializer.is_valid():
            raise validation_problem(serializer.errors, data, title="Invalid sampling policy")
        with if_match(request, "sampling") as expected:
            policy = services.sampling_policy_replace(
                team_id=principal.team_id,
                default_sample_rate=serializer.validated_data["default_sample_rate"],
                rules=serializer.validated_data["rules"],
                actor=principal.actor,
                expected_versions=expected,
            )
        return tagged(policy_json(policy), "sampling", policy.version)
