"""While a team's debug mode is on, every dashboard page says so (a banner with the time it ends
and where to turn it off); not before, not after, not for another team."""

from __future__ import annotations

import pytest
from django.db import transaction

from debugmode.services import debug_mode_disable

from ..factories import MembershipFactory, TeamFactory

pytestmark = pytest.mark.django_db

PAGES = ["/traces", "/sessions", "/users", "/analytics", "/routing", "/integrations", "/reports", "/alerts"]
PAGES += ["/settings/team", "/settings/api-keys", "/settings/advanced"]
BANNER = "Debug mode is on"


def test_every_page_shows_a_banner_while_debug_mode_is_on(as_role, team, debug_on, django_capture_on_commit_callbacks):
    client = as_role("viewer")
    assert all(BANNER not in client.get(page).content.decode() for page in PAGES)
    debug_on("1h")
    for page in PAGES:
        response = client.get(page)
        assert response.status_code == 200, page
        text = response.content.decode()
        assert BANNER in text and 'href="/settings/advanced"' in text, page
        assert "min left" in text
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        debug_mode_disable(team_id=team.pk, actor="user:test")
    assert all(BANNER not in client.get(page).content.decode() for page in PAGES)


def test_another_teams_debug_mode_shows_no_banner(client, team, debug_on):
    other = TeamFactory(name="other")
    member = MembershipFactory(team=other, role="owner").user
    client.force_login(member)
    debug_on("1h")  # `team`'s, not theirs
    assert BANNER not in client.get("/traces").content.decode()
