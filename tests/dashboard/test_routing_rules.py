"""/routing: every role reads the rules, admins and owners create, edit, reorder, enable/disable and
delete them through the API's serializer and service; bad input is shown next to its field; a page
opened before someone else saved says so and keeps what was typed; another team's rule is a 404."""

from __future__ import annotations

import pytest

from accounts.models import AuditEvent
from routing import selectors
from routing.models import RoutingRule, RuleSet

from ..factories import IntegrationFactory, TeamFactory
from .conftest import ROLES

pytestmark = pytest.mark.django_db


@pytest.fixture
def integrations(team):
    return {
        "langfuse": IntegrationFactory(team=team, name="lf-prod", platform="langfuse", config={}),
        "webhook": IntegrationFactory(team=team, name="audit-hook", platform="webhook"),
    }


def _store(team, rules):
    """Rules through the same service the pages use; returns the rule-set version."""
    from routing import edits

    version = selectors.rule_set(team.pk).version
    for rule in rules:
        header, _ = edits.rule_save(team_id=team.pk, rule=rule, rule_id=None, version=version, actor="test")
        version = header.version
    return version


@pytest.fixture
def rules(team, integrations):
    _store(
        team,
        [
            {"name": "errors", "priority": 10, "conditions": {"error": True}, "destinations": ["lf-prod"]},
            {"name": "expensive", "priority": 20, "condition": "cost > 0.05", "destinations": ["audit-hook"]},
            {"name": "sampled", "priority": 30, "destinations": [{"name": "lf-prod", "sample_rate": 0.1}]},
        ],
    )
    return {r.name: r for r in RoutingRule.objects.filter(team=team)}


def _version(team) -> int:
    return selectors.rule_set(team.pk).version


def _order(team) -> list[str]:
    return [r.name for r in selectors.routing_rules(team.pk)]


NEW_RULE = {
    "name": "gpt-4 costs",
    "description": "Expensive GPT-4 calls",
    "priority": "",
    "enabled": "on",
    "sample_rate": "1",
    "tags": "cost-review",
    "mode": "builder",
    "match": "all",
    "cond-0-field": "model",
    "cond-0-op": "prefix",
    "cond-0-value": "gpt-4",
    "cond-1-field": "cost",
    "cond-1-op": "gt",
    "cond-1-value": "0.05",
    "cond-2-field": "",
    "dest-0-name": "lf-prod",
    "dest-0-sample_rate": "0.5",
    "dest-0-tags": "expensive",
    "dest-0-fallback-0": "audit-hook",
    "dest-0-fallback-1": "",
    "dest-1-name": "",
}


# --- Reading ---------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_every_role_sees_the_rules_in_order(as_role, role, rules):
    response = as_role(role).get("/routing")
    assert response.status_code == 200
    text = response.content.decode()
    assert text.index("errors") < text.index("expensive") < text.index("sampled")
    assert "cost &gt; 0.05" in text and "10%" in text
    manage = role in ("owner", "admin")
    assert ("New rule" in text) == manage
    assert ('aria-label="Move expensive up"' in text) == manage
    assert ('aria-label="Disable errors"' in text) == manage
    assert ('aria-label="Delete errors"' in text) == manage


def test_the_nav_lists_routing(as_role):
    assert 'href="/routing"' in as_role("viewer").get("/traces").content.decode()


@pytest.mark.parametrize("role", ROLES)
def test_every_role_opens_a_rule_and_only_admins_may_change_it(as_role, role, rules):
    response = as_role(role).get(f"/routing/rules/{rules['expensive'].pk}")
    assert response.status_code == 200
    text = response.content.decode()
    assert 'value="expensive"' in text and "cost &gt; 0.05</textarea>" in text
    manage = role in ("owner", "admin")
    assert ("Save rule" in text) == manage
    assert ('<fieldset class="plain stack" disabled>' in text) == (not manage)


def test_an_outsider_gets_404_for_this_teams_rules_and_sees_none(as_role, rules):
    client = as_role("outsider")
    rule = rules["errors"]
    assert client.get(f"/routing/rules/{rule.pk}").status_code == 404
    for action in ("move", "toggle", "delete"):
        assert client.post(f"/routing/rules/{rule.pk}/{action}", {"version": 0}).status_code == 404
    assert client.post(f"/routing/rules/{rule.pk}", {**NEW_RULE, "version": 0}).status_code == 404
    assert "errors" not in client.get("/routing").content.decode().split('id="rule-list"')[1]
    assert RoutingRule.objects.get(pk=rule.pk).enabled


