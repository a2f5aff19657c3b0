"""The rule form's "Test this rule": the dry run with the form's rule, unsaved, in place of the saved
one (or added, for a new rule), on a typed trace or the team's recent traces; nothing is saved;
the save's validation errors show beside their fields; admins and owners only (they edit rules)."""

from __future__ import annotations

import pytest

from routing import edits, selectors
from routing.models import RoutingRule

from ..factories import IntegrationFactory, TraceFactory
from .conftest import ROLES

pytestmark = pytest.mark.django_db


@pytest.fixture
def rules(team):
    IntegrationFactory(team=team, name="lf-prod", platform="langfuse", config={})
    IntegrationFactory(team=team, name="audit-hook", platform="webhook")
    version = 0
    for rule in [
        {"name": "errors", "priority": 10, "conditions": {"error": True}, "destinations": ["lf-prod"]},
        {"name": "expensive", "priority": 20, "condition": "cost > 0.05", "destinations": ["audit-hook"]},
    ]:
        header, _ = edits.rule_save(team_id=team.pk, rule=rule, rule_id=None, version=version, actor="test")
        version = header.version
    return {r.name: r for r in RoutingRule.objects.filter(team=team)}


def snapshot(team):
    header = selectors.rule_set(team.pk)
    rows = RoutingRule.objects.filter(team=team).order_by("id")
    return header.version, list(rows.values_list("name", "priority", "condition", "conditions", "destinations"))


# The "expensive" rule (cost > 0.05, to audit-hook) edited: every failed call, to audit-hook.
EDITED = {
    "name": "expensive",
    "priority": "",
    "enabled": "on",
    "sample_rate": "1",
    "mode": "cel",
    "cel": "error",
    "dest-0-name": "audit-hook",
    "dest-0-sample_rate": "1",
}
TRACE = {
    "trial-source": "typed",
    "trace-id": "checkout-42",
    "trace-model": "gpt-4o",
    "trace-status": "error",
    "trace-environment": "production",
    "trace-prompt_tokens": "10",
    "trace-completion_tokens": "10",
    "trace-tags": "beta",
    "trace-metadata": "",
}


def _post(client, url, data, version, **extra):
    return client.post(url, {**data, "version": version}, **extra)


@pytest.mark.parametrize("role", [*ROLES, "outsider"])
def test_only_admins_and_owners_test_an_edit_and_an_outsider_gets_404(as_role, role, team, rules):
    before = snapshot(team)
    url = f"/routing/rules/{rules['expensive'].pk}/test"
    response = _post(as_role(role), url, {**EDITED, **TRACE}, before[0])
    assert response.status_code == {"owner": 200, "admin": 200, "member": 403, "viewer": 403, "outsider": 404}[role]
    assert snapshot(team) == before


@pytest.mark.parametrize("role", [*ROLES, "outsider"])
def test_only_admins_and_owners_test_a_new_rule(as_role, role, team, rules):
    before = snapshot(team)
    data = {**EDITED, "name": "new one", **TRACE}
    response = _post(as_role(role), "/routing/rules/new/test", data, before[0])
    # The outsider tests in their own team, which has neither these rules nor lf-prod.
    expected = {"owner": 200, "admin": 200, "member": 403, "viewer": 403, "outsider": 400}[role]
    assert response.status_code == expected
    if role == "outsider":
        text = response.content.decode()
        assert 'id="dest-0-name_error"' in text  # their team has no lf-prod
        assert "rule “errors”" not in text and "<td>expensive" not in text
    assert snapshot(team) == before


@pytest.mark.parametrize("role", ROLES)
def test_the_test_panel_shows_for_those_who_may_run_it(as_role, role, rules):
    for url in (f"/routing/rules/{rules['errors'].pk}", "/routing/rules/new"):
        response = as_role(role).get(url)
        if role in ("member", "viewer") and url.endswith("new"):
            assert response.status_code == 403
            continue
        assert ("Test this rule" in response.content.decode()) == (role in ("owner", "admin"))


def test_an_edit_is_tried_in_place_of_the_saved_rule_and_nothing_is_saved(as_role, team, rules):
    before = snapshot(team)
    rule = rules["expensive"]
    response = _post(as_role("admin"), f"/routing/rules/{rule.pk}/test", {**EDITED, **TRACE}, before[0])
    assert response.status_code == 200
    text = response.content.decode()
    # A cheap failed call: the saved rule would not send it to audit-hook, the edit does.
    assert "checkout-42" in text and "Would send to <strong>lf-prod</strong>, <strong>audit-hook</strong>" in text
    assert 'errors, <span class="badge badge-info" title="your edit">expensive (your edit)</span>' in text
    assert '<td>expensive <span class="badge badge-info">your edit</span>' in text
    assert ">error</textarea>" in text  # the form as typed
    assert f'name="version" value="{before[0]}"' in text  # a save afterwards is checked as before
    assert snapshot(team) == before
    rule.refresh_from_db()
    assert rule.condition == "cost > 0.05"


