"""The parts of an analytics answer that are state now, not counts over a range: the delivery
outbox and broker queues, and the rate-limit headers the proxy last saw from each upstream."""

from __future__ import annotations

import dataclasses
import functools
import logging
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db.models import Count, Q

from config.celery import Queue
from delivery.models import Delivery, DeliveryStatus
from traces.filters import TraceFilter
from traces.selectors import traces_for_team

log = logging.getLogger(__name__)

RATE_LIMITED_SCANNED = 500  # the newest rate-limited traces looked at for the last headers per upstream
# Header names per kind of upstream (OpenAI and Azure OpenAI, Azure's own, Anthropic).
REMAINING_REQUESTS = (
    "x-ratelimit-remaining-requests",
    "x-ms-ratelimit-remaining-requests",
    "anthropic-ratelimit-requests-remaining",
)
REMAINING_TOKENS = (
    "x-ratelimit-remaining-tokens",
    "x-ms-ratelimit-remaining-tokens",
    "anthropic-ratelimit-tokens-remaining",
    "anthropic-ratelimit-input-tokens-remaining",
)


def queue_depth(team_id: int) -> dict[str, Any]:
    """Deliveries waiting per destination (new, retrying after a failure, dead-lettered), and the
    broker's queue lengths (null when the broker is not Redis or does not answer)."""
    waiting = [DeliveryStatus.PENDING, DeliveryStatus.SENDING]
    # Counting status (never null), not id: the partial index `delivery_team_waiting` holds all this reads.
    rows = (
        Delivery.objects.filter(team_id=team_id, status__in=[*waiting, DeliveryStatus.DEAD])
        .values("destination")
        .annotate(
            pending=Count("status", filter=Q(status__in=waiting, attempts=0) | Q(status=DeliveryStatus.SENDING)),
            retrying=Count("status", filter=Q(status=DeliveryStatus.PENDING, attempts__gt=0)),
            dead=Count("status", filter=Q(status=DeliveryStatus.DEAD)),
        )
        .order_by("destination")
    )
    return {"deliveries": list(rows), "broker": broker_queue_lengths()}


def broker_queue_lengths() -> dict[str, int] | None:
    url = str(getattr(settings, "CELERY_BROKER_URL", ""))
    if url.startswith("redis+socket://"):  # (kombu's name of a Unix socket: the embedded Valkey)
        url = "unix://" + url.removeprefix("redis+socket://")
    if not url.startswith(("redis://", "rediss://", "unix://")):
        return None
    import redis

    try:
        with _broker(url).pipeline(transaction=False) as pipe:
            for queue in Queue:
                pipe.llen(str(queue))
            lengths = pipe.execute()
    except redis.RedisError:
        log.warning("analytics: could not read the broker's queue lengths", exc_info=True)
        return None
    return {str(queue): int(n) for queue, n in zip(Queue, lengths, strict=True)}


@functools.cache
def _broker(url: str) -> Any:
    """One client (and connection pool) per process: connecting anew cost more than the LLENs."""
    import redis

    return redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)


def rate_limit_headers(team_id: int, f: TraceFilter, since: int, until: int) -> list[dict[str, Any]]:
    """Per upstream, the rate-limit headers of its newest rate-limited trace in the range.

    The proxy keeps an upstream's rate-limit headers in ``metadata.rate_limit`` when it answered
    429 (traces.proxy.capture), with the upstream's name in ``metadata.proxy.upstream``.
    """
    narrowed = dataclasses.replace(
        f,
        statuses=("rate_limited",),
        since=datetime.fromtimestamp(since, UTC),
        until=datetime.fromtimestamp(until, UTC),
    )
    if f.statuses and "rate_limited" not in f.statuses:
        return []
    rows = (
        traces_for_team(team_id, narrowed)
        .order_by("-timestamp")
        # Only the two members read, not whole metadata documents: most rate-limited traces have
        # no headers (they did not come through the proxy), and decoding 500 documents cost more
        # than the rest of an analytics answer.
        .values_list("timestamp", "provider", "metadata__rate_limit", "metadata__proxy")[:RATE_LIMITED_SCANNED]
    )
    latest: dict[str, dict[str, Any]] = {}
    for timestamp, provider, headers, proxy in rows:
        if not isinstance(headers, dict) or not headers:
            continue
        upstream = proxy.get("upstream") if isinstance(proxy, dict) else None
        name = str(upstream or provider or "")
        if name in latest:
            continue
        latest[name] = {
            "upstream": upstream,
            "provider": provider,
            "at": timestamp.astimezone(UTC).isoformat().replace("+00:00", "Z"),
            "remaining_requests": _first_int(headers, REMAINING_REQUESTS),
            "remaining_tokens": _first_int(headers, REMAINING_TOKENS),
            "retry_after": headers.get("retry-after"),
            "headers": {str(k): str(v) for k, v in headers.items()},
        }
    return sorted(latest.values(), key=lambda item: item["at"], reverse=True)


def _first_int(headers: dict[str, Any], names: tuple[str, ...]) -> int | None:
    for name in names:
        value = headers.get(name)
        if value is not None:
            try:
                return int(str(value).strip())
            except ValueError:
                continue
    return None
