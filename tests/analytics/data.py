"""Generated traces and the brute-force recount every analytics figure is checked against."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import transaction

from config.bulk import build_row, insert_rows
from traces.ids import new_trace_id
from traces.models import Trace
from traces.usage import DETAIL_FIELDS

MODELS = [
    ("gpt-4o", "openai"),
    ("gpt-4o-mini", "openai"),
    ("gpt-4.1", "openai"),
    ("claude-sonnet-4", "anthropic"),
    ("gemini-2.5-flash", "google"),
    ("llama-local", ""),
]
TAGS = ["checkout", "search", "beta", "batch", "eval"]


def make_traces(team_id: int, *, n: int, start: datetime, span: timedelta, seed: int = 1) -> list[Trace]:
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        model, provider = rng.choice(MODELS)
        status = rng.choices(["success", "error", "rate_limited"], weights=[80, 12, 8])[0]
        prompt, completion = rng.randint(0, 4000), rng.randint(0, 1000)
        unpriced = model == "llama-local" or rng.random() < 0.05
        cost = None if unpriced else Decimal(rng.randint(0, 10**8)) / Decimal(10**10)
        latency = None if rng.random() < 0.05 else (0 if rng.random() < 0.02 else int(rng.lognormvariate(6.5, 1.0)))
        ttft = int(latency * rng.random()) if latency is not None and rng.random() < 0.5 else None
        when = start + timedelta(seconds=rng.random() * span.total_seconds())
        rows.append(
            build_row(
                Trace,
                {
                    "team_id": team_id,
                    "trace_id": new_trace_id(),
                    "model": model,
                    "provider": provider,
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                    # usage parts derived, not drawn: the seeded draws stay what they were
                    "cached_tokens": prompt // 3 if prompt % 2 else 0,
                    "cache_write_tokens": prompt // 10 if prompt % 5 == 0 else 0,
                    "reasoning_tokens": completion // 4,
                    "input_audio_tokens": prompt // 7 if prompt % 3 == 0 else 0,
                    "input_image_tokens": prompt // 5 if prompt % 7 == 0 else 0,
                    "output_audio_tokens": completion // 6 if completion % 2 else 0,
                    "output_image_tokens": completion // 9 if completion % 4 == 0 else 0,
                    "latency_ms": latency,
                    "time_to_first_token_ms": ttft,
                    "timestamp": when,
                    "status": status,
                    "tags": rng.sample(TAGS, rng.choice([0, 1, 1, 2, 3])),
                    "metadata": {"customer": rng.choice(["acme", "globex"])},
                    "environment": rng.choice(["production", "production", "development", ""]),
                    "service_name": rng.choice(["api", "worker", ""]),
                    "user_id": rng.choice(["u1", "u2", "u3", ""]),
                    "cost": cost,
                    "unpriced": unpriced,
                    "usage_estimated": rng.random() < 0.1,
                    "destinations": rng.sample(["langfuse", "datadog"], rng.choice([0, 1, 2])),
                },
            )
        )
    return rows


def store(rows: list[Trace], *, batch: int = 250) -> None:
    """What ingest does: the traces and their pending batch row in one transaction per batch."""
    for i in range(0, len(rows), batch):
        chunk = rows[i : i + batch]
        with transaction.atomic():
            insert_rows(chunk)


# ---- the brute-force recount ---------------------------------------------------------------


@dataclass
class Expected:
    count: int = 0
    success: int = 0
    errors: int = 0
    rate_limited: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    input_audio_tokens: int = 0
    input_image_tokens: int = 0
    output_audio_tokens: int = 0
    output_image_tokens: int = 0
    cost: Decimal = Decimal(0)
    unpriced: int = 0
    estimated_usage: int = 0

    def __post_init__(self) -> None:
        self.latencies: list[int] = []
        self.ttfts: list[int] = []

    def add(self, t: Trace) -> None:
        self.count += 1
        self.success += t.status == "success"
        self.errors += t.status == "error"
        self.rate_limited += t.status == "rate_limited"
        self.prompt_tokens += t.prompt_tokens
        self.completion_tokens += t.completion_tokens
        self.total_tokens += t.total_tokens
        self.cached_tokens += t.cached_tokens
        self.cache_write_tokens += t.cache_write_tokens
        self.reasoning_tokens += t.reasoning_tokens
        self.input_audio_tokens += t.input_audio_tokens
        self.input_image_tokens += t.input_image_tokens
        self.output_audio_tokens += t.output_audio_tokens
        self.output_image_tokens += t.output_image_tokens
        if t.cost is not None:
            self.cost += t.cost
        self.unpriced += t.unpriced
        self.estimated_usage += t.usage_estimated
        if t.latency_ms is not None:
            self.latencies.append(t.latency_ms)
        if t.time_to_first_token_ms is not None:
            self.ttfts.append(t.time_to_first_token_ms)


def select(rows: Iterable[Trace], since: datetime, until: datetime, keep: Callable[[Trace], bool]) -> list[Trace]:
    return [t for t in rows if since <= t.timestamp < until and keep(t)]


def recount(rows: Iterable[Trace]) -> Expected:
    out = Expected()
    for t in rows:
        out.add(t)
    return out


def exact_quantile(values: list[int], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return float(ordered[math.floor(q * (len(ordered) - 1))])


def assert_totals(got: dict[str, Any], want: Expected) -> None:
    for name in ("count", "success", "errors", "rate_limited", "prompt_tokens", "completion_tokens", "total_tokens",
                 *DETAIL_FIELDS):  # fmt: skip
        assert got[name] == getattr(want, name), name
    assert got["unpriced"] == want.unpriced
    assert got["estimated_usage"] == want.estimated_usage
    assert got["cost"] == float(want.cost)
    rate = (want.errors + want.rate_limited) / want.count if want.count else 0.0
    assert got["error_rate"] == pytest_approx(rate)


def pytest_approx(value: float) -> Any:
    import pytest

    return pytest.approx(value, abs=1e-6)


def assert_close(got: float | None, want: float | None) -> None:
    if want is None:
        assert got is None
        return
    assert got is not None
    assert abs(got - want) <= 0.01 * want, (got, want)


def assert_percentiles(got: dict[str, Any], values: list[int]) -> None:
    for name, q in (("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99)):
        assert_close(got[name], exact_quantile(values, q))
    if values:
        assert got["mean"] == pytest_approx(round(sum(values) / len(values), 3))
    else:
        assert got["mean"] is None


def day_starts(since: datetime, until: datetime, tz: Any) -> list[datetime]:
    """Local midnights from the one at or before ``since`` to the first at or after ``until``."""
    day = since.astimezone(tz).date()
    out = []
    while True:
        start = datetime.combine(day, datetime.min.time(), tzinfo=tz).astimezone(UTC)
        out.append(start)
        if start >= until:
            return out
        day += timedelta(days=1)


def _dt(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def check(body: dict[str, Any], rows, keep=lambda t: True, *, group: str | None = None, starts=None) -> None:
    since, until = _dt(body["range"]["since"]), _dt(body["range"]["until"])
    chosen = select(rows, since, until, keep)
    want = recount(chosen)
    assert_totals(body["totals"], want)
    assert_percentiles(body["latency_ms"], want.latencies)
    assert_percentiles(body["ttft_ms"], want.ttfts)
    ts = [_dt(p["t"]) for p in body["series"]] + [until]
    if starts is not None:
        assert ts == starts
    assert ts[0] == since
    for point, a, b in zip(body["series"], ts, ts[1:], strict=False):
        bucket = recount(select(chosen, a, b, lambda t: True))
        assert_totals(point, bucket)
        for name, q in (("p50", 0.5), ("p95", 0.95)):
            assert_close(point[name], exact_quantile(bucket.latencies, q))
    # rate-limited calls per interval and provider
    rl: dict[tuple[str, str], int] = {}
    for point, a, b in zip(body["series"], ts, ts[1:], strict=False):
        for t in select(chosen, a, b, lambda t: t.status == "rate_limited"):
            rl[(point["t"], t.provider)] = rl.get((point["t"], t.provider), 0) + 1
    assert {(p["t"], p["provider"]): p["rate_limited"] for p in body["rate_limits"]["series"]} == rl
    if group is None:
        assert body["groups"] is None
        return
    members: dict[str, list] = {}
    for t in chosen:
        value = getattr(
            t,
            {"service": "service_name", "user": "user_id", "tag": "tags", "destination": "destinations"}.get(
                group, group
            ),
        )
        for key in set(value) if isinstance(value, list) else [value]:
            members.setdefault(key, []).append(t)
    assert body["groups"] is not None
    expected_order = sorted(members, key=lambda k: (-recount(members[k]).cost, -len(members[k]), k))
    assert [g["key"] for g in body["groups"]] == expected_order[: len(body["groups"])]
    assert len(body["groups"]) == min(len(members), 10)
    for item in body["groups"]:
        want = recount(members[item["key"]])
        assert_totals(item, want)
        assert_percentiles(item["latency_ms"], want.latencies)
        assert_percentiles(item["ttft_ms"], want.ttfts)
