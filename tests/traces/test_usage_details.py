"""Usage in full (issue 26): cached, cache-write, reasoning, audio and image tokens, priced by
genai-prices at their own rates; kept within their wholes."""

from __future__ import annotations

import warnings
from datetime import UTC, datetime
from decimal import Decimal

import genai_prices
import pytest
from genai_prices import Usage, data_snapshot

from traces import pricing
from traces.models import Trace
from traces.normalize import TraceValidationError, normalize_trace
from traces.usage import DETAIL_FIELDS, TokenDetails

# Normalising prices every call: without a database, no team's own prices (tests/prices has those).
pytestmark = pytest.mark.usefixtures("no_team_prices")

MTOK = Decimal(1_000_000)


def rates(model: str, provider: str):
    _, found = data_snapshot.get_snapshot().find_provider_model(model, None, provider, None)
    return found.get_prices(datetime.now(tz=UTC))


def test_gpt_4o_with_800_of_1000_prompt_tokens_cached_costs_less_by_the_cached_rate():
    plain = pricing.price(model="gpt-4o", provider="openai", prompt_tokens=1000, completion_tokens=100)
    cached = pricing.price(
        model="gpt-4o",
        provider="openai",
        prompt_tokens=1000,
        completion_tokens=100,
        details=TokenDetails(cached_tokens=800),
    )
    model_price = rates("gpt-4o", "openai")
    assert model_price.cache_read_mtok < model_price.input_mtok
    saving = 800 * (model_price.input_mtok - model_price.cache_read_mtok) / MTOK
    assert plain.cost is not None and cached.cost is not None
    assert plain.cost - cached.cost == saving.quantize(pricing.QUANTUM)
    theirs = genai_prices.calc_price(
        Usage(input_tokens=1000, cache_read_tokens=800, output_tokens=100), "gpt-4o", provider_id="openai"
    )
    assert cached.cost == theirs.total_price.quantize(pricing.QUANTUM)


def test_an_anthropic_cache_write_costs_more_and_a_cache_read_less_than_plain_input():
    def cost(**details: int) -> Decimal:
        p = pricing.price(
            model="claude-sonnet-4-5",
            provider="anthropic",
            prompt_tokens=10_000,
            completion_tokens=0,
            details=TokenDetails(**details),
        )
        assert p.cost is not None and not p.unpriced
        return p.cost

    model_price = rates("claude-sonnet-4-5", "anthropic")
    base = cost()
    assert cost(cache_write_tokens=10_000) == (10_000 * model_price.cache_write_mtok.base / MTOK).quantize(
        pricing.QUANTUM
    )
    assert cost(cache_write_tokens=10_000) > base > cost(cached_tokens=9_000)


def test_reasoning_audio_and_image_tokens_reach_the_library():
    model_price = rates("gpt-realtime", "openai")
    details = TokenDetails(cached_tokens=100, input_audio_tokens=300, input_image_tokens=50, output_audio_tokens=40)
    ours = pricing.price(
        model="gpt-realtime", provider="openai", prompt_tokens=1000, completion_tokens=100, details=details
    )
    theirs = model_price.calc_price(
        Usage(
            input_tokens=1000,
            cache_read_tokens=100,
            input_audio_tokens=300,
            input_image_tokens=50,
            cache_audio_read_tokens=0,
            cache_image_read_tokens=0,
            output_tokens=100,
            output_audio_tokens=40,
        )
    )["total_price"]
    plain = pricing.price(model="gpt-realtime", provider="openai", prompt_tokens=1000, completion_tokens=100)
    assert ours.cost == theirs.quantize(pricing.QUANTUM)
    assert plain.cost is not None and ours.cost is not None and ours.cost > plain.cost  # audio costs more


def test_plain_usage_keeps_the_fast_path(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the library was called for plain usage")

    monkeypatch.setattr(pricing, "_library_cost", refuse)
    assert pricing.price(model="gpt-4o", provider="openai", prompt_tokens=10, completion_tokens=5).cost


def test_the_parts_are_kept_on_the_record():
    record = normalize_trace(
        {
            "model": "o3",
            "prompt_tokens": 1000,
            "completion_tokens": 500,
            "cached_tokens": 600,
            "cache_write_tokens": 100,
            "reasoning_tokens": 400,
        },
        team_id=1,
    )
    assert (record.cached_tokens, record.cache_write_tokens, record.reasoning_tokens) == (600, 100, 400)
    assert record.total_tokens == 1500
    expected = genai_prices.calc_price(
        Usage(
            input_tokens=1000,
            cache_read_tokens=600,
            cache_write_tokens=100,
            output_tokens=500,
            output_reasoning_tokens=400,
        ),
        "o3",
        provider_id="openai",
    )
    assert record.cost == expected.total_price.quantize(pricing.QUANTUM)


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"cached_tokens": 1001}, "cached_tokens"),
        ({"cached_tokens": 800, "cache_write_tokens": 300}, "cache_write_tokens"),
        ({"input_audio_tokens": 1001}, "input_audio_tokens"),
        ({"reasoning_tokens": 101}, "reasoning_tokens"),
        ({"output_image_tokens": 101}, "output_image_tokens"),
        ({"cached_tokens": -1}, "cached_tokens"),
        ({"reasoning_tokens": "many"}, "reasoning_tokens"),
        ({"cached_tokens": 2.5}, "cached_tokens"),
    ],
)
def test_a_part_that_does_not_fit_its_whole_is_a_400_naming_it(extra, field):
    with pytest.raises(TraceValidationError) as info:
        normalize_trace({"model": "gpt-4o", "prompt_tokens": 1000, "completion_tokens": 100, **extra}, team_id=1)
    assert info.value.status == 400
    assert list(info.value.errors) == [field]


