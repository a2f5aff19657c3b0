"""/alerts in the browser: an admin makes a budget alert (a refused webhook address shown next to
its field first), copies the signing secret, and after spend crosses the budget sees it firing
with its history; a viewer reads only."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from accounts.models import Role
from alerts import services
from alerts.models import Alert

from ..factories import MembershipFactory, TraceFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_admin_makes_an_alert_and_sees_it_fire(page, sign_in, shoot, team, settings):
    settings.TRACERELAY_ALLOW_PRIVATE_DESTINATIONS = True
    admin = MembershipFactory(team=team, user=UserFactory(username="ada@example.com"), role=Role.ADMIN).user
    sign_in(page, admin)
    page.goto("/alerts")
    page.get_by_role("link", name="New alert").click()
    page.get_by_label("Name").fill("Daily budget")
    page.get_by_label("Threshold").fill("1.50")
    # Only the chosen window type's field shows: minutes for a rolling window, a calendar period else.
    page.get_by_label("Over").select_option("rolling")
    expect(page.get_by_label("Minutes")).to_be_visible()
    expect(page.get_by_label("Period")).to_be_hidden()
    page.get_by_label("Over").select_option("calendar")
    expect(page.get_by_label("Minutes")).to_be_hidden()
    expect(page.get_by_label("Period")).to_be_visible()
    # Enabled is a checkbox with its label beside it, as every other form's.
    enabled = page.locator(".field-check", has=page.get_by_label("Enabled"))
    expect(enabled.locator("label.choice")).to_contain_text("Enabled")
    expect(page.get_by_label("Enabled")).to_be_checked()
    page.get_by_label("Period").select_option("day")
    page.get_by_label("Model").fill("gpt-4o*")
    page.get_by_label("Webhooks").fill("http://169.254.169.254/latest/meta-data")
    page.get_by_role("button", name="Save alert").click()
    expect(page.locator("#id_webhooks_error")).to_contain_text("metadata")
    shoot(page, "alerts-form-error")
    page.get_by_label("Webhooks").fill("")
    page.get_by_role("button", name="Save alert").click()
    expect(page.get_by_role("heading", name="Webhook signing secret")).to_be_visible()
    expect(page.locator("#new-secret")).to_contain_text("whsec_")
    shoot(page, "alert-created")

    alert = Alert.objects.get(team=team, name="Daily budget")
    now = timezone.now()
    TraceFactory(team=team, model="gpt-4o", cost=Decimal("2"), timestamp=now - timedelta(minutes=1))
    services.evaluate(alert.pk, timezone.now())
    page.reload()
    expect(page.locator("h1 .badge")).to_have_text("Firing")
    expect(page.get_by_role("heading", name="Webhook signing secret")).to_have_count(0)  # shown once
    expect(page.get_by_role("cell", name="Fired")).to_be_visible()
    shoot(page, "alert-firing")
    page.goto("/alerts")
    expect(page.locator(f"#alert-{alert.pk}")).to_contain_text("$2")
    shoot(page, "alerts-list")


def test_a_viewer_reads_alerts(page, sign_in, shoot, team):
    services.ensure_builtin_alerts()
    viewer = MembershipFactory(team=team, user=UserFactory(username="vic@example.com"), role=Role.VIEWER).user
    sign_in(page, viewer)
    page.goto("/alerts")
    expect(page.get_by_role("link", name="New alert")).to_have_count(0)
    page.get_by_role("link", name="Unpriced traffic").click()
    expect(page.get_by_role("button", name="Turn off")).to_have_count(0)
    expect(page.locator(".kv")).to_contain_text("the team's owners and admins")
    shoot(page, "alert-viewer")
