"""``config.quota``: how many traces an integration may be sent per minute and per day, counted in
Redis so that every delivery worker draws from the same allowance.

The minute slides (never more than the limit in any 60 seconds); the day is the UTC day. `take`
asks for n sends and is granted what the windows have room for, in one Lua script (atomic: two
workers never both take the last slot).
What is not granted is, by ``over_quota``:

* ``delay``: held until the window that ran out starts again (`Grant.retry_at`); nothing is lost;
* ``sample``: the traces whose id hashes below a fraction are kept (the same fraction of every
  trace id, so a trace is kept or not alike at every retry), the fraction being the quota over
  the demand seen in the previous window; within the window the quota is still a hard cap;
* ``drop``: each delivery is recorded as dropped with the reason ``quota`` (replayable).

Redis unreachable: nothing is granted and the sends are held a few seconds (`UNREACHABLE_HOLD_S`),
whatever the mode: a quota that cannot be counted is not spent, and nothing is dropped for it.
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.core.cache import cache

log = logging.getLogger(__name__)

UNREACHABLE_HOLD_S = 5.0
WINDOWS = (("max_per_minute", "m", 60), ("max_per_day", "d", 86_400))
MAX_PER_MINUTE = 100_000  # the minute window keeps one entry per send

# The minute is a sliding window (a sorted set of the sends' times: never more than the limit in
# any 60 seconds, whenever the minute started); the day is the UTC day (a counter).
# KEYS: minute set, day counter, minute demand, day demand. ARGV: n, now (ms), minute limit, day
# limit (0: none), a unique prefix for this call's entries, the demand to count.
# Returns the number granted, the minute's count after it, the day's, and the oldest entry (ms) of
# the minute still in the window.
_TAKE = """
local n = tonumber(ARGV[1])
local now = tonumber(ARGV[2])
local mlimit = tonumber(ARGV[3])
local dlimit = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 60000)
local mused = redis.call('ZCARD', KEYS[1])
local dused = tonumber(redis.call('GET', KEYS[2]) or '0')
local granted = n
if mlimit > 0 then granted = math.min(granted, math.max(0, mlimit - mused)) end
if dlimit > 0 then granted = math.min(granted, math.max(0, dlimit - dused)) end
if mlimit > 0 and granted > 0 then
  for i = 1, granted do
    redis.call('ZADD', KEYS[1], now, ARGV[5] .. i)
  end
  redis.call('PEXPIRE', KEYS[1], 61000)
end
if dlimit > 0 then
  dused = redis.call('INCRBY', KEYS[2], granted)
  redis.call('EXPIRE', KEYS[2], 90000)