def test_a_visitor_is_sent_to_log_in(client):
    assert client.get("/routing")["Location"].startswith("/login")


# --- Creating and editing ----------------------------------------------------------------------


@pytest.mark.parametrize("role", ["owner", "admin"])
def test_an_admin_creates_a_rule_with_the_builder(as_role, role, team, integrations, rules):
    client = as_role(role)
    assert client.get("/routing/rules/new").status_code == 200
    response = client.post("/routing/rules/new", {**NEW_RULE, "version": _version(team)})
    assert response.status_code == 302, response.content.decode()[:2000]
    rule = RoutingRule.objects.get(team=team, name="gpt-4 costs")
    assert rule.conditions == {"model": "gpt-4*", "cost": ">0.05"}
    assert rule.priority == 40  # after the last one
    assert rule.tags == ["cost-review"]
    assert rule.destinations == [
        {
            "name": "lf-prod",
            "sample_rate": 0.5,
            "tags": ["expensive"],
            "fallback": [{"name": "audit-hook", "sample_rate": 1.0, "tags": [], "fallback": []}],
        }
    ]
    assert AuditEvent.objects.filter(team=team, action="routing.rules.replace").exists()
    assert f"#rule-{rule.pk}" in response["Location"]
    page = client.get("/routing").content.decode()
    assert "Rule &#x27;gpt-4 costs&#x27; created" in page


def test_match_any_is_saved_as_cel(as_role, team, integrations):
    post = {**NEW_RULE, "match": "any", "version": _version(team)}
    assert as_role("admin").post("/routing/rules/new", post).status_code == 302
    rule = RoutingRule.objects.get(team=team, name="gpt-4 costs")
    assert rule.conditions is None
    assert rule.condition == 'model.startsWith("gpt-4") || cost > 0.05'


def test_an_admin_creates_a_rule_with_cel_and_every_trace(as_role, team, integrations):
    client = as_role("admin")
    post = {"name": "all", "mode": "every", "enabled": "on", "dest-0-name": "audit-hook", "version": 0}
    assert client.post("/routing/rules/new", post).status_code == 302
    post = {
        "name": "prod errors",
        "mode": "cel",
        "cel": 'error &&\n  metadata.env == "prod"',
        "dest-0-name": "lf-prod",
        "version": _version(team),
    }
    assert client.post("/routing/rules/new", post).status_code == 302
    every, cel = selectors.routing_rules(team.pk)
    assert (every.condition, every.conditions, every.enabled) == ("", None, True)
    assert cel.condition == 'error &&\n  metadata.env == "prod"' and not cel.enabled  # unchecked box: disabled


@pytest.mark.parametrize("role", ["owner", "admin"])
def test_an_admin_edits_a_rule_keeping_its_id_and_place(as_role, role, team, rules):
    client = as_role(role)
    rule = rules["expensive"]
    post = {
        "name": "very expensive",
        "priority": "20",
        "enabled": "on",
        "mode": "cel",
        "cel": "cost > 0.5",
        "dest-0-name": "audit-hook",
        "dest-0-sample_rate": "1",
        "version": _version(team),
    }
    response = client.post(f"/routing/rules/{rule.pk}", post)
    assert response.status_code == 302
    rule.refresh_from_db()
    assert (rule.name, rule.condition, rule.priority) == ("very expensive", "cost > 0.5", 20)
    assert _order(team) == ["errors", "very expensive", "sampled"]


def test_an_edit_keeps_what_the_api_stored_on_a_fallback(as_role, team, integrations):
    from routing import edits

    rule = {
        "name": "keep",
        "destinations": [
            {"name": "lf-prod", "fallback": [{"name": "webhook", "url": "https://hooks.example.com/x", "tags": ["f"]}]}
        ],
    }
    _, stored = edits.rule_save(team_id=team.pk, rule=rule, rule_id=None, version=0, actor="api")
    page = as_role("admin").get(f"/routing/rules/{stored.pk}").content.decode()
    assert '<option value="webhook" data-webhook selected>' in page
    post = {"name": "keep", "mode": "every", "dest-0-name": "lf-prod", "dest-0-fallback-0": "webhook"}
    assert as_role("admin").post(f"/routing/rules/{stored.pk}", {**post, "version": _version(team)}).status_code == 302
    stored.refresh_from_db()
    assert stored.destinations[0]["fallback"][0]["url"] == "https://hooks.example.com/x"


