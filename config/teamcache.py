"""A versioned per-team cache: each process keeps one compiled object per team (compiled routing,
a compiled PII policy) and only asks whether it changed every ``recheck_seconds``.

The question goes to the shared cache (one GET of the team's version), and to the database only when
the shared cache has no answer (or is down). A write forgets this process's copy at once and, after
its commit, `publish`es: the invalidation bus (config/invalidation.py) drops every other process's
copy at once, and the new version in the shared cache is the backstop while the bus is down, so
``recheck_seconds`` bounds staleness only then. The hot path is a dict look-up and a clock read.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.core.cache import cache

from config import invalidation

log = logging.getLogger(__name__)

V = TypeVar("V", bound=Hashable)  # a team's version (an int, or a tuple of ints)
T = TypeVar("T")  # the compiled object


@dataclass(frozen=True, slots=True)
class Entry(Generic[V, T]):
    version: V
    compiled: T
    checked_at: float


class VersionedTeamCache(Generic[V, T]):
    """Compiled objects per team, keyed by the team's stored version.

    ``stored_version(team_id)`` reads the version from the database; ``load(team_id)`` compiles from
    the database and returns ``(version, compiled)`` (read the version first: a write landing between
    the two reads then leaves newer data under an older version, which the next check recompiles).
    ``encode``/``decode`` turn a version into what the shared cache stores and back.
    """

    def __init__(
        self,
        *,
        name: str,
        topic: str,
        stored_version: Callable[[int], V],
        load: Callable[[int], tuple[V, T]],
        recheck_seconds: float,
        version_ttl: int,
        max_teams: int = 4096,
        encode: Callable[[V], Any] = lambda v: v,
        decode: Callable[[Any], V] = lambda v: v,
    ) -> None:
        self.name = name
        self.topic = topic
        self.stored_version = stored_version
        self.load = load
        self.recheck_seconds = recheck_seconds
        self.version_ttl = version_ttl
        self.max_teams = max_teams
        self.encode = encode
        self.decode = decode
        self.entries: dict[int, Entry[V, T]] = {}
        self.clock: Callable[[], float] = time.monotonic
        self.shared: Any = cache  # the shared cache (tests swap in a broken one)
        self._lock = threading.Lock()
        invalidation.subscribe(topic, lambda team: self.forget(int(team) if team else None))

    def version_key(self, team_id: int) -> str:
        return f"{self.name}:{team_id}"

    def current_version(self, team_id: int) -> V:
        """The team's version from the shared cache, else from the database (and cached)."""
        key = self.version_key(team_id)
        try:
            cached = self.shared.get(key)
        except Exception:  # the cache is down: the database still knows
            log.warning("%s: cache unavailable, reading the version from the database", self.name, exc_info=True)
            return self.stored_version(team_id)
        if cached is not None:
            return self.decode(cached)
        version = self.stored_version(team_id)
        # add, not set: a write that committed meanwhile has written a newer version, which must win.
        try:
            self.shared.add(key, self.encode(version), self.version_ttl)
        except Exception:
            log.warning("%s: could not cache the version", self.name, exc_info=True)
        return version

    def get(self, team_id: int, *, max_age: float | None = None) -> T:
        """The team's compiled object, rechecked against the shared cache when older than ``max_age``
        (default ``recheck_seconds``; 0 asks on every call)."""
        now = self.clock()
        entry = self.entries.get(team_id)
        if entry is not None and now - entry.checked_at < (self.recheck_seconds if max_age is None else max_age):
            return entry.compiled
        invalidation.ensure_listening()
        version = self.current_version(team_id)
        if entry is not None and entry.version == version:
            self.remember(team_id, Entry(version, entry.compiled, now))
            return entry.compiled
        loaded_version, compiled = self.load(team_id)
        self.remember(team_id, Entry(loaded_version, compiled, now))
        return compiled

    def remember(self, team_id: int, entry: Entry[V, T]) -> None:
        with self._lock:
            if team_id not in self.entries and len(self.entries) >= self.max_teams:
                self.entries.pop(next(iter(self.entries)))  # the longest-held team
            self.entries[team_id] = entry

    def forget(self, team_id: int | None = None) -> None:
        """Drop this process's copy (one team, or all): the next call recompiles."""
        with self._lock:
            if team_id is None:
                self.entries.clear()
            else:
                self.entries.pop(team_id, None)

    def publish(self, team_id: int) -> None:
        """After a commit that changed the team's data: forget here, tell every process (the bus), and
        write the new version to the shared cache (the backstop when the bus is down)."""
        self.forget(team_id)
        invalidation.publish(self.topic, team_id)
        try:
            self.shared.set(self.version_key(team_id), self.encode(self.stored_version(team_id)), self.version_ttl)
        except Exception:  # other processes notice when the old entry expires (version_ttl)
            log.warning("%s: could not publish the new version to the cache", self.name, exc_info=True)
