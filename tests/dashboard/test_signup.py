"""/signup: an account, its own team as owner, and the refusals next to the field."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from accounts.models import AuditEvent, Membership, Role

from ..factories import TeamFactory, UserFactory

pytestmark = pytest.mark.django_db
GOOD_PASSWORD = "correct horse battery"


def test_it_shows_the_form(client):
    response = client.get("/signup")
    assert response.status_code == 200
    assert b'<label for="id_email">' in response.content
    assert b'<label for="id_password">' in response.content


def test_it_creates_the_user_and_a_team_they_own(client):
    response = client.post("/signup", {"email": "Ada@Example.com", "password": GOOD_PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/"
    user = get_user_model().objects.get()
    assert (user.username, user.email) == ("ada@example.com", "ada@example.com")
    membership = Membership.objects.get(user=user)
    assert membership.role == Role.OWNER and membership.team.name == "ada's team"
    assert AuditEvent.objects.filter(team=membership.team, action="team.create").exists()
    # and is logged in
    assert client.get("/").status_code == 200


def test_it_names_the_team_apart_when_the_name_is_taken(client):
    TeamFactory(name="ada's team")
    client.post("/signup", {"email": "ada@example.com", "password": GOOD_PASSWORD})
    assert Membership.objects.get(user__username="ada@example.com").team.name == "ada's team 2"


@pytest.mark.parametrize(
    "email,password,field,message",
    [
        ("not-an-email", GOOD_PASSWORD, "email", "Enter a valid email address."),
        ("", GOOD_PASSWORD, "email", "This field is required."),
        ("ada@example.com", "short", "password", "This password is too short."),
        ("ada@example.com", "password123", "password", "This password is too common."),
        ("ada@example.com", "ada@example.com", "password", "too similar"),
        ("ada@example.com", "", "password", "This field is required."),
    ],
)
def test_it_refuses_bad_input_next_to_the_field(client, email, password, field, message):
    response = client.post("/signup", {"email": email, "password": password})
    assert response.status_code == 400
    errors = response.context["form"].errors[field]
    assert any(message in e for e in errors), errors
    assert f'id="id_{field}_error"'.encode() in response.content
    assert not get_user_model().objects.exists()


def test_it_refuses_an_email_that_has_an_account(client):
    UserFactory(username="ada@example.com")
    response = client.post("/signup", {"email": "ADA@example.com", "password": GOOD_PASSWORD})
    assert response.status_code == 400
    assert "exists already" in response.context["form"].errors["email"][0]
    assert get_user_model().objects.count() == 1


def test_a_signed_in_user_is_sent_home(login, owner):
    assert login(owner).get("/signup")["Location"] == "/"
