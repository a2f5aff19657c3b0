"""A trace shared from its page: the owner scores it thumbs up and shares it; the link opens in a
browser with no session, shows the call and no metadata; revoked, it says the link does not work.
Screenshots of the trace page's feedback cards and of the public page."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from accounts.models import Role

from ..factories import MembershipFactory, TraceFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_share_a_trace_open_it_signed_out_and_revoke_it(new_page, sign_in, shoot, team):
    owner = MembershipFactory(team=team, user=UserFactory(username="sam@example.com"), role=Role.OWNER).user
    TraceFactory(
        team=team,
        trace_id="trc-browser-share",
        input={"messages": [{"role": "user", "content": "Summarise our refund policy"}]},
        output={"role": "assistant", "content": "Refunds within 30 days."},
        metadata={"customer": "acme-secret"},
    )
    page = new_page()
    sign_in(page, owner)
    page.goto("/traces/trc-browser-share")
    page.get_by_label("Comment").fill("clear and short")
    page.get_by_role("button", name="Thumbs up").click()
    expect(page.get_by_text("clear and short")).to_be_visible()
    page.get_by_role("button", name="Share").click()
    message = page.get_by_text(re.compile(r"Public link")).first
    expect(message).to_be_visible()
    url = re.search(r"https?://\S+/share/[A-Za-z0-9_-]+", message.inner_text()).group(0)
    shoot(page, "trace-feedback-share")

    public = new_page()  # a fresh context: no session
    public.goto(url)
    expect(public.get_by_role("heading", name=re.compile("gpt-4o"))).to_be_visible()
    expect(public.get_by_text("Refunds within 30 days.")).to_be_visible()
    assert "acme-secret" not in public.content()
    shoot(public, "shared-trace")

    page.get_by_role("button", name=re.compile("Revoke link")).click()
    expect(page.get_by_text("Link revoked")).to_be_visible()
    public.goto(url)
    expect(public.get_by_role("heading", name="This link does not work")).to_be_visible()
    shoot(public, "shared-trace-gone")
