"""GET/PUT /api/v1/pii/policy: the issue's body shape, scopes, tenants and refusals."""

from __future__ import annotations

import pytest

from accounts.models import AuditEvent
from privacy import selectors
from privacy.models import PiiPolicy
from tests.factories import IntegrationFactory

URL = "/api/v1/pii/policy"
PROBLEM = "application/problem+json"
ALL_KINDS = ["EMAIL", "PHONE", "CREDIT_CARD", "IBAN", "US_SSN", "IP_ADDRESS", "SECRET"]


@pytest.fixture
def integrations(team):
    IntegrationFactory(team=team, name="langfuse-cloud", platform="langfuse")
    IntegrationFactory(team=team, name="phoenix-local", platform="phoenix")


POLICY = {
    "stored": {"mode": "detect"},
    "destinations": {"langfuse-cloud": {"mode": "redact"}, "phoenix-local": {"mode": "off"}},
    "kinds": ["EMAIL", "CREDIT_CARD", "SECRET"],
    "custom_patterns": [{"name": "EMPLOYEE_ID", "regex": r"EMP-\d{6}"}],
}


def put(client, body):
    return client.put(URL, body, format="json")


def assert_problem(response, status):
    assert response.status_code == status, response.content
    assert response["Content-Type"] == PROBLEM
    return response.json()


def test_the_default_policy_is_off_for_every_kind(api):
    response = api.get(URL)
    assert response.status_code == 200
    body = response.json()
    assert body["stored"] == {"mode": "off"}
    assert body["destinations"] == {}
    assert body["kinds"] == ALL_KINDS
    assert body["custom_patterns"] == []
    assert body["version"] == 0
    assert body["updated_at"] is None


def test_it_stores_and_returns_the_policy(api, team, integrations):
    response = put(api, POLICY)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["stored"] == {"mode": "detect"}
    assert body["destinations"] == POLICY["destinations"]
    assert body["kinds"] == ["EMAIL", "CREDIT_CARD", "SECRET"]  # canonical order
    assert body["custom_patterns"] == POLICY["custom_patterns"]
    assert body["version"] == 1
    assert body["updated_by"].startswith("key:")
    assert "ingested after this response" in body["applies_to"]
    assert api.get(URL).json() == body
    row = PiiPolicy.objects.get(team=team)
    assert row.stored_mode == "detect" and row.destinations == {"langfuse-cloud": "redact", "phoenix-local": "off"}
    assert AuditEvent.objects.filter(team=team, action="pii_policy.replace").count() == 1


def test_the_change_applies_to_the_next_trace_at_once(api, team, integrations):
    assert selectors.compiled_policy(team.id).stored == "off"  # cached in this process now
    put(api, POLICY)
    compiled = selectors.compiled_policy(team.id)
    assert compiled.stored == "detect"
    assert compiled.mode_for("langfuse-cloud") == "redact"
    assert [p.name for p in compiled.custom] == ["EMPLOYEE_ID"]
    assert compiled.version == 1


def test_a_get_can_be_put_back_and_versions_move_on(api, integrations):
    put(api, POLICY)
    got = api.get(URL).json()
    again = put(api, {k: got[k] for k in ("stored", "destinations", "kinds", "custom_patterns")}).json()
    assert again["version"] == 2
    assert {k: again[k] for k in ("stored", "destinations", "kinds", "custom_patterns")} == {
        k: got[k] for k in ("stored", "destinations", "kinds", "custom_patterns")
    }


