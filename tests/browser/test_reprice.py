"""/settings/prices/reprice in the browser: an owner re-prices a week of traces stored at a wrong
price; the job shows in the list, and the list follows it (htmx polling) to its end without a reload."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from accounts.models import Role
from repricing import services
from repricing.models import RepriceJob

from ..factories import MembershipFactory, TraceFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_owner_reprices_a_week_and_watches_it_finish(page, sign_in, shoot, team, monkeypatch):
    monkeypatch.setattr(services, "dispatch", lambda job_id: None)  # run below, by hand, as a worker would
    owner = MembershipFactory(team=team, user=UserFactory(username="ada@example.com"), role=Role.OWNER).user
    now = timezone.now()
    for i in range(12):
        TraceFactory(team=team, timestamp=now - timedelta(hours=3 * i + 1), cost=Decimal("0.5"))
    sign_in(page, owner)
    page.goto("/settings/prices/reprice")
    expect(page.get_by_role("heading", name="No re-pricing jobs yet")).to_be_visible()
    page.get_by_label("From (UTC)").fill((now - timedelta(days=7)).strftime("%Y-%m-%dT%H:%M"))
    page.get_by_label("To (UTC)").fill((now + timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M"))
    page.get_by_label("Model").fill("gpt*4o")
    page.get_by_role("button", name="Re-price").click()
    expect(page.locator("#id_model_error")).to_contain_text("trailing *")
    page.get_by_label("Model").fill("gpt-4o*")
    page.get_by_role("button", name="Re-price").click()
    job = RepriceJob.objects.get(team=team)
    row = page.locator(f"#reprice-job-{job.pk}")
    expect(row).to_contain_text("pending")
    expect(row).to_contain_text("gpt-4o*")
    shoot(page, "reprice-pending")
    services.job_run(job_id=job.pk)
    expect(row).to_contain_text("succeeded", timeout=15_000)  # the poll brings it, no reload
    expect(row).to_contain_text("12 / 12")
    expect(page.locator("#reprice-jobs")).not_to_have_attribute("hx-trigger", "every 2s")
    shoot(page, "reprice-done")
