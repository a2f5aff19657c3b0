"""A team's prices on the ingest hot path: compiled once per process per team (`config.teamcache`),
rechecked against the team's stored version at most every ``RECHECK_SECONDS`` and dropped at once
by the invalidation bus when a price changes (`services`). A call's price is then a dict look-up
(exact names), a walk of the team's prefixes (longest first) and a comparison of times: no query.

Which price applies to a call (docs/pricing.md, "Team prices"): only prices whose provider is unset
or the call's, and whose ``effective_from`` is unset or at or before the call's time. Of those, an
exact model name wins over any prefix, a longer prefix over a shorter one; for the same name, the
newest ``effective_from`` wins (unset is the oldest), then a price naming the provider over one that
does not.

This module imports no model at import time: `traces.pricing` (which imports it) must stay usable
without Django's apps (bench/pricing_usage.py).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING

from config import invalidation
from config.teamcache import VersionedTeamCache

from ..usage import TokenDetails

if TYPE_CHECKING:
    from .models import TeamPrice

MTOK = Decimal(1_000_000)
RECHECK_SECONDS = 1.0
VERSION_TTL = 300  # seconds a team's price-list version lives in the shared cache
MAX_TEAMS = 4096  # compiled price lists kept per process
SOURCE = "team"


@dataclass(frozen=True, slots=True)
class Rate:
    """One team price, its optional rates resolved to their fallbacks."""

    id: int
    revision: int
    provider: str  # "" for any provider
    effective_from: datetime | None
    input: Decimal
    output: Decimal
    cached_input: Decimal
    cache_write: Decimal
    reasoning: Decimal

    @property
    def version(self) -> str:
        return f"team:{self.id}@r{self.revision}"

    def parts(
        self, prompt_tokens: int, completion_tokens: int, details: TokenDetails
    ) -> tuple[tuple[str, int, Decimal], ...]:
        """A call's tokens part by part (genai-prices' usage keys), each with its rate per million.
        Cached and cache-write tokens are parts of the prompt and reasoning tokens part of the
        completion (traces/usage.py): each part at its own rate, the rest of its whole at the whole's
        rate, as the genai-prices path sums them. Audio and image tokens have no rate of their own
        here: they count at the input or output rate."""
        cached, written, reasoning = details.cached_tokens, details.cache_write_tokens, details.reasoning_tokens
        return (
            ("input_tokens", prompt_tokens - cached - written, self.input),
            ("cache_read_tokens", cached, self.cached_input),
            ("cache_write_tokens", written, self.cache_write),
            ("output_tokens", completion_tokens - reasoning, self.output),
            ("output_reasoning_tokens", reasoning, self.reasoning),
        )

    def cost(self, prompt_tokens: int, completion_tokens: int, details: TokenDetails) -> Decimal:
        """USD for one call: the sum of its `parts`, written out (ingest's hot path: a third faster
        than summing the tuple; tests/prices checks the two agree)."""
        cached, written, reasoning = details.cached_tokens, details.cache_write_tokens, details.reasoning_tokens
        cost = self.input * (prompt_tokens - cached - written) + self.output * (completion_tokens - reasoning)
        if cached:
            cost += self.cached_input * cached
        if written:
            cost += self.cache_write * written
        if reasoning:
            cost += self.reasoning * reasoning
        return cost / MTOK


def _order(rate: Rate) -> tuple[bool, datetime | float, bool]:
    return (rate.effective_from is not None, rate.effective_from or 0.0, bool(rate.provider))


@dataclass(frozen=True, slots=True)
class TeamPrices:
    """A team's prices by model name: exact names in a dict, prefixes longest first; each name's
    rates best first (newest ``effective_from``, then provider-specific)."""

    exact: dict[str, tuple[Rate, ...]]
    prefixes: tuple[tuple[str, tuple[Rate, ...]], ...]

    def __bool__(self) -> bool:
        return bool(self.exact or self.prefixes)

    def find(self, model: str, provider: str, when: datetime) -> Rate | None:
        """The price for a call to ``model`` from ``provider`` at ``when``, or None."""
        key = model.lower()
        rates = self.exact.get(key)
        if rates is not None:
            found = _first(rates, provider, when)
            if found is not None:
                return found
        for prefix, rates in self.prefixes:
            if key.startswith(prefix):
                found = _first(rates, provider, when)
                if found is not None:
                    return found
        return None


def _first(rates: tuple[Rate, ...], provider: str, when: datetime) -> Rate | None:
    for rate in rates:
        if rate.provider and rate.provider != provider.lower():
            continue
        if rate.effective_from is not None and rate.effective_from > when:
            continue
        return rate
    return None


NO_PRICES = TeamPrices({}, ())


def compile_prices(rows: list[Rate], models: list[str]) -> TeamPrices:
    """``rows[i]`` is the price for ``models[i]`` (lowercase; ``prefix*`` for a prefix)."""
    exact: dict[str, list[Rate]] = {}
    prefixes: dict[str, list[Rate]] = {}
    for rate, model in zip(rows, models, strict=True):
        if model.endswith("*"):
            prefixes.setdefault(model[:-1], []).append(rate)
        else:
            exact.setdefault(model, []).append(rate)

    def best_first(rates: list[Rate]) -> tuple[Rate, ...]:
        return tuple(sorted(rates, key=_order, reverse=True))

    return TeamPrices(
        {name: best_first(rates) for name, rates in exact.items()},
        tuple((p, best_first(rates)) for p, rates in sorted(prefixes.items(), key=lambda kv: -len(kv[0]))),
    )


# ---------------------------------------------------------------------------------------------
# The per-process cache (config/teamcache.py)


def stored_version(team_id: int) -> tuple[int, int, int]:
    """(how many prices, the highest id, the latest change in µs): any create, change or delete
    moves one of them."""
    from django.db.models import Count, Max

    from .models import TeamPrice

    row = TeamPrice.objects.filter(team_id=team_id).aggregate(n=Count("id"), top=Max("id"), at=Max("updated_at"))
    at = row["at"]
    return (int(row["n"]), int(row["top"] or 0), int(at.timestamp() * 1_000_000) if at else 0)


def _load(team_id: int) -> tuple[tuple[int, int, int], TeamPrices]:
    from .models import TeamPrice

    version = stored_version(team_id)
    rows = list(TeamPrice.objects.filter(team_id=team_id))
    if not rows:
        return version, NO_PRICES
    return version, compile_prices([rate_of(row) for row in rows], [row.model.lower() for row in rows])


def rate_of(row: TeamPrice) -> Rate:
    """A stored `TeamPrice` → its `Rate` (optional rates fall back: cached input and cache writes to
    the input price, reasoning to the output price)."""
    input_price, output_price = row.input_per_mtok, row.output_per_mtok
    return Rate(
        id=row.pk,
        revision=row.revision,
        provider=row.provider.lower(),
        effective_from=row.effective_from,
        input=input_price,
        output=output_price,
        cached_input=input_price if row.cached_input_per_mtok is None else row.cached_input_per_mtok,
        cache_write=input_price if row.cache_write_per_mtok is None else row.cache_write_per_mtok,
        reasoning=output_price if row.reasoning_per_mtok is None else row.reasoning_per_mtok,
    )


compiled_cache: VersionedTeamCache[tuple[int, int, int], TeamPrices] = VersionedTeamCache(
    name="team-prices-version",
    topic=invalidation.PRICES,
    stored_version=stored_version,
    load=_load,
    recheck_seconds=RECHECK_SECONDS,
    version_ttl=VERSION_TTL,
    max_teams=MAX_TEAMS,
    encode=list,
    decode=lambda cached: (int(cached[0]), int(cached[1]), int(cached[2])),
)


def fresh(team_id: int) -> TeamPrices | None:
    """The team's compiled prices when this process's copy needs no recheck, else None."""
    entry = compiled_cache.entries.get(team_id)
    if entry is not None and compiled_cache.clock() - entry.checked_at < RECHECK_SECONDS:
        return entry.compiled
    return None


def team_prices(team_id: int) -> TeamPrices:
    """The team's compiled prices (possibly `NO_PRICES`), from this process's cache.

    The lean ingest door normalises on the event loop, where Django allows no query: it refreshes
    the copy in a thread first (`refresh`); should the copy go stale in between (or be dropped by
    the invalidation bus), the recheck runs in a helper thread here, the loop waiting for it."""
    found = fresh(team_id)
    if found is not None:
        return found
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return compiled_cache.get(team_id)
    return _helper.submit(refresh, team_id).result()


def refresh(team_id: int) -> TeamPrices:
    """`team_prices` from a thread of its own (no request ends it): the connection is given back."""
    from django.db import close_old_connections

    try:
        return compiled_cache.get(team_id)
    finally:
        close_old_connections()


_helper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="team-prices")
