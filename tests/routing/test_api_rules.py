"""GET/PUT /api/v1/routing/rules and GET /api/v1/routing/rules/{id}."""

from __future__ import annotations

import pytest

from accounts.models import AuditEvent
from routing import selectors
from routing.models import RoutingRule, RuleSet
from routing.router import route
from tests.factories import IntegrationFactory, RoutingRuleFactory
from traces.records import TraceRecord

URL = "/api/v1/routing/rules"
PROBLEM = "application/problem+json"


def put(client, body, **headers):
    return client.put(URL, body, format="json", **headers)


def assert_problem(response, status):
    assert response.status_code == status, response.content
    assert response["Content-Type"] == PROBLEM
    body = response.json()
    assert body["status"] == status and body["type"].startswith("https://") and body["detail"]
    return body


RULES = {
    "rules": [
        {
            "name": "errors",
            "description": "all errors to langfuse, then the hook",
            "priority": 10,
            "conditions": {"error": True},
            "destinations": [{"name": "langfuse", "fallback": ["audit-hook"]}, "helicone-main"],
            "stop": True,
        },
        {
            "name": "expensive",
            "priority": 20,
            "condition": 'model.startsWith("gpt-4") && cost > 0.05',
            "destination": "lf-prod",
            "tags": ["expensive"],
        },
        {
            "name": "sampled",
            "priority": 30,
            "destinations": [{"platform": "helicone", "sample_rate": 0.1, "tags": ["sampled"]}],
            "sample_rate": 0.5,
        },
    ]
}


@pytest.fixture
def stored(api, integrations):
    response = put(api, RULES)
    assert response.status_code == 200, response.content
    return response


# --- Round trip ---------------------------------------------------------------------------------


def test_it_stores_and_returns_the_rule_set(stored, api):
    body = stored.json()
    assert body["version"] == 1
    assert body["updated_by"].startswith("key:tr_prod_")
    assert stored["ETag"] == '"rules-v1"'
    names = [r["name"] for r in body["rules"]]
    assert names == ["errors", "expensive", "sampled"]
    errors, expensive, sampled = body["rules"]
    assert errors["conditions"] == {"error": True} and errors["condition"] is None
    assert errors["destinations"] == [
        {
            "name": "langfuse",
            "sample_rate": 1.0,
            "tags": [],
            "fallback": [{"name": "audit-hook", "sample_rate": 1.0, "tags": [], "fallback": []}],
        },
        {"name": "helicone-main", "sample_rate": 1.0, "tags": [], "fallback": []},
    ]
    assert errors["stop"] is True and errors["enabled"] is True
    assert expensive["condition"] == 'model.startsWith("gpt-4") && cost > 0.05'
    assert expensive["conditions"] is None
    assert expensive["destinations"] == [{"name": "lf-prod", "sample_rate": 1.0, "tags": [], "fallback": []}]
    assert expensive["tags"] == ["expensive"]
    assert sampled["destinations"][0] == {"name": "helicone", "sample_rate": 0.1, "tags": ["sampled"], "fallback": []}
    assert sampled["sample_rate"] == 0.5

    got = api.get(URL)
    assert got.status_code == 200
    assert got["ETag"] == '"rules-v1"'
    assert got.json() == body


def test_a_get_before_any_put_is_an_empty_version_zero(api):
    response = api.get(URL)
    assert response.status_code == 200
    assert response.json() == {"version": 0, "updated_at": None, "updated_by": "", "rules": []}
    assert response["ETag"] == '"rules-v0"'


def test_a_bare_list_is_a_rule_set(api, integrations):
    response = put(api, [{"name": "all", "destination": "langfuse"}])
    assert response.status_code == 200, response.content
    assert [r["name"] for r in response.json()["rules"]] == ["all"]


def test_what_a_get_returns_can_be_put_back_unchanged(stored, api):
    body = api.get(URL).json()
    ids = [r["id"] for r in body["rules"]]
    again = put(api, body, HTTP_IF_MATCH=api.get(URL)["ETag"])
    assert again.status_code == 200, again.content
    assert again.json()["version"] == 2
    assert [r["id"] for r in again.json()["rules"]] == ids
    assert [r["updated_at"] for r in again.json()["rules"]] == [r["updated_at"] for r in body["rules"]]


