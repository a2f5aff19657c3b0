from __future__ import annotations

import pytest

from accounts import keys
from accounts.models import ENVIRONMENT_SCOPES
from accounts.selectors import principal_for_key, principal_from_memory
from accounts.services import api_key_create, api_key_revoke

from ..factories import TeamFactory


@pytest.mark.parametrize(
    ("environment", "prefix"), [("production", "tr_prod_"), ("development", "tr_dev_"), ("ci", "tr_ci_")]
)
def test_keys_carry_their_environment_and_a_checksum(environment, prefix):
    raw = keys.generate(environment)
    assert raw.startswith(prefix) and len(raw) == len(prefix) + 36
    assert keys.parse(raw) == environment
    assert keys.parse(raw + "\n") is None
    assert keys.parse(raw.replace(prefix, "tr_prod_" if prefix != "tr_prod_" else "tr_dev_")) is None
    assert keys.display_prefix(raw) == raw[: len(prefix) + 6]


def test_every_character_change_breaks_the_checksum():
    raw = keys.generate("production")
    body = raw[len("tr_prod_") :]
    broken = 0
    for i in range(len(body)):
        replacement = "A" if body[i] != "A" else "B"
        if keys.parse("tr_prod_" + body[:i] + replacement + body[i + 1 :]) is None:
            broken += 1
    assert broken == len(body)


@pytest.mark.django_db
def test_a_created_key_is_stored_hashed_and_shown_once():
    team = TeamFactory()
    key, raw = api_key_create(team=team, environment="ci", name="runner")
    assert key.key_hash == keys.digest(raw) and key.prefix == keys.display_prefix(raw)
    assert raw not in {key.prefix, key.key_hash, key.name}
    principal = principal_for_key(raw)
    assert (principal.team_id, principal.environment, principal.scopes) == (team.id, "ci", ENVIRONMENT_SCOPES["ci"])
    assert principal_from_memory(raw) == principal


@pytest.mark.django_db
def test_a_revoked_key_is_forgotten_everywhere_in_this_process():
    key, raw = api_key_create(team=TeamFactory(), environment="production")
    assert principal_for_key(raw) is not None
    api_key_revoke(key=key, actor="test")
    assert principal_from_memory(raw) is None
    assert principal_for_key(raw) is None


@pytest.mark.django_db
def test_last_used_is_recorded(django_assert_max_num_queries):
    key, raw = api_key_create(team=TeamFactory(), environment="production")
    assert key.last_used_at is None
    principal_for_key(raw)
    key.refresh_from_db()
    assert key.last_used_at is not None


def test_an_unknown_environment_cannot_make_a_key(db):
    with pytest.raises(ValueError):
        api_key_create(team=TeamFactory(), environment="staging")
