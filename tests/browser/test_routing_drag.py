"""/routing in the browser, with the mouse: an admin drags a rule to another place in the list (the
stored priority order follows), and a drag on a list someone else reordered first is refused and
says so, showing their list."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from accounts.models import Role
from routing import edits, selectors

from ..factories import IntegrationFactory, MembershipFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def admin(team):
    return MembershipFactory(team=team, user=UserFactory(username="ada@example.com"), role=Role.ADMIN).user


@pytest.fixture
def rules(team):
    IntegrationFactory(team=team, name="audit-hook", platform="webhook")
    version = 0
    for i, name in enumerate(["errors", "expensive", "the rest"]):
        rule = {"name": name, "priority": (i + 1) * 10, "destinations": ["audit-hook"]}
        header, _ = edits.rule_save(team_id=team.pk, rule=rule, rule_id=None, version=version, actor="seed")
        version = header.version


def _order(team):
    return [(r.name, r.priority) for r in selectors.routing_rules(team.pk)]


def _drag(page, name, onto, *, upper):
    """Press the mouse on rule ``name``'s handle, move it over the upper or lower half of rule
    ``onto`` and let go; return once the server has answered the move (the list moves at once)."""
    handle = page.locator("li.rule", has=page.get_by_role("link", name=name, exact=True)).locator(".drag-handle")
    target = page.locator("li.rule", has=page.get_by_role("link", name=onto, exact=True)).bounding_box()
    handle.hover()
    page.mouse.down()
    y = target["y"] + target["height"] * (0.25 if upper else 0.75)
    page.mouse.move(target["x"] + target["width"] / 2, y, steps=8)
    with page.expect_response(lambda r: r.url.endswith("/move")) as answer:
        page.mouse.up()
    return answer.value


def test_an_admin_drags_a_rule_to_another_place(page, sign_in, shoot, team, rules, admin):
    sign_in(page, admin)
    page.goto("/routing")
    expect(page.locator(".drag-handle")).to_have_count(3)
    assert _drag(page, "the rest", "errors", upper=True).status == 200
    expect(page.locator(".rule-name")).to_have_text(["the rest", "errors", "expensive"])
    expect(page.locator(".rule-head .sub")).to_have_text(["priority 10", "priority 20", "priority 30"])
    assert _order(team) == [("the rest", 10), ("errors", 20), ("expensive", 30)]
    assert _drag(page, "the rest", "expensive", upper=False).status == 200
    expect(page.locator(".rule-name")).to_have_text(["errors", "expensive", "the rest"])
    expect(page.locator(".rule-head .sub")).to_have_text(["priority 10", "priority 20", "priority 30"])
    assert _order(team) == [("errors", 10), ("expensive", 20), ("the rest", 30)]
    # The arrows still work after a drop (the list was swapped in with the new version).
    page.get_by_role("button", name="Move expensive up").click()
    expect(page.locator(".rule-name")).to_have_text(["expensive", "errors", "the rest"])
    page.evaluate("window.scrollTo(0, 0)")
    shoot(page, "routing-rules-dragged")


def test_a_drag_on_a_list_reordered_by_someone_else_is_refused_plainly(new_page, sign_in, shoot, team, rules, admin):
    bob = MembershipFactory(team=team, user=UserFactory(username="bob@example.com"), role=Role.OWNER).user
    mine, theirs = new_page(), new_page()
    sign_in(mine, admin)
    sign_in(theirs, bob)
    mine.goto("/routing")
    theirs.goto("/routing")
    _drag(theirs, "expensive", "errors", upper=True)
    expect(theirs.locator(".rule-name")).to_have_text(["expensive", "errors", "the rest"])
    assert _drag(mine, "the rest", "expensive", upper=True).status == 409
    alert = mine.locator("#stale")
    expect(alert).to_contain_text("changed by someone else since you opened this page")
    expect(alert).to_contain_text("user:bob@example.com")
    expect(alert).to_contain_text("your request to move 'the rest' to place 2 was not applied")
    expect(mine.locator(".rule-name")).to_have_text(["expensive", "errors", "the rest"])  # theirs, as stored
    assert _order(team) == [("expensive", 10), ("errors", 20), ("the rest", 30)]
    mine.evaluate("window.scrollTo(0, 0)")
    shoot(mine, "routing-rules-drag-stale")
    assert _drag(mine, "the rest", "expensive", upper=True).status == 200  # again, on their list
    expect(mine.locator("#stale")).to_have_count(0)
    expect(mine.locator(".rule-name")).to_have_text(["the rest", "expensive", "errors"])
    assert [name for name, _ in _order(team)] == ["the rest", "expensive", "errors"]
