"""/reports in the browser: an admin makes a report (a bad crontab shown next to its field first),
runs it, watches the run finish without reloading, and downloads the CSV; a viewer reads only."""

from __future__ import annotations

import threading
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone
from playwright.sync_api import expect

from accounts.models import Role
from reports import services
from reports.definition import parse_definition

from ..factories import MembershipFactory, TraceFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker(monkeypatch):
    """A run is carried out shortly after it is queued, as a worker would (tests/e2e has a real one)."""

    def run_later(name: str, args: list[Any], **kwargs: Any) -> None:
        def work() -> None:
            try:
                services.run_execute(run_id=args[0], final=True)
            finally:
                connection.close()

        threading.Timer(0.8, work).start()

    monkeypatch.setattr(services.app, "send_task", run_later)


def test_an_admin_makes_runs_and_downloads_a_report(page, sign_in, shoot, team, worker):
    now = timezone.now()
    for m, h in (("gpt-4o", 2), ("gpt-4o-mini", 20), ("claude-sonnet-4", 40)):
        TraceFactory(team=team, model=m, timestamp=now - timedelta(hours=h), cost=Decimal("0.3"))
    admin = MembershipFactory(team=team, user=UserFactory(username="ada@example.com"), role=Role.ADMIN).user
    sign_in(page, admin)
    page.goto("/reports")
    shoot(page, "reports-empty")
    page.get_by_role("link", name="New report").click()
    page.get_by_label("Name").fill("Weekly cost by model")
    page.get_by_label("Group by").select_option("model")
    page.get_by_label("Email to").fill("finance@example.com")
    page.get_by_label("Leave out groups with no traffic").check()
    # The schedule: only the chosen kind's fields show; a crontab is "custom".
    schedule = page.get_by_label("Schedule")
    for hidden in ("At (UTC)", "Day of the week", "Day of the month", "Crontab"):
        expect(page.get_by_label(hidden)).to_be_hidden()
    schedule.select_option("custom")
    expect(page.get_by_label("Crontab")).to_be_visible()
    expect(page.get_by_label("At (UTC)")).to_be_hidden()
    page.get_by_label("Crontab").fill("every monday")
    page.get_by_role("button", name="Save report").click()
    expect(page.locator("#id_schedule_error")).to_contain_text("crontab")
    shoot(page, "reports-form-error")
    page.get_by_label("Schedule").select_option("weekly")
    expect(page.get_by_label("Crontab")).to_be_hidden()
    expect(page.get_by_label("Day of the month")).to_be_hidden()
    expect(page.get_by_label("Day of the week")).to_be_visible()
    page.get_by_label("Day of the week").select_option("Monday")
    page.get_by_label("At (UTC)").fill("8:30")
    page.get_by_label("Email to").fill("")
    shoot(page, "reports-form-weekly")
    page.get_by_role("button", name="Save report").click()
    expect(page.get_by_role("heading", name="Weekly cost by model")).to_be_visible()
    expect(page.get_by_role("status")).to_contain_text("saved")
    expect(page.locator(".lead")).to_contain_text("Mondays at 08:30 UTC")
    expect(page.locator(".lead")).to_contain_text("groups with no traffic left out")

    page.get_by_role("button", name="Run now").click()
    expect(page.locator("#runs")).to_contain_text("Pending")
    expect(page.locator("#runs").get_by_text("Succeeded")).to_be_visible(timeout=15_000)  # polled, no reload
    with page.expect_download() as download:
        page.get_by_role("link", name="Download CSV of run", exact=False).first.click()
    text = open(download.value.path(), encoding="utf-8-sig").read()
    assert text.startswith("period_start,group,count") and "gpt-4o-mini" in text
    days = [line for line in text.splitlines()[1:] if line]
    assert len(days) == 3  # by day (the period's default), one row per model with traffic
    shoot(page, "report-detail")
    page.goto("/reports")
    expect(page.get_by_role("link", name="Weekly cost by model", exact=True)).to_be_visible()
    shoot(page, "reports-list")


def test_a_viewer_reads_reports(page, sign_in, shoot, team):
    d = parse_definition({"name": "Daily spend", "time_range": "24h", "formats": ["pdf"], "schedule": "0 6 * * *"})
    report = services.report_create(team_id=team.id, definition=d, actor="test")
    viewer = MembershipFactory(team=team, user=UserFactory(username="vic@example.com"), role=Role.VIEWER).user
    sign_in(page, viewer)
    page.goto("/reports")
    expect(page.get_by_role("link", name="New report")).to_have_count(0)
    page.get_by_role("link", name="Daily spend").click()
    expect(page).to_have_url(f"{page.url.split('/reports')[0]}/reports/{report.pk}")
    expect(page.get_by_role("button", name="Run now")).to_have_count(0)
    expect(page.get_by_role("link", name="Edit")).to_have_count(0)
    shoot(page, "report-viewer")
