"""Lists and forms in the browser: /users sorted by a column's header (calls, cost, errors, last
seen), counts with thousands separators; the debug-mode banner on every page while it is on."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from accounts.models import Role
from debugmode import state
from debugmode.services import debug_mode_enable

from ..factories import MembershipFactory, TraceFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_users_sort_by_the_column_chosen(page, sign_in, shoot, team):
    now = timezone.now()
    for i, (user, calls, cost, errors) in enumerate(
        [("ada@example.com", 1, "0.002", 0), ("bob@example.com", 4, "0.90", 0), ("cy@example.com", 2, "0.01", 2)]
    ):
        for j in range(calls):
            TraceFactory(
                team=team,
                user_id=user,
                timestamp=now - timedelta(minutes=10 * i + j + 1),
                cost=Decimal(cost),
                status="error" if j < errors else "success",
                total_tokens=1500,
            )
    viewer = MembershipFactory(team=team, user=UserFactory(username="vic@example.com"), role=Role.VIEWER).user
    sign_in(page, viewer)
    page.goto("/users")
    first = page.locator("tbody tr td.id-cell code").first
    expect(first).to_have_text("ada@example.com")  # the most recently active
    page.get_by_role("link", name="Cost", exact=True).click()
    expect(page).to_have_url(re.compile(r"sort=cost$"))
    expect(first).to_have_text("bob@example.com")
    expect(page.locator("th[aria-sort=descending] a.is-sorted")).to_have_text("Cost")
    expect(page.locator("tbody tr").first).to_contain_text("6,000")  # 4 × 1,500 tokens
    page.get_by_role("link", name="Errors", exact=True).click()
    expect(first).to_have_text("cy@example.com")
    page.get_by_role("button", name="Show").click()  # the time range form keeps the order
    expect(first).to_have_text("cy@example.com")
    shoot(page, "users-sorted")


def test_the_debug_banner_shows_on_every_page_while_on(page, sign_in, shoot, team):
    admin = MembershipFactory(team=team, user=UserFactory(username="ada@example.com"), role=Role.ADMIN).user
    sign_in(page, admin)
    page.goto("/traces")
    expect(page.get_by_role("note", name="Debug mode")).to_have_count(0)
    debug_mode_enable(team_id=team.pk, duration="1h", actor="user:test")
    state.forget()
    for path in ("/traces", "/analytics", "/routing", "/reports", "/settings/team"):
        page.goto(path)
        banner = page.get_by_role("note", name="Debug mode")
        expect(banner).to_contain_text("Debug mode is on")
        expect(banner.get_by_role("link", name="Turn it off in Advanced settings")).to_be_visible()
    shoot(page, "debug-banner")
    page.get_by_role("link", name="Turn it off in Advanced settings").click()
    expect(page).to_have_url(re.compile(r"/settings/advanced$"))
