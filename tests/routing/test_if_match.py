"""Every operation that takes If-Match validates the body first: an invalid body is a 400 (never a
412), whatever If-Match says, and nothing is stored; a valid body with a stale If-Match is a 412."""

from __future__ import annotations

import pytest

from routing.models import RoutingRule, RuleSet, SamplingPolicy

PROBLEM = "application/problem+json"
GOOD_RULES = {"rules": [{"name": "all", "destination": "lf-prod"}]}
GOOD_SERVICE_RULES = {"rules": [{"name": "checkout: all", "destination": "lf-prod"}]}
GOOD_POLICY = {"default_sample_rate": 0.5, "rules": []}

# (method, url, kind of ETag, a valid body, invalid bodies)
OPERATIONS = [
    (
        "put",
        "/api/v1/routing/rules",
        "rules",
        GOOD_RULES,
        [{"rules": "nope"}, {"rules": [{"name": "a", "destination": "nowhere"}]}, {"rules": [{"name": "a"}]}],
    ),
    (
        "put",
        "/api/v1/routing/rules/services/checkout",
        "rules",
        GOOD_SERVICE_RULES,
        [{"rules": "nope"}, {"rules": [{"name": "a", "condition": "model ==="}]}, {"rules": [], "x": 1}],
    ),
    (
        "put",
        "/api/v1/routing/sampling",
        "sampling",
        GOOD_POLICY,
        [{"default_sample_rate": 2}, {"rules": [{"condition": None}]}, {"rules": [{"condition": "error"}]}],
    ),
]
STALE = ['"{kind}-v99"', 'W/"rpsf"', "", "garbage", '"{kind}-v0", "{kind}-v7"']


def snapshot():
    return (
        list(RoutingRule.objects.values_list("name", "service")),
        list(RuleSet.objects.values_list("version", flat=True)),
        list(SamplingPolicy.objects.values_list("version", "default_sample_rate")),
    )


@pytest.fixture
def stored(api, integrations):
    """Version 1 of the rule set and of the policy, so that v0 and v99 are both stale."""
    assert api.put("/api/v1/routing/rules", GOOD_RULES, format="json").status_code == 200
    assert api.put("/api/v1/routing/sampling", GOOD_POLICY, format="json").status_code == 200


@pytest.mark.parametrize("method, url, kind, good, bad_bodies", OPERATIONS, ids=[op[1] for op in OPERATIONS])
@pytest.mark.parametrize("stale", STALE)
def test_an_invalid_body_is_a_400_not_a_412(api, stored, method, url, kind, good, bad_bodies, stale):
    before = snapshot()
    header = stale.format(kind=kind)
    for body in bad_bodies:
        response = getattr(api, method)(url, body, format="json", HTTP_IF_MATCH=header)
        assert response.status_code == 400, (body, response.content)
        assert response["Content-Type"] == PROBLEM
        assert response.json()["type"].endswith("/validation")
    malformed = getattr(api, method)(url, b"{nope", content_type="application/json", HTTP_IF_MATCH=header)
    assert malformed.status_code == 400 and malformed.json()["type"].endswith("/malformed-json")
    assert snapshot() == before


@pytest.mark.parametrize("method, url, kind, good, bad_bodies", OPERATIONS, ids=[op[1] for op in OPERATIONS])
def test_a_valid_body_with_a_stale_if_match_is_a_412_and_a_current_one_stores(
    api, stored, method, url, kind, good, bad_bodies
):
    before = snapshot()
    response = getattr(api, method)(url, good, format="json", HTTP_IF_MATCH=f'"{kind}-v99"')
    assert response.status_code == 412, response.content
    assert response["ETag"] == f'"{kind}-v1"' and response.json()["current_version"] == 1
    assert snapshot() == before
    response = getattr(api, method)(url, good, format="json", HTTP_IF_MATCH=f'"{kind}-v1"')
    assert response.status_code == 200, response.content
    assert response["ETag"] == f'"{kind}-v2"'
