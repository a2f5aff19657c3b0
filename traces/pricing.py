"""Cost of a trace from `genai-prices`, never a silent zero.

`genai_prices.calc_price` costs about 0.1 ms a call (it builds a `Usage`, resolves units and walks a
registry every time). Ingest prices thousands of traces a second, so the (provider, model) look-up is
cached here and the common case, a plain per-million-token input and output price, is computed
directly; anything richer (tiered prices, or usage with cached, cache-write, reasoning, audio or image
tokens: `traces.usage`) goes through the library's own `ModelPrice.calc_price` with a full `Usage`;
cached, cache-write and reasoning parts at plain rates are summed directly too, checked against the
library's `Usage` pricing for every model it knows (bench/pricing_usage.py measures both).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import genai_prices
from genai_prices import Usage, data_snapshot, types

from .prices.lookup import SOURCE as TEAM_SOURCE
from .prices.lookup import team_prices
from .usage import NO_DETAILS, TokenDetails

PRICE_SOURCE = "genai-prices"
MTOK = Decimal(1_000_000)
QUANTUM = Decimal("0.0000000001")  # Trace.cost has 10 decimal places
_CACHE_MAX = 4096
_TOKEN_KEYS = ("input_mtok", "output_mtok")
# Prices of usage that plain input/output usage has none of (cache, audio, image, search counts...): the
# fast path (taken only when a call reports no detail counts) may skip them. Anything else (per-request
# fees, unknown keys) goes through the library.
_ZERO_FOR_TRACES = frozenset(
    {
        "cache_read_mtok",
        "cache_write_mtok",
        "cache_write_1h_mtok",
        "cache_audio_read_mtok",
        "cache_image_read_mtok",
        "input_audio_mtok",
        "input_image_mtok",
        "input_video_mtok",
        "output_audio_mtok",
        "output_image_mtok",
        "output_video_mtok",
        "output_reasoning_mtok",
        "output_citation_mtok",
        "web_searches_kcount",
        "storage_searches_kcount",
    }
)


@dataclass(frozen=True, slots=True)
class Price:
    """What a trace's cost came out as."""

    cost: Decimal | None
    provider: str  # genai-prices' provider id ("" when unknown)
    unpriced: bool
    source: str
    version: str


@dataclass(frozen=True, slots=True)
class _Entry:
    provider: types.Provider | None
    model: types.ModelInfo | None


_lock = threading.Lock()
_models: dict[tuple[str, str], _Entry] = {}
_providers: dict[str, str] = {}


def price_version() -> str:
    snapshot = data_snapshot.get_snapshot()
    if snapshot.from_auto_update:
        return f"{genai_prices.__version__}+{snapshot.timestamp:%Y%m%dT%H%M%S}"
    return genai_prices.__version__


def infer_provider(model: str) -> str:
    """genai-prices' provider id for a model name (``gpt-4o`` → ``openai``), or "" when none matches."""
    key = model.lower()
    found = _providers.get(key)
    if found is not None:
        return found
    try:
        found = data_snapshot.get_snapshot().find_provider(key, None, None).id
    except LookupError:
        found = ""
    with _lock:
        if len(_providers) >= _CACHE_MAX:
            _providers.clear()
        _providers[key] = found
    return found


def _lookup(provider: str, model: str) -> _Entry:
    key = (provider, model.lower())
    entry = _models.get(key)
    if entry is not None:
        return entry
    snapshot = data_snapshot.get_snapshot()
    try:
        found_provider, found_model = snapshot.find_provider_model(key[1], None, provider or None, None)
        entry = _Entry(found_provider, found_model)
    except LookupError:
        entry = _Entry(None, None)
    with _lock:
        if len(_models) >= _CACHE_MAX:
            _models.clear()
        _models[key] = entry
    return entry


def price(
    *,
    model: str,
    provider: str,
    prompt_tokens: int,
    completion_tokens: int,
    timestamp: datetime | None = None,
    details: TokenDetails = NO_DETAILS,
    team_id: int | None = None,
) -> Price:
    """The cost of one call. A model (or provider) genai-prices does not know is ``unpriced``, cost None.

    `team_id` names whose call it is: the team's own prices (`traces.prices`, docs/pricing.md "Team
    prices") come first, from this process's cache (no query); then genai-prices.
    """
    if team_id:  # (0, as the start-up warm-up passes, is no team: no query before the database is needed)
        prices = team_prices(team_id)
        if prices:
            when = timestamp or datetime.now(tz=UTC)
            rate = prices.find(model, provider, when)
            if rate is not None:
                team_cost = rate.cost(prompt_tokens, completion_tokens, details).quantize(QUANTUM)
                return Price(team_cost, provider or rate.provider, False, TEAM_SOURCE, rate.version)
    version = price_version()
    entry = _lookup(provider, model)
    if entry.model is None or entry.provider is None:
        return Price(None, "", True, PRICE_SOURCE, version)
    when = timestamp or datetime.now(tz=UTC)
    model_price = entry.model.get_prices(when)
    cost = _fast_cost(model_price, prompt_tokens, completion_tokens, details)
    if cost is None:
        cost = _library_cost(model_price, prompt_tokens, completion_tokens, details)
    if not _has_token_price(model_price):
        # A model priced per image, second or request: token usage says nothing about its cost.
        return Price(None, entry.provider.id, True, PRICE_SOURCE, version)
    return Price(cost.quantize(QUANTUM), entry.provider.id, False, PRICE_SOURCE, version)


