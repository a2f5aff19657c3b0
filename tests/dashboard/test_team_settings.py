"""/settings/team: members and roles. Every role reads; only owners change members; a team
always keeps an owner; another team's member is a 404."""

from __future__ import annotations

import pytest

from accounts.models import AuditEvent, Membership, Role

from .conftest import ROLES

pytestmark = pytest.mark.django_db


def m(user, team) -> Membership:
    return Membership.objects.get(user=user, team=team)


@pytest.mark.parametrize("role", ROLES)
def test_every_role_sees_the_members(as_role, role):
    response = as_role(role).get("/settings/team")
    assert response.status_code == 200
    text = response.content.decode()
    for name in ("owner", "admin@example.com", "member", "viewer@example.com"):
        assert name in text
    assert ("Send invitation" in text) == (role == "owner")
    assert ('name="role"' in text) == (role == "owner")


def test_an_outsider_sees_only_their_own_team(as_role):
    text = as_role("outsider").get("/settings/team").content.decode()
    assert "viewer@example.com" not in text and "outsider" in text


def test_a_visitor_is_sent_to_log_in(client):
    assert client.get("/settings/team")["Location"] == "/login?next=/settings/team"


def test_the_owner_changes_a_role_and_it_is_audited(as_role, member, team):
    response = as_role("owner").post(f"/settings/team/members/{m(member, team).pk}/role", {"role": "admin"})
    assert response.status_code == 302
    assert m(member, team).role == Role.ADMIN
    event = AuditEvent.objects.get(team=team, action="member.role")
    assert (event.actor, event.target, event.data) == ("user:owner", "member", {"from": "member", "to": "admin"})


@pytest.mark.parametrize("role", ["admin", "member", "viewer"])
def test_only_the_owner_changes_roles(as_role, role, member, team):
    response = as_role(role).post(f"/settings/team/members/{m(member, team).pk}/role", {"role": "owner"})
    assert response.status_code == 403
    assert m(member, team).role == Role.MEMBER


def test_a_member_of_another_team_is_a_404(as_role, outsider, other_team):
    target = m(outsider, other_team).pk
    client = as_role("owner")
    assert client.post(f"/settings/team/members/{target}/role", {"role": "viewer"}).status_code == 404
    assert client.post(f"/settings/team/members/{target}/remove").status_code == 404
    assert m(outsider, other_team).role == Role.OWNER


def test_it_refuses_an_unknown_role(as_role, member, team):
    response = as_role("owner").post(f"/settings/team/members/{m(member, team).pk}/role", {"role": "god"})
    assert response.status_code == 400 and b"Choose one of the roles." in response.content


def test_the_last_owner_cannot_be_demoted(as_role, owner, team):
    response = as_role("owner").post(f"/settings/team/members/{m(owner, team).pk}/role", {"role": "admin"})
    assert response.status_code == 400
    assert "The last owner cannot be demoted" in response.content.decode()
    assert m(owner, team).role == Role.OWNER


def test_an_owner_can_step_down_when_there_is_another(as_role, owner, admin, team):
    client = as_role("owner")
    client.post(f"/settings/team/members/{m(admin, team).pk}/role", {"role": "owner"})
    assert client.post(f"/settings/team/members/{m(owner, team).pk}/role", {"role": "admin"}).status_code == 302
    assert m(owner, team).role == Role.ADMIN


def test_the_owner_removes_a_member(as_role, viewer, team):
    response = as_role("owner").post(f"/settings/team/members/{m(viewer, team).pk}/remove")
    assert response.status_code == 302
    assert not Membership.objects.filter(user=viewer, team=team).exists()
    assert AuditEvent.objects.filter(team=team, action="member.remove", target="viewer@example.com").exists()


@pytest.mark.parametrize("role", ["admin", "member", "viewer"])
def test_only_the_owner_removes_members(as_role, role, owner, team):
    assert as_role(role).post(f"/settings/team/members/{m(owner, team).pk}/remove").status_code == 403
    assert Membership.objects.filter(user=owner, team=team).exists()


@pytest.mark.parametrize("role", ["admin", "member", "viewer"])
def test_anyone_but_the_last_owner_may_leave(as_role, role, team):
    client = as_role(role)
    response = client.post("/settings/team/leave")
    assert response.status_code == 302
    assert Membership.objects.filter(team=team).count() == 3
    assert AuditEvent.objects.filter(team=team, action="member.leave").exists()
    assert client.get("/")["Location"] == "/teams/new"  # in no team now


def test_the_last_owner_cannot_leave(as_role, owner, team):
    response = as_role("owner").post("/settings/team/leave")
    assert response.status_code == 400
    assert "The last owner cannot leave" in response.content.decode()
    assert Membership.objects.filter(user=owner, team=team).exists()


def test_get_is_not_allowed_on_actions(as_role, member, team):
    assert as_role("owner").get(f"/settings/team/members/{m(member, team).pk}/remove").status_code == 405