def test_an_empty_body_means_all_off(api):
    body = put(api, {}).json()
    assert body["stored"] == {"mode": "off"} and body["kinds"] == ALL_KINDS and body["version"] == 1


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"stored": {"mode": "mask"}}, "stored.mode", "Unknown mode 'mask'"),
        ({"stored": "redact"}, "stored", "Must be an object"),
        ({"stored": {"mode": "redact", "extra": 1}}, "stored.extra", "Unknown field"),
        ({"kinds": ["EMAIL", "PASSPORT"]}, "kinds[1]", "Unknown kind 'PASSPORT'"),
        ({"kinds": "EMAIL"}, "kinds", "list of kind names"),
        ({"destinations": {"nope": {"mode": "redact"}}}, "destinations.nope", "No integration named 'nope'"),
        ({"destinations": {"langfuse-cloud": {"mode": "erase"}}}, "destinations.langfuse-cloud.mode", "Unknown mode"),
        ({"destinations": ["langfuse-cloud"]}, "destinations", "Must be an object"),
        ({"custom_patterns": [{"name": "ORDER", "regex": "(unclosed"}]}, "custom_patterns[0].regex", "Pattern 'ORDER'"),
        ({"custom_patterns": [{"name": "ORDER", "regex": r"(a)\1"}]}, "custom_patterns[0].regex", "backreferences"),
        ({"custom_patterns": [{"name": "ORDER", "regex": r"ORD(?=\d)"}]}, "custom_patterns[0].regex", "lookaround"),
        ({"custom_patterns": [{"name": "ORDER", "regex": "x*"}]}, "custom_patterns[0].regex", "empty string"),
        ({"custom_patterns": [{"name": "ORDER", "regex": "a" * 501}]}, "custom_patterns[0].regex", "longer than"),
        ({"custom_patterns": [{"name": "order", "regex": "x"}]}, "custom_patterns[0].name", "upper-case"),
        ({"custom_patterns": [{"name": "EMAIL", "regex": "x"}]}, "custom_patterns[0].name", "built-in kind"),
        (
            {"custom_patterns": [{"name": "A", "regex": "x"}, {"name": "A", "regex": "y"}]},
            "custom_patterns[1].name",
            "used twice",
        ),
        ({"custom_patterns": [{"name": "A", "regex": "x", "flags": "i"}]}, "custom_patterns[0]", '{"name", "regex"}'),
        ({"custom_patterns": [{"name": f"P{i}", "regex": "x"} for i in range(21)]}, "custom_patterns", "At most 20"),
        ({"stored": {"mode": "off"}, "colour": "blue"}, "colour", "Unknown field"),
    ],
)
def test_bad_input_is_a_problem_naming_the_field(api, team, integrations, body, field, words):
    problem = assert_problem(put(api, body), 400)
    assert field in problem["errors"], problem
    assert words in " ".join(problem["errors"][field])
    assert problem["detail"]
    assert not PiiPolicy.objects.filter(team=team).exists()


def test_a_catastrophic_pattern_is_harmless_under_re2(api, team):
    # (a+)+$ backtracks exponentially in most engines; RE2 matches it in linear time, so it may be stored.
    response = put(api, {"custom_patterns": [{"name": "AS", "regex": "(a+)+$"}]})
    assert response.status_code == 200, response.content
    compiled = selectors.compiled_policy(team.id, max_age=0)
    assert list(compiled.custom[0].finditer("a" * 50_000 + "!")) == []


def test_a_body_that_is_not_an_object_is_refused(api):
    problem = assert_problem(api.put(URL, [1, 2], format="json"), 400)
    assert "JSON object" in problem["detail"]


def test_a_development_key_may_read_but_not_write(dev_api):
    assert dev_api.get(URL).status_code == 200
    problem = assert_problem(put(dev_api, {}), 403)
    assert problem["required_scope"] == "pii:write"


def test_a_ci_key_may_not_read(ci_api):
    assert assert_problem(ci_api.get(URL), 403)["required_scope"] == "pii:read"


def test_without_a_key_it_is_401(anon_api):
    assert_problem(anon_api.get(URL), 401)
    assert_problem(anon_api.put(URL, {}, format="json"), 401)


def test_teams_never_see_each_others_policy(api, other_api, team, other_team, integrations):
    put(api, POLICY)
    assert other_api.get(URL).json()["stored"] == {"mode": "off"}
    # And the other team cannot name this team's integrations.
    problem = assert_problem(put(other_api, {"destinations": {"langfuse-cloud": {"mode": "redact"}}}), 400)
    assert "destinations.langfuse-cloud" in problem["errors"]
    assert selectors.compiled_policy(other_team.id).stored == "off"
    assert selectors.compiled_policy(team.id).stored == "detect"
