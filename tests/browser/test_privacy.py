"""/settings/privacy in the browser: an admin saves a policy, a bad regex is shown next to its field,
the "try it" box redacts in place (htmx); a viewer reads the policy with the controls disabled."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from accounts.models import Role
from privacy.models import PiiPolicy

from ..factories import IntegrationFactory, MembershipFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def integrations(team):
    IntegrationFactory(team=team, name="langfuse-cloud")
    IntegrationFactory(team=team, name="phoenix-local")


def test_an_admin_sets_the_policy_and_tries_it(page, sign_in, shoot, team, integrations):
    admin = MembershipFactory(team=team, user=UserFactory(username="ada@example.com"), role=Role.ADMIN).user
    sign_in(page, admin)
    page.goto("/settings/privacy")
    page.get_by_label("Detect").check()
    page.get_by_label("langfuse-cloud").select_option("redact")
    page.locator("#pattern-0-name").fill("ORDER")
    page.locator("#pattern-0-regex").fill("(?=x)ORD")
    page.get_by_role("button", name="Save policy").click()
    expect(page.locator("#pattern-0-regex_error")).to_contain_text("lookaround")
    shoot(page, "privacy-error")
    page.locator("#pattern-0-regex").fill("ORD-[0-9]{5}")
    page.get_by_role("button", name="Save policy").click()
    expect(page.get_by_role("status")).to_contain_text("PII policy saved (version 1)")
    policy = PiiPolicy.objects.get(team=team)
    assert (policy.stored_mode, policy.destinations) == ("detect", {"langfuse-cloud": "redact"})

    page.locator("#try-text").fill("Ship ORD-12345 to ada@example.com")
    page.get_by_role("button", name="Scan").click()
    expect(page.locator("#try-redacted")).to_have_text("Ship [ORDER] to [EMAIL]")
    shoot(page, "privacy-saved")


def test_a_viewer_reads_the_policy(page, sign_in, shoot, team, integrations):
    PiiPolicy.objects.create(team=team, stored_mode="redact", destinations={"phoenix-local": "off"}, version=2)
    viewer = MembershipFactory(team=team, user=UserFactory(username="vic@example.com"), role=Role.VIEWER).user
    sign_in(page, viewer)
    page.goto("/settings/privacy")
    expect(page.get_by_label("Redact")).to_be_checked()
    expect(page.get_by_label("Redact")).to_be_disabled()
    expect(page.get_by_role("button", name="Save policy")).to_have_count(0)
    shoot(page, "privacy-viewer")
