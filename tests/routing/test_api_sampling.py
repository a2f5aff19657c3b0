"""GET/PUT /api/v1/routing/sampling."""

from __future__ import annotations

import pytest

from accounts.models import AuditEvent
from routing import selectors
from routing.models import SamplingPolicy

URL = "/api/v1/routing/sampling"
PROBLEM = "application/problem+json"

POLICY = {
    "default_sample_rate": 0.5,
    "rules": [
        {"condition": 'environment == "development"', "sample_rate": 0.1},
        {"condition": {"error": True}, "sample_rate": 1.0},
    ],
}


def put(client, body, **headers):
    return client.put(URL, body, format="json", **headers)


def assert_problem(response, status):
    assert response.status_code == status, response.content
    assert response["Content-Type"] == PROBLEM
    return response.json()


def test_the_default_policy_keeps_everything(api):
    response = api.get(URL)
    assert response.status_code == 200
    assert response.json() == {"default_sample_rate": 1.0, "rules": [], "version": 0, "updated_at": None}
    assert response["ETag"] == '"sampling-v0"'


def test_it_stores_and_returns_the_policy(api, team):
    response = put(api, POLICY)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["default_sample_rate"] == 0.5
    assert body["rules"] == POLICY["rules"]
    assert body["version"] == 1
    assert response["ETag"] == '"sampling-v1"'
    assert api.get(URL).json() == body
    compiled = selectors.compiled_routing(team.id)
    assert compiled.default_sample_rate == 0.5 and len(compiled.sampling_rules) == 2


def test_defaults_fill_in(api):
    body = put(api, {}).json()
    assert (body["default_sample_rate"], body["rules"]) == (1.0, [])


def test_a_get_can_be_put_back(api):
    put(api, POLICY)
    got = api.get(URL)
    again = put(api, got.json(), HTTP_IF_MATCH=got["ETag"])
    assert again.status_code == 200, again.content
    assert again.json()["version"] == 2


def test_a_stale_if_match_is_a_412(api):
    put(api, POLICY)
    body = assert_problem(put(api, POLICY, HTTP_IF_MATCH='"sampling-v0"'), 412)
    assert body["current_version"] == 1
    assert_problem(put(api, POLICY, HTTP_IF_MATCH='"rules-v1"'), 412)
    assert SamplingPolicy.objects.get().version == 1


@pytest.mark.parametrize(
    ("body", "path", "fragment"),
    [
        ({"default_sample_rate": 1.5}, "default_sample_rate", "less than or equal to 1"),
        ({"default_sample_rate": -1}, "default_sample_rate", "greater than or equal to 0"),
        ({"default_sample_rate": "0.5"}, "default_sample_rate", "valid number"),
        ({"rules": {}}, "rules", "list"),
        ({"rules": [{"sample_rate": 0.5}]}, "rules[0].condition", "required"),
        ({"rules": [{"condition": "", "sample_rate": 0.5}]}, "rules[0].condition", "needs a condition"),
        ({"rules": [{"condition": "error"}]}, "rules[0].sample_rate", "required"),
        ({"rules": [{"condition": "error", "sample_rate": 2}]}, "rules[0].sample_rate", "less than or equal"),
        ({"rules": [{"condition": "error ==", "sample_rate": 1}]}, "rules[0].condition", "Syntax error at column 9"),
        ({"rules": [{"condition": {"cots": ">1"}, "sample_rate": 1}]}, "rules[0].condition.cots", "did you mean"),
        ({"rules": [{"condition": "error", "sample_rate": 1, "x": 1}]}, "rules[0].x", "Unknown field"),
        ({"default": 1}, "default", "Unknown field"),
        ({"rules": [{"condition": "\x00", "sample_rate": 1}]}, "rules[0].condition", "NUL"),
    ],
)
def test_bad_policies_are_a_400_naming_the_field(api, body, path, fragment):
    problem = assert_problem(put(api, body), 400)
    assert path in problem["errors"], problem["errors"]
    assert any(fragment in m for m in problem["errors"][path]), problem["errors"][path]
    assert not SamplingPolicy.objects.exists()


def test_a_list_body_is_a_400(api):
    problem = assert_problem(put(api, [POLICY]), 400)
    assert "default_sample_rate" in problem["detail"]


def test_a_development_key_may_read_but_not_write(api, dev_api, ci_api):
    assert dev_api.get(URL).status_code == 200
    assert_problem(put(dev_api, POLICY), 403)
    assert_problem(ci_api.get(URL), 403)
    assert not SamplingPolicy.objects.exists()


def test_teams_have_their_own_policies(api, other_api):
    put(api, POLICY)
    assert other_api.get(URL).json()["default_sample_rate"] == 1.0


def test_a_put_writes_an_audit_event(api, team):
    put(api, POLICY)
    event = AuditEvent.objects.get(action="routing.sampling.replace")
    assert event.team == team and event.target == "v1"
    assert event.data["default_sample_rate"] == 0.5
