"""/settings/team in the browser: the owner renames the team, then deletes it by typing its name."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from accounts.models import Role, Team

from ..factories import MembershipFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_rename_then_delete_the_team(page, sign_in, shoot, team, live):
    owner = MembershipFactory(team=team, user=UserFactory(username="omar@example.com"), role=Role.OWNER).user
    sign_in(page, owner)
    page.goto("/settings/team")
    page.get_by_label("Team name").fill("Search Platform")
    page.get_by_role("button", name="Rename team").click()
    expect(page.get_by_role("status")).to_contain_text("The team is now called Search Platform")
    expect(page.locator("#team-menu")).to_contain_text("Search Platform")

    page.locator("summary", has_text="Delete team").click()
    dialog = page.get_by_role("dialog", name="Delete Search Platform?")
    dialog.get_by_label("Type Search Platform to confirm").fill("search platform")
    dialog.get_by_role("button", name="Delete team").click()
    dialog = page.get_by_role("dialog", name="Delete Search Platform?")
    expect(dialog).to_contain_text("Type Search Platform exactly to delete the team.")
    shoot(page, "team-delete-confirm")
    assert Team.objects.filter(pk=team.pk).exists()

    dialog.get_by_label("Type Search Platform to confirm").fill("Search Platform")
    dialog.get_by_role("button", name="Delete team").click()
    expect(page).to_have_url(f"{live}/teams/new")
    expect(page.get_by_role("status")).to_contain_text("Search Platform and everything in it was deleted.")
    assert not Team.objects.filter(pk=team.pk).exists()
    shoot(page, "team-deleted")
