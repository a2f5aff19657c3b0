"""An in-process cache whose values come from a blocking loader run in a thread.

The proxy's hot path must not wait on the database: API keys and team upstreams are read once,
kept in a dict, and refreshed in the background while the old value is still served (stale while
revalidate). Only a cold miss waits, and concurrent misses for one key share a single load.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Hashable
from concurrent.futures import Executor
from time import monotonic
from typing import Generic, TypeVar

from django.db import close_old_connections

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

log = logging.getLogger(__name__)


class AsyncTTLCache(Generic[K, V]):
    """``ttl``: fresh for that long, then served stale once per refresh up to ``2 * ttl``.

    A ``None`` value (unknown API key) is remembered for ``miss_ttl`` and never served stale.
    When a refresh fails (database down) the stale value stays in service and is retried.
    """

    def __init__(
        self,
        load: Callable[[K], V | None],
        *,
        executor: Executor,
        ttl: float,
        miss_ttl: float,
        max_entries: int = 10_000,
    ) -> None:
        self._load = load
        self._executor = executor
        self.ttl = ttl
        self.miss_ttl = miss_ttl
        self.max_entries = max_entries
        self._entries: dict[K, tuple[V | None, float]] = {}
        self._loading: dict[K, asyncio.Future[V | None]] = {}
        self._generation = 0  # bumped by invalidate(): a load begun before must not store its answer

    async def get(self, key: K) -> V | None:
        entry = self._entries.get(key)
        if entry is not None:
            value, loaded_at = entry
            age = monotonic() - loaded_at
            if value is None:
                if age < self.miss_ttl:
                    return None
            elif age < self.ttl:
                return value
            elif age < 2 * self.ttl:
                if key not in self._loading:
                    self._start(key)
                return value
        future = self._loading.get(key) or self._start(key)
        # shield: a client that goes away must not cancel a load other requests wait on.
        return await asyncio.shield(future)

    def invalidate(self, key: K | None = None) -> None:
        """Forget ``key`` (or everything). Safe to call from any thread."""
        self._generation += 1
        if key is None:
            self._entries.clear()
        else:
            self._entries.pop(key, None)

    def _start(self, key: K) -> asyncio.Future[V | None]:
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self._executor, self._load_and_close, key)
        self._loading[key] = future
        generation = self._generation
        future.add_done_callback(lambda f: self._finish(key, f, generation))
        return future

    def _load_and_close(self, key: K) -> V | None:
        try:
            return self._load(key)
        finally:
            # The thread's connection goes back to the pool (or is dropped when broken).
            close_old_connections()

    def _finish(self, key: K, future: asyncio.Future[V | None], generation: int) -> None:
        if self._loading.get(key) is future:
            del self._loading[key]
        if future.cancelled() or generation != self._generation:
            return
        error = future.exception()
        if error is not None:
            stale = self._entries.get(key)
            if stale is not None and stale[0] is not None:
                # Keep serving what we had; the next request past the TTL tries again.
                self._entries[key] = (stale[0], monotonic() - self.ttl)
            log.warning("proxy cache load failed for %s: %r", type(key).__name__, error)
            return
        if len(self._entries) >= self.max_entries:
            for old in list(self._entries)[: self.max_entries // 10 or 1]:
                del self._entries[old]
        self._entries[key] = (future.result(), monotonic())
