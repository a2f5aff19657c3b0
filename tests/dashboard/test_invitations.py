"""Invitations: by e-mail, a link that works once and expires, accepted by a new or signed-in user."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client
from django.utils import timezone

from accounts.models import AuditEvent, Invitation, Membership, Role

from ..factories import UserFactory

pytestmark = pytest.mark.django_db


def invite(client, email="new@example.com", role="member"):
    return client.post("/settings/team/invite", {"email": email, "role": role})


def link_path(message) -> str:
    return re.search(r"http://testserver(/invite/\S+)", message.body).group(1)


def test_the_owner_invites_by_email_and_sees_the_link_once(as_role, team):
    response = invite(as_role("owner"))
    assert response.status_code == 201
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["new@example.com"]
    assert "Join alpha on tracerelay" == mail.outbox[0].subject
    path = link_path(mail.outbox[0])
    assert path in response.content.decode()
    invitation = Invitation.objects.get()
    assert path.split("/")[-1] not in invitation.token_hash  # only a digest is stored
    assert AuditEvent.objects.filter(team=team, action="member.invite", target="new@example.com").exists()
    assert "new@example.com" in as_role("owner").get("/settings/team").content.decode()  # pending list


def test_without_a_mail_server_the_page_says_the_invitation_was_not_emailed(as_role, settings, capsys):
    settings.EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"  # no EMAIL_URL: the log
    page = invite(as_role("owner")).content.decode()
    assert "Invitation created for new@example.com" in page and "Invitation sent" not in page
    assert "The e-mail was not sent: no mail server is configured (EMAIL_URL); written to the log." in page
    assert "Join alpha on tracerelay" in capsys.readouterr().out  # where it went
    assert re.search(r'<code id="invite-link">http://testserver/invite/\S+</code>', page)  # the link to share


@pytest.mark.parametrize("role", ["admin", "member", "viewer"])
def test_only_the_owner_invites(as_role, role):
    assert invite(as_role(role)).status_code == 403
    assert not Invitation.objects.exists() and mail.outbox == []


@pytest.mark.parametrize(
    "email,role,field,message",
    [
        ("not-an-email", "member", "email", "Enter a valid email address."),
        ("new@example.com", "king", "role", "Select a valid choice."),
        ("member", "member", "email", "Enter a valid email address."),
        ("viewer@example.com", "member", "email", "member of the team already"),
    ],
)
def test_it_refuses_bad_input_next_to_the_field(as_role, email, role, field, message):
    response = invite(as_role("owner"), email, role)
    assert response.status_code == 400
    assert any(message in e for e in response.context["invite_form"].errors[field])
    assert not Invitation.objects.exists()


def test_a_new_person_signs_up_from_the_link_and_joins_with_the_role(as_role, team):
    invite(as_role("owner"), role="viewer")
    path = link_path(mail.outbox[0])
    visitor = Client()
    page = visitor.get(path)
    assert page.status_code == 200 and b"Join alpha" in page.content and b"new@example.com" in page.content
    response = visitor.post(path, {"email": "someone-else@example.com", "password": "a long good secret"})
    assert response["Location"] == "/"
    user = get_user_model().objects.get(username="new@example.com")  # the invited address, not the typed one
    assert Membership.objects.get(user=user).team == team  # and no team of their own
    assert Membership.objects.get(user=user).role == Role.VIEWER
    assert visitor.get("/settings/team").status_code == 200


def test_a_signed_in_user_accepts(as_role, login, team):
    invite(as_role("owner"), email="someone@example.com", role="admin")
    elsewhere = UserFactory(username="someone@example.com")
    client = login(elsewhere)
    path = link_path(mail.outbox[0])
    assert b"You are logged in as" in client.get(path).content
    assert client.post(path)["Location"] == "/"
    assert Membership.objects.get(user=elsewhere, team=team).role == Role.ADMIN
    assert client.session["team_id"] == team.pk
    assert AuditEvent.objects.filter(team=team, action="member.join").exists()


def test_the_link_works_once(as_role, login, team):
    invite(as_role("owner"))
    path = link_path(mail.outbox[0])
    assert Client().post(path, {"email": "new@example.com", "password": "a long good secret"}).status_code == 302
    again = login(UserFactory(username="late@example.com"))
    response = again.get(path)
    assert response.status_code == 410 and b"This invitation has been used" in response.content
    assert again.post(path).status_code == 410
    assert not Membership.objects.filter(user__username="late@example.com").exists()


def test_an_expired_link_is_refused(as_role, login):
    invite(as_role("owner"))
    Invitation.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    client = login(UserFactory(username="late@example.com"))
    response = client.post(link_path(mail.outbox[0]))
    assert response.status_code == 410 and b"This invitation has expired" in response.content
    assert not Membership.objects.filter(user__username="late@example.com").exists()


def test_a_revoked_link_is_refused(as_role, team):
    owner = as_role("owner")
    invite(owner)
    invitation = Invitation.objects.get()
    assert owner.post(f"/settings/team/invites/{invitation.pk}/revoke").status_code == 302
    response = Client().get(link_path(mail.outbox[0]))
    assert response.status_code == 410 and b"withdrawn" in response.content


def test_a_new_invitation_replaces_the_old_link(as_role):
    owner = as_role("owner")
    invite(owner)
    invite(owner, role="admin")
    assert Client().get(link_path(mail.outbox[0])).status_code == 410
    assert Client().get(link_path(mail.outbox[1])).status_code == 200


def test_an_unknown_link_is_a_404(client):
    response = client.get("/invite/not-a-token")
    assert response.status_code == 404 and b"not valid" in response.content


def test_sign_up_from_an_invitation_refuses_a_weak_password(as_role):
    invite(as_role("owner"))
    response = Client().post(link_path(mail.outbox[0]), {"password": "short"})
    assert response.status_code == 400 and response.context["form"].errors["password"]
    assert Invitation.objects.get().accepted_at is None
    assert not get_user_model().objects.filter(username="new@example.com").exists()


def test_sign_up_from_an_invitation_refuses_an_existing_account(as_role):
    invite(as_role("owner"))
    UserFactory(username="new@example.com")
    response = Client().post(link_path(mail.outbox[0]), {"password": "a long good secret"})
    assert response.status_code == 400 and "Log in instead" in response.content.decode()
    assert Invitation.objects.get().accepted_at is None


def test_an_invitation_of_another_team_cannot_be_revoked(as_role, login, outsider, other_team):
    invite(login(outsider))
    invitation = Invitation.objects.get(team=other_team)
    assert as_role("owner").post(f"/settings/team/invites/{invitation.pk}/revoke").status_code == 404
    assert Invitation.objects.get().revoked_at is None
