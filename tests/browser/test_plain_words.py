"""What a user reads (issue 20, items 2 and 8), in the browser at 1280 and 390 px: unpriced calls in
words and tiny costs with their digits on /analytics and the feed, SDK metadata as JSON, an alert as
one sentence with its amount formatted, a report run that says it was not emailed, plain page
titles, and one name for the feed in the navigation."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from accounts.models import Role
from alerts import services as alert_services
from alerts.definition import parse_alert
from reports import services as report_services
from reports.definition import parse_definition

from ..factories import MembershipFactory, TraceFactory, UserFactory
from .test_reports import worker  # noqa: F401 (a run carried out shortly after it is queued)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SDK = {"name": "tracerelay-python", "version": "0.4.1"}


@pytest.fixture
def owner_user(team):
    return MembershipFactory(team=team, user=UserFactory(username="olga@example.com"), role=Role.OWNER).user


@pytest.fixture
def calls(team):
    now = timezone.now() - timedelta(minutes=30)
    rows = [
        TraceFactory(team=team, timestamp=now, model="mystery-model", provider="", cost=None, unpriced=True,
                     metadata={"sdk": SDK, "sampled": True})
        for _ in range(3)
    ]  # fmt: skip
    rows += [
        TraceFactory(team=team, timestamp=now, model="gpt-4o-mini", cost=Decimal("0.0000035"), tags=["tiny"]),
        TraceFactory(team=team, timestamp=now, model="gpt-4o", cost=Decimal("0.25"), tags=["half"]),
        TraceFactory(team=team, timestamp=now, model="gpt-4o", cost=None, unpriced=True, tags=["half"]),
    ]
    return rows


def test_unpriced_calls_read_in_words_and_tiny_costs_keep_their_digits(page, sign_in, shoot, owner_user, calls):
    sign_in(page, owner_user)
    page.goto("/analytics")

    def row(group: str, key: str) -> Any:
        return page.locator(f"#breakdown-{group} tr").filter(
            has=page.get_by_label(f"Traces of {group} {key}", exact=True)
        )

    expect(row("model", "mystery-model")).to_contain_text("3 unpriced")
    expect(row("model", "gpt-4o")).to_contain_text(re.compile(r"\$0\.25\s*\+1 unpriced"))  # on two lines
    expect(row("tag", "tiny")).to_contain_text("$0.0000035")
    expect(page.locator(".kpis")).to_contain_text("4 of 6 calls unpriced, not in the sum")
    assert "$0 +3" not in page.content() and "+3" not in page.locator("#breakdown-model").inner_text()
    shoot(page, "plain-words-analytics")

    page.goto("/traces")
    row = page.locator(".feed-row", has_text="mystery-model").first
    expect(row).to_contain_text('sdk={"name": "tracerelay-py…')  # JSON, cut at 24 characters
    expect(row).to_contain_text("sampled=true")
    expect(page.locator(".feed-row", has_text="gpt-4o-mini")).to_contain_text("$0.0000035")
    assert "{'name'" not in page.content()
    shoot(page, "plain-words-feed")


def test_an_alert_reads_as_one_sentence(page, sign_in, shoot, owner_user, team):
    spec = parse_alert(
        {"name": "Daily budget", "metric": "cost", "threshold": 0.5, "window": {"type": "calendar", "period": "day"}}
    )
    alert = alert_services.alert_create(team_id=team.id, spec=spec, actor="test")[0]
    sign_in(page, owner_user)
    page.goto(f"/alerts/{alert.pk}")
    expect(page.locator(".lead")).to_have_text("Cost ≥ $0.50 this day (UTC).")  # not "$0.5000 … (UTC) ."
    shoot(page, "plain-words-alert")
    page.goto("/alerts")
    expect(page.get_by_role("row", name="Daily budget")).to_contain_text("Cost ≥ $0.50 this day (UTC)")


@pytest.mark.usefixtures("worker", "calls")
def test_a_run_without_a_mail_server_says_it_was_not_emailed(page, sign_in, shoot, owner_user, team, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"  # no EMAIL_URL: the log
    definition = parse_definition(
        {"name": "Daily spend", "time_range": "24h", "group_by": "model", "recipients": ["cfo@example.com"]}
    )
    report = report_services.report_create(team_id=team.id, definition=definition, actor="test")
    sign_in(page, owner_user)
    page.goto(f"/reports/{report.pk}")
    page.get_by_role("button", name="Run now").click()
    runs = page.locator("#runs")
    expect(runs.get_by_text("Succeeded")).to_be_visible(timeout=15_000)
    expect(runs).to_contain_text("Not emailed: no mail server is configured (EMAIL_URL); written to the log")
    expect(runs).not_to_contain_text("Emailed to")
    shoot(page, "plain-words-report-not-emailed")


def test_titles_are_plain_and_the_feed_has_one_name(page, sign_in, shoot, owner_user, team):
    sign_in(page, owner_user)
    expect(page).to_have_title("Send your first trace · tracerelay")
    nav = page.get_by_role("navigation", name="Main")
    expect(nav.get_by_role("link", name="Overview")).to_have_count(0)
    expect(nav.get_by_role("link", name="Traces")).to_have_count(1)
    page.goto("/settings/team")
    expect(page).to_have_title("Team · tracerelay")
    expect(page.get_by_role("heading", name="Delete the team")).to_be_visible()  # on the page, not in the title
    shoot(page, "plain-words-team-settings")
    TraceFactory(team=team)
    page.get_by_role("link", name="tracerelay home").click()
    expect(page).to_have_url(re.compile(r"/traces$"))
    expect(page).to_have_title("Traces · tracerelay")
    expect(nav.get_by_role("link", name="Traces")).to_have_attribute("aria-current", "page")
