"""Retry policy and backoff: how many attempts, and how long to wait between them."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from integrations.models import Integration, default_retry_policy

# The longest Retry-After we honour: past this, a destination is asking for something else.
MAX_RETRY_AFTER_S = 3600.0


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_attempts: int = 8
    base_delay_s: float = 1.0
    max_delay_s: float = 300.0

    @classmethod
    def from_integration(cls, integration: Integration | None) -> RetryPolicy:
        raw: Mapping[str, Any] = (integration.retry_policy if integration is not None else None) or {}
        default = default_retry_policy()

        def number(name: str) -> float:
            try:
                value = float(raw.get(name, default[name]))
            except (TypeError, ValueError):
                value = float(default[name])
            return value if value >= 0 else float(default[name])

        return cls(
            max_attempts=max(1, int(number("max_attempts"))),
            base_delay_s=number("base_delay_s"),
            max_delay_s=max(number("max_delay_s"), number("base_delay_s")),
        )


def backoff_delay(
    attempt: int, policy: RetryPolicy, *, retry_after: float | None = None, rng: random.Random | None = None
) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1-based).

    Full jitter (AWS architecture blog, "Exponential Backoff and Jitter"): a uniform draw in
    [0, min(max_delay, base × 2^(attempt-1))], so a burst of failures spreads out instead of retrying in
    lockstep. A destination's Retry-After is a floor: we never come back sooner than it asked.
    """
    ceiling = min(policy.max_delay_s, policy.base_delay_s * (2 ** max(0, attempt - 1)))
    delay = (rng or random).uniform(0, ceiling)
    if retry_after is not None and retry_after > 0:
        delay = max(delay, min(float(retry_after), MAX_RETRY_AFTER_S))
    return delay
