from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from accounts import keys
from accounts.models import ApiKey, AuditEvent, Team
from accounts.selectors import principal_for_key

from ..factories import ApiKeyFactory, TeamFactory

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command("apikey", *args, stdout=out)
    return out.getvalue()


def test_create_prints_the_key_alone_on_its_last_line_and_it_works():
    TeamFactory(name="acme")
    output = run("create", "--team", "acme", "--environment", "development", "--name", "laptop")
    raw = output.strip().splitlines()[-1]
    assert keys.parse(raw) == "development" and raw.startswith("tr_dev_")
    key = ApiKey.objects.get()
    assert (key.team.name, key.environment, key.name) == ("acme", "development", "laptop")
    assert key.key_hash == keys.digest(raw) and raw not in (key.prefix, key.key_hash)
    assert principal_for_key(raw).team_id == key.team_id
    assert AuditEvent.objects.filter(action="api_key.create", actor="cli", target=key.prefix).exists()


def test_create_refuses_an_unknown_team_unless_asked_to_create_it():
    TeamFactory(name="acme")
    with pytest.raises(CommandError, match="No team named 'acmee'.*acme.*--create-team"):
        run("create", "--team", "acmee", "--environment", "ci")
    assert not ApiKey.objects.exists()
    output = run("create", "--team", "newco", "--environment", "ci", "--create-team")
    assert Team.objects.filter(name="newco").exists()
    assert output.strip().splitlines()[-1].startswith("tr_ci_")


def test_create_refuses_an_unknown_environment():
    TeamFactory(name="acme")
    with pytest.raises(CommandError):
        run("create", "--team", "acme", "--environment", "staging")


def test_list_shows_keys_never_their_secret():
    team = TeamFactory(name="acme")
    key = ApiKeyFactory(team=team, name="ci-runner", environment="ci")
    ApiKeyFactory(team=TeamFactory(name="other"))
    revoked = ApiKeyFactory(team=team)
    revoked.revoked_at = revoked.created_at
    revoked.save()
    output = run("list", "--team", "acme")
    assert key.prefix in output and "ci-runner" in output and "never" in output
    assert key._raw not in output and key.key_hash not in output
    assert revoked.prefix not in output and "other" not in output
    assert revoked.prefix in run("list", "--all")
    with pytest.raises(CommandError):
        run("list", "--team", "nope")


def test_revoke_by_prefix_or_id_stops_the_key_at_once():
    key = ApiKeyFactory(team=TeamFactory(name="acme"))
    assert principal_for_key(key._raw) is not None  # cached now
    output = run("revoke", key.prefix)
    assert "Revoked" in output
    key.refresh_from_db()
    assert key.revoked_at is not None
    assert principal_for_key(key._raw) is None
    assert "already revoked" in run("revoke", str(key.pk))
    assert AuditEvent.objects.filter(action="api_key.revoke", target=key.prefix).count() == 1


def test_revoke_takes_the_whole_key_too():
    key = ApiKeyFactory(team=TeamFactory(name="acme"))
    run("revoke", key._raw)
    key.refresh_from_db()
    assert key.revoked_at is not None


def test_revoke_explains_unknown_and_ambiguous_references():
    team = TeamFactory(name="acme")
    ApiKeyFactory(team=team)
    ApiKeyFactory(team=team)
    with pytest.raises(CommandError, match="No key"):
        run("revoke", "tr_prod_zzzzzz")
    with pytest.raises(CommandError, match="several keys"):
        run("revoke", "tr_prod_")
    with pytest.raises(CommandError, match="neither"):
        run("revoke", "banana")
