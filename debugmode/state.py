"""Is a team's debug mode on? The hot-path check, cheap enough for every ingest batch and delivery chunk.

Each process keeps, per team, the time debug mode ends (0.0: off) and when it last asked. It asks the
shared cache (one GET; the database when the cache has no entry) at most every `RECHECK_SECONDS`, so
every process sees a change within a second; the invalidation bus (`config/invalidation.py`, topic
``debug``) drops the copies at once when a change commits. Between checks, `active` is one dict
look-up and one comparison with the clock, which is also what switches debug mode off when its
time has passed: no task has to run for that.
"""

from __future__ import annotations

import logging
import threading
import time

from django.core.cache import cache

from config import invalidation

from .models import DebugMode

log = logging.getLogger(__name__)

RECHECK_SECONDS = 1.0
UNTIL_TTL = 300  # seconds a team's "until" lives in the shared cache
MAX_TEAMS = 4096

clock = time.monotonic
wall = time.time
_until: dict[int, tuple[float, float]] = {}  # team → (checked at, on until: epoch seconds, 0.0 when off)
_lock = threading.Lock()


def cache_key(team_id: int) -> str:
    return f"debug-until:{team_id}"


def stored_until(team_id: int) -> float:
    until = DebugMode.objects.filter(team_id=team_id).values_list("until", flat=True).first()
    return until.timestamp() if until is not None else 0.0


def _shared_until(team_id: int) -> float:
    key = cache_key(team_id)
    try:
        cached = cache.get(key)
    except Exception:  # the cache is down: the database still knows
        return stored_until(team_id)
    if cached is not None:
        return float(cached)
    until = stored_until(team_id)
    try:
        cache.add(key, until, UNTIL_TTL)  # add: a change that committed meanwhile wrote a newer one
    except Exception:
        log.warning("debug mode: could not cache the state", exc_info=True)
    return until


def active(team_id: int) -> bool:
    """True while the team's debug mode is on. Rechecks the shared state at most once a second."""
    hit = _until.get(team_id)
    now = clock()
    if hit is None or now - hit[0] >= RECHECK_SECONDS:
        if hit is None:
            invalidation.ensure_listening()
        hit = (now, _shared_until(team_id))
        with _lock:
            if team_id not in _until and len(_until) >= MAX_TEAMS:
                _until.pop(next(iter(_until)))
            _until[team_id] = hit
    return wall() < hit[1]


def forget(team_id: int | None = None) -> None:
    with _lock:
        if team_id is None:
            _until.clear()
        else:
            _until.pop(team_id, None)


def publish(team_id: int) -> None:
    """After a change commits: the shared cache (read every second everywhere) and the bus."""
    forget(team_id)
    try:
        cache.set(cache_key(team_id), stored_until(team_id), UNTIL_TTL)
    except Exception:  # other processes notice when the old entry expires (UNTIL_TTL)
        log.warning("debug mode: could not publish the new state to the cache", exc_info=True)
    invalidation.publish(invalidation.DEBUG_MODE, team_id)


invalidation.subscribe(invalidation.DEBUG_MODE, lambda team: forget(int(team) if team else None))