def test_the_stored_rules_drive_routing(stored, team):
    ctx = TraceRecord(trace_id="t", team_id=team.id, model="gpt-4o", status="error").condition_context()
    result = route(ctx, selectors.compiled_routing(team.id))
    assert result.destinations == ["langfuse", "helicone-main"]  # the errors rule stops


def test_priority_defaults_to_the_position_in_the_list(api, integrations):
    response = put(api, {"rules": [{"name": "a", "destination": "langfuse"}, {"name": "b", "destination": "webhook"}]})
    assert [r["priority"] for r in response.json()["rules"]] == [1, 2]


def test_rules_come_back_in_evaluation_order(api, integrations):
    response = put(
        api,
        [
            {"name": "late", "priority": 50, "destination": "langfuse"},
            {"name": "early", "priority": -3, "destination": "langfuse"},
        ],
    )
    assert [r["name"] for r in response.json()["rules"]] == ["early", "late"]


# --- Replace semantics ------------------------------------------------------------------------


def test_a_put_replaces_the_whole_set(stored, api):
    response = put(api, {"rules": [{"name": "only", "destination": "langfuse"}]})
    assert [r["name"] for r in response.json()["rules"]] == ["only"]
    assert list(RoutingRule.objects.values_list("name", flat=True)) == ["only"]


def test_an_empty_set_deletes_every_rule(stored, api):
    response = put(api, {"rules": []})
    assert response.status_code == 200
    assert response.json()["rules"] == [] and response.json()["version"] == 2
    assert not RoutingRule.objects.exists()


def test_rules_keep_their_id_by_id_or_by_name(stored, api):
    before = {r["name"]: r["id"] for r in stored.json()["rules"]}
    response = put(
        api,
        [
            {"id": before["errors"], "name": "errors renamed", "destination": "langfuse"},
            {"name": "expensive", "destination": "langfuse"},
            {"name": "brand new", "destination": "langfuse"},
        ],
    )
    after = {r["name"]: r["id"] for r in response.json()["rules"]}
    assert after["errors renamed"] == before["errors"]
    assert after["expensive"] == before["expensive"]
    assert after["brand new"] not in before.values()
    assert before["sampled"] not in after.values()


def test_two_rules_can_swap_names(stored, api):
    before = {r["name"]: r["id"] for r in stored.json()["rules"]}
    response = put(
        api,
        [
            {"id": before["errors"], "name": "expensive", "destination": "langfuse"},
            {"id": before["expensive"], "name": "errors", "destination": "langfuse"},
        ],
    )
    assert response.status_code == 200, response.content
    after = {r["name"]: r["id"] for r in response.json()["rules"]}
    assert after == {"expensive": before["errors"], "errors": before["expensive"]}


def test_one_bad_rule_changes_nothing(stored, api):
    bad = {
        "rules": [
            {"name": "fine", "destination": "langfuse"},
            {"name": "bad", "condition": "cost >", "destination": "langfuse"},
        ]
    }
    body = assert_problem(put(api, bad), 400)
    assert body["errors"] == {"rules[1].condition": ["Syntax error at column 7: the expression ends too early"]}
    assert body["detail"] == "Rule 'bad' (rules[1].condition): Syntax error at column 7: the expression ends too early"
    assert api.get(URL).json() == stored.json()
    assert RuleSet.objects.get().version == 1


def test_every_put_moves_the_version_on(api, integrations):
    versions = [put(api, [{"name": "a", "destination": "langfuse"}]).json()["version"] for _ in range(3)]
    assert versions == [1, 2, 3]


# --- If-Match ---------------------------------------------------------------------------------


def test_if_match_with_the_current_etag_stores(stored, api):
    response = put(api, [{"name": "a", "destination": "langfuse"}], HTTP_IF_MATCH='"rules-v1"')
    assert response.status_code == 200
    assert response["ETag"] == '"rules-v2"'


@pytest.mark.parametrize("header", ['W/"rules-v1"', "rules-v1", '"1"', '"rules-v0", "rules-v1"', "*"])
def test_if_match_accepts_the_usual_spellings(stored, api, header):
    assert put(api, [{"name": "a", "destination": "langfuse"}], HTTP_IF_MATCH=header).status_code == 200


