"""PUT/GET /api/v1/routing/rules/services/{service_name}: the rules one service owns (the SDK's
`routing_rules`), replaced without touching any other rule."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from accounts.models import AuditEvent
from config import invalidation
from routing import selectors
from routing.models import RoutingRule, RuleSet
from routing.router import route
from traces.records import TraceRecord

URL = "/api/v1/routing/rules/services/"
TEAM_RULES = {
    "rules": [
        {"name": "errors", "priority": 10, "conditions": {"error": True}, "destination": "lf-prod"},
        {"name": "the rest", "priority": 100, "destination": "helicone-main"},
    ]
}


def put(client, service, body, **headers):
    return client.put(URL + service, body, format="json", **headers)


@pytest.fixture
def team_rules(api, integrations):
    response = api.put("/api/v1/routing/rules", TEAM_RULES, format="json")
    assert response.status_code == 200, response.content
    return {r["name"]: (r["id"], r["priority"]) for r in response.json()["rules"]}


def names(service=None):
    rows = RoutingRule.objects.order_by("priority", "id")
    if service is not None:
        rows = rows.filter(service=service)
    return list(rows.values_list("name", flat=True))


def test_a_service_registers_its_rules_beside_the_teams(api, team_rules):
    body = {"rules": [{"name": "checkout errors", "priority": 5, "condition": "error", "destination": "audit-hook"}]}
    response = put(api, "checkout", body)
    assert response.status_code == 200, response.content
    answer = response.json()
    assert [(r["name"], r["service"], r["priority"]) for r in answer["rules"]] == [("checkout errors", "checkout", 5)]
    assert response["ETag"] == '"rules-v2"' and answer["version"] == 2
    # The team's rules are untouched: same ids, same priorities, owned by nobody.
    whole = api.get("/api/v1/routing/rules").json()
    assert [(r["name"], r["service"]) for r in whole["rules"]] == [
        ("checkout errors", "checkout"),
        ("errors", None),
        ("the rest", None),
    ]
    assert {r["name"]: (r["id"], r["priority"]) for r in whole["rules"] if r["service"] is None} == team_rules
    event = AuditEvent.objects.get(action="routing.rules.replace_service")
    assert (event.target, event.data["service"]) == ("v2", "checkout")


def test_a_second_put_replaces_only_that_services_rules(api, team_rules):
    put(
        api, "checkout", {"rules": [{"name": "c1", "destination": "lf-prod"}, {"name": "c2", "destination": "lf-prod"}]}
    )
    put(api, "search", {"rules": [{"name": "s1", "destination": "lf-prod"}]})
    kept = RoutingRule.objects.get(name="c2").id
    response = put(
        api, "checkout", [{"name": "c2", "destination": "audit-hook"}, {"name": "c3", "destination": "lf-prod"}]
    )
    assert response.status_code == 200, response.content
    assert names("checkout") == ["c2", "c3"] and names("search") == ["s1"] and names("") == ["errors", "the rest"]
    assert RoutingRule.objects.get(name="c2").id == kept  # matched by name: same row
    assert RoutingRule.objects.get(name="c2").destinations[0]["name"] == "audit-hook"
    # An empty list removes the service's rules, and only those.
    assert put(api, "checkout", {"rules": []}).status_code == 200
    assert names("checkout") == [] and names("search") == ["s1"] and len(names("")) == 2


def test_get_lists_one_services_rules(api, team_rules):
    put(api, "checkout", {"rules": [{"name": "c1", "destination": "lf-prod"}]})
    answer = api.get(URL + "checkout")
    assert answer.status_code == 200 and answer["ETag"] == '"rules-v2"'
    assert [r["name"] for r in answer.json()["rules"]] == ["c1"]
    assert api.get(URL + "nobody").json()["rules"] == []


def test_service_names_with_slashes_and_spaces_work(api, integrations):
    assert put(api, "shop%2Fcheckout%20api", {"rules": [{"name": "x", "destination": "lf-prod"}]}).status_code == 200
    assert RoutingRule.objects.get(name="x").service == "shop/checkout api"


def test_a_name_held_by_another_owner_is_a_400(api, team_rules):
    put(api, "search", {"rules": [{"name": "s1", "destination": "lf-prod"}]})
    before = names()
    for taken, owner in (("errors", "the team's rule set"), ("s1", "service 'search'")):
        response = put(api, "checkout", {"rules": [{"name": taken, "destination": "lf-prod"}]})
        assert response.status_code == 400
        assert owner in response.json()["errors"]["rules[0].name"][0]
    assert names() == before


def test_an_id_of_another_owners_rule_is_a_400(api, team_rules):
    rule_id = team_rules["errors"][0]
    response = put(api, "checkout", {"rules": [{"id": rule_id, "name": "mine", "destination": "lf-prod"}]})
    assert response.status_code == 400
    assert response.json()["errors"]["rules[0].id"] == [
        f"No rule {rule_id} of service 'checkout'; omit 'id' for a new rule."
    ]


@pytest.mark.parametrize("body", [{"rules": [{"name": "a", "destination": "nowhere"}]}, {"rules": "x"}, "x", 5])
def test_the_same_validation_as_the_rule_set(api, integrations, body):
    response = put(api, "checkout", body)
    assert response.status_code == 400 and response["Content-Type"] == "application/problem+json"
    assert response.json()["type"] == "https://tracerelay.dev/problems/validation"
    assert not RoutingRule.objects.exists() and not RuleSet.objects.exists()


@pytest.mark.parametrize("service", ["%20", "a%00b", "x" * 201])
def test_a_bad_service_name_is_a_400(api, integrations, service):
    response = put(api, service, {"rules": []})
    assert response.status_code == 400 and response.json()["parameter"] == "service_name"


def test_the_longest_service_name_is_stored(api, integrations):
    # Found by schemathesis: a 200-character name once overflowed the audit event's target (a 500).
    response = put(api, "s" * 200, {"rules": [{"name": "x", "destination": "lf-prod"}]})
    assert response.status_code == 200, response.content
    assert RoutingRule.objects.get(name="x").service == "s" * 200


def test_only_production_keys_may_write_and_reading_is_as_for_the_rule_set(dev_api, ci_api, api, integrations):
    for client in (dev_api, ci_api):
        response = put(client, "checkout", {"rules": [{"name": "x", "destination": "lf-prod"}]})
        assert response.status_code == 403
        assert response.json()["required_scope"] == "rules:write"
        assert client.get(URL + "checkout").status_code == client.get("/api/v1/routing/rules").status_code
    assert not RoutingRule.objects.exists()


def test_another_teams_rules_are_never_touched(api, other_api, integrations, other_team):
    put(api, "checkout", {"rules": [{"name": "x", "destination": "lf-prod"}]})
    assert put(other_api, "checkout", {"rules": []}).status_code == 200
    assert names("checkout") == ["x"]
    assert other_api.get(URL + "checkout").json()["rules"] == []


def test_the_full_put_keeps_the_owner_of_rules_sent_back(api, team_rules):
    put(api, "checkout", {"rules": [{"name": "c1", "destination": "lf-prod"}]})
    whole = api.get("/api/v1/routing/rules").json()
    assert api.put("/api/v1/routing/rules", whole, format="json").status_code == 200
    assert names("checkout") == ["c1"]


def test_routing_follows_at_once_and_every_process_is_told(
    api, team_rules, team, monkeypatch, django_capture_on_commit_callbacks
):
    published = []
    monkeypatch.setattr(invalidation, "_broadcast", lambda topic, key: published.append((topic, key)))
    context = TraceRecord(trace_id="trc_1", team_id=team.id, model="gpt-4o").condition_context()
    assert route(context, selectors.compiled_routing(team.id)).destinations == ["helicone-main"]
    with django_capture_on_commit_callbacks(execute=True):
        response = put(api, "checkout", {"rules": [{"name": "first", "priority": 1, "destination": "audit-hook"}]})
    assert response.status_code == 200
    assert (invalidation.ROUTING, str(team.id)) in published
    assert cache.get(selectors.versions_cache_key(team.id)) == [2, 0]
    assert route(context, selectors.compiled_routing(team.id)).destinations == ["audit-hook", "helicone-main"]