@pytest.mark.parametrize("role", ["member", "viewer"])
def test_a_member_or_viewer_may_not_create_edit_or_change_rules(as_role, role, team, rules):
    client = as_role(role)
    version = _version(team)
    assert client.get("/routing/rules/new").status_code == 403
    assert client.post("/routing/rules/new", {**NEW_RULE, "version": version}).status_code == 403
    rule = rules["errors"]
    assert client.post(f"/routing/rules/{rule.pk}", {**NEW_RULE, "version": version}).status_code == 403
    assert client.post(f"/routing/rules/{rule.pk}/move", {"direction": "down", "version": version}).status_code == 403
    assert client.post(f"/routing/rules/{rule.pk}/toggle", {"enabled": "false", "version": version}).status_code == 403
    assert client.post(f"/routing/rules/{rule.pk}/delete", {"version": version}).status_code == 403
    assert _version(team) == version and _order(team) == ["errors", "expensive", "sampled"]


# --- Bad input: errors next to the field, nothing stored, what was typed kept ----------------------


def _post_new(client, team, **changes):
    return client.post("/routing/rules/new", {**NEW_RULE, "version": _version(team), **changes})


def test_invalid_cel_is_shown_at_its_line_and_column(as_role, team, integrations):
    response = _post_new(as_role("admin"), team, mode="cel", cel='model == "gpt-4" &&\n  cost >')
    assert response.status_code == 400
    text = response.content.decode()
    assert 'id="cel_error"' in text and "Syntax error at line 2" in text
    assert 'aria-label="Line 2, column' in text and "^" in text
    assert "cost &gt;</textarea>" in text  # kept as typed
    assert not RoutingRule.objects.filter(team=team).exists()


def test_an_unknown_name_in_cel_names_the_column_and_a_suggestion(as_role, team, integrations):
    response = _post_new(as_role("admin"), team, mode="cel", cel='modle == "x"')
    assert response.status_code == 400
    assert "Unknown name &#x27;modle&#x27; at column 1; did you mean &#x27;model&#x27;?" in response.content.decode()


def test_an_unknown_destination_is_an_error_on_its_row(as_role, team, integrations):
    response = _post_new(as_role("admin"), team, **{"dest-0-name": "helicon"})
    assert response.status_code == 400
    text = response.content.decode()
    assert 'id="dest-0-name_error"' in text and "Unknown destination &#x27;helicon&#x27;" in text
    assert '<option value="helicon" selected>helicon (not an integration of this team)</option>' in text
    assert not RoutingRule.objects.filter(team=team).exists()


@pytest.mark.parametrize("value", ["1.5", "-0.1", "half"])
def test_a_sample_rate_out_of_range_is_an_error_next_to_it(as_role, team, integrations, value):
    response = _post_new(as_role("admin"), team, **{"dest-0-sample_rate": value})
    assert response.status_code == 400
    text = response.content.decode()
    assert 'id="dest-0-sample_rate_error"' in text and "Must be a number from 0 to 1" in text
    assert f'value="{value}"' in text
    response = _post_new(as_role("admin"), team, sample_rate=value)
    assert response.status_code == 400
    assert 'id="id_sample_rate_error"' in response.content.decode()
    assert not RoutingRule.objects.filter(team=team).exists()


def test_builder_rows_that_do_not_make_a_condition_are_marked(as_role, team, integrations):
    changes = {"cond-0-op": "gt", "cond-1-value": "lots", "cond-2-field": "modle", "cond-2-op": "eq"}
    response = _post_new(as_role("admin"), team, **changes)
    assert response.status_code == 400
    text = response.content.decode()
    assert 'id="cond-0_error"' in text and "does not apply to model" in text
    assert 'id="cond-1_error"' in text and "&#x27;lots&#x27; is not a number" in text
    assert 'id="cond-2_error"' in text and "Unknown field" in text


def test_a_bad_value_the_compiler_refuses_is_on_its_row(as_role, team, integrations):
    response = _post_new(as_role("admin"), team, **{"cond-0-field": "status", "cond-0-op": "eq", "cond-0-value": "ok"})
    assert response.status_code == 400
    assert 'id="cond-0_error"' in response.content.decode()
    assert "&#x27;status&#x27; is one of success, error, rate_limited" in response.content.decode()


