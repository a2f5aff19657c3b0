"""/login and logout, with throttling per client IP and e-mail."""

from __future__ import annotations

import uuid
from io import StringIO

import pytest
from django.test import Client, override_settings

from ..factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def email() -> str:
    # Throttle counts live in the shared Redis: a fresh address per test keeps tests apart.
    return f"u{uuid.uuid4().hex[:10]}@example.com"


@pytest.fixture
def user(email, team):
    from accounts.models import Membership, Role

    user = UserFactory(username=email, email=email)
    Membership.objects.create(user=user, team=team, role=Role.MEMBER)
    return user


def test_it_shows_the_form(client):
    response = client.get("/login")
    assert response.status_code == 200
    assert b'<label for="id_username">' in response.content and b'<label for="id_password">' in response.content


def test_it_logs_in_with_email_and_password(client, user, email):
    response = client.post("/login", {"username": email.upper(), "password": "password"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/settings/team").status_code == 200


def test_it_goes_to_next_after_logging_in(client, user, email):
    response = client.post("/login?next=/settings/api-keys", {"username": email, "password": "password"})
    assert response["Location"] == "/settings/api-keys"


def test_it_does_not_go_to_another_site_after_logging_in(client, user, email):
    response = client.post("/login", {"username": email, "password": "password", "next": "https://evil.test/"})
    assert response["Location"] == "/"


def test_it_refuses_a_wrong_password(client, user, email):
    response = client.post("/login", {"username": email, "password": "nope"})
    assert response.status_code == 400
    assert "do not match" in response.content.decode()
    assert "_auth_user_id" not in client.session


@override_settings(TRACERELAY_LOGIN_MAX_FAILURES=3)
def test_it_locks_out_after_repeated_failures_and_says_when_to_retry(client, user, email):
    for _ in range(3):
        assert client.post("/login", {"username": email, "password": "nope"}).status_code == 400
    response = client.post("/login", {"username": email, "password": "password"})  # right, but locked
    assert response.status_code == 400
    text = response.content.decode()
    assert "Too many failed attempts. Try again in 15 minutes." in text
    assert "_auth_user_id" not in client.session


@override_settings(TRACERELAY_LOGIN_MAX_FAILURES=3)
def test_the_lockout_is_per_client_ip(user, email):
    attacker = Client(REMOTE_ADDR="203.0.113.9")
    for _ in range(3):
        attacker.post("/login", {"username": email, "password": "nope"})
    assert "Too many" in attacker.post("/login", {"username": email, "password": "x"}).content.decode()
    owner_elsewhere = Client(REMOTE_ADDR="198.51.100.7")
    assert owner_elsewhere.post("/login", {"username": email, "password": "password"}).status_code == 302


@override_settings(TRACERELAY_LOGIN_MAX_FAILURES=3)
def test_a_success_clears_the_count(client, user, email):
    for _ in range(2):
        client.post("/login", {"username": email, "password": "nope"})
    assert client.post("/login", {"username": email, "password": "password"}).status_code == 302
    client.post("/logout")
    for _ in range(2):
        client.post("/login", {"username": email, "password": "nope"})
    assert client.post("/login", {"username": email, "password": "password"}).status_code == 302


@override_settings(TRACERELAY_LOGIN_MAX_FAILURES=2, TRACERELAY_LOGIN_WINDOW_S=1)
def test_the_lockout_ends_with_its_window(client, user, email):
    import time

    for _ in range(2):
        client.post("/login", {"username": email, "password": "nope"})
    assert "Try again in 1 second" in client.post("/login", {"username": email, "password": "x"}).content.decode()
    time.sleep(1.1)
    assert client.post("/login", {"username": email, "password": "password"}).status_code == 302


def test_logout_is_a_post(login, owner):
    client = login(owner)
    assert client.get("/logout").status_code == 405
    response = client.post("/logout")
    assert response.status_code == 302 and response["Location"] == "/login"
    assert client.get("/settings/team")["Location"].startswith("/login")


def test_the_session_cookie_is_httponly_and_samesite(client, user, email):
    response = client.post("/login", {"username": email, "password": "password"})
    cookie = response.cookies["sessionid"]
    assert cookie["httponly"] and cookie["samesite"] == "Lax"


def test_posts_need_a_csrf_token(user, email):
    client = Client(enforce_csrf_checks=True)
    assert client.post("/login", {"username": email, "password": "password"}).status_code == 403


def test_a_form_without_its_token_gets_a_page_that_says_what_to_do(user, email):
    client = Client(enforce_csrf_checks=True)
    response = client.post("/login", {"username": email, "password": "password"})
    assert response.status_code == 403 and b"This page has expired" in response.content


def test_the_form_asks_for_a_username_or_an_e_mail(client):
    assert b">Username or e-mail</label>" in client.get("/login").content


@pytest.mark.parametrize("name", ["admin", "ADMIN", "admin@localhost", "Admin@Localhost"])
def test_the_bootstrap_admin_logs_in_with_its_username_or_its_e_mail(client, name, monkeypatch):
    from django.core.management import call_command

    monkeypatch.setenv("TRACERELAY_ADMIN_PASSWORD", "s3cret-pass")
    call_command("bootstrap", "--json", stdout=StringIO())
    response = client.post("/login", {"username": name, "password": "s3cret-pass"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/settings/team").status_code == 200


def test_an_address_two_accounts_share_signs_in_neither(client):
    for username in ("ann", "bob"):
        UserFactory(username=username, email="shared@example.com")
    response = client.post("/login", {"username": "shared@example.com", "password": "password"})
    assert response.status_code == 400 and "do not match" in response.content.decode()
    assert client.post("/login", {"username": "bob", "password": "password"}).status_code == 302


def test_a_wrong_password_for_an_e_mail_is_refused(client):
    UserFactory(username="carol", email="carol@example.com")
    response = client.post("/login", {"username": "carol@example.com", "password": "nope"})
    assert response.status_code == 400 and "_auth_user_id" not in client.session
