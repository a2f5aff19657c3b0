"""The feed's Export menu in the browser (docs/export.md): a member filters the feed and downloads the
filter's traces as CSV and JSON Lines, served by the real ASGI server (streamed). Screenshots of the
open menu at 1280 and 390 px; axe on it."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import orjson
import pytest
from django.utils import timezone
from playwright.sync_api import expect

from accounts.models import Role

from ..factories import MembershipFactory, TraceFactory, UserFactory
from .conftest import NARROW, WIDE
from .test_every_page import _violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_member_exports_the_filtered_feed(page, sign_in, shoot, team, tmp_path):
    member = MembershipFactory(team=team, user=UserFactory(username="mia@example.com"), role=Role.MEMBER).user
    now = timezone.now()
    for i in range(60):  # more than a feed page
        TraceFactory(
            team=team,
            trace_id=f"exp-{i:02}",
            model="gpt-4o" if i % 2 else "claude-3-5-haiku",
            provider="openai" if i % 2 else "anthropic",
            timestamp=now - timedelta(seconds=i),
        )
    sign_in(page, member)
    page.goto("/traces?model=gpt-4o")
    expect(page.get_by_role("link", name="open trace exp-01")).to_be_visible()
    page.get_by_text("Export", exact=True).click()
    menu = page.locator("#export-menu")
    expect(menu.get_by_role("link", name="CSV")).to_be_visible()
    expect(menu.get_by_text("The traces these filters match")).to_be_visible()
    for width, height in (WIDE, NARROW):
        page.set_viewport_size({"width": width, "height": height})
        assert _violations(page) == [], width
    page.set_viewport_size({"width": WIDE[0], "height": WIDE[1]})
    shoot(page, "traces-export-menu")

    with page.expect_download() as csv_download:
        menu.get_by_role("link", name="CSV").click()
    download = csv_download.value
    assert download.suggested_filename.startswith("traces-") and download.suggested_filename.endswith(".csv")
    path = tmp_path / "traces.csv"
    download.save_as(path)
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    assert [r["id"] for r in rows] == [f"exp-{i:02}" for i in range(1, 60, 2)]  # every page, newest first

    if not menu.evaluate("el => el.open"):  # a download leaves the page (and the menu) as it was
        page.get_by_text("Export", exact=True).click()
    with page.expect_download() as jsonl_download:
        menu.get_by_role("link", name="JSON Lines").click()
    path = tmp_path / "traces.jsonl"
    jsonl_download.value.save_as(path)
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    assert [line["id"] for line in lines] == [f"exp-{i:02}" for i in range(1, 60, 2)]
    assert {line["model"] for line in lines} == {"gpt-4o"}


def test_a_bad_filter_is_not_exported(page, sign_in, team):
    member = MembershipFactory(team=team, user=UserFactory(username="max@example.com"), role="viewer").user
    sign_in(page, member)
    response = page.request.get("/traces/export?format=csv&cost_min=-1")
    assert response.status == 400 and "Fix the feed's filter" in response.text()
    assert page.request.get("/traces/export?format=xml").status == 400
    ok = page.request.get("/traces/export?format=csv")
    assert ok.status == 200 and ok.text().startswith("id,timestamp,")
