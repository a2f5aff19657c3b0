"""/routing in the browser: an admin creates a rule with the condition builder and one in CEL (a
syntax error shown inline as it is typed, then fixed), reorders and disables rules, tests where a
trace would go, sets the sampling policy, and meets a stale edit; a viewer reads it all."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from playwright.sync_api import expect

from accounts.models import Role
from routing import edits, selectors
from routing.models import RoutingRule, SamplingPolicy

from ..factories import IntegrationFactory, MembershipFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def integrations(team):
    IntegrationFactory(team=team, name="lf-prod", platform="langfuse", config={})
    IntegrationFactory(team=team, name="audit-hook", platform="webhook")


@pytest.fixture
def admin(team):
    return MembershipFactory(team=team, user=UserFactory(username="ada@example.com"), role=Role.ADMIN).user


def _seed(team, names):
    version = selectors.rule_set(team.pk).version
    for i, name in enumerate(names):
        rule = {"name": name, "priority": (i + 1) * 10, "destinations": ["audit-hook"]}
        if i == 0:
            rule["conditions"] = {"error": True}
        header, _ = edits.rule_save(team_id=team.pk, rule=rule, rule_id=None, version=version, actor="seed")
        version = header.version


def _shot(page, shoot, name):
    """A full-page screenshot from the top (the sticky top bar would show where the page was scrolled)."""
    page.evaluate("window.scrollTo(0, 0)")
    shoot(page, name)


def _order(team):
    return [r.name for r in selectors.routing_rules(team.pk)]


def test_an_admin_creates_a_rule_with_the_builder(page, sign_in, shoot, team, integrations, admin):
    sign_in(page, admin)
    page.goto("/routing")
    expect(page.get_by_role("heading", name="No rules yet")).to_be_visible()
    _shot(page, shoot, "routing-empty")
    page.get_by_role("link", name="New rule").first.click()
    page.get_by_label("Name", exact=True).fill("expensive gpt-4")
    page.locator("#mode-builder").check()
    page.locator("#cond-0-field").select_option("model")
    page.locator("#cond-0-op").select_option("prefix")
    page.locator("#cond-0-value").fill("gpt-4")
    page.get_by_role("button", name="Add a condition").click()
    page.locator("#cond-1-field").select_option("cost")
    expect(page.locator("#cond-1-op option[value=prefix]")).to_be_hidden()  # only the operators that fit a number
    page.locator("#cond-1-op").select_option("gt")
    page.locator("#cond-1-value").fill("0.05")
    page.locator("#dest-0-name").select_option("lf-prod")
    page.locator("#dest-0-sample_rate").fill("0.5")
    page.locator("#dest-0-tags").fill("expensive")
    page.locator("#dest-0-fallback-0").select_option("audit-hook")
    _shot(page, shoot, "routing-rule-builder")
    page.get_by_role("button", name="Create rule").click()
    expect(page.get_by_role("status")).to_contain_text("Rule 'expensive gpt-4' created")
    rule = RoutingRule.objects.get(team=team)
    assert rule.conditions == {"model": "gpt-4*", "cost": ">0.05"}
    assert rule.destinations[0]["sample_rate"] == 0.5
    assert rule.destinations[0]["fallback"][0]["name"] == "audit-hook"
    expect(page.locator(f"#rule-{rule.pk}")).to_contain_text("then audit-hook")


def test_a_cel_syntax_error_is_shown_inline_then_fixed(page, sign_in, shoot, team, integrations, admin):
    sign_in(page, admin)
    page.goto("/routing/rules/new")
    page.get_by_label("Name", exact=True).fill("prod errors")
    page.locator("#mode-cel").check()
    editor = page.locator("#id_cel")
    editor.fill("error &&\n  metadata.env ==")
    expect(page.locator("#cel_error")).to_contain_text("Syntax error at line 2")
    expect(page.locator(".cel-where")).to_have_attribute("aria-label", "Line 2, column 18")
    _shot(page, shoot, "routing-cel-error")
    # Saving as it is refuses it, with the same message next to the field and the text kept.
    page.locator("#dest-0-name").select_option("lf-prod")
    page.get_by_role("button", name="Create rule").click()
    expect(page.locator("#cel_error")).to_contain_text("Syntax error at line 2")
    expect(page.locator("#id_cel")).to_have_value("error &&\n  metadata.env ==")
    page.locator("#id_cel").fill('error &&\n  metadata.env == "prod"')
    expect(page.locator(".cel-ok")).to_have_text("Valid expression")
    expect(page.locator("#cel_error")).to_have_count(0)
    page.get_by_role("button", name="Create rule").click()
    expect(page.get_by_role("status")).to_contain_text("Rule 'prod errors' created")
    assert RoutingRule.objects.get(team=team).condition == 'error &&\n  metadata.env == "prod"'


def test_reorder_and_disable_from_the_keyboard(page, sign_in, shoot, team, integrations, admin):
    _seed(team, ["errors", "expensive", "the rest"])
    # The page's timers stay stopped: a key press may come before any timer fires (a loaded machine,
    # key repeat), so the swapped-in list must take the focus and work without waiting for one. With
    # htmx's default 20 ms settle the second Enter posted the unwired form natively (a full reload,
    # focus lost); this made the test fail now and then, and fails it every time.
    page.clock.install()
    page.clock.pause_at(datetime.now() + timedelta(minutes=1))
    sign_in(page, admin)
    page.goto("/routing")
    page.get_by_role("button", name="Move the rest up").focus()
    page.keyboard.press("Enter")
    expect(page.locator(".rule-name").nth(1)).to_have_text("the rest")
    assert _order(team) == ["errors", "the rest", "expensive"]
    expect(page.get_by_role("button", name="Move the rest up")).to_be_focused()  # focus stays on the moved rule
    page.keyboard.press("Enter")
    expect(page.locator(".rule-name").first).to_have_text("the rest")
    expect(page.get_by_role("button", name="Move the rest down")).to_be_focused()  # at the top: the other arrow
    page.get_by_role("button", name="Disable expensive").click()
    expect(page.get_by_role("button", name="Enable expensive")).to_be_visible()
    assert not RoutingRule.objects.get(team=team, name="expensive").enabled
    _shot(page, shoot, "routing-rules")
    page.get_by_label("Delete errors", exact=True).click()  # the confirmation's summary
    page.get_by_role("dialog").get_by_role("button", name="Delete rule").click()
    expect(page.get_by_role("status")).to_contain_text("Rule 'errors' deleted")
    assert _order(team) == ["the rest", "expensive"]


def test_a_dry_run_shows_who_would_receive_a_trace_and_why(page, sign_in, shoot, team, integrations, admin):
    _seed(team, ["errors", "everything"])
    edits.rule_save(
        team_id=team.pk,
        rule={"name": "a tenth", "priority": 30, "destinations": [{"name": "lf-prod", "sample_rate": 0.1}]},
        rule_id=None,
        version=selectors.rule_set(team.pk).version,
        actor="seed",
    )
    sign_in(page, admin)
    page.goto("/routing")
    page.get_by_role("link", name="Test", exact=True).click()
    page.get_by_label("Trace id").fill("checkout-42")
    page.get_by_label("Status").select_option("error")
    page.get_by_label("Metadata").fill('{"env": "prod"}')
    page.get_by_role("button", name="Test this trace").click()
    result = page.locator(".test-result")
    expect(result).to_contain_text("Would send to audit-hook")
    expect(result.locator(".trial-matched")).to_have_text("yes errors, everything, a tenth")
    expect(result).to_contain_text("lf-prod sampled out")  # checkout-42's sample point is above 0.1
    expect(result).to_contain_text("is not under the rate 0.1")
    _shot(page, shoot, "routing-test")
    page.get_by_label("Model").fill("my-own-model")
    page.get_by_label("Status").select_option("success")
    page.get_by_role("button", name="Test this trace").click()
    expect(page.locator(".test-result")).to_contain_text("unpriced")


def test_the_sampling_policy_page(page, sign_in, shoot, team, admin):
    sign_in(page, admin)
    page.goto("/routing/sampling")
    page.get_by_label("Default sample rate").fill("1.5")
    page.locator("#rule-0-condition").fill('environment == "development"')
    page.locator("#rule-0-sample_rate").fill("0.1")
    page.get_by_role("button", name="Save policy").click()
    expect(page.locator("#id_default_sample_rate_error")).to_contain_text("less than or equal to 1")
    expect(page.locator("#rule-0-condition")).to_have_value('environment == "development"')
    page.get_by_label("Default sample rate").fill("0.5")
    page.get_by_role("button", name="Save policy").click()
    expect(page.get_by_role("status")).to_contain_text("Sampling policy saved (version 1)")
    policy = SamplingPolicy.objects.get(team=team)
    assert policy.default_sample_rate == 0.5
    assert policy.rules == [{"condition": 'environment == "development"', "sample_rate": 0.1}]
    # An example condition, used: it fills the first empty row, saved with the policy.
    expect(page.locator(".example-list li")).to_have_count(5)
    page.get_by_role("button", name='Use "healthcheck" in tags at rate 0').click()
    expect(page.locator("#rule-1-condition")).to_have_value('"healthcheck" in tags')
    expect(page.locator("#rule-1-sample_rate")).to_have_value("0")
    expect(page.locator("#rule-1-sample_rate")).to_be_focused()
    _shot(page, shoot, "routing-sampling")
    page.get_by_role("button", name="Save policy").click()
    expect(page.get_by_role("status")).to_contain_text("Sampling policy saved (version 2)")
    assert SamplingPolicy.objects.get(team=team).rules[1] == {"condition": '"healthcheck" in tags', "sample_rate": 0}


def test_a_stale_edit_is_shown_and_the_input_kept(new_page, sign_in, shoot, team, integrations, admin):
    _seed(team, ["errors", "expensive"])
    bob = MembershipFactory(team=team, user=UserFactory(username="bob@example.com"), role=Role.OWNER).user
    mine, theirs = new_page(), new_page()
    sign_in(mine, admin)
    sign_in(theirs, bob)
    rule = RoutingRule.objects.get(team=team, name="expensive")
    mine.goto(f"/routing/rules/{rule.pk}")
    theirs.goto("/routing")
    theirs.get_by_role("button", name="Disable expensive").click()
    expect(theirs.get_by_role("button", name="Enable expensive")).to_be_visible()
    mine.get_by_label("Name", exact=True).fill("my name for it")
    mine.get_by_role("button", name="Save rule").click()
    expect(mine.get_by_role("alert")).to_contain_text("changed by someone else since you opened it")
    expect(mine.get_by_role("alert")).to_contain_text("user:bob@example.com")
    expect(mine.locator(".theirs")).to_contain_text("Disabled")
    expect(mine.get_by_label("Name", exact=True)).to_have_value("my name for it")
    _shot(mine, shoot, "routing-stale")
    mine.get_by_role("button", name="Save mine over theirs").click()
    expect(mine.get_by_role("status")).to_contain_text("Rule 'my name for it' saved")


def test_a_viewer_reads_rules_without_edit_controls(page, sign_in, shoot, team, integrations):
    _seed(team, ["errors", "expensive"])
    viewer = MembershipFactory(team=team, user=UserFactory(username="vic@example.com"), role=Role.VIEWER).user
    sign_in(page, viewer)
    page.goto("/routing")
    expect(page.locator(".rule-name")).to_have_count(2)
    expect(page.get_by_role("link", name="New rule")).to_have_count(0)
    expect(page.get_by_role("button", name="Move expensive up")).to_have_count(0)
    _shot(page, shoot, "routing-viewer")
    page.get_by_role("link", name="View errors").click()
    expect(page.get_by_label("Name", exact=True)).to_be_disabled()
    expect(page.get_by_role("button", name="Save rule")).to_have_count(0)
    _shot(page, shoot, "routing-rule-viewer")
