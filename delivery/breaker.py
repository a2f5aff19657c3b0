"""Circuit breaker per (team, destination), in the shared cache (Redis in production)."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache


@dataclass(frozen=True, slots=True)
class Permit:
    allowed: bool
    probe: bool = False
    retry_at: float = 0.0  # epoch seconds; when not allowed


class CircuitBreaker:
    """Closed → (N consecutive transient failures) → open for a cool-down → half-open: one probe.

    The probe's success closes the circuit; its failure opens it for another cool-down. While open,
    rows are rescheduled without calling the destination, so an outage does not burn their attempts.
    """

    def __init__(
        self, team_id: int, destination: str, *, threshold: int | None = None, cooldown_s: float | None = None
    ):
        digest = hashlib.blake2b(destination.encode(), digest_size=8).hexdigest()
        base = f"routing:cb:{team_id}:{digest}"
        self.open_key, self.fails_key, self.probe_key = f"{base}:open", f"{base}:fails", f"{base}:probe"
        self.threshold = threshold or int(settings.TRACERELAY_BREAKER_FAILURES)
        self.cooldown_s = cooldown_s if cooldown_s is not None else float(settings.TRACERELAY_BREAKER_COOLDOWN_S)
        self._dirty = True  # unknown state: a success must clear the keys

    def acquire(self) -> Permit:
        state = cache.get_many([self.open_key, self.fails_key])
        opened_until = state.get(self.open_key)
        self._dirty = bool(state)
        if opened_until is None:
            return Permit(True)
        now = time.time()
        if now < opened_until:
            return Permit(False, retry_at=opened_until)
        # Half-open: the first to take the probe slot sends; everyone else waits for its verdict.
        if cache.add(self.probe_key, 1, timeout=max(5, int(self.cooldown_s))):
            return Permit(True, probe=True)
        return Permit(False, retry_at=now + min(self.cooldown_s, 2.0))

    def record_success(self) -> None:
        if self._dirty:
            cache.delete_many([self.open_key, self.fails_key, self.probe_key])
            self._dirty = False

    def record_failure(self, *, probe: bool = False) -> None:
        self._dirty = True
        try:
            failures = cache.incr(self.fails_key)
        except ValueError:
            cache.add(self.fails_key, 0, timeout=3600)
            failures = cache.incr(self.fails_key)
        if probe or failures >= self.threshold:
            # The key outlives the cool-down so the half-open state (and its probe) can be seen.
            cache.set(self.open_key, time.time() + self.cooldown_s, timeout=int(self.cooldown_s) + 600)
            cache.delete(self.probe_key)

    def release_probe(self) -> None:
        """The probe slot was taken but nothing was sent (the rows went elsewhere): free it."""
        cache.delete(self.probe_key)

    def is_open(self) -> bool:
        opened_until = cache.get(self.open_key)
        return opened_until is not None and time.time() < opened_until


def breaker_reset(team_id: int, destination: str) -> None:
    """Close the circuit at once. A replay is an operator saying "it is fixed": let it through
    without waiting out a cool-down."""
    breaker = CircuitBreaker(team_id, destination)
    cache.delete_many([breaker.open_key, breaker.fails_key, breaker.probe_key])
