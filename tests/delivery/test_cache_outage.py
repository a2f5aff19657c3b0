"""With Redis unreachable, the cache degrades to misses instead of failing ingest and delivery."""

from __future__ import annotations

import pytest

from config.cache import ResilientRedisCache
from delivery.breaker import CircuitBreaker
from tests.e2e.processes import free_port


@pytest.fixture
def dead_cache():
    return ResilientRedisCache(f"redis://127.0.0.1:{free_port()}/0", {"KEY_PREFIX": "t"})


def test_reads_miss_and_writes_fail_quietly(dead_cache, caplog):
    assert dead_cache.get("k", "fallback") == "fallback"
    assert dead_cache.get_many(["a", "b"]) == {}
    assert dead_cache.add("k", 1) is False
    assert dead_cache.has_key("k") is False
    assert dead_cache.incr("k", 3) == 3
    dead_cache.set("k", 1)
    dead_cache.set_many({"a": 1})
    dead_cache.delete("k")
    dead_cache.delete_many(["a"])
    assert caplog.text.count("cache unreachable") == 1  # one warning per outage burst


def test_the_circuit_breaker_lets_traffic_through_without_a_cache(dead_cache, monkeypatch):
    from delivery import breaker

    monkeypatch.setattr(breaker, "cache", dead_cache)
    breaker = CircuitBreaker(1, "langfuse", threshold=1, cooldown_s=30)

    breaker.record_failure()

    assert breaker.acquire().allowed
    breaker.record_success()
