"""Password reset by e-mail: a link that works once."""

from __future__ import annotations

import re

import pytest
from django.core import mail

from ..factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def user(db):
    return UserFactory(username="ada@example.com", email="ada@example.com")


def _link(message) -> str:
    return re.search(r"http://testserver(/password-reset/\S+)", message.body).group(1)


def test_it_mails_a_link_that_sets_a_new_password(client, user):
    response = client.post("/password-reset", {"email": "ADA@example.com"})
    assert response["Location"] == "/password-reset/sent"
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["ada@example.com"]
    assert mail.outbox[0].subject == "Reset your tracerelay password"
    form_url = client.get(_link(mail.outbox[0]))["Location"]  # Django swaps the token for a session one
    response = client.post(form_url, {"new_password1": "a new long secret", "new_password2": "a new long secret"})
    assert response["Location"] == "/password-reset/done"
    user.refresh_from_db()
    assert user.check_password("a new long secret")


def test_the_link_works_once(client, user):
    client.post("/password-reset", {"email": "ada@example.com"})
    link = _link(mail.outbox[0])
    form_url = client.get(link)["Location"]
    client.post(form_url, {"new_password1": "a new long secret", "new_password2": "a new long secret"})
    response = client.get(link)
    assert response.status_code == 200 and b"This link has expired" in response.content


def test_it_refuses_a_weak_or_mismatched_password_next_to_the_field(client, user):
    client.post("/password-reset", {"email": "ada@example.com"})
    form_url = client.get(_link(mail.outbox[0]))["Location"]
    response = client.post(form_url, {"new_password1": "short", "new_password2": "short"})
    assert "too short" in " ".join(response.context["form"].errors["new_password2"])
    response = client.post(form_url, {"new_password1": "a new long secret", "new_password2": "another"})
    assert response.context["form"].errors["new_password2"]


def test_it_says_the_same_for_an_unknown_address(client, user):
    response = client.post("/password-reset", {"email": "nobody@example.com"})
    assert response["Location"] == "/password-reset/sent"
    assert mail.outbox == []


def test_it_refuses_a_malformed_address(client):
    response = client.post("/password-reset", {"email": "nope"})
    assert response.status_code == 200 and response.context["form"].errors["email"]
