"""The rule form's "Test this rule" in the browser: an admin edits a rule, tests the edit on a typed
trace and on recent traces (results in place, nothing saved), meets a bad condition beside its
field, then saves; and tests a new rule before creating it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from accounts.models import Role
from routing import edits, selectors
from routing.models import RoutingRule

from ..factories import IntegrationFactory, MembershipFactory, TraceFactory, UserFactory
from .conftest import SCREENSHOTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def admin(team):
    return MembershipFactory(team=team, user=UserFactory(username="ada@example.com"), role=Role.ADMIN).user


@pytest.fixture
def rules(team):
    IntegrationFactory(team=team, name="lf-prod", platform="langfuse", config={})
    IntegrationFactory(team=team, name="audit-hook", platform="webhook")
    version = 0
    for rule in [
        {"name": "errors", "priority": 10, "conditions": {"error": True}, "destinations": ["lf-prod"]},
        {"name": "expensive", "priority": 20, "condition": "cost > 0.05", "destinations": ["audit-hook"]},
    ]:
        header, _ = edits.rule_save(team_id=team.pk, rule=rule, rule_id=None, version=version, actor="seed")
        version = header.version
    return {r.name: r for r in RoutingRule.objects.filter(team=team)}


def _shot(page, shoot, name):
    page.evaluate("window.scrollTo(0, 0)")
    shoot(page, name)


def test_an_edit_is_tested_before_it_is_saved(page, sign_in, shoot, team, rules, admin):
    TraceFactory(team=team, model="gpt-4o", status="error")
    TraceFactory(team=team, model="gpt-4o-mini")
    version = selectors.rule_set(team.pk).version
    sign_in(page, admin)
    page.goto(f"/routing/rules/{rules['expensive'].pk}")
    page.locator("#id_cel").fill('error && model.startsWith("gpt-4")')
    trial = page.locator("#trial")
    trial.get_by_label("Trace id").fill("checkout-42")
    trial.get_by_label("Status").select_option("error")
    trial.get_by_role("button", name="Test this rule").click()
    result = page.locator(".test-result")
    expect(result).to_contain_text("Would send to lf-prod, audit-hook")
    expect(result.locator(".trial-matched")).to_have_text("yes errors, expensive (your edit)")
    expect(page.locator(".evaluations tr", has_text="your edit")).to_contain_text("expensive")
    expect(page.locator("#id_cel")).to_have_value('error && model.startsWith("gpt-4")')  # the form as typed
    assert selectors.rule_set(team.pk).version == version  # nothing saved
    assert RoutingRule.objects.get(pk=rules["expensive"].pk).condition == "cost > 0.05"
    _shot(page, shoot, "routing-rule-trial")

    # On the team's recent traces: only the typed-trace fields hide.
    trial.get_by_label("Recent traces").check()
    expect(trial.get_by_label("Trace id")).to_be_hidden()
    trial.get_by_role("button", name="Test this rule").click()
    expect(page.locator(".results-title")).to_have_text("2 recent traces")
    expect(page.locator(".test-result")).to_have_count(2)
    expect(page.locator(".test-result", has_text="gpt-4o-mini")).to_contain_text("Would go nowhere")

    # A condition the save would refuse: shown beside it, nothing tested.
    page.locator("#id_cel").fill("error &&")
    page.locator("#trial-typed").check()
    trial.get_by_role("button", name="Test this rule").click()
    expect(page.locator("#cel_error")).to_contain_text("Syntax error")
    expect(page.locator("#trial-refused")).to_have_text("Not tested: the rule has errors, marked above.")
    expect(page.locator(".test-result")).to_have_count(0)
    _shot(page, shoot, "routing-rule-trial-error")

    page.locator("#id_cel").fill('error && model.startsWith("gpt-4")')
    page.get_by_role("button", name="Save rule").click()
    expect(page.get_by_role("status")).to_contain_text("Rule 'expensive' saved")
    assert RoutingRule.objects.get(pk=rules["expensive"].pk).condition == 'error && model.startsWith("gpt-4")'


def test_a_new_rule_is_tested_before_it_is_created(page, sign_in, shoot, team, rules, admin):
    sign_in(page, admin)
    page.goto("/routing/rules/new")
    page.get_by_label("Name", exact=True).fill("eu beta")
    page.locator("#mode-builder").check()
    page.locator("#cond-0-field").select_option("tags")
    page.locator("#cond-0-value").fill("beta")
    page.locator("#dest-0-name").select_option("audit-hook")
    trial = page.locator("#trial")
    trial.get_by_label("Tags").fill("beta, eu")
    trial.get_by_role("button", name="Test this rule").click()
    expect(page.locator(".test-result")).to_contain_text("Would send to audit-hook")
    expect(page.locator(".evaluations tr", has_text="your edit")).to_contain_text("eu beta")
    # The form comes back as filled in: no empty condition or destination row was added.
    expect(page.locator(".cond-rows [data-row]")).to_have_count(1)
    expect(page.locator(".dest-rows [data-row]")).to_have_count(1)
    expect(page.locator("#cond-0-op")).to_have_value("all")  # the builder is set up again after the swap
    assert not RoutingRule.objects.filter(team=team, name="eu beta").exists()
    _shot(page, shoot, "routing-new-rule-trial")
    page.get_by_role("button", name="Create rule").click()
    expect(page.get_by_role("status")).to_contain_text("Rule 'eu beta' created")


def test_twenty_five_recent_traces_fit_one_screen(page, sign_in, shoot, team, rules, admin):
    """ "Test this rule" on the last 25 traces: one compact table row each, all of them within one
    1280×900 screen; the dry run says "would send", never "sent", and puts sampling in words."""
    edits.rule_save(
        team_id=team.pk,
        rule={"name": "a tenth", "priority": 30, "destinations": [{"name": "lf-prod", "sample_rate": 0.9}]},
        rule_id=None,
        version=selectors.rule_set(team.pk).version,
        actor="seed",
    )
    models = ["gpt-4o", "gpt-4o-mini", "claude-3-5-sonnet-20241022", "gemini-1.5-pro"]
    for i in range(25):
        TraceFactory(team=team, model=models[i % 4], status="error" if i % 5 == 0 else "success")
    sign_in(page, admin)
    page.goto(f"/routing/rules/{rules['errors'].pk}")
    trial = page.locator("#trial")
    trial.get_by_label("Recent traces").check()
    trial.get_by_label("How many").select_option("25")
    trial.get_by_role("button", name="Test this rule").click()
    expect(page.locator(".results-title")).to_contain_text("25 recent traces")
    rows = page.locator(".test-result")
    expect(rows).to_have_count(25)
    page.evaluate("document.querySelector('.trial-table').scrollIntoView()")
    page.screenshot(path=str(SCREENSHOTS / "routing-trial-25-screen.png"), animations="disabled")
    box = page.locator(".trial-table").bounding_box()
    assert box is not None and box["height"] <= 900, f"the 25 results take {box} px, more than a screen"
    text = page.locator("#results").inner_text()
    assert " sent" not in text.replace("nothing was sent", "").lower()
    assert "would send to" in text.lower()
    assert "is under the rate 0.9" in text or "is not under the rate 0.9" in text  # "a tenth"'s 0.9, in words
    _shot(page, shoot, "routing-trial-25")
