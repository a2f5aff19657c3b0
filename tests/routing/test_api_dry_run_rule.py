"""POST /api/v1/routing/test with ``rule``: one new or edited rule tried among the saved ones (in
place of the stored rule its ``id`` names, or added), validated as saving it would be, stored nowhere."""

from __future__ import annotations

import pytest

from routing.models import RoutingRule, RuleSet

URL = "/api/v1/routing/test"
RULES_URL = "/api/v1/routing/rules"
PROBLEM = "application/problem+json"
TRACE = {"id": "checkout-42", "model": "gpt-4o", "status": "error", "metadata": {"env": "prod"}}


@pytest.fixture
def rules(api, integrations):
    body = {
        "rules": [
            {"name": "errors", "priority": 10, "conditions": {"error": True}, "destination": "lf-prod"},
            {"name": "prod", "priority": 20, "condition": 'metadata.env == "prod"', "destination": "audit-hook"},
        ]
    }
    response = api.put(RULES_URL, body, format="json")
    assert response.status_code == 200, response.content
    return {r["name"]: r for r in response.json()["rules"]}


def snapshot():
    return list(RoutingRule.objects.values_list("id", "name", "priority", "condition", "conditions", "destinations"))


def _evaluated(body):
    return [(e["rule"], e["priority"], e["matched"]) for e in body["results"][0]["evaluations"]]


def test_an_edited_rule_is_tried_in_place_of_the_stored_one(api, rules):
    before = snapshot()
    edited = {"id": rules["errors"]["id"], "name": "errors", "condition": "!error", "destination": "lf-prod"}
    response = api.post(URL, {"trace": TRACE, "rule": edited}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["rules_version"] is None and body["sampling_version"] == 0
    assert _evaluated(body) == [("errors", 10, False), ("prod", 20, True)]  # its stored priority kept
    assert body["results"][0]["destinations"] == ["audit-hook"]
    assert snapshot() == before and RuleSet.objects.get().version == 1


def test_a_rule_without_an_id_is_added_after_the_last(api, rules):
    new = {"name": "gpt-4o", "conditions": {"model": "gpt-4o"}, "destination": "helicone-main"}
    response = api.post(URL, {"traces": [TRACE, {**TRACE, "id": "b", "model": "o3"}], "rule": new}, format="json")
    assert response.status_code == 200, response.content
    first, second = response.json()["results"]
    assert _evaluated({"results": [first]}) == [("errors", 10, True), ("prod", 20, True), ("gpt-4o", 30, True)]
    assert first["destinations"] == ["lf-prod", "audit-hook", "helicone-main"]
    assert "helicone-main" not in second["destinations"]
    assert not RoutingRule.objects.filter(name="gpt-4o").exists()


def test_a_bad_rule_is_a_400_naming_its_fields(api, rules):
    bad = {"name": "prod", "condition": "model ==", "destinations": [{"name": "nowhere"}]}
    response = api.post(URL, {"trace": TRACE, "rule": bad}, format="json")
    assert response.status_code == 400 and response["Content-Type"] == PROBLEM
    body = response.json()
    assert body["type"].endswith("/validation") and body["title"] == "Invalid routing rule"
    assert set(body["errors"]) >= {"rule.condition", "rule.destinations[0].name"}
    assert body["detail"].startswith("rule.")
    # A name another stored rule has: as saving it would say (leave the id out: a new rule).
    response = api.post(URL, {"trace": TRACE, "rule": {"name": "prod", "destination": "lf-prod"}}, format="json")
    assert response.status_code == 400 and "rule.name" in response.json()["errors"]


@pytest.mark.parametrize(
    "rule, path",
    [
        ({"id": 999999, "name": "x", "destination": "lf-prod"}, "rule.id"),
        ({"id": "twelve", "name": "x", "destination": "lf-prod"}, "rule.id"),
        ("errors", "rule"),
        ([{"name": "x"}], "rule"),
    ],
)
def test_a_rule_that_is_not_one_is_refused(api, rules, rule, path):
    response = api.post(URL, {"trace": TRACE, "rule": rule}, format="json")
    assert response.status_code == 400 and response["Content-Type"] == PROBLEM
    assert path in response.json()["errors"], response.json()


def test_rule_and_rules_together_are_refused(api, rules):
    body = {"trace": TRACE, "rule": {"name": "x", "destination": "lf-prod"}, "rules": []}
    response = api.post(URL, body, format="json")
    assert response.status_code == 400 and "rule" in response.json()["errors"]


def test_a_rule_beside_a_bare_trace_is_refused_not_ignored(api, rules):
    response = api.post(URL, {**TRACE, "rule": {"name": "x", "destination": "lf-prod"}}, format="json")
    assert response.status_code == 400 and "rule" in response.json()["errors"]


def test_another_teams_rule_id_is_not_found(api, rules, other_api):
    edited = {"id": rules["errors"]["id"], "name": "errors", "destination": "webhook"}
    response = other_api.post(URL, {"trace": TRACE, "rule": edited}, format="json")
    assert response.status_code == 400 and "rule.id" in response.json()["errors"]


def test_the_schema_documents_rule(api):
    schema = api.get("/api/v1/schema/?format=json").json()
    body = schema["paths"]["/api/v1/routing/test"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    wrapper = body["oneOf"][0]
    assert wrapper["properties"]["rule"]["allOf"] == [{"$ref": "#/components/schemas/RoutingRuleRequest"}]
    assert {"required": ["rule"]} in body["oneOf"][1]["not"]["anyOf"]
