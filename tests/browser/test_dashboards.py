"""/dashboards in the browser: a member makes a board, adds widgets (a bad filter shown next to its
field first), reorders, duplicates and deletes one; the board draws a number, lines, bars and a
table from the team's traces; a viewer reads only."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from accounts.models import Role
from dashboards import services
from dashboards.definition import parse_board

from ..factories import MembershipFactory, TraceFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def calls(team):
    now = timezone.now()
    models = (("gpt-4o", "openai", "0.30"), ("gpt-4o-mini", "openai", "0.02"), ("claude-sonnet-4", "anthropic", "0.45"))
    for h in range(0, 20, 2):  # all within the last 24 hours, whatever the minute
        for i, (model, provider, cost) in enumerate(models):
            TraceFactory(
                team=team,
                model=model,
                provider=provider,
                timestamp=now - timedelta(hours=h, minutes=7 * i),
                cost=Decimal(cost),
                latency_ms=300 + 150 * i + 20 * h,
                status="error" if (h + i) % 7 == 0 else "success",
            )


def widget_cards(page):
    return page.locator("section.widget h2")


def test_a_member_builds_a_board(page, sign_in, shoot, team, calls):
    member = MembershipFactory(team=team, user=UserFactory(username="mia@example.com"), role=Role.MEMBER).user
    sign_in(page, member)
    page.goto("/")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Dashboards").click()
    shoot(page, "dashboards-empty")
    page.get_by_label("Name").fill("Spend and errors")
    page.get_by_role("button", name="New dashboard").click()
    expect(page.get_by_role("heading", name="Spend and errors")).to_be_visible()

    page.get_by_role("link", name="Add widget").first.click()
    page.get_by_label("Title").fill("Cost today")
    page.get_by_label("Figure").select_option("cost")
    page.get_by_label("Drawn as").select_option("number")
    page.get_by_label("Other filters").fill("cost_min=cheap")
    page.get_by_role("button", name="Add widget").click()
    expect(page.locator("#id_other_filters_error")).to_contain_text("cost_min: Must be a number")
    shoot(page, "dashboards-widget-error")
    page.get_by_label("Other filters").fill("")
    page.get_by_role("button", name="Add widget").click()
    expect(page.get_by_role("status")).to_contain_text("Widget added")

    for title, metric, chart, group_by, time_range in (
        ("Calls per hour", "count", "line", "", "24h"),
        ("Cost by model", "cost", "bar", "model", "7d"),
        ("Latency p95 by provider", "latency_p95", "line", "provider", "24h"),
        ("Errors by model", "errors", "table", "model", "7d"),
    ):
        page.get_by_role("link", name="Add widget").first.click()
        page.get_by_label("Title").fill(title)
        page.get_by_label("Figure").select_option(metric)
        page.get_by_label("Drawn as").select_option(chart)
        page.get_by_label("Group by").select_option(group_by)
        page.get_by_label("Range").select_option(time_range)
        page.get_by_role("button", name="Add widget").click()
        expect(page.get_by_role("status")).to_contain_text("Widget added")

    expect(widget_cards(page)).to_have_text(
        ["Cost today", "Calls per hour", "Cost by model", "Latency p95 by provider", "Errors by model"]
    )
    expect(page.get_by_role("link", name="Cost today: $7.70, open these traces")).to_be_visible()
    expect(page.locator("#widget-3 .legend")).to_contain_text("anthropic")
    expect(page.locator("#widget-2")).to_contain_text("claude-sonnet-4")
    assert page.locator("#widget-1 svg path.line").count() == 1
    shoot(page, "dashboards-board")

    page.get_by_role("button", name="Move up Errors by model").click()
    expect(widget_cards(page).nth(3)).to_have_text("Errors by model")
    page.get_by_role("button", name="Duplicate Cost today").click()
    expect(widget_cards(page)).to_have_count(6)
    page.get_by_role("button", name="Delete Cost today").first.click()
    expect(widget_cards(page)).to_have_text(
        ["Cost today", "Calls per hour", "Cost by model", "Errors by model", "Latency p95 by provider"]
    )
    page.get_by_role("link", name="Edit Calls per hour").click()
    page.get_by_label("Drawn as").select_option("bar")
    page.get_by_role("button", name="Save widget").click()
    expect(page.get_by_role("status")).to_contain_text("Widget saved")
    assert page.locator("#widget-1 svg a.bar").count() > 0
    shoot(page, "dashboards-board-edited")

    # A bar opens the traces behind it.
    page.locator("#widget-2 table a").first.click()
    expect(page).to_have_url(re.compile(r"/traces\?.*model="))


def test_a_viewer_reads_a_board(page, sign_in, shoot, team, calls):
    board = parse_board(
        {
            "name": "Team board",
            "widgets": [
                {"title": "Calls", "metric": "count", "chart": "number"},
                {"title": "Error rate per hour", "metric": "error_rate", "chart": "bar", "interval": "hour"},
            ],
        }
    )
    dashboard = services.dashboard_create(team_id=team.pk, board=board, actor="test")
    viewer = MembershipFactory(team=team, user=UserFactory(username="vic@example.com"), role=Role.VIEWER).user
    sign_in(page, viewer)
    page.goto("/dashboards")
    expect(page.get_by_role("button", name="New dashboard")).to_have_count(0)
    page.get_by_role("link", name="Team board").click()
    expect(page).to_have_url(f"{page.url.split('/dashboards')[0]}/dashboards/{dashboard.pk}")
    expect(page.get_by_role("link", name="Calls: 30, open these traces")).to_be_visible()
    expect(page.get_by_role("link", name="Add widget")).to_have_count(0)
    expect(page.get_by_role("button", name="Move down Calls")).to_have_count(0)
    shoot(page, "dashboards-viewer")