def test_a_duplicate_name_and_a_blank_name_are_errors_on_the_name(as_role, team, rules):
    response = _post_new(as_role("admin"), team, name="errors")
    assert response.status_code == 400
    assert 'id="id_name_error"' in response.content.decode()
    response = _post_new(as_role("admin"), team, name="  ")
    assert response.status_code == 400
    assert 'id="id_name_error"' in response.content.decode()


# --- Inline CEL validation (htmx) ---------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_the_cel_check_answers_as_you_type(as_role, role):
    client = as_role(role)
    response = client.post("/routing/rules/check", {"cel": "cost > "}, HTTP_HX_REQUEST="true")
    assert response.status_code == 422
    text = response.content.decode()
    assert "<html" not in text and 'id="cel-status"' in text
    assert "Syntax error at column 8: the expression ends too early" in text
    response = client.post("/routing/rules/check", {"cel": 'model == "gpt-4"'}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "Valid expression" in response.content.decode()
    response = client.post("/routing/rules/check", {"cel": "error and cost > 1"}, HTTP_HX_REQUEST="true")
    assert "CEL spells these &amp;&amp;, || and !" in response.content.decode()


# --- The list: reorder, enable/disable, delete ----------------------------------------------------


@pytest.mark.parametrize("role", ["owner", "admin"])
def test_reorder_with_up_and_down(as_role, role, team, rules):
    client = as_role(role)
    response = client.post(f"/routing/rules/{rules['sampled'].pk}/move", {"direction": "up", "version": _version(team)})
    assert response.status_code == 302
    assert _order(team) == ["errors", "sampled", "expensive"]
    assert [r.priority for r in selectors.routing_rules(team.pk)] == [10, 20, 30]  # the numbers stay, in order
    response = client.post(
        f"/routing/rules/{rules['errors'].pk}/move",
        {"direction": "down", "version": _version(team)},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    text = response.content.decode()
    assert "<html" not in text and 'id="rule-list"' in text
    assert f'id="rule-{rules["errors"].pk}-down" aria-label="Move errors down" autofocus' in text  # focus stays
    assert _order(team) == ["sampled", "errors", "expensive"]


def test_equal_priorities_are_renumbered_on_a_move(as_role, team, integrations):
    _store(team, [{"name": n, "priority": 5, "destinations": ["lf-prod"]} for n in ("a", "b", "c")])
    c = RoutingRule.objects.get(team=team, name="c")
    as_role("admin").post(f"/routing/rules/{c.pk}/move", {"direction": "up", "version": _version(team)})
    assert [(r.name, r.priority) for r in selectors.routing_rules(team.pk)] == [("a", 10), ("c", 20), ("b", 30)]


@pytest.mark.parametrize("role", ["owner", "admin"])
def test_disable_and_enable(as_role, role, team, rules):
    client = as_role(role)
    rule = rules["expensive"]
    assert (
        client.post(f"/routing/rules/{rule.pk}/toggle", {"enabled": "false", "version": _version(team)}).status_code
        == 302
    )
    rule.refresh_from_db()
    assert not rule.enabled
    assert 'aria-label="Enable expensive"' in client.get("/routing").content.decode()
    client.post(f"/routing/rules/{rule.pk}/toggle", {"enabled": "true", "version": _version(team)})
    rule.refresh_from_db()
    assert rule.enabled


@pytest.mark.parametrize("role", ["owner", "admin"])
def test_delete(as_role, role, team, rules):
    client = as_role(role)
    response = client.post(f"/routing/rules/{rules['errors'].pk}/delete", {"version": _version(team)})
    assert response.status_code == 302
    assert _order(team) == ["expensive", "sampled"]
    assert "Rule &#x27;errors&#x27; deleted" in client.get("/routing").content.decode()


# --- Stale pages ------------------------------------------------------------------------------------


def test_a_stale_edit_says_so_keeps_the_input_and_shows_theirs(as_role, team, rules):
    from routing import edits

    rule = rules["expensive"]
    opened = _version(team)
    edits.rule_set_enabled(team_id=team.pk, rule_id=rule.pk, enabled=False, version=opened, actor="user:bob")
    client = as_role("admin")
    post = {"name": "mine", "mode": "cel", "cel": "cost > 2", "dest-0-name": "audit-hook", "version": opened}
    response = client.post(f"/routing/rules/{rule.pk}", post)
    assert response.status_code == 409
    text = response.content.decode()
    assert "changed by someone else since you opened it" in text and "user:bob" in text
    assert 'value="mine"' in text and "cost &gt; 2</textarea>" in text  # not lost
    assert "Their current version: “expensive”" in text and "Disabled" in text
    assert f'name="version" value="{_version(team)}"' in text  # saving again replaces theirs, knowingly
    rule.refresh_from_db()
    assert rule.name == "expensive"
    assert client.post(f"/routing/rules/{rule.pk}", {**post, "version": _version(team)}).status_code == 302
    rule.refresh_from_db()
    assert (rule.name, rule.condition) == ("mine", "cost > 2")


def test_a_stale_edit_of_a_deleted_rule_offers_to_create_it_again(as_role, team, rules):
    from routing import edits

    rule = rules["expensive"]
    opened = _version(team)
    edits.rule_delete(team_id=team.pk, rule_id=rule.pk, version=opened, actor="user:bob")
    post = {"name": "mine", "mode": "every", "dest-0-name": "audit-hook", "version": opened}
    response = as_role("admin").post(f"/routing/rules/{rule.pk}", post)
    assert response.status_code == 409
    text = response.content.decode()
    assert "deleted by someone else since you opened it" in text and 'action="/routing/rules/new"' in text


def test_a_stale_new_rule_keeps_the_input(as_role, team, rules):
    response = as_role("admin").post("/routing/rules/new", {**NEW_RULE, "version": _version(team) - 1})
    assert response.status_code == 409
    text = response.content.decode()
    assert "changed by someone else since you opened it" in text and 'value="gpt-4 costs"' in text
    assert not RoutingRule.objects.filter(team=team, name="gpt-4 costs").exists()


@pytest.mark.parametrize(
    "action,data", [("move", {"direction": "up"}), ("toggle", {"enabled": "false"}), ("delete", {})]
)
def test_a_stale_list_action_changes_nothing_and_says_so(as_role, team, rules, action, data):
    before = _version(team)
    response = as_role("admin").post(
        f"/routing/rules/{rules['expensive'].pk}/{action}", {**data, "version": before - 1}
    )
    assert response.status_code == 409
    text = response.content.decode()
    assert "changed by someone else since you opened this page" in text and "was not applied" in text
    assert _version(team) == before and _order(team) == ["errors", "expensive", "sampled"]


def test_a_page_without_a_version_is_stale(as_role, team, rules):
    assert as_role("admin").post(f"/routing/rules/{rules['errors'].pk}/toggle", {"enabled": "false"}).status_code == 409


def test_rules_of_another_team_are_untouched_by_this_teams_edits(as_role, team, rules):
    other = TeamFactory()
    IntegrationFactory(team=other, name="lf-prod", platform="langfuse", config={})
    _store(other, [{"name": "errors", "destinations": ["lf-prod"]}])
    as_role("admin").post(f"/routing/rules/{rules['errors'].pk}/delete", {"version": _version(team)})
    assert list(RoutingRule.objects.filter(team=other).values_list("name", flat=True)) == ["errors"]
    assert RuleSet.objects.get(team=other).version == 1


def test_a_condition_the_builder_cannot_show_is_edited_as_json(as_role, team, integrations):
    from routing import edits

    rule = {"name": "odd", "conditions": {"model": ["a,b", "c"]}, "destinations": ["lf-prod"]}
    _, stored = edits.rule_save(team_id=team.pk, rule=rule, rule_id=None, version=0, actor="api")
    client = as_role("admin")
    text = client.get(f"/routing/rules/{stored.pk}").content.decode()
    assert 'id="mode-json" checked' in text and "&quot;a,b&quot;" in text
    post = {"name": "odd", "mode": "json", "json": '{"model": ["a,b", "d"]}', "dest-0-name": "lf-prod"}
    assert client.post(f"/routing/rules/{stored.pk}", {**post, "version": _version(team)}).status_code == 302
    stored.refresh_from_db()
    assert stored.conditions == {"model": ["a,b", "d"]}
    response = client.post(f"/routing/rules/{stored.pk}", {**post, "json": "{", "version": _version(team)})
    assert response.status_code == 400 and 'id="id_json_error"' in response.content.decode()
