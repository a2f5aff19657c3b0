"""/settings/team: the owner renames the team, or deletes it after typing its name; the user then
lands on another team of theirs, or on the new-team page."""

from __future__ import annotations

import pytest

from accounts.access import SESSION_TEAM
from accounts.models import ApiKey, AuditEvent, Membership, Role, Team

from ..factories import ApiKeyFactory, MembershipFactory, TeamFactory, TraceFactory

pytestmark = pytest.mark.django_db


def test_the_owner_sees_rename_and_delete(as_role):
    text = as_role("owner").get("/settings/team").content.decode()
    assert 'action="/settings/team/rename"' in text and 'action="/settings/team/delete"' in text


@pytest.mark.parametrize("role", ["admin", "member", "viewer"])
def test_others_neither_see_nor_may_rename_or_delete(as_role, role, team):
    client = as_role(role)
    text = client.get("/settings/team").content.decode()
    assert "/settings/team/rename" not in text and "/settings/team/delete" not in text
    assert client.post("/settings/team/rename", {"name": "Hijacked"}).status_code == 403
    assert client.post("/settings/team/delete", {"confirm": team.name}).status_code == 403
    team.refresh_from_db()
    assert team.name != "Hijacked"


def test_an_outsider_renames_only_their_own_team(as_role, team, other_team):
    as_role("outsider").post("/settings/team/rename", {"name": "Renamed by outsider"})
    team.refresh_from_db()
    other_team.refresh_from_db()
    assert team.name != "Renamed by outsider" and other_team.name == "Renamed by outsider"


def test_the_owner_renames_the_team(as_role, team):
    before = team.name
    response = as_role("owner").post("/settings/team/rename", {"name": "  Search Platform  "})
    assert response.status_code == 302 and response["Location"] == "/settings/team"
    team.refresh_from_db()
    assert team.name == "Search Platform"
    event = AuditEvent.objects.get(team=team, action="team.rename")
    assert event.target == "Search Platform" and event.data == {"from": before}


@pytest.mark.parametrize(
    ("name", "message"),
    [("", "This field is required."), ("x" * 101, "at most 100 characters"), ("TAKEN", "Another team has this name")],
)
def test_a_bad_name_shows_next_to_the_field(as_role, team, name, message):
    TeamFactory(name="taken")
    response = as_role("owner").post("/settings/team/rename", {"name": name})
    assert response.status_code == 400
    assert message in " ".join(response.context["team_form"].errors["name"])
    assert b'id="id_name_error"' in response.content


def test_delete_needs_the_name_typed(as_role, team):
    response = as_role("owner").post("/settings/team/delete", {"confirm": team.name.upper() + "x"})
    assert response.status_code == 400
    text = response.content.decode()
    assert f"Type {team.name} exactly to delete the team." in text and '<details class="confirm" open>' in text
    assert Team.objects.filter(pk=team.pk).exists()


def test_delete_removes_everything_and_lands_on_another_team(login, team, owner):
    elsewhere = TeamFactory(name="Elsewhere")
    MembershipFactory(team=elsewhere, user=owner, role=Role.VIEWER)
    ApiKeyFactory(team=team)
    TraceFactory(team=team)
    client = login(owner, team)
    response = client.post("/settings/team/delete", {"confirm": team.name}, follow=True)
    assert not Team.objects.filter(pk=team.pk).exists() and not ApiKey.objects.filter(team_id=team.pk).exists()
    assert response.redirect_chain[0] == ("/", 302)
    assert response.wsgi_request.session[SESSION_TEAM] == elsewhere.pk
    assert f"{team.name} and everything in it was deleted." in response.content.decode()


def test_delete_of_the_only_team_lands_on_the_new_team_page(login, team, owner):
    Membership.objects.filter(user=owner).exclude(team=team).delete()
    response = login(owner, team).post("/settings/team/delete", {"confirm": team.name}, follow=True)
    assert response.redirect_chain[-1][0] == "/teams/new"