def test_the_proxy_keeps_what_fits_rather_than_lose_the_call():
    record = normalize_trace(
        {"model": "gpt-4o", "prompt_tokens": 10, "completion_tokens": 5, "cached_tokens": 50, "reasoning_tokens": 9},
        team_id=1,
        source="proxy",
    )
    assert (record.cached_tokens, record.reasoning_tokens) == (10, 5)


@pytest.mark.django_db
def test_the_api_stores_and_returns_every_part(api):
    body = {
        "model": "gpt-4o",
        "prompt_tokens": 1000,
        "completion_tokens": 100,
        "cached_tokens": 800,
        "input_audio_tokens": 0,
        "reasoning_tokens": 20,
    }
    created = api.post("/api/v1/traces", body, format="json")
    assert created.status_code == 201, created.content
    shown = api.get(f"/api/v1/traces/{created.json()['id']}").json()
    assert {k: shown[k] for k in DETAIL_FIELDS} == {
        **dict.fromkeys(DETAIL_FIELDS, 0),
        "cached_tokens": 800,
        "reasoning_tokens": 20,
    }
    plain = api.post("/api/v1/traces", {**body, "cached_tokens": 0}, format="json").json()
    assert shown["cost"] < plain["cost"]
    row = Trace.objects.get(trace_id=shown["id"])
    assert (row.cached_tokens, row.reasoning_tokens) == (800, 20)


@pytest.mark.django_db
def test_the_api_refuses_a_part_bigger_than_its_whole_and_stores_nothing(api):
    r = api.post("/api/v1/traces", {"model": "gpt-4o", "prompt_tokens": 10, "cached_tokens": 11}, format="json")
    assert r.status_code == 400
    assert r["Content-Type"].startswith("application/problem+json")
    assert "cached_tokens" in r.content.decode()
    assert not Trace.objects.exists()


@pytest.mark.parametrize(
    ("model", "provider", "details"),
    [
        ("claude-sonnet-4-5", "anthropic", TokenDetails(cached_tokens=6_000, cache_write_tokens=1_000)),
        ("gpt-4o", "openai", TokenDetails(cached_tokens=800, reasoning_tokens=20)),
        ("gpt-realtime", "openai", TokenDetails(cached_tokens=100, input_audio_tokens=300, output_audio_tokens=40)),
        ("gpt-4o-mini", "openai", TokenDetails()),
    ],
)
def test_the_breakdown_adds_up_to_the_cost(model, provider, details):
    usage = {"prompt_tokens": 10_000, "completion_tokens": 500}
    priced = pricing.price(model=model, provider=provider, **usage, details=details)
    parts = pricing.breakdown(model=model, provider=provider, **usage, details=details)
    assert priced.cost is not None and sum(p.cost for p in parts) == priced.cost
    assert sum(p.tokens for p in parts if p.key.startswith(("input", "cache"))) == usage["prompt_tokens"]


def test_an_unknown_model_has_no_breakdown():
    assert pricing.breakdown(model="my-private-model", provider="", prompt_tokens=1, completion_tokens=1) == []


def test_the_fast_path_with_cache_and_reasoning_parts_prices_like_genai_prices_usage_for_every_model():
    now = datetime.now(tz=UTC)
    details = TokenDetails(cached_tokens=500, cache_write_tokens=200, reasoning_tokens=150)
    fast = 0
    for provider in data_snapshot.get_snapshot().providers:
        for model in provider.models:
            model_price = model.get_prices(now)
            ours = pricing._fast_cost(model_price, 1234, 567, details)
            if ours is None:
                continue
            fast += 1
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                theirs = model_price.calc_price(Usage(**details.genai_usage(1234, 567)))["total_price"]
            assert ours == theirs, (provider.id, model.id)
    assert fast > 1000
