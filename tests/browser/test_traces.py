"""The trace pages in the browser: a trace posted with an API key appears live in the open feed;
filtering it (the URL follows); pause and resume with a count; opening it; retrying a delivery;
sessions, users and a conversation. Screenshots of every page at 1280 and 390 px."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import expect

from accounts.models import Role
from delivery.models import Delivery
from traces.models import Trace

from ..factories import ApiKeyFactory, MembershipFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def owner_user(team):
    return MembershipFactory(team=team, user=UserFactory(username="olga@example.com"), role=Role.OWNER).user


def _post(live: str, raw: str, **trace: object) -> None:
    response = httpx.post(f"{live}/api/v1/traces", headers={"Authorization": f"Bearer {raw}"}, json=trace)
    assert response.status_code in (200, 201, 202), response.text


def test_a_trace_appears_live_is_filtered_paused_and_opened(page, sign_in, shoot, owner_user, team, live):
    key = ApiKeyFactory(team=team)
    sign_in(page, owner_user)
    page.goto("/traces")
    expect(page.get_by_role("heading", name="No traces yet")).to_be_visible()
    shoot(page, "traces-empty")

    _post(live, key._raw, id="live-one", model="gpt-4o", prompt_tokens=12, completion_tokens=3, tags=["beta"],
          metadata={"plan": "pro"}, session_id="s-42", user_id="u-7", input=[{"role": "user", "content": "Hi there"}],
          output={"role": "assistant", "content": "Hello!"})  # fmt: skip
    expect(page.get_by_role("link", name="open trace live-one")).to_be_visible(timeout=8000)  # no reload
    _post(live, key._raw, id="live-two", model="claude-3-5-haiku", provider="anthropic", status="error",
          session_id="s-42", input=[{"role": "user", "content": "And again?"}])  # fmt: skip
    expect(page.get_by_role("link", name="open trace live-two")).to_be_visible(timeout=8000)
    shoot(page, "traces-feed")

    # filter: the table is swapped, the URL is the filter (shareable), and it survives a reload
    page.get_by_label("Model").fill("gpt-4*")
    page.get_by_role("button", name="Apply filters").click()
    expect(page.get_by_role("link", name="open trace live-two")).to_have_count(0)
    expect(page.get_by_role("link", name="open trace live-one")).to_be_visible()
    expect(page).to_have_url(re.compile(r"/traces\?model=gpt-4%2A$"))
    page.reload()
    expect(page.get_by_label("Model")).to_have_value("gpt-4*")
    expect(page.get_by_role("link", name="open trace live-two")).to_have_count(0)
    shoot(page, "traces-feed-filtered")

    # a bad filter: an error next to the field
    page.get_by_label("Status").select_option("error")
    page.get_by_text("More filters").click()
    page.get_by_label("Cost from (USD)").fill("cheap")
    page.get_by_role("button", name="Apply filters").click()
    expect(page.get_by_text("Must be a number.")).to_be_visible()
    shoot(page, "traces-feed-error")
    page.get_by_role("link", name="Clear filters").click()
    expect(page.get_by_role("link", name="open trace live-two")).to_be_visible()

    # pause: arrivals are counted, not shown; resume shows them
    page.get_by_role("button", name="Pause").click()
    expect(page.get_by_text("no new traces yet")).to_be_visible()
    _post(live, key._raw, id="while-paused", model="gpt-4o-mini")
    expect(page.get_by_text("1 new trace")).to_be_visible(timeout=8000)
    expect(page.get_by_role("link", name="open trace while-paused")).to_have_count(0)
    shoot(page, "traces-feed-paused")
    page.get_by_role("button", name="Resume").click()
    expect(page.get_by_role("link", name="open trace while-paused")).to_be_visible(timeout=8000)

    # open one
    page.get_by_role("link", name="open trace live-one").click()
    expect(page.get_by_role("heading", name="Cost")).to_be_visible()
    expect(page.get_by_role("region", name="Conversation").get_by_text("Hello!")).to_be_visible()
    shoot(page, "trace-detail")

    # sessions, users, the conversation
    page.goto("/sessions")
    expect(page.get_by_role("link", name="Traces of session s-42")).to_be_visible()
    shoot(page, "sessions")
    page.get_by_role("link", name="conversation").click()
    expect(page.get_by_text("Hi there")).to_be_visible()
    expect(page.get_by_text("And again?")).to_be_visible()
    shoot(page, "session-conversation")
    page.goto("/users")
    page.get_by_role("link", name="Traces of user u-7").click()
    expect(page).to_have_url(re.compile(r"/traces\?time_range=24h&user_id=u-7$"))
    expect(page.get_by_role("link", name="open trace live-one")).to_be_visible()
    expect(page.get_by_role("link", name="open trace live-two")).to_have_count(0)
    page.goto("/users")
    shoot(page, "users")


def test_a_member_retries_a_dead_delivery(page, sign_in, shoot, owner_user, team, live):
    key = ApiKeyFactory(team=team)
    _post(live, key._raw, id="to-retry", model="gpt-4o", prompt_tokens=5, completion_tokens=5)
    trace = Trace.objects.get(team=team, trace_id="to-retry")
    dead = Delivery.objects.create(
        team=team, trace=trace, destination="langfuse", status="dead", attempts=8, last_error="HTTP 503: unavailable"
    )
    sign_in(page, owner_user)
    page.goto("/traces/to-retry")
    expect(page.get_by_text("HTTP 503: unavailable")).to_be_visible()
    page.get_by_role("button", name="Retry delivery to langfuse").click()
    expect(page.get_by_role("status")).to_contain_text("Delivery to langfuse queued again")
    dead.refresh_from_db()
    assert dead.replay_count == 1
    shoot(page, "trace-detail-retried")