def _library_cost(
    model_price: types.ModelPrice, prompt_tokens: int, completion_tokens: int, details: TokenDetails
) -> Decimal:
    try:
        return model_price.calc_price(Usage(**details.genai_usage(prompt_tokens, completion_tokens)))["total_price"]
    except ValueError:
        # Counts the library cannot decompose for this model's prices (overlaps it needs named apart):
        # the cache and reasoning counts alone, which every provider reports without overlap.
        plain = TokenDetails(
            details.cached_tokens, details.cache_write_tokens, reasoning_tokens=details.reasoning_tokens
        )
        return model_price.calc_price(Usage(**plain.genai_usage(prompt_tokens, completion_tokens)))["total_price"]


def _has_token_price(model_price: types.ModelPrice) -> bool:
    return any(getattr(model_price, k, None) is not None for k in _TOKEN_KEYS)


def _fast_cost(
    model_price: types.ModelPrice, prompt_tokens: int, completion_tokens: int, details: TokenDetails = NO_DETAILS
) -> Decimal | None:
    """Plain per-MTok prices (the vast majority): the same sum genai-prices makes, without its registry
    walk. With cached, cache-write and reasoning parts too (audio and image parts go to the library):
    each part at its own rate when the model has one, else inside its whole at the whole's rate, which
    is what the library's decomposition does (tests/traces/test_usage_details.py checks every model)."""
    values: dict[str, Any] = model_price.__dict__
    for key, value in values.items():
        if value is not None and key not in _ZERO_FOR_TRACES and key not in _TOKEN_KEYS:
            return None
    if details.input_audio_tokens or details.input_image_tokens:
        return None
    if details.output_audio_tokens or details.output_image_tokens:
        return None
    uncached, output = prompt_tokens, completion_tokens
    cost = Decimal(0)
    for key, tokens in (
        ("cache_read_mtok", details.cached_tokens),
        ("cache_write_mtok", details.cache_write_tokens),
        ("output_reasoning_mtok", details.reasoning_tokens),
    ):
        rate = values.get(key)
        if not tokens or rate is None:
            continue
        if not isinstance(rate, Decimal):
            return None
        cost += rate * tokens / MTOK
        if key == "output_reasoning_mtok":
            output -= tokens
        else:
            uncached -= tokens
    for key, tokens in (("input_mtok", uncached), ("output_mtok", output)):
        rate = values.get(key)
        if rate is None:
            continue
        if not isinstance(rate, Decimal):
            return None  # tiered: let the library do it
        cost += rate * tokens / MTOK
    return cost


# genai-prices' usage keys → how the trace page names the part.
PART_LABELS = {
    "input_tokens": "Input",
    "cache_read_tokens": "Cached input",
    "cache_write_tokens": "Cache write",
    "output_tokens": "Output",
    "output_reasoning_tokens": "Reasoning",
    "input_audio_tokens": "Input audio",
    "cache_audio_read_tokens": "Cached input audio",
    "input_image_tokens": "Input images",
    "output_audio_tokens": "Output audio",
    "output_image_tokens": "Output images",
}


@dataclass(frozen=True, slots=True)
class Part:
    """One priced part of a call: what it is, how many tokens, and their cost (USD)."""

    key: str
    label: str
    tokens: int
    cost: Decimal


def breakdown(
    *,
    model: str,
    provider: str,
    prompt_tokens: int,
    completion_tokens: int,
    timestamp: datetime | None = None,
    details: TokenDetails = NO_DETAILS,
) -> list[Part]:
    """The cost of one call part by part, as genai-prices prices each unit (the tokens it counts at
    each rate: uncached input is the prompt less its cached, cache-write, audio and image parts). Empty
    for a model it does not know. For the trace page: it walks the library's registry, never on ingest."""
    # genai-prices exposes no per-unit split; its own helpers (pinned version) make the same sum as
    # `calc_price`, which tests/traces/test_usage_details.py checks.
    from genai_prices.types import _collect_resolved_model_prices, _compute_registry_priced_counts, calc_unit_price
    from genai_prices.units import _get_registry

    entry = _lookup(provider, model)
    if entry.model is None:
        return []
    model_price = entry.model.get_prices(timestamp or datetime.now(tz=UTC))
    resolved = _collect_resolved_model_prices(model_price, _get_registry())
    try:
        usage = Usage(**details.genai_usage(prompt_tokens, completion_tokens))
        counts = _compute_registry_priced_counts(resolved, usage)
    except ValueError:
        plain = TokenDetails(
            details.cached_tokens, details.cache_write_tokens, reasoning_tokens=details.reasoning_tokens
        )
        usage = Usage(**plain.genai_usage(prompt_tokens, completion_tokens))
        counts = _compute_registry_priced_counts(resolved, usage)
    parts = []
    for unit, unit_price in resolved:
        count = counts.get(unit.usage_key)
        if not count or unit.usage_key == "requests":
            continue
        cost = calc_unit_price(unit_price, count, prompt_tokens, unit.per)
        label = PART_LABELS.get(unit.usage_key, unit.usage_key.replace("_", " ").capitalize())
        parts.append(Part(unit.usage_key, label, int(count), cost.quantize(QUANTUM)))
    return parts


def team_breakdown(
    *,
    team_id: int,
    version: str,
    model: str,
    provider: str,
    prompt_tokens: int,
    completion_tokens: int,
    timestamp: datetime,
    details: TokenDetails = NO_DETAILS,
) -> list[Part]:
    """The cost of a call a team price priced, part by part (`Rate.parts`, what `Rate.cost` sums). Empty
    when the price that priced it (``version``: its id and revision) is no longer the one that applies."""
    rate = team_prices(team_id).find(model, provider, timestamp)
    if rate is None or rate.version != version:
        return []
    return [
        Part(key, PART_LABELS[key], tokens, (per_mtok * tokens / MTOK).quantize(QUANTUM))
        for key, tokens, per_mtok in rate.parts(prompt_tokens, completion_tokens, details)
        if tokens
    ]
