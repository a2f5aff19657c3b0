"""The invalidation bus (config/invalidation.py) in one process and through Redis.
tests/e2e/test_invalidation.py runs it across real servers."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import transaction

from accounts import selectors as key_selectors
from config import invalidation
from config.teamcache import Entry
from routing import selectors as routing_selectors

from .factories import ApiKeyFactory


@pytest.fixture
def topic_calls(monkeypatch):
    """Subscribers of a scratch topic that record what they were told."""
    calls: list[str | None] = []
    event = threading.Event()

    def record(key: str | None) -> None:
        calls.append(key)
        event.set()

    monkeypatch.setitem(invalidation._subscribers, invalidation.INTEGRATIONS, [record])
    return calls, event


def test_a_publish_inside_a_transaction_applies_only_after_the_commit(
    db, topic_calls, django_capture_on_commit_callbacks
):
    calls, _ = topic_calls
    with django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            invalidation.publish(invalidation.INTEGRATIONS, 7)
            assert calls == []
    assert calls == ["7"]


def test_a_revocation_empties_this_processs_key_memory(db, django_capture_on_commit_callbacks):
    key = ApiKeyFactory()
    assert key_selectors.principal_for_key(key._raw) is not None
    assert key_selectors.principal_from_memory(key._raw) is not None
    from accounts.services import api_key_revoke

    with django_capture_on_commit_callbacks(execute=True):
        api_key_revoke(key=key)
    assert key_selectors.principal_from_memory(key._raw) is None
    assert key_selectors.principal_for_key(key._raw) is None


def test_a_routing_message_drops_the_teams_compiled_rules(db):
    cache = routing_selectors.compiled_cache
    cache.remember(42, Entry((1, 1), object(), time.monotonic()))  # type: ignore[arg-type]
    cache.remember(43, Entry((1, 1), object(), time.monotonic()))  # type: ignore[arg-type]
    invalidation._apply(invalidation.ROUTING, "42")
    assert 42 not in cache.entries and 43 in cache.entries
    invalidation._apply(invalidation.ROUTING, None)
    assert cache.entries == {}


def test_the_redis_listener_applies_other_processes_messages_and_skips_its_own(settings, topic_calls):
    import json

    import redis

    calls, event = topic_calls
    listener = invalidation._RedisListener(settings.REDIS_URL)
    listener.start()
    assert listener.ready.wait(5)
    client = redis.Redis.from_url(settings.REDIS_URL)
    client.publish(invalidation.channel(), json.dumps({"t": "integrations", "k": "mine", "o": invalidation._origin}))
    client.publish(invalidation.channel(), json.dumps({"t": "integrations", "k": "9", "o": "another process"}))
    client.publish(invalidation.channel(), b"not json")
    assert event.wait(2)
    time.sleep(0.2)
    # Only the other process's message (this process may run a second listener, started by another test).
    assert set(calls) == {"9"}
