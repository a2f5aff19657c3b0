"""A feed you can scan (issue 23, item 2), in the browser: one line per trace, at least 18 rows in a
1280×800 window with the default columns; tags and metadata collapse to the first chip and "+N", all
of them on hover and on focus; the environment badge only off the team's usual one; columns a person
chooses, kept server side (another browser sees them); status and cost beside time and model on a
phone."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from accounts.models import Role

from ..factories import MembershipFactory, TraceFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MODELS = ["gpt-4o", "claude-3-5-sonnet-20241022", "gpt-4o-mini", "gemini-1.5-pro-002", "llama-3.1-70b-versatile"]


@pytest.fixture
def person(team):
    return MembershipFactory(team=team, user=UserFactory(username="ada@example.com"), role=Role.MEMBER).user


@pytest.fixture
def traces(team):
    now = timezone.now()
    made = []
    for i in range(60):
        made.append(
            TraceFactory(
                team=team,
                trace_id=f"t-{i:03d}",
                model=MODELS[i % len(MODELS)],
                timestamp=now - timedelta(minutes=i),
                environment="staging" if i % 10 == 3 else "production",
                status=["success", "success", "error", "rate_limited"][i % 4],
                cost=None if i % 7 == 0 else Decimal("0.0123") * (i + 1),
                unpriced=i % 7 == 0,
                tags=["beta", "checkout", "eu-west"][: i % 4],
                metadata={"sdk": {"name": "tracerelay", "version": "1.2"}, "plan": "pro", "ok": True} if i % 2 else {},
                destinations=["langfuse", "datadog"] if i % 3 else ["langfuse"],
                session_id=f"session-{i // 5}",
                user_id=f"user-{i % 9}",
                service_name="checkout-api",
                run_id=f"run-{i // 3}",
                input=[
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": f"Question number {i}?"},
                ],
            )
        )
    return made


ROWS_IN_VIEW = """() => [...document.querySelectorAll("tr.feed-row")].filter((r) => {
    const b = r.getBoundingClientRect(); return b.top >= 0 && b.bottom <= window.innerHeight; }).length"""
ROW_HEIGHTS = """() => [...document.querySelectorAll("tr.feed-row")].map((r) => r.getBoundingClientRect().height)"""


def test_the_feed_is_one_line_per_trace_and_shows_18_rows_at_1280x800(page, sign_in, shoot, person, traces):
    sign_in(page, person)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto("/traces")
    expect(page.get_by_role("link", name="open trace t-000")).to_be_visible()
    heights = page.evaluate(ROW_HEIGHTS)
    assert max(heights) < 40 and max(heights) - min(heights) < 2, heights  # one line each, all alike
    assert page.evaluate(ROWS_IN_VIEW) >= 18
    page.screenshot(path="tests/browser/screenshots/feed-1280x800.png")

    # tags and metadata: the first chip and "+N"; all of them on hover, as JSON values
    row = page.locator("#t-" + str(traces[3].pk))
    cell = row.locator(".tags-cell")
    expect(cell.locator(":scope > .chip:not(.chip-more)")).to_have_count(1)
    more = cell.get_by_role("button", name="5 more: show all 6 tags and metadata")
    expect(more).to_have_text("+5")
    more.hover()
    pop = cell.locator(".chips-pop")
    expect(pop).to_be_visible()
    expect(pop).to_contain_text('sdk={"name": "tracerelay", "version": "1.2"}')
    expect(pop).to_contain_text("ok=true")
    expect(pop).to_contain_text("eu-west")
    page.screenshot(path="tests/browser/screenshots/feed-chips-hover.png")
    page.mouse.move(5, 5)
    expect(pop).to_be_hidden()
    more.focus()  # the keyboard gets them too
    expect(pop).to_be_visible()
    page.keyboard.press("Tab")
    expect(pop).to_be_hidden()

    # the environment badge: only where it is not the team's usual one (production here)
    expect(page.locator("tr.feed-row .model-cell .badge")).to_have_text(["staging"] * 5)
    expect(page.locator("#t-" + str(traces[3].pk)).locator(".model-cell")).to_contain_text("staging")
    shoot(page, "feed")


def test_chosen_columns_are_kept_for_the_person(page, new_page, sign_in, shoot, person, traces):
    sign_in(page, person)
    page.goto("/traces?status=error")
    page.get_by_text("Columns", exact=True).click()
    page.get_by_role("checkbox", name="Session").check()
    page.get_by_role("checkbox", name="Prompt preview").check()
    page.get_by_role("checkbox", name="Run").check()
    page.get_by_role("button", name="Show these columns").click()
    expect(page).to_have_url("/traces?status=error")  # back to the same filter
    headers = page.locator("thead th")
    expect(headers).to_have_text(
        ["Time", "Model", "Cost", "Status", "Session", "Run", "Prompt preview", "Tokens", "Latency", "Provider",
         "Destinations", "Tags and metadata"]
    )  # fmt: skip
    first = page.locator("tr.feed-row").first
    expect(first.locator(".prompt-cell")).to_have_text("Question number 2?")
    expect(first.get_by_role("link", name="session-0")).to_have_attribute("href", "/sessions/session-0")
    assert page.evaluate(ROWS_IN_VIEW) >= 10
    shoot(page, "feed-columns")

    other = new_page()  # another browser of the same person: the choice is kept on the server
    sign_in(other, person)
    other.goto("/traces")
    expect(other.locator("thead th.col-prompt")).to_have_text("Prompt preview")
    expect(other.locator("tr.feed-row").first.locator(".prompt-cell")).to_have_text("Question number 0?")

    other.locator("#columns-menu > summary").click()
    other.get_by_role("checkbox", name="Prompt preview").uncheck()
    other.get_by_role("checkbox", name="Session").uncheck()
    other.get_by_role("checkbox", name="Run").uncheck()
    other.get_by_role("button", name="Show these columns").click()
    expect(other.locator("thead th")).to_have_count(9)


def test_on_a_phone_status_and_cost_sit_beside_time_and_model(page, sign_in, person, traces):
    sign_in(page, person)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/traces")
    expect(page.get_by_role("link", name="open trace t-000")).to_be_visible()
    for row in page.locator("tr.feed-row").all()[:12]:
        for cell in row.locator("td").all()[:4]:  # time, model, cost, status
            box = cell.bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390, (cell.inner_text(), box)
    page.screenshot(path="tests/browser/screenshots/feed-390.png")