end
redis.call('INCRBY', KEYS[3], tonumber(ARGV[6]))
redis.call('EXPIRE', KEYS[3], 180)
redis.call('INCRBY', KEYS[4], tonumber(ARGV[6]))
redis.call('EXPIRE', KEYS[4], 180000)
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local first = now
if oldest[2] then first = tonumber(oldest[2]) end
return {granted, mused + (mlimit > 0 and granted or 0), dused, first}
"""


@dataclass(frozen=True, slots=True)
class Quota:
    limits: Mapping[str, int]  # window letter ("m", "d") → limit
    over_quota: str

    @classmethod
    def of(cls, config: Mapping[str, Any]) -> Quota | None:
        raw = config.get("quota")
        if not isinstance(raw, Mapping):
            return None
        limits = {letter: int(raw[name]) for name, letter, _ in WINDOWS if raw.get(name)}
        return cls(limits, str(raw.get("over_quota") or "delay")) if limits else None


@dataclass(frozen=True, slots=True)
class Grant:
    granted: int
    retry_at: float  # epoch seconds when the window that ran out starts again
    counted: bool = True  # False: Redis could not be reached


def _window_start(letter: str, now: float) -> int:
    size = 60 if letter == "m" else 86_400
    return int(now // size) * size


def _keys(integration_id: int, now: float) -> list[str]:
    minute, day = _window_start("m", now), _window_start("d", now)
    return [
        cache.make_key(f"quota:{integration_id}:sends"),
        cache.make_key(f"quota:{integration_id}:d:{day}"),
        cache.make_key(f"quota:{integration_id}:m-seen:{minute}"),
        cache.make_key(f"quota:{integration_id}:d-seen:{day}"),
    ]


def _client() -> Any:
    return cache._cache.get_client(write=True)  # type: ignore[attr-defined]


def take(integration_id: int, quota: Quota, n: int, *, demand: int | None = None, now: float | None = None) -> Grant:
    """Ask for ``n`` sends now; ``demand``: how many traces wanted to go (counted for sampling)."""
    now = time.time() if now is None else now
    args = [n, int(now * 1000), quota.limits.get("m", 0), quota.limits.get("d", 0), f"{uuid.uuid4().hex}:"]
    args.append(n if demand is None else demand)
    try:
        granted, minute, day, oldest_ms = (int(v) for v in _client().eval(_TAKE, 4, *_keys(integration_id, now), *args))
    except Exception:  # Redis down or refusing: hold, never drop for it
        log.warning("quota of integration %s cannot be counted; holding its deliveries", integration_id, exc_info=True)
        return Grant(0, now + UNREACHABLE_HOLD_S, counted=False)
    waits = [now]
    if "m" in quota.limits and minute >= quota.limits["m"]:
        waits.append(oldest_ms / 1000 + 60)  # when the oldest send leaves the sliding minute
    if "d" in quota.limits and day >= quota.limits["d"]:
        waits.append(_window_start("d", now) + 86_400)
    return Grant(granted, max(waits))


def demand_fraction(integration_id: int, quota: Quota, *, now: float | None = None) -> float:
    """For sampling: the quota over the demand of the window before (1 when that fitted)."""
    now = time.time() if now is None else now
    before = [
        ("m", cache.make_key(f"quota:{integration_id}:m-seen:{_window_start('m', now) - 60}")),
        ("d", cache.make_key(f"quota:{integration_id}:d-seen:{_window_start('d', now) - 86_400}")),
    ]
    wanted = [(quota.limits[letter], key) for letter, key in before if letter in quota.limits]
    try:
        seen = [int(v or 0) for v in _client().mget([key for _, key in wanted])]
    except Exception:
        return 1.0
    return min((limit / s for (limit, _), s in zip(wanted, seen, strict=True) if s > limit), default=1.0)


def kept_by_sample(trace_id: str, fraction: float) -> bool:
    """Whether a trace is in the kept fraction: by its id alone, so the same at every retry."""
    if fraction >= 1.0:
        return True
    digest = hashlib.blake2b(trace_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64 < fraction


def usage(integration_id: int, quota: Quota, *, now: float | None = None) -> dict[str, int] | None:
    """Sends counted in the last 60 seconds and the current UTC day (the windows the quota has),
    as ``{"max_per_minute": n, "max_per_day": n}``; None when Redis cannot be read."""
    now = time.time() if now is None else now
    sends, day = _keys(integration_id, now)[:2]
    try:
        with _client().pipeline(transaction=False) as pipe:
            pipe.zcount(sends, now * 1000 - 60_000, "+inf")
            pipe.get(day)
            minute_count, day_count = pipe.execute()
    except Exception:
        return None
    counts = {"m": int(minute_count or 0), "d": int(day_count or 0)}
    return {name: counts[letter] for name, letter, _ in WINDOWS if letter in quota.limits}


def usage_many(items: Sequence[tuple[int, Quota]]) -> dict[int, dict[str, int]]:
    """`usage` of several integrations (for `/metrics`), skipping the ones Redis cannot read."""
    out: dict[int, dict[str, int]] = {}
    for integration_id, quota in items:
        found = usage(integration_id, quota)
        if found is not None:
            out[integration_id] = found
    return out
