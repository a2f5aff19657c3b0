"""The PII API: the team's policy (GET/PUT) and the scanner behind the settings page's "try it" box."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import Scope
from accounts.permissions import principal_of, scoped
from config.jsonbody import request_json
from config.problems import PROBLEM_CONTENT_TYPE, Problem, ProblemSerializer, problem_responses, validation_problem

from . import selectors, services
from .models import PiiPolicy
from .serializers import PiiPolicyOutSerializer, PiiPolicySerializer, PiiScanResultSerializer, PiiScanSerializer
from .validation import clean_policy

TAG = "Privacy"
MAX_SCAN_CHARS = 100_000
APPLIES_TO = "Every trace ingested after this response returned; traces already stored are not changed."


def _iso(value: Any) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def policy_json(policy: PiiPolicy) -> dict[str, Any]:
    return {
        **selectors.policy_as_dict(policy),
        "version": policy.version,
        "updated_at": _iso(policy.updated_at) if policy.pk else None,
        "updated_by": policy.updated_by,
        "applies_to": APPLIES_TO,
    }


POLICY_EXAMPLE = {
    "stored": {"mode": "detect"},
    "destinations": {"langfuse-cloud": {"mode": "redact"}, "datadog": {"mode": "hash"}},
    "kinds": ["EMAIL", "PHONE", "CREDIT_CARD", "IBAN", "US_SSN", "IP_ADDRESS", "SECRET"],
    "custom_patterns": [{"name": "EMPLOYEE_ID", "regex": "EMP-[0-9]{6}"}],
}
BAD_POLICY_EXAMPLE = {
    "type": "https://tracerelay.dev/problems/validation",
    "title": "Invalid PII policy",
    "status": 400,
    "detail": "custom_patterns[0].regex: Pattern 'EMPLOYEE_ID': invalid regex: invalid perl operator: (?= "
    "(backreferences and lookaround are refused: they can make matching take exponential time).",
    "errors": {
        "custom_patterns[0].regex": [
            "Pattern 'EMPLOYEE_ID': invalid regex: invalid perl operator: (?= (backreferences and lookaround are "
            "refused: they can make matching take exponential time)."
        ],
        "stored.mode": ["Unknown mode 'mask'; use one of off, detect, redact, hash, drop."],
    },
}


class PiiPolicyView(APIView):
    permission_classes = [scoped(Scope.PII_READ, Scope.PII_WRITE)]

    @extend_schema(
        tags=[TAG],
        operation_id="pii_policy_retrieve",
        summary="Get the PII policy",
        description="The team's PII policy. A team that never stored one gets the default: everything off, "
        "all kinds, no custom patterns (version 0).",
        responses={200: PiiPolicyOutSerializer, **problem_responses(401, 403)},
    )
    def get(self, request: Request) -> Response:
        return Response(policy_json(selectors.pii_policy(principal_of(request).team_id)))

    @extend_schema(
        tags=[TAG],
        operation_id="pii_policy_replace",
        summary="Replace the PII policy",
        description="Replaces the whole policy after validating all of it (nothing changes on a 400). `stored` "
        "applies before a trace is stored; a destination's entry applies before export to it, on top of what was "
        "stored (a destination without an entry gets the stored trace). Modes: `off`, `detect` (count and flag "
        "the kinds), `redact` (`[EMAIL]`), `hash` (`[EMAIL:1a2b3c4d5e6f]`, stable per team), `drop` (the field "
        "holding PII is removed or emptied). The new policy applies to every trace ingested after the response "
        "returns. Needs a production key (scope `pii:write`).",
        request=PiiPolicySerializer,
        responses={
            200: PiiPolicyOutSerializer,
            **problem_responses(401, 403, 415),
            (400, PROBLEM_CONTENT_TYPE): OpenApiResponse(
                ProblemSerializer,
                description="Invalid policy: `errors` maps each bad field's path to messages; nothing was stored.",
                examples=[OpenApiExample("A lookahead and an unknown mode", value=BAD_POLICY_EXAMPLE)],
            ),
        },
        examples=[OpenApiExample("Detect on storage, redact for a SaaS", value=POLICY_EXAMPLE, request_only=True)],
    )
    def put(self, request: Request) -> Response:
        principal = principal_of(request)
        cleaned = clean_policy(request_json(request), known_destinations=selectors.integration_names(principal.team_id))
        if isinstance(cleaned, dict):
            raise validation_problem(cleaned, title="Invalid PII policy")
        policy = services.pii_policy_replace(team_id=principal.team_id, policy=cleaned, actor=principal.actor)
        return Response(policy_json(policy))


class PiiScanView(APIView):
    # A read: it stores nothing, so development keys may use it (the settings page's "try it" box).
    permission_classes = [scoped(Scope.PII_READ)]

    @extend_schema(
        tags=[TAG],
        operation_id="pii_scan",
        summary="Find PII in a text",
        description="The findings in `text` (kinds: EMAIL, PHONE, CREDIT_CARD, IBAN, US_SSN, IP_ADDRESS, SECRET "
        "and the team's custom pattern names, limited to the policy's `kinds`), as character offsets, and the "
        f"text redacted. At most {MAX_SCAN_CHARS:,} characters.",
        request=PiiScanSerializer,
        responses={200: PiiScanResultSerializer, **problem_responses(400, 401, 403, 413, 415)},
        examples=[
            OpenApiExample(
                "A prompt", value={"text": "Mail jane@example.com, card 4111 1111 1111 1111"}, request_only=True
            ),
            OpenApiExample(
                "Its findings",
                value={
                    "findings": [
                        {"kind": "EMAIL", "start": 5, "end": 21},
                        {"kind": "CREDIT_CARD", "start": 28, "end": 47},
                    ],
                    "redacted": "Mail [EMAIL], card [CREDIT_CARD]",
                },
                response_only=True,
            ),
        ],
    )
    def post(self, request: Request) -> Response:
        team_id = principal_of(request).team_id
        data = request_json(request)
        text = data.get("text") if isinstance(data, dict) else None
        if not isinstance(text, str):
            raise validation_problem({"text": ["Send the text to scan as a string."]}, title="Invalid scan request")
        if len(text) > MAX_SCAN_CHARS:
            raise Problem(413, "payload-too-large", f"text: at most {MAX_SCAN_CHARS:,} characters; got {len(text):,}.")
        return Response(selectors.scan_text(team_id, text))