def test_a_new_rule_is_tried_after_the_saved_ones(as_role, team, rules):
    before = snapshot(team)
    data = {**EDITED, "name": "all of it", "mode": "every", **TRACE}
    response = _post(as_role("owner"), "/routing/rules/new/test", data, before[0], HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    text = response.content.decode()
    assert "<html" not in text and 'id="rule-editor"' in text  # htmx: the editor only
    # Evaluated in order: the saved two, then the new one (priority 30, 10 after the last).
    assert text.index("<td>errors") < text.index("<td>expensive") < text.index("<td>all of it")
    mine = '<td>all of it <span class="badge badge-info">your edit</span></td><td class="num hide-narrow">30</td>'
    assert mine in text
    assert "<strong>audit-hook</strong>" in text  # by the new rule
    assert snapshot(team) == before and not RoutingRule.objects.filter(name="all of it").exists()


def test_the_saves_errors_show_beside_their_fields(as_role, team, rules):
    client = as_role("admin")
    version = snapshot(team)[0]
    url = f"/routing/rules/{rules['expensive'].pk}/test"
    response = _post(client, url, {**EDITED, "cel": "error &&", **TRACE}, version)
    assert response.status_code == 400
    text = response.content.decode()
    assert "The rule was not tested: see the fields marked below." in text and 'id="cel_error"' in text
    assert 'id="trial-refused"' in text and "Would go" not in text
    response = _post(client, url, {**EDITED, "dest-0-name": "nowhere", **TRACE}, version)
    assert response.status_code == 400 and 'id="dest-0-name_error"' in response.content.decode()
    response = _post(client, "/routing/rules/new/test", {**EDITED, "name": "errors", **TRACE}, version)
    assert response.status_code == 400 and 'id="id_name_error"' in response.content.decode()  # as a save says
    response = _post(client, url, {**EDITED, "sample_rate": "2", **TRACE}, version)
    assert response.status_code == 400 and 'id="id_sample_rate_error"' in response.content.decode()


def test_a_bad_trace_is_shown_beside_its_fields(as_role, team, rules):
    url = f"/routing/rules/{rules['expensive'].pk}/test"
    version = snapshot(team)[0]
    response = _post(as_role("admin"), url, {**EDITED, **TRACE, "trace-metadata": "{"}, version)
    assert response.status_code == 400
    text = response.content.decode()
    assert 'id="trace-metadata_error"' in text and "Not valid JSON" in text
    response = _post(as_role("admin"), url, {**EDITED, **TRACE, "trace-model": "", "trace-prompt_tokens": "x"}, version)
    assert response.status_code == 400
    text = response.content.decode()
    assert 'id="trace-model_error"' in text and 'id="trace-prompt_tokens_error"' in text
    assert 'value="x"' in text and 'value="expensive"' in text  # both forms keep what was typed


def test_recent_traces_are_routed_with_the_edit(as_role, team, other_team, rules):
    failed = TraceFactory(team=team, status="error")
    fine = TraceFactory(team=team)
    theirs = TraceFactory(team=other_team, status="error")
    url = f"/routing/rules/{rules['expensive'].pk}/test"
    data = {**EDITED, "trial-source": "recent", "trial-count": "10"}
    response = _post(as_role("admin"), url, data, snapshot(team)[0])
    assert response.status_code == 200
    text = response.content.decode()
    assert "2 recent traces" in text
    assert f'href="/traces/{failed.trace_id}"' in text and f'href="/traces/{fine.trace_id}"' in text
    assert theirs.trace_id not in text
    response = _post(as_role("admin"), url, {**data, "trial-count": "7"}, snapshot(team)[0])
    assert response.status_code == 400 and 'id="trial-count_error"' in response.content.decode()


def test_a_test_adds_no_empty_condition_or_destination_rows(as_role, team, rules):
    """The form comes back with the rows as filled in: the empty rows it was posted with (and no
    new ones) are left out; a list left with nothing gets one row to type into."""
    before = snapshot(team)
    data = {
        **EDITED,
        "mode": "builder",
        "match": "all",
        "cond-0-field": "model",
        "cond-0-op": "prefix",
        "cond-0-value": "gpt-4",
        "cond-1-field": "",
        "cond-1-op": "eq",
        "cond-1-value": "",
        "dest-1-name": "",
        "dest-1-sample_rate": "1",
        **TRACE,
    }
    text = _post(as_role("admin"), f"/routing/rules/{rules['expensive'].pk}/test", data, before[0]).content.decode()
    assert "Would send to" in text
    assert 'id="cond-0-field"' in text and 'id="cond-1-field"' not in text
    assert 'id="dest-0-name"' in text and 'id="dest-1-name"' not in text
    # Nothing filled in at all: one row of each to start with.
    data = {**EDITED, "name": "nothing yet", "mode": "every", "cond-0-field": "", "dest-0-name": "", **TRACE}
    text = _post(as_role("admin"), "/routing/rules/new/test", data, before[0]).content.decode()
    assert "Would send to <strong>lf-prod</strong>" in text  # by the saved "errors"
    assert text.count('class="cond-row ') + text.count('class="cond-row"') == 2  # one row, and the template's
    assert 'id="cond-0-field"' in text and 'id="dest-0-name"' in text and 'id="dest-1-name"' not in text
