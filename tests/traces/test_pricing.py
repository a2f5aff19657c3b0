from __future__ import annotations

import warnings
from datetime import UTC, datetime
from decimal import Decimal

import genai_prices
from genai_prices import Usage, data_snapshot

from traces import pricing


def test_it_prices_like_genai_prices_for_every_model_it_knows():
    now = datetime.now(tz=UTC)
    fast = 0
    for provider in data_snapshot.get_snapshot().providers:
        for model in provider.models:
            model_price = model.get_prices(now)
            ours = pricing._fast_cost(model_price, 1234, 567)
            if ours is None:
                continue
            fast += 1
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                theirs = model_price.calc_price(Usage(input_tokens=1234, output_tokens=567))["total_price"]
            assert ours == theirs, (provider.id, model.id)
    assert fast > 1000  # the fast path really is the common case


def test_it_prices_a_known_model():
    price = pricing.price(model="gpt-4o", provider="openai", prompt_tokens=1_000_000, completion_tokens=1_000_000)
    expected = genai_prices.calc_price(
        Usage(input_tokens=1_000_000, output_tokens=1_000_000), "gpt-4o", provider_id="openai"
    )
    assert price.cost == expected.total_price.quantize(pricing.QUANTUM)
    assert (price.provider, price.unpriced, price.source) == ("openai", False, "genai-prices")
    assert price.version == genai_prices.__version__


def test_it_goes_through_the_library_for_per_request_prices():
    for provider in data_snapshot.get_snapshot().providers:
        for model in provider.models:
            model_price = model.get_prices(datetime.now(tz=UTC))
            if getattr(model_price, "requests_kcount", None) and getattr(model_price, "input_mtok", None):
                price = pricing.price(model=model.id, provider=provider.id, prompt_tokens=10, completion_tokens=10)
                expected = model_price.calc_price(Usage(input_tokens=10, output_tokens=10))["total_price"]
                assert price.cost == expected.quantize(pricing.QUANTUM)
                return
    raise AssertionError("no model with a per-request price in this genai-prices version")


def test_it_flags_unknown_models_and_providers_unpriced():
    assert pricing.price(model="no-such-model", provider="", prompt_tokens=1, completion_tokens=1).unpriced
    unknown_provider = pricing.price(model="gpt-4o", provider="my-gateway", prompt_tokens=1, completion_tokens=1)
    assert unknown_provider.unpriced and unknown_provider.cost is None


def test_it_infers_providers_from_model_names():
    assert pricing.infer_provider("gpt-4o-mini") == "openai"
    assert pricing.infer_provider("claude-3-5-haiku-latest") == "anthropic"
    assert pricing.infer_provider("gemini-1.5-pro") in {"google", "google-gla", "google-vertex"}
    assert pricing.infer_provider("nothing-like-a-model") == ""


def test_it_prices_zero_tokens_at_zero_not_unpriced():
    price = pricing.price(model="gpt-4o", provider="openai", prompt_tokens=0, completion_tokens=0)
    assert price.cost == Decimal(0) and not price.unpriced
