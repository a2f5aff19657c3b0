"""The rule form's webhook URL in the browser (issue 20): the field shows for the webhook platform only
(an ad-hoc webhook, said so beside it), not for a webhook integration, which sends to its own URL;
the URL guard's refusal of a numeric metadata address is shown under the field, what was typed kept."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from accounts.models import Role
from routing.models import RoutingRule

from ..factories import IntegrationFactory, MembershipFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def admin(team):
    IntegrationFactory(team=team, name="audit-hook", platform="webhook")
    return MembershipFactory(team=team, user=UserFactory(username="ada@example.com"), role=Role.ADMIN).user


def test_the_url_is_for_ad_hoc_webhooks_and_the_guard_speaks_under_it(page, sign_in, shoot, team, admin):
    sign_in(page, admin)
    page.goto("/routing/rules/new")
    page.get_by_label("Name", exact=True).fill("to a collector")
    url = page.locator("#dest-0-url")

    page.locator("#dest-0-name").select_option("audit-hook")
    expect(url).to_be_hidden()  # a webhook integration sends to its own URL only
    page.locator("#dest-0-name").select_option("webhook")
    expect(url).to_be_visible()
    expect(page.locator("label[for=dest-0-url]")).to_contain_text("no integration's headers, signing secret or tags")

    url.fill("http://2852039166/latest/meta-data/")
    page.get_by_role("button", name="Create rule").click()

    error = page.locator("#dest-0-url_error")
    expect(error).to_have_text("This URL may not be used: 2852039166 (= 169.254.169.254) is a cloud metadata address.")
    expect(page.locator("#dest-0-url")).to_have_value("http://2852039166/latest/meta-data/")
    expect(page.locator("#dest-0-url")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#dest-0-sample_rate")).not_to_have_attribute("aria-invalid", "true")
    page.evaluate("window.scrollTo(0, 0)")  # the sticky top bar would show where the page was scrolled
    shoot(page, "routing-rule-url-refused")
    assert not RoutingRule.objects.filter(team=team).exists()

    page.locator("#dest-0-url").fill("https://hooks.example.com/llm")
    page.get_by_role("button", name="Create rule").click()
    expect(page.get_by_role("status")).to_contain_text("Rule 'to a collector' created")
    stored = RoutingRule.objects.get(team=team).destinations[0]
    assert (stored["name"], stored["url"]) == ("webhook", "https://hooks.example.com/llm")
