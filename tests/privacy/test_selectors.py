"""The compiled-policy cache: per process, rechecked against the shared cache, forgotten on demand."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from privacy import selectors
from privacy.models import PiiPolicy


@pytest.fixture(autouse=True)
def fresh():
    selectors.forget()
    yield
    selectors.forget()


def store(team, **fields):
    row, _ = PiiPolicy.objects.get_or_create(team=team)
    for name, value in fields.items():
        setattr(row, name, value)
    row.version += 1
    row.save()
    return row


def test_a_team_without_a_policy_compiles_to_off(team):
    compiled = selectors.compiled_policy(team.id)
    assert (compiled.stored, compiled.version, compiled.kinds, compiled.custom) == ("off", 0, None, ())
    assert compiled.mode_for("anything") is None


def test_it_serves_the_cached_copy_until_the_version_moves(team, monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(selectors.compiled_cache, "clock", lambda: now[0])
    store(team, stored_mode="redact")
    first = selectors.compiled_policy(team.id)
    assert first.stored == "redact"
    # Another process changes the policy without telling this one: until the recheck, the cached copy.
    store(team, stored_mode="hash")
    assert selectors.compiled_policy(team.id) is first
    now[0] += selectors.RECHECK_SECONDS + 0.1
    # The shared cache still holds the old version (nobody published): still the same copy.
    assert selectors.compiled_policy(team.id) is first
    selectors.publish_version(team.id)
    assert selectors.compiled_policy(team.id, max_age=0).stored == "hash"


def test_forget_drops_the_copy_at_once(team):
    store(team, stored_mode="redact")
    assert selectors.compiled_policy(team.id).stored == "redact"
    store(team, stored_mode="drop")
    cache.delete(selectors.version_cache_key(team.id))
    selectors.forget(team.id)
    assert selectors.compiled_policy(team.id).stored == "drop"


def test_a_stored_pattern_that_no_longer_compiles_is_skipped_not_fatal(team, caplog):
    store(
        team, stored_mode="redact", custom_patterns=[{"name": "BAD", "regex": "(?=x)"}, {"name": "OK", "regex": "x+"}]
    )
    compiled = selectors.compiled_policy(team.id)
    assert [p.name for p in compiled.custom] == ["OK"]
    assert "BAD" in caplog.text


def test_the_hash_key_is_per_team_and_survives_recompiling(team, other_team):
    store(team, stored_mode="hash")
    store(other_team, stored_mode="hash")
    key = selectors.compiled_policy(team.id).hash_key
    selectors.forget()
    assert selectors.compiled_policy(team.id).hash_key == key
    assert selectors.compiled_policy(other_team.id).hash_key != key
