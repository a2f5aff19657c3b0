"""A user in several teams works in one at a time; every page is scoped to it."""

from __future__ import annotations

import pytest

from accounts.models import Membership, Role

from ..factories import ApiKeyFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def both(owner, other_team):
    Membership.objects.create(user=owner, team=other_team, role=Role.VIEWER)
    return owner


def test_it_lists_the_teams_and_switches(login, both, team, other_team):
    client = login(both, team)
    ApiKeyFactory(team=team, name="alpha-key")
    ApiKeyFactory(team=other_team, name="beta-key")
    page = client.get("/settings/api-keys").content.decode()
    assert "alpha-key" in page and "beta-key" not in page
    assert f'name="team" value="{other_team.pk}"' in page
    assert client.post("/teams/switch", {"team": other_team.pk})["Location"] == "/"
    page = client.get("/settings/api-keys").content.decode()
    assert "beta-key" in page and "alpha-key" not in page


def test_the_role_follows_the_team(login, both, team, other_team):
    client = login(both, team)
    assert client.post("/settings/api-keys/new", {"environment": "ci"}).status_code == 201
    client.post("/teams/switch", {"team": other_team.pk})
    assert client.post("/settings/api-keys/new", {"environment": "ci"}).status_code == 403


def test_it_will_not_switch_to_a_team_of_someone_else(login, owner, team, other_team):
    client = login(owner, team)
    assert client.post("/teams/switch", {"team": other_team.pk}).status_code == 404
    assert client.post("/teams/switch", {"team": "x"}).status_code == 404
    assert client.session["team_id"] == team.pk


def test_a_stale_team_in_the_session_falls_back_to_a_team_of_theirs(login, owner, team, other_team):
    client = login(owner, other_team)  # not a member there
    page = client.get("/settings/team").content.decode()
    assert "alpha" in page and client.session["team_id"] == team.pk
