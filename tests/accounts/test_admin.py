"""The operator's admin: lists with search and filters, keys shown once when made there, revoke."""

from __future__ import annotations

import re

import pytest
from django.contrib.messages import get_messages

from accounts.models import ApiKey
from accounts.selectors import principal_for_key

from ..factories import ApiKeyFactory, MembershipFactory, PlantFactory, TeamFactory, TraceFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator(client):
    user = UserFactory(username="operator", is_staff=True, is_superuser=True)
    client.force_login(user)
    return client


@pytest.fixture
def data():
    team = TeamFactory(name="acme")
    MembershipFactory(team=team, user=UserFactory(username="alice"), role="admin")
    key = ApiKeyFactory(team=team, name="prod key")
    TraceFactory(team=team, trace_id="trace-in-admin", model="gpt-4o", session_id="sess-1")
    PlantFactory(team=team, name="fern")
    return team, key


@pytest.mark.parametrize(
    "url",
    [
        "/admin/accounts/team/",
        "/admin/accounts/team/?q=acme",
        "/admin/accounts/membership/?role__exact=admin&q=alice",
        "/admin/accounts/apikey/?status=active&environment__exact=production&q=prod",
        "/admin/accounts/apikey/?status=revoked",
        "/admin/accounts/auditevent/",
        "/admin/traces/trace/",
        "/admin/traces/trace/?q=trace-in-admin&status__exact=success&unpriced__exact=0",
        "/admin/traces/trace/?q=sess-1",
        "/admin/traces/plant/?q=fern",
        "/admin/accounts/apikey/add/",
    ],
)
def test_the_admin_pages_load(operator, data, url):
    r = operator.get(url)
    assert r.status_code == 200, url


def test_lists_show_what_an_operator_needs(operator, data):
    team, key = data
    page = operator.get("/admin/accounts/apikey/").content.decode()
    assert key.prefix in page and "prod key" in page and "active" in page and key.key_hash not in page
    page = operator.get("/admin/traces/trace/?q=trace-in-admin").content.decode()
    assert "trace-in-admin" in page and "gpt-4o" in page
    trace = TraceFactory._meta.model.objects.get(trace_id="trace-in-admin")
    assert operator.get(f"/admin/traces/trace/{trace.pk}/change/").status_code == 200
    assert operator.get(f"/admin/accounts/team/{team.pk}/change/").status_code == 200


def test_a_key_made_in_the_admin_is_shown_once_and_works(operator, data):
    team, _ = data
    r = operator.post("/admin/accounts/apikey/add/", {"team": team.pk, "environment": "ci", "name": "from admin"})
    assert r.status_code == 302
    messages = " ".join(m.message for m in get_messages(r.wsgi_request))  # consumes them
    assert "will not be shown again" in messages
    raw = re.search(r"tr_ci_[0-9A-Za-z]{36}", messages).group(0)
    key = ApiKey.objects.get(name="from admin")
    assert key.environment == "ci" and key.created_by.username == "operator"
    assert principal_for_key(raw).key_id == key.pk
    operator.get("/admin/accounts/apikey/")  # the page after saving shows the message, once
    for url in ("/admin/accounts/apikey/", f"/admin/accounts/apikey/{key.pk}/change/"):
        assert raw not in operator.get(url).content.decode()


def test_the_revoke_action_revokes_the_selected_keys(operator, data):
    _, key = data
    assert principal_for_key(key._raw) is not None
    r = operator.post("/admin/accounts/apikey/", {"action": "revoke_keys", "_selected_action": [key.pk]})
    assert r.status_code == 302
    key.refresh_from_db()
    assert key.revoked_at is not None
    assert principal_for_key(key._raw) is None


def test_keys_cannot_be_deleted_only_revoked(operator, data):
    _, key = data
    assert operator.get(f"/admin/accounts/apikey/{key.pk}/delete/").status_code == 403


def test_a_member_without_staff_status_is_sent_to_log_in(client, data):
    client.force_login(UserFactory(username="plain"))
    assert client.get("/admin/accounts/apikey/").status_code == 302


def test_user_tokens_are_listed_without_their_digest_and_revoked_in_bulk(operator, data):
    from accounts.models import UserToken
    from accounts.selectors import token_user
    from accounts.services import user_token_issue

    token, raw = user_token_issue(user=UserFactory(username="cli-user"), name="cli on laptop")
    page = operator.get("/admin/accounts/usertoken/?q=cli-user").content.decode()
    assert token.prefix in page and "cli on laptop" in page and token.token_hash not in page
    change = operator.get(f"/admin/accounts/usertoken/{token.pk}/change/").content.decode()
    assert token.token_hash not in change and raw not in change
    assert operator.get("/admin/accounts/usertoken/add/").status_code == 403
    assert token_user(raw) is not None
    r = operator.post("/admin/accounts/usertoken/", {"action": "revoke_tokens", "_selected_action": [token.pk]})
    assert r.status_code == 302 and UserToken.objects.get(pk=token.pk).revoked_at is not None
    assert token_user(raw) is None