@pytest.mark.parametrize("header", ['"rules-v0"', '"rules-v7"', '"sampling-v1"', "garbage", '""'])
def test_a_stale_if_match_is_a_412_and_changes_nothing(stored, api, header):
    response = put(api, [{"name": "a", "destination": "langfuse"}], HTTP_IF_MATCH=header)
    body = assert_problem(response, 412)
    assert body["current_version"] == 1
    assert response["ETag"] == '"rules-v1"'
    assert "version 1" in body["detail"]
    assert RuleSet.objects.get().version == 1


def test_the_second_of_two_edits_from_the_same_get_is_refused(stored, api):
    etag = api.get(URL)["ETag"]
    assert put(api, [{"name": "mine", "destination": "langfuse"}], HTTP_IF_MATCH=etag).status_code == 200
    assert_problem(put(api, [{"name": "theirs", "destination": "langfuse"}], HTTP_IF_MATCH=etag), 412)
    assert list(RoutingRule.objects.values_list("name", flat=True)) == ["mine"]


def test_a_bad_body_is_a_400_even_with_a_stale_if_match(stored, api):
    # The body is judged first (issue 7 item 8): tests/routing/test_if_match.py walks every operation.
    assert_problem(put(api, {"rules": "nope"}, HTTP_IF_MATCH='"rules-v0"'), 400)


# --- Validation --------------------------------------------------------------------------------

