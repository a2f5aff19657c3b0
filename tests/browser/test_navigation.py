"""The navigation never cuts anything off (issue 23, item 1): at 320, 390, 768, 1024, 1280 and 1920 px
every item is visible, or one click away behind the "Menu" button; no link or control leaves the
viewport, overlaps another or is cut short (an ellipsis). Measured with one item more than today
(room for "Runs") and a long team name."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from accounts.models import Role
from accounts.nav import NAV, NavItem

from ..factories import MembershipFactory, TeamFactory, UserFactory
from .conftest import SCREENSHOTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = [(320, 568), (390, 844), (768, 1024), (1024, 768), (1280, 800), (1920, 1080)]

# Every control of the header (side bar or top bar) that is shown, with its box and whether its text
# is cut short. Controls inside a closed <details> have no box and are left out.
CONTROLS = """() => [...document.querySelectorAll(".shell a, .shell summary, .shell button")]
    .filter((e) => e.checkVisibility({ visibilityProperty: true }))
    .map((e) => { const r = e.getBoundingClientRect();
        return { text: (e.getAttribute("aria-label") || e.textContent).trim().replace(/\\s+/g, " "),
                 nav: !!e.closest(".mainnav"), left: r.left, top: r.top, right: r.right, bottom: r.bottom,
                 cut: e.scrollWidth > e.clientWidth + 1 || [...e.querySelectorAll("span")].some(
                     (s) => s.getBoundingClientRect().width > 0 && s.scrollWidth > s.clientWidth + 1) }; })"""


def _overlap(a: dict, b: dict) -> bool:
    across = a["left"] < b["right"] - 1 and b["left"] < a["right"] - 1
    return across and a["top"] < b["bottom"] - 1 and b["top"] < a["bottom"] - 1


def _check(controls: list[dict], width: int, height: int) -> None:
    for c in controls:
        assert c["left"] >= 0 and c["right"] <= width + 0.5, f"{width} px: {c['text']!r} leaves the viewport: {c}"
        assert c["top"] >= 0 and c["bottom"] <= height + 0.5, f"{width}×{height}: {c['text']!r} is below the fold: {c}"
        if c["nav"]:
            assert not c["cut"], f"{width} px: {c['text']!r} is cut short"
    for i, a in enumerate(controls):
        for b in controls[i + 1 :]:
            assert not _overlap(a, b), f"{width} px: {a['text']!r} overlaps {b['text']!r}"


@pytest.fixture
def person(monkeypatch):
    # Room for the items still to come: one more than today's list.
    monkeypatch.setattr("accounts.nav.NAV", [NAV[0], NavItem("Runs", "trace-sessions"), *NAV[1:]])
    team = TeamFactory(name="Search Platform Engineering")
    user = UserFactory(username="margaret.hamilton@example.com")
    MembershipFactory(team=team, user=user, role=Role.OWNER)
    return user


def test_every_item_is_visible_or_behind_the_menu_at_every_width(page, sign_in, shoot, person):
    expected = {item.label for item in NAV if item.section == "main"} | {"Runs", "Settings", "API docs"}
    sign_in(page, person)
    page.goto("/settings/team")
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        controls = page.evaluate(CONTROLS)
        _check(controls, width, height)
        shown = {c["text"] for c in controls if c["nav"]}
        if width >= 1024:
            assert shown == expected, f"{width} px: the side bar shows {shown}"
            expect(page.locator(".nav-toggle")).to_be_hidden()
            continue
        assert not shown, f"{width} px: the closed menu shows {shown}"
        page.locator(".nav-toggle > summary").click()
        controls = page.evaluate(CONTROLS)
        _check([c for c in controls if c["nav"]], width, height)
        _check([c for c in controls if not c["nav"]], width, height)
        assert {c["text"] for c in controls if c["nav"]} == expected, f"{width} px: the menu lists {controls}"
        expect(page.get_by_role("link", name="Settings")).to_have_attribute("aria-current", "page")
        if width == 390:
            page.screenshot(path=str(SCREENSHOTS / "nav-menu-open-390.png"))
        page.keyboard.press("Escape")  # app.js closes an open menu
        expect(page.locator(".nav-toggle")).not_to_have_attribute("open", "")
    page.set_viewport_size({"width": 1280, "height": 800})
    shoot(page, "nav-settings")
    page.set_viewport_size({"width": 390, "height": 844})  # with app.js: a link in the open menu is followed
    page.locator(".nav-toggle > summary").click()
    page.get_by_role("link", name="Analytics").click()
    expect(page.get_by_role("heading", name="Analytics", level=1)).to_be_visible()
    expect(page.get_by_role("link", name="Analytics")).to_be_hidden()  # the menu is closed on the new page


def test_the_menu_opens_and_follows_a_link_without_javascript(chromium, live, sign_in, person):
    context = chromium.new_context(base_url=live, viewport={"width": 390, "height": 844}, java_script_enabled=False)
    try:
        page = context.new_page()
        sign_in(page, person)
        page.goto("/settings/team")
        expect(page.get_by_role("link", name="Analytics")).to_be_hidden()
        page.get_by_text("Menu", exact=True).click()
        page.get_by_role("link", name="Analytics").click()
        expect(page.get_by_role("heading", name="Analytics", level=1)).to_be_visible()
    finally:
        context.close()
