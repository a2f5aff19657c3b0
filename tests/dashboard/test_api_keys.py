"""/settings/api-keys: every role reads the list; admins and owners create and revoke; the raw
key is shown once; another team's key is a 404."""

from __future__ import annotations

import pytest

from accounts.models import ApiKey, AuditEvent
from accounts.selectors import principal_for_key

from ..factories import ApiKeyFactory
from .conftest import ROLES

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("role", ROLES)
def test_every_role_sees_the_list_without_secrets(as_role, role, team):
    key = ApiKeyFactory(team=team, name="checkout")
    response = as_role(role).get("/settings/api-keys")
    assert response.status_code == 200
    text = response.content.decode()
    assert key.prefix in text and "checkout" in text and key._raw not in text
    assert ("Create key" in text) == (role in ("owner", "admin"))
    assert (f"/settings/api-keys/{key.pk}/revoke" in text) == (role in ("owner", "admin"))


def test_an_outsider_does_not_see_the_keys(as_role, team):
    key = ApiKeyFactory(team=team)
    assert key.prefix not in as_role("outsider").get("/settings/api-keys").content.decode()


@pytest.mark.parametrize("role", ["owner", "admin"])
def test_it_creates_a_key_shown_once_that_works(as_role, role, team):
    client = as_role(role)
    response = client.post("/settings/api-keys/new", {"name": "ci runner", "environment": "ci"})
    assert response.status_code == 201
    raw = response.context["new_key"]["raw"]
    assert raw.startswith("tr_ci_") and raw in response.content.decode()
    key = ApiKey.objects.get(team=team)
    assert (key.name, key.environment) == ("ci runner", "ci")
    assert principal_for_key(raw).team_id == team.pk
    assert raw not in client.get("/settings/api-keys").content.decode()
    assert AuditEvent.objects.filter(team=team, action="api_key.create", target=key.prefix).exists()


def test_an_htmx_create_renders_only_the_panel(as_role):
    response = as_role("admin").post("/settings/api-keys/new", {"environment": "production"}, HTTP_HX_REQUEST="true")
    text = response.content.decode()
    assert response.status_code == 201 and text.lstrip().startswith('<div id="keys-panel"')
    assert "<html" not in text and "tr_prod_" in text


@pytest.mark.parametrize("role", ["member", "viewer"])
def test_members_and_viewers_cannot_create_keys(as_role, role):
    assert as_role(role).post("/settings/api-keys/new", {"environment": "production"}).status_code == 403
    assert not ApiKey.objects.exists()


def test_it_refuses_an_unknown_environment_next_to_the_field(as_role):
    response = as_role("owner").post("/settings/api-keys/new", {"environment": "staging"})
    assert response.status_code == 400
    assert "Select a valid choice" in response.context["form"].errors["environment"][0]
    assert b'id="id_environment_error"' in response.content
    assert not ApiKey.objects.exists()


def test_it_refuses_a_name_too_long(as_role):
    response = as_role("owner").post("/settings/api-keys/new", {"environment": "ci", "name": "x" * 101})
    assert response.status_code == 400 and response.context["form"].errors["name"]


@pytest.mark.parametrize("role", ["owner", "admin"])
def test_it_revokes_a_key(as_role, role, team):
    key = ApiKeyFactory(team=team)
    assert principal_for_key(key._raw) is not None
    response = as_role(role).post(f"/settings/api-keys/{key.pk}/revoke")
    assert response.status_code == 302 and response["Location"] == "/settings/api-keys"
    key.refresh_from_db()
    assert key.revoked_at is not None and principal_for_key(key._raw) is None
    assert AuditEvent.objects.get(team=team, action="api_key.revoke").actor.startswith("user:")


@pytest.mark.parametrize("role", ["member", "viewer"])
def test_members_and_viewers_cannot_revoke(as_role, role, team):
    key = ApiKeyFactory(team=team)
    assert as_role(role).post(f"/settings/api-keys/{key.pk}/revoke").status_code == 403
    key.refresh_from_db()
    assert key.revoked_at is None


def test_another_teams_key_is_a_404(as_role, other_team):
    key = ApiKeyFactory(team=other_team)
    assert as_role("owner").post(f"/settings/api-keys/{key.pk}/revoke").status_code == 404
    key.refresh_from_db()
    assert key.revoked_at is None


def test_a_visitor_is_sent_to_log_in(client, team):
    key = ApiKeyFactory(team=team)
    assert client.get("/settings/api-keys")["Location"].startswith("/login")
    assert client.post(f"/settings/api-keys/{key.pk}/revoke")["Location"].startswith("/login")
    key.refresh_from_db()
    assert key.revoked_at is None
