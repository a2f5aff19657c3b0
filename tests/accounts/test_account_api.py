"""The account API with user tokens: signup, login (throttled), logout, me, teams, a team's keys, and a
user token acting on the team API through X-Team with the role's scopes."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts import keys
from accounts.models import ApiKey, AuditEvent, Role, UserToken
from accounts.services import user_token_issue

from ..factories import ApiKeyFactory, MembershipFactory, TeamFactory, UserFactory

pytestmark = pytest.mark.django_db
PASSWORD = "correct horse battery staple"


def token_client(user, team=None) -> APIClient:
    _, raw = user_token_issue(user=user, name="test")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}", **({"HTTP_X_TEAM": str(team.pk)} if team else {}))
    client.raw = raw  # type: ignore[attr-defined]
    return client


@pytest.fixture
def team():
    return TeamFactory(name="alpha")


def member_of(team, role: str, name: str | None = None):
    return MembershipFactory(team=team, user=UserFactory(username=name or f"{role}@example.com"), role=role).user


def problem(response) -> dict:
    assert response["Content-Type"] == "application/problem+json", response.content
    return response.json()


# --- signup / login / logout / me ---------------------------------------------------------------------


def test_signup_makes_an_account_a_team_and_a_token():
    response = APIClient().post(
        "/api/v1/auth/signup", {"email": "New@Example.com", "password": PASSWORD, "team_name": "acme"}, format="json"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["user"]["email"] == "new@example.com"
    assert [(t["name"], t["role"]) for t in body["teams"]] == [("acme", "owner")]
    raw = body["token"]
    assert keys.USER_TOKEN_RE.fullmatch(raw)
    stored = UserToken.objects.get()
    assert stored.token_hash == keys.digest(raw) and raw not in str(UserToken.objects.values())
    me = APIClient(HTTP_AUTHORIZATION=f"Bearer {raw}").get("/api/v1/auth/me")
    assert me.status_code == 200 and me.json()["user"]["email"] == "new@example.com"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"email": "a@example.com", "password": "short"}, "password"),
        ({"email": "a@example.com", "password": "password123"}, "password"),
        ({"email": "not an email", "password": PASSWORD}, "email"),
        ({"password": PASSWORD}, "email"),
        ({"email": "a@example.com"}, "password"),
    ],
)
def test_signup_refuses_bad_input(body, field):
    response = APIClient().post("/api/v1/auth/signup", body, format="json")
    assert response.status_code == 400
    assert field in problem(response)["errors"]
    assert not UserToken.objects.exists()


def test_signup_refuses_an_existing_account_and_a_non_object_body():
    UserFactory(username="taken@example.com")
    response = APIClient().post(
        "/api/v1/auth/signup", {"email": "Taken@example.com", "password": PASSWORD}, format="json"
    )
    assert response.status_code == 400 and "email" in problem(response)["errors"]
    assert APIClient().post("/api/v1/auth/signup", [1], format="json").status_code == 400
    assert APIClient().post("/api/v1/auth/signup", "x", content_type="text/plain").status_code == 415


def test_login_returns_a_token_and_wrong_passwords_are_throttled(settings, team):
    settings.TRACERELAY_LOGIN_MAX_FAILURES = 2
    member_of(team, Role.MEMBER, "m@example.com")
    client = APIClient()
    ok = client.post("/api/v1/auth/login", {"email": "M@example.com", "password": "password"}, format="json")
    assert ok.status_code == 200 and ok.json()["teams"][0]["role"] == "member"
    for _ in range(2):
        bad = client.post("/api/v1/auth/login", {"email": "m@example.com", "password": "nope"}, format="json")
        assert bad.status_code == 401 and problem(bad)["type"].endswith("invalid-credentials")
    locked = client.post("/api/v1/auth/login", {"email": "m@example.com", "password": "password"}, format="json")
    assert locked.status_code == 429 and int(locked["Retry-After"]) > 0
    assert "Too many failed attempts" in problem(locked)["detail"]
    assert UserToken.objects.count() == 1


def test_login_takes_a_username_as_well(team):
    user = member_of(team, Role.MEMBER, "dora")
    assert user.email == "dora@example.com"
    for name in ("dora", "dora@example.com"):
        response = APIClient().post("/api/v1/auth/login", {"email": name, "password": "password"}, format="json")
        assert response.status_code == 200, name


def test_logout_revokes_the_token_at_once(team):
    client = token_client(member_of(team, Role.VIEWER))
    assert client.get("/api/v1/auth/me").status_code == 200
    assert client.post("/api/v1/auth/logout").status_code == 204
    after = client.get("/api/v1/auth/me")
    assert after.status_code == 401 and problem(after)["type"].endswith("invalid-token")
    assert after["WWW-Authenticate"].startswith("Bearer")


def test_expired_unknown_and_malformed_tokens_are_refused(team):
    user = member_of(team, Role.OWNER)
    client = token_client(user)
    UserToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert client.get("/api/v1/auth/me").status_code == 401
    for raw in (keys.generate_user_token(), "tru_short"):
        assert APIClient(HTTP_AUTHORIZATION=f"Bearer {raw}").get("/api/v1/teams").status_code == 401
    assert APIClient().get("/api/v1/teams").status_code == 401


def test_an_api_key_is_not_a_user_token(team):
    key = ApiKeyFactory(team=team, environment="production")
    response = APIClient(HTTP_AUTHORIZATION=f"Bearer {key._raw}").get("/api/v1/auth/me")
    assert response.status_code == 401 and problem(response)["type"].endswith("user-token-required")


def test_teams_lists_mine_with_my_role(team):
    user = member_of(team, Role.ADMIN)
    MembershipFactory(team=TeamFactory(name="beta"), user=user, role=Role.VIEWER)
    TeamFactory(name="not mine")
    body = token_client(user).get("/api/v1/teams").json()
    assert [(t["name"], t["role"]) for t in body["data"]] == [("alpha", "admin"), ("beta", "viewer")]


# --- a team's keys -------------------------------------------------------------------------------------


def test_an_admin_creates_lists_and_revokes_keys(team):
    client = token_client(member_of(team, Role.ADMIN))
    made = client.post(f"/api/v1/teams/{team.pk}/keys", {"environment": "ci", "name": "runner"}, format="json")
    assert made.status_code == 201
    raw, key = made.json()["key"], made.json()["api_key"]
    assert (
        keys.parse(raw) == "ci"
        and raw.startswith(key["prefix"])
        and key["scopes"] == sorted(["ingest", "proxy", "traces:read"])
    )
    listing = client.get(f"/api/v1/teams/{team.pk}/keys")
    assert listing.status_code == 200 and raw not in listing.content.decode()
    assert [k["prefix"] for k in listing.json()["data"]] == [key["prefix"]]
    assert APIClient(HTTP_AUTHORIZATION=f"Bearer {raw}").get("/api/v1/traces").status_code == 200
    revoked = client.delete(f"/api/v1/teams/{team.pk}/keys/{key['id']}")
    assert revoked.status_code == 200 and revoked.json()["active"] is False
    assert APIClient(HTTP_AUTHORIZATION=f"Bearer {raw}").get("/api/v1/traces").status_code == 401
    actions = set(AuditEvent.objects.filter(team=team).values_list("action", "actor"))
    assert {("api_key.create", "user:admin@example.com"), ("api_key.revoke", "user:admin@example.com")} <= actions


@pytest.mark.parametrize("role", [Role.MEMBER, Role.VIEWER])
def test_members_and_viewers_list_keys_but_may_not_create_or_revoke(team, role):
    key = ApiKeyFactory(team=team, environment="production")
    client = token_client(member_of(team, role))
    assert client.get(f"/api/v1/teams/{team.pk}/keys").status_code == 200
    created = client.post(f"/api/v1/teams/{team.pk}/keys", {"environment": "ci"}, format="json")
    assert created.status_code == 403 and problem(created)["role"] == role
    assert client.delete(f"/api/v1/teams/{team.pk}/keys/{key.pk}").status_code == 403
    assert ApiKey.objects.get(pk=key.pk).revoked_at is None and ApiKey.objects.count() == 1


def test_keys_of_another_team_are_not_found(team):
    other = TeamFactory(name="other")
    foreign = ApiKeyFactory(team=other, environment="production")
    client = token_client(member_of(team, Role.OWNER))
    assert client.get(f"/api/v1/teams/{other.pk}/keys").status_code == 404
    assert client.delete(f"/api/v1/teams/{team.pk}/keys/{foreign.pk}").status_code == 404
    assert client.delete(f"/api/v1/teams/{team.pk}/keys/999999").status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"environment": "staging"}, "environment"),
        ({}, "environment"),
        ({"environment": "ci", "name": "x" * 101}, "name"),
    ],
)
def test_key_creation_refuses_bad_input(team, body, field):
    client = token_client(member_of(team, Role.OWNER))
    response = client.post(f"/api/v1/teams/{team.pk}/keys", body, format="json")
    assert response.status_code == 400 and field in problem(response)["errors"]


# --- the team API with a user token and X-Team -----------------------------------------------------------


RULES = {"rules": [{"name": "errors", "condition": "status == 'error'", "destinations": [], "stop": True}]}


def test_a_user_token_uses_the_team_api_with_the_roles_scopes(team):
    admin = token_client(member_of(team, Role.ADMIN), team)
    viewer = token_client(member_of(team, Role.VIEWER), team)
    put = admin.put("/api/v1/routing/rules", RULES, format="json")
    assert put.status_code == 200, put.content
    assert put.json()["updated_by"] == "user:admin@example.com"
    assert viewer.get("/api/v1/routing/rules").json()["rules"][0]["name"] == "errors"
    refused = viewer.put("/api/v1/routing/rules", RULES, format="json")
    assert refused.status_code == 403
    assert problem(refused)["detail"] == "Your role in this team (viewer) may not do this (needs scope 'rules:write')."
    assert viewer.get("/api/v1/traces").status_code == 200
    # never ingest: that takes an API key
    assert admin.post("/api/v1/traces/batch", {"traces": []}, format="json").status_code == 403


def test_x_team_must_name_one_of_my_teams(team):
    user = member_of(team, Role.OWNER)
    plain = token_client(user)
    missing = plain.get("/api/v1/routing/rules")
    assert missing.status_code == 400 and problem(missing)["type"].endswith("team-required")
    other = TeamFactory(name="other")
    assert plain.get("/api/v1/routing/rules", HTTP_X_TEAM=str(other.pk)).status_code == 403
    bad = plain.get("/api/v1/routing/rules", HTTP_X_TEAM="alpha")
    assert bad.status_code == 400 and problem(bad)["type"].endswith("invalid-team")


def test_a_role_change_applies_to_the_next_request(team):
    user = member_of(team, Role.ADMIN)
    client = token_client(user, team)
    assert client.put("/api/v1/routing/rules", RULES, format="json").status_code == 200
    user.memberships.update(role=Role.VIEWER)
    assert client.put("/api/v1/routing/rules", RULES, format="json").status_code == 403
    user.memberships.all().delete()
    assert client.get("/api/v1/routing/rules").status_code == 403


def test_the_traces_feed_tails_with_after(team):
    from ..factories import TraceFactory

    client = token_client(member_of(team, Role.VIEWER), team)
    first = client.get("/api/v1/traces", {"limit": 1}).json()
    assert first["data"] == [] and first["newest_cursor"]
    old = TraceFactory(team=team, model="a", service_name="shop")
    TraceFactory(team=team, model="b", service_name="other")
    newer = client.get("/api/v1/traces", {"after": first["newest_cursor"], "service_name": "shop"}).json()
    assert [t["id"] for t in newer["data"]] == [old.trace_id]
    again = client.get("/api/v1/traces", {"after": newer["newest_cursor"], "service_name": "shop"}).json()
    assert again["data"] == [] and again["newest_cursor"] == newer["newest_cursor"]
    both = client.get("/api/v1/traces", {"after": "x", "cursor": "y"})
    assert both.status_code == 400 and problem(both)["parameter"] == "after"
    assert client.get("/api/v1/traces", {"after": "!!"}).status_code == 400
