"""Retry maths: exponential backoff with full jitter, capped, with Retry-After as a floor."""

from __future__ import annotations

import random

from delivery.policy import MAX_RETRY_AFTER_S, RetryPolicy, backoff_delay
from integrations.models import Integration


def test_the_ceiling_doubles_per_attempt_up_to_the_maximum():
    policy = RetryPolicy(max_attempts=10, base_delay_s=1, max_delay_s=20)
    for attempt, ceiling in [(1, 1), (2, 2), (3, 4), (4, 8), (5, 16), (6, 20), (9, 20)]:
        draws = [backoff_delay(attempt, policy, rng=random.Random(seed)) for seed in range(300)]
        assert 0 <= min(draws) and max(draws) <= ceiling
        assert max(draws) > ceiling * 0.9  # full jitter covers the whole range
        assert min(draws) < ceiling * 0.1


def test_retry_after_is_a_floor_not_a_ceiling():
    policy = RetryPolicy(base_delay_s=1, max_delay_s=300)
    assert backoff_delay(1, policy, retry_after=42, rng=random.Random(1)) == 42
    long = backoff_delay(9, policy, retry_after=0.5, rng=random.Random(3))
    assert long == backoff_delay(9, policy, rng=random.Random(3))  # a smaller Retry-After changes nothing


def test_an_absurd_retry_after_is_capped():
    assert backoff_delay(1, RetryPolicy(), retry_after=10**9) == MAX_RETRY_AFTER_S


def test_the_policy_comes_from_the_integration_with_defaults_for_bad_values():
    integration = Integration(retry_policy={"max_attempts": "3", "base_delay_s": -1, "max_delay_s": "x"})
    assert RetryPolicy.from_integration(integration) == RetryPolicy(max_attempts=3, base_delay_s=1.0, max_delay_s=300.0)
    assert RetryPolicy.from_integration(None) == RetryPolicy(max_attempts=8, base_delay_s=1.0, max_delay_s=300.0)
    assert RetryPolicy.from_integration(Integration(retry_policy={"max_attempts": 0})).max_attempts == 1