BAD_RULES = [
    ({"rules": "nope"}, "rules", "list"),
    ("just a string", "", 'The body must be {"rules": [...]}'),
    ({"rules": [], "extra": 1}, "extra", "Unknown field of the rule set"),
    ({"rules": ["x"]}, "rules[0]", "dictionary"),
    ({"rules": [{"destination": "langfuse"}]}, "rules[0].name", "required"),
    ({"rules": [{"name": "", "destination": "langfuse"}]}, "rules[0].name", "blank"),
    ({"rules": [{"name": 5, "destination": "langfuse"}]}, "rules[0].name", "string"),
    ({"rules": [{"name": "a"}]}, "rules[0].destinations", "needs 'destination' or 'destinations'"),
    ({"rules": [{"name": "a", "destination": "langfuse", "destinations": []}]}, "rules[0].destination", "not both"),
    ({"rules": [{"name": "a", "destination": "nope"}]}, "rules[0].destination", "Unknown destination 'nope'"),
    ({"rules": [{"name": "a", "destination": "langfus"}]}, "rules[0].destination", "Did you mean 'langfuse'?"),
    ({"rules": [{"name": "a", "destination": "datadog"}]}, "rules[0].destination", "no datadog integration"),
    ({"rules": [{"name": "a", "destination": 3}]}, "rules[0].destination", "a name (string) or an object"),
    ({"rules": [{"name": "a", "destinations": "langfuse"}]}, "rules[0].destinations", "list"),
    (
        {"rules": [{"name": "a", "destinations": [{"sample_rate": 1}]}]},
        "rules[0].destinations[0].platform",
        "Name the destination",
    ),
    (
        {"rules": [{"name": "a", "destinations": [{"name": "langfuse", "color": 1}]}]},
        "rules[0].destinations[0].color",
        "Unknown field",
    ),
    (
        {"rules": [{"name": "a", "destinations": [{"name": "langfuse", "sample_rate": 1.5}]}]},
        "rules[0].destinations[0].sample_rate",
        "from 0 to 1",
    ),
    (
        {"rules": [{"name": "a", "destinations": [{"name": "langfuse", "sample_rate": -0.1}]}]},
        "rules[0].destinations[0].sample_rate",
        "from 0 to 1",
    ),
    (
        {"rules": [{"name": "a", "destinations": [{"name": "langfuse", "sample_rate": "0.5"}]}]},
        "rules[0].destinations[0].sample_rate",
        "from 0 to 1",
    ),
    (
        {"rules": [{"name": "a", "destinations": [{"name": "langfuse", "tags": "x"}]}]},
        "rules[0].destinations[0].tags",
        "list",
    ),
    (
        {"rules": [{"name": "a", "destinations": [{"name": "langfuse", "tags": [""]}]}]},
        "rules[0].destinations[0].tags",
        "non-empty",
    ),
    (
        {"rules": [{"name": "a", "destinations": [{"name": "langfuse", "url": "https://x.example"}]}]},
        "rules[0].destinations[0].url",
        "Only webhook",
    ),
    (
        {"rules": [{"name": "a", "destinations": ["langfuse", "lf-prod", "langfuse"]}]},
        "rules[0].destinations[2]",
        "already a destination",
    ),
    (
        {"rules": [{"name": "a", "destinations": [{"name": "lf-prod", "platform": "helicone"}]}]},
        "rules[0].destinations[0].platform",
        "is a langfuse integration",
    ),
    (
        {"rules": [{"name": "a", "destinations": [{"name": "langfuse", "fallback": "audit-hook"}]}]},
        "rules[0].destinations[0].fallback",
        "list",
    ),
    (
        {"rules": [{"name": "a", "destinations": [{"name": "langfuse", "fallback": ["nope"]}]}]},
        "rules[0].destinations[0].fallback[0]",
        "Unknown destination 'nope'",
    ),
    (
        {
            "rules": [
                {
                    "name": "a",
                    "destinations": [{"name": "langfuse", "fallback": [{"name": "audit-hook", "sample_rate": 0.5}]}],
                }
            ]
        },
        "rules[0].destinations[0].fallback[0].sample_rate",
        "not sampled",
    ),
    (
        {"rules": [{"name": "a", "destinations": [{"name": "langfuse", "fallback": ["langfuse"]}]}]},
        "rules[0].destinations[0].fallback[0]",
        "itself",
    ),
    (
        {"rules": [{"name": "a", "destination": "langfuse", "sample_rate": 2}]},
        "rules[0].sample_rate",
        "less than or equal to 1",
    ),
    (
        {"rules": [{"name": "a", "destination": "langfuse", "sample_rate": True}]},
        "rules[0].sample_rate",
        "valid number",
    ),
    ({"rules": [{"name": "a", "destination": "langfuse", "priority": "1"}]}, "rules[0].priority", "valid integer"),
    ({"rules": [{"name": "a", "destination": "langfuse", "priority": 1.5}]}, "rules[0].priority", "valid integer"),
    (
        {"rules": [{"name": "a", "destination": "langfuse", "priority": 10**10}]},
        "rules[0].priority",
        "less than or equal",
    ),
    ({"rules": [{"name": "a", "destination": "langfuse", "stop": "yes"}]}, "rules[0].stop", "valid boolean"),
    ({"rules": [{"name": "a", "destination": "langfuse", "enabled": 1}]}, "rules[0].enabled", "valid boolean"),
    ({"rules": [{"name": "a", "destination": "langfuse", "tags": "x"}]}, "rules[0].tags", "list"),
    (
        {"rules": [{"name": "a", "destination": "langfuse", "sample-rate": 0.5}]},
        "rules[0].sample-rate",
        "Did you mean 'sample_rate'?",
    ),
    (
        {"rules": [{"name": "a", "destination": "langfuse", "condition": "x", "conditions": {"error": True}}]},
        "rules[0].condition",
        "not both",
    ),
    (
        {"rules": [{"name": "a", "destination": "langfuse", "condition": 'modle == "x"'}]},
        "rules[0].condition",
        "Unknown name 'modle' at column 1",
    ),
    (
        {"rules": [{"name": "a", "destination": "langfuse", "conditions": {"cost": "lots"}}]},
        "rules[0].conditions.cost",
        "cannot read",
    ),
    (
        {"rules": [{"name": "a", "destination": "langfuse", "conditions": {"colour": "red"}}]},
        "rules[0].conditions.colour",
        "Unknown condition key",
    ),
    (
        {"rules": [{"name": "a", "destination": "langfuse", "conditions": 'model == "x'}]},
        "rules[0].conditions",
        "Syntax error",
    ),
    (
        {"rules": [{"name": "a", "destination": "langfuse", "condition": 5}]},
        "rules[0].condition",
        "object of keys or a CEL",
    ),
    (
        {"rules": [{"name": "a", "destination": "langfuse"}, {"name": "a", "destination": "langfuse"}]},
        "rules[1].name",
        "names are unique",
    ),
    ({"rules": [{"id": 999999, "name": "a", "destination": "langfuse"}]}, "rules[0].id", "No rule 999999 in this team"),
    ({"rules": [{"name": "a\x00", "destination": "langfuse"}]}, "rules[0].name", "NUL"),
    (
        {"rules": [{"name": "a", "destination": "langfuse", "conditions": {"metadata.k": "\x00"}}]},
        "rules[0].conditions.metadata.k",
        "NUL",
    ),
    (
        [{"name": "a", "destinations": [{"name": "langfuse", "tags": ["\x00"]}]}],
        "rules[0].destinations[0].tags[0]",
        "NUL",
    ),
]


