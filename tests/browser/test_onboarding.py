"""Onboarding that moves forward (issue 23, item 3), in the browser: a key made on "Send your first
trace" ticks step 1 and fills the proxy, SDK (Python and TypeScript) and curl snippets; the key is
shown once; a trace sent with the copied curl line turns the page into the feed."""

from __future__ import annotations

import re
import subprocess

import pytest
from playwright.sync_api import expect

from accounts.models import Role

from ..factories import MembershipFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def owner_user(team):
    return MembershipFactory(team=team, user=UserFactory(username="linus@example.com"), role=Role.OWNER).user


def test_a_key_made_on_the_first_page_is_in_every_snippet_and_the_copied_curl_works(page, sign_in, shoot, owner_user):
    sign_in(page, owner_user)
    expect(page.get_by_role("heading", name="Send your first trace")).to_be_visible()
    step = page.locator("#step-key")
    expect(step.locator(".step-num")).to_have_text("1")
    page.get_by_label("Name").fill("laptop")
    page.get_by_role("button", name="Create an API key").click()

    expect(step).to_have_class(re.compile(r"\bis-done\b"))
    expect(step.locator(".step-num")).to_have_text("✓")
    raw = page.locator("#new-key").inner_text()
    assert raw.startswith("tr_prod_")
    for snippet in ("#snippet-proxy", "#snippet-python", "#snippet-typescript", "#snippet-curl"):
        expect(page.locator(snippet)).to_contain_text(raw)
    expect(page.locator("#snippet-python")).to_have_text(re.compile(r"^import tracerelay\ntracerelay\.init\(.*\)$"))
    expect(page.locator("#snippet-typescript")).to_have_text(
        re.compile(r'^import \{ init \} from "tracerelay";\ninit\(\{ .* \}\);$')
    )
    shoot(page, "home-key-created")

    # the copied curl line, run as is, sends the first trace; the page then turns into the feed
    page.locator("[data-copy=snippet-curl]").click()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert raw in copied
    done = subprocess.run(
        ["bash", "-c", copied + " -sS -o /dev/null -w '%{http_code}'"], capture_output=True, text=True
    )
    assert done.stdout == "201", done
    expect(page).to_have_url(re.compile(r"/traces$"), timeout=15_000)  # the page polls every 5 s

    # shown once: the key is not on the page any more
    page.goto("/settings/api-keys")
    expect(page.get_by_text(raw)).to_have_count(0)
