"""A Redis cache that degrades to misses when Redis is unreachable.

Everything we cache (API key look-ups, compiled routing versions, circuit breakers, rate-limit
counters) can be recomputed from Postgres, so a Redis outage must not turn ingest into 500s: the
traces and their outbox rows go to Postgres and the sweeper dispatches them once Redis is back
(DESIGN.md, Processes). Reads return the default, writes report failure, and one warning is
logged per outage burst. Connect and read timeouts are short so a hung Redis costs milliseconds.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

log = logging.getLogger(__name__)

UNREACHABLE = (RedisConnectionError, RedisTimeoutError, OSError)
_WARN_EVERY_S = 30.0


class ResilientRedisCache(RedisCache):
    def __init__(self, server: str, params: dict[str, Any]) -> None:
        params = dict(params)
        options = dict(params.get("OPTIONS") or {})
        options.setdefault("socket_connect_timeout", 0.5)
        options.setdefault("socket_timeout", 1.0)
        options.setdefault("retry_on_timeout", False)
        params["OPTIONS"] = options
        super().__init__(server, params)
        self._warned_at = 0.0

    def _unreachable(self, exc: Exception, operation: str) -> None:
        now = time.monotonic()
        if now - self._warned_at > _WARN_EVERY_S:
            self._warned_at = now
            log.warning("cache unreachable (%s): %s; carrying on without it", operation, exc)

    def add(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        try:
            return super().add(key, value, timeout, version)
        except UNREACHABLE as exc:
            self._unreachable(exc, "add")
            return False

    def get(self, key: Any, default: Any = None, version: int | None = None) -> Any:
        try:
            return super().get(key, default, version)
        except UNREACHABLE as exc:
            self._unreachable(exc, "get")
            return default

    def set(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> None:
        try:
            super().set(key, value, timeout, version)
        except UNREACHABLE as exc:
            self._unreachable(exc, "set")

    def touch(self, key: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        try:
            return super().touch(key, timeout, version)
        except UNREACHABLE as exc:
            self._unreachable(exc, "touch")
            return False

    def delete(self, key: Any, version: int | None = None) -> bool:
        try:
            return super().delete(key, version)
        except UNREACHABLE as exc:
            self._unreachable(exc, "delete")
            return False

    def get_many(self, keys: Any, version: int | None = None) -> dict[Any, Any]:
        try:
            return super().get_many(keys, version)
        except UNREACHABLE as exc:
            self._unreachable(exc, "get_many")
            return {}

    def has_key(self, key: Any, version: int | None = None) -> bool:
        try:
            return super().has_key(key, version)
        except UNREACHABLE as exc:
            self._unreachable(exc, "has_key")
            return False

    def incr(self, key: Any, delta: int = 1, version: int | None = None) -> int:
        try:
            return super().incr(key, delta, version)
        except UNREACHABLE as exc:
            self._unreachable(exc, "incr")
            return delta

    def set_many(self, data: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> list[Any]:
        try:
            return super().set_many(data, timeout, version)
        except UNREACHABLE as exc:
            self._unreachable(exc, "set_many")
            return list(data)

    def delete_many(self, keys: Any, version: int | None = None) -> None:
        try:
            super().delete_many(keys, version)
        except UNREACHABLE as exc:
            self._unreachable(exc, "delete_many")