@pytest.mark.parametrize(("body", "path", "fragment"), BAD_RULES)
def test_bad_rules_are_a_400_naming_the_field(api, integrations, body, path, fragment):
    problem = assert_problem(put(api, body), 400)
    assert path in problem["errors"], problem["errors"]
    assert any(fragment in message for message in problem["errors"][path]), problem["errors"][path]
    assert not RoutingRule.objects.exists()


def test_every_problem_in_a_set_is_reported_at_once(api, integrations):
    body = {
        "rules": [
            {"name": "a", "condition": "cost >", "destination": "nope"},
            {"name": "b", "destination": "langfuse"},
            {"name": "c", "destinations": [{"name": "langfuse", "sample_rate": 3}]},
        ]
    }
    problem = assert_problem(put(api, body), 400)
    assert set(problem["errors"]) == {
        "rules[0].condition",
        "rules[0].destination",
        "rules[2].destinations[0].sample_rate",
    }


def test_a_rule_cannot_take_another_teams_rule_id(api, integrations, other_team):
    theirs = RoutingRuleFactory(team=other_team, name="theirs")
    problem = assert_problem(put(api, [{"id": theirs.id, "name": "mine", "destination": "langfuse"}]), 400)
    assert f"No rule {theirs.id} in this team" in problem["errors"]["rules[0].id"][0]
    theirs.refresh_from_db()
    assert theirs.name == "theirs"


def test_too_many_rules_is_a_400(api, integrations):
    body = [{"name": f"r{i}", "destination": "langfuse"} for i in range(201)]
    problem = assert_problem(put(api, body), 400)
    assert "rules" in problem["errors"]


def test_malformed_json_is_a_problem(api):
    response = api.put(URL, data="{not json", content_type="application/json")
    assert_problem(response, 400)


def test_a_non_json_body_is_a_415_problem(api):
    response = api.put(URL, data="rules", content_type="text/plain")
    assert_problem(response, 415)


# --- Destinations ------------------------------------------------------------------------------


def test_destinations_resolve_to_integration_names_or_canonical_platforms(api, integrations, team):
    IntegrationFactory(team=team, name="weave-main", platform="weave", config={})
    response = put(
        api,
        [
            {
                "name": "all",
                "destinations": [
                    "lf-prod",
                    "Langfuse",
                    "wandb",
                    {"platform": "custom-webhook", "url": "https://hooks.example.com/in"},
                    {"name": "helicone-main", "platform": "helicone"},
                ],
            }
        ],
    )
    assert response.status_code == 200, response.content
    names = [d["name"] for d in response.json()["rules"][0]["destinations"]]
    assert names == ["lf-prod", "langfuse", "weave", "webhook", "helicone-main"]
    assert response.json()["rules"][0]["destinations"][3]["url"] == "https://hooks.example.com/in"


def test_an_adhoc_webhook_needs_a_url_unless_the_team_has_a_webhook(api, team):
    IntegrationFactory(team=team, name="lf", platform="langfuse", config={})
    problem = assert_problem(put(api, [{"name": "a", "destination": "webhook"}]), 400)
    assert "needs a url" in problem["errors"]["rules[0].destination"][0]
    ok = put(api, [{"name": "a", "destinations": [{"name": "custom-webhook", "url": "https://h.example/x"}]}])
    assert ok.status_code == 200, ok.content
    IntegrationFactory(team=team, name="hook", platform="webhook")
    assert put(api, [{"name": "a", "destination": "webhook"}]).status_code == 200


