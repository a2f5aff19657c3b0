"""What the routing views share: ETags and ``If-Match``, the JSON shapes of rules and policies, and
their OpenAPI parameters.

PUTs validate the whole body first (an invalid body is a 400 whatever ``If-Match`` says), then store
it only if ``If-Match`` names the current version (checked inside the service, under the row lock):
else 412 with the current ETag.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework.request import Request
from rest_framework.response import Response

from config.jsoncodec import iso
from config.problems import Problem

from .. import selectors
from ..models import RoutingRule, RuleSet, SamplingPolicy
from ..services import VersionConflict

TAG = "Routing"
WHAT = {"rules": "rule set", "sampling": "sampling policy"}  # an ETag's kind → what it versions, in words


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


def stale(request: Request, kind: str, current: int) -> Problem:
    """The 412 for an ``If-Match`` that names another version than ``current``."""
    return Problem(
        412,
        "precondition-failed",
        f"The {WHAT[kind]} is at version {current} ({etag(kind, current)}); If-Match was "
        f"{request.headers.get('If-Match')}. GET it again, reapply your change and retry.",
        current_version=current,
        headers={"ETag": etag(kind, current)},
    )


@contextmanager
def if_match(request: Request, kind: str) -> Iterator[set[int] | None]:
    """A PUT's store, under ``If-Match``: gives the versions it accepts (the service's
    ``expected_versions``, checked under the row lock) and turns the service's `VersionConflict`
    into the 412 with the current ETag.

        with if_match(request, "rules") as expected:
            header, stored = services.routing_rules_replace(..., expected_versions=expected)
        return tagged(body, "rules", header.version)
    """
    try:
        yield if_match_versions(request, kind)
    except VersionConflict as exc:
        raise stale(request, kind, exc.current) from None


def tagged(body: Any, kind: str, version: int) -> Response:
    """A 200 with ``body`` and the ETag of that ``kind`` at ``version``."""
    return Response(body, headers={"ETag": etag(kind, version)})


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


IF_MATCH = OpenApiParameter(
    "If-Match",
    OpenApiTypes.STR,
    location=OpenApiParameter.HEADER,
    required=False,
    description="Store only if the current ETag is this one (from a GET); else 412. `*` or absent: always. "
    "The body is validated first: an invalid body is a 400 whatever this header says.",
)


def etag_header(kind: str) -> OpenApiParameter:
    return OpenApiParameter(
        "ETag",
        OpenApiTypes.STR,
        location=OpenApiParameter.HEADER,
        response=[200],
        description=f'The version of the {kind} document: `"{kind}-v<version>"`.',
    )