@pytest.mark.parametrize(
    "url",
    ["ftp://h.example/x", "http://169.254.169.254/latest/meta-data", "https://user:pw@h.example/", "not a url"],
)
def test_unsafe_webhook_urls_are_refused(api, integrations, url):
    body = [{"name": "a", "destinations": [{"name": "webhook", "url": url}]}]
    problem = assert_problem(put(api, body), 400)
    assert "This URL may not be used" in problem["errors"]["rules[0].destinations[0].url"][0]


def test_another_teams_integration_is_not_a_destination(api, integrations, other_team):
    IntegrationFactory(team=other_team, name="their-datadog", platform="datadog", config={})
    problem = assert_problem(put(api, [{"name": "a", "destination": "their-datadog"}]), 400)
    assert "Unknown destination 'their-datadog'" in problem["errors"]["rules[0].destination"][0]


def test_fallbacks_nest_at_most_three_deep(api, integrations):
    def chain(depth):
        dest = {"name": "langfuse"}
        for _ in range(depth):
            dest = {"name": "helicone-main" if dest["name"] == "langfuse" else "langfuse", "fallback": [dest]}
        return dest

    assert put(api, [{"name": "a", "destination": chain(3)}]).status_code == 200
    problem = assert_problem(put(api, [{"name": "a", "destination": chain(4)}]), 400)
    assert any("nest at most 3" in m for ms in problem["errors"].values() for m in ms)


# --- Scopes, teams, audit ----------------------------------------------------------------------


def test_a_development_key_may_read_but_not_write(stored, dev_api):
    assert dev_api.get(URL).status_code == 200
    problem = assert_problem(put(dev_api, [{"name": "x", "destination": "langfuse"}]), 403)
    assert problem["required_scope"] == "rules:write"
    assert RuleSet.objects.get().version == 1


def test_a_ci_key_may_not_read_rules(stored, ci_api):
    assert_problem(ci_api.get(URL), 403)
    assert_problem(put(ci_api, []), 403)


def test_no_key_is_a_401(anon_api):
    assert_problem(anon_api.get(URL), 401)
    assert_problem(put(anon_api, []), 401)


def test_teams_do_not_see_each_others_rules(stored, other_api):
    assert other_api.get(URL).json()["rules"] == []
    assert put(other_api, []).status_code == 200
    assert RoutingRule.objects.count() == 3


def test_a_put_writes_an_audit_event(stored, team, prod_key):
    event = AuditEvent.objects.get(action="routing.rules.replace")
    assert event.team == team
    assert event.actor == f"key:{prod_key.prefix}"
    assert event.target == "v1"
    assert [r["name"] for r in event.data["rules"]] == ["errors", "expensive", "sampled"]


def test_a_refused_put_writes_no_audit_event(api, integrations):
    put(api, [{"name": "a", "destination": "nope"}])
    assert not AuditEvent.objects.filter(action="routing.rules.replace").exists()


# --- One rule --------------------------------------------------------------------------------


def test_it_returns_one_rule(stored, api):
    rule = stored.json()["rules"][1]
    response = api.get(f"{URL}/{rule['id']}")
    assert response.status_code == 200
    assert response.json() == rule
    assert response["ETag"] == '"rules-v1"'


def test_another_teams_rule_is_a_404(api, other_team):
    theirs = RoutingRuleFactory(team=other_team)
    body = assert_problem(api.get(f"{URL}/{theirs.id}"), 404)
    assert str(theirs.id) in body["detail"]


def test_an_unknown_rule_is_a_404(api):
    assert_problem(api.get(f"{URL}/424242"), 404)
    assert_problem(api.get(f"{URL}/abc"), 404)


def test_a_development_key_may_read_one_rule(stored, dev_api, ci_api):
    rule_id = stored.json()["rules"][0]["id"]
    assert dev_api.get(f"{URL}/{rule_id}").status_code == 200
    assert_problem(ci_api.get(f"{URL}/{rule_id}"), 403)
