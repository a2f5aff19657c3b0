"""Team prices in `traces.pricing.price`: exact over prefix, provider, effective_from, every usage
part; the per-process cache and its invalidation; ingest through the REST API."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from traces import pricing
from traces.models import Trace
from traces.prices import services
from traces.prices.lookup import Rate, compiled_cache
from traces.usage import TokenDetails

pytestmark = pytest.mark.django_db

JAN = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(autouse=True)
def fresh_cache():
    compiled_cache.forget()
    yield
    compiled_cache.forget()


def add(team, **fields):
    data = {"input_per_mtok": "1", "output_per_mtok": "2", **fields}
    return services.price_create(team_id=team.pk, data=services.clean_price(data), actor="test")


def price(team, model="acme-7b", provider="", when=JAN, prompt=1_000_000, completion=1_000_000, **details):
    return pricing.price(
        model=model,
        provider=provider,
        prompt_tokens=prompt,
        completion_tokens=completion,
        timestamp=when,
        details=TokenDetails(**details),
        team_id=team.pk,
    )


def test_a_private_model_is_priced_by_the_team_price(team):
    assert price(team).unpriced  # no price yet: unpriced, never a silent zero
    row = add(team, model="acme-7b")

    got = price(team)

    assert (got.cost, got.unpriced, got.source, got.version) == (Decimal(3), False, "team", f"team:{row.pk}@r1")


def test_an_exact_name_wins_over_the_longest_prefix_which_wins_over_a_shorter_one(team):
    add(team, model="acme-*", input_per_mtok="10")
    add(team, model="acme-7b*", input_per_mtok="20")
    exact = add(team, model="acme-7b-chat", input_per_mtok="30")

    assert price(team, "acme-7b-chat", completion=0).cost == Decimal(30)
    assert price(team, "ACME-7b-Chat", completion=0).version == f"team:{exact.pk}@r1"  # case does not matter
    assert price(team, "acme-7b-instruct", completion=0).cost == Decimal(20)
    assert price(team, "acme-13b", completion=0).cost == Decimal(10)
    assert price(team, "other", completion=0).unpriced


def test_a_team_price_wins_over_genai_prices_and_others_still_use_it(team):
    before = price(team, "gpt-4o", "openai")
    assert before.source == "genai-prices" and not before.unpriced
    add(team, model="gpt-4o", input_per_mtok="1", output_per_mtok="1")
    assert price(team, "gpt-4o", "openai").cost == Decimal(2)
    assert price(team, "gpt-4o-mini", "openai").source == "genai-prices"


def test_a_price_naming_a_provider_applies_only_to_its_calls(team):
    azure = add(team, model="acme-7b", provider="azure", input_per_mtok="5")
    anyone = add(team, model="acme-7b", input_per_mtok="1")

    assert price(team, provider="Azure", completion=0).version == f"team:{azure.pk}@r1"
    assert price(team, provider="groq", completion=0).version == f"team:{anyone.pk}@r1"
    services.price_delete(price=anyone, actor="t")
    assert price(team, provider="groq").unpriced


def test_the_newest_price_in_effect_at_the_calls_time_applies(team):
    always = add(team, model="acme-7b", input_per_mtok="1")
    march = add(team, model="acme-7b", input_per_mtok="2", effective_from="2026-03-01T00:00:00Z")
    june = add(team, model="acme-7b", input_per_mtok="3", effective_from="2026-06-01T00:00:00Z")

    assert price(team, when=JAN, completion=0).version == f"team:{always.pk}@r1"
    assert price(team, when=datetime(2026, 3, 1, tzinfo=UTC), completion=0).version == f"team:{march.pk}@r1"
    assert price(team, when=datetime(2026, 5, 31, tzinfo=UTC), completion=0).cost == Decimal(2)
    assert price(team, when=datetime(2026, 7, 1, tzinfo=UTC), completion=0).version == f"team:{june.pk}@r1"


def test_a_price_not_yet_in_effect_leaves_the_call_to_genai_prices_or_unpriced(team):
    add(team, model="gpt-4o", effective_from="2026-06-01T00:00:00Z")
    add(team, model="acme-*", effective_from="2026-06-01T00:00:00Z")
    assert price(team, "gpt-4o", "openai", when=JAN).source == "genai-prices"
    assert price(team, "acme-7b", when=JAN).unpriced
    assert price(team, "acme-7b", when=JAN + timedelta(days=200)).source == "team"


def test_every_usage_part_is_priced_at_its_own_rate_and_never_counted_twice(team):
    add(
        team,
        model="acme-7b",
        input_per_mtok="1",
        output_per_mtok="10",
        cached_input_per_mtok="0.1",
        cache_write_per_mtok="1.25",
        reasoning_per_mtok="20",
    )
    got = price(team, prompt=1000, completion=500, cached_tokens=800, cache_write_tokens=100, reasoning_tokens=200)
    # 100 uncached at 1, 800 cached at 0.1, 100 written at 1.25, 300 output at 10, 200 reasoning at 20
    expected = (Decimal(100) * 1 + 800 * Decimal("0.1") + 100 * Decimal("1.25") + 300 * 10 + 200 * 20) / 1_000_000
    assert got.cost == expected


@pytest.mark.parametrize(
    "details",
    [TokenDetails(), TokenDetails(cached_tokens=800, cache_write_tokens=100, reasoning_tokens=200)],
)
def test_a_rates_cost_is_the_sum_of_its_parts(details):
    """`Rate.cost` (ingest) writes out the sum of `Rate.parts` (the trace page's breakdown)."""
    rate = Rate(7, 1, "", None, Decimal(1), Decimal(10), Decimal("0.1"), Decimal("1.25"), Decimal(20))
    parts = rate.parts(1000, 500, details)
    assert sum(tokens for key, tokens, _ in parts if key.startswith(("input", "cache"))) == 1000
    assert sum(per_mtok * tokens for _, tokens, per_mtok in parts) / 1_000_000 == rate.cost(1000, 500, details)


def test_missing_part_rates_fall_back_to_the_input_and_output_price(team):
    add(team, model="acme-7b", input_per_mtok="1", output_per_mtok="10")
    full = price(team, prompt=1000, completion=500, cached_tokens=800, cache_write_tokens=100, reasoning_tokens=200)
    plain = price(team, prompt=1000, completion=500)
    assert full.cost == plain.cost == Decimal("0.006")


def test_a_cached_call_costs_less_under_a_team_cached_rate(team):
    add(team, model="acme-7b", input_per_mtok="2.5", output_per_mtok="10", cached_input_per_mtok="1.25")
    assert price(team, prompt=1000, completion=0, cached_tokens=800).cost < price(team, prompt=1000, completion=0).cost


def test_a_change_applies_at_once_and_names_the_new_revision(team):
    row = add(team, model="acme-7b")
    assert price(team).cost == Decimal(3)
    services.price_update(price=row, changes=services.clean_price({"output_per_mtok": "5"}, partial=True), actor="t")
    got = price(team)
    assert (got.cost, got.version) == (Decimal(6), f"team:{row.pk}@r2")


def test_a_cached_price_list_costs_no_query(team):
    add(team, model="acme-7b")
    price(team)  # fills this process's copy
    with CaptureQueriesContext(connection) as queries:
        for _ in range(100):
            price(team)
            price(team, "gpt-4o", "openai")
    assert len(queries) == 0


def test_no_team_prices_no_team_id_genai_prices_as_before(team):
    add(team, model="gpt-4o", input_per_mtok="0", output_per_mtok="0")
    got = pricing.price(model="gpt-4o", provider="openai", prompt_tokens=1000, completion_tokens=10)
    assert got.source == "genai-prices" and got.cost and got.cost > 0


def test_ingest_through_the_rest_api_stores_the_team_price(api, team):
    row = add(team, model="acme-7b", input_per_mtok="1", output_per_mtok="2", cached_input_per_mtok="0.5")
    response = api.post(
        "/api/v1/traces",
        {"model": "acme-7b", "prompt_tokens": 1000, "completion_tokens": 100, "cached_tokens": 400},
        format="json",
    )
    assert response.status_code == 201, response.content
    trace = Trace.objects.get(team=team)
    assert (trace.price_source, trace.price_version, trace.unpriced) == ("team", f"team:{row.pk}@r1", False)
    assert trace.source == "api"
    assert trace.cost == (Decimal(600) * 1 + 400 * Decimal("0.5") + 100 * 2) / 1_000_000
    body = api.get(f"/api/v1/traces/{trace.trace_id}").json()
    assert body["price_source"] == "team" and body["price_version"] == f"team:{row.pk}@r1"


@pytest.mark.django_db(transaction=True)
def test_the_lean_ingest_door_prices_on_the_event_loop_without_a_query_there(prod_key, team):
    # The bare ASGI door normalises on the event loop (no query allowed): the team's prices are
    # refreshed in a thread first, both when nothing is cached and after a change dropped the copy.
    import orjson

    from ..api.test_lean_ingest import asgi_call, auth

    row = add(team, model="acme-7b", input_per_mtok="1", output_per_mtok="2")
    for n, expected in ((1, Decimal("0.0012")), (2, Decimal("0.0024"))):
        compiled_cache.forget()
        body = orjson.dumps({"model": "acme-7b", "prompt_tokens": 1000, "completion_tokens": 100})
        status, _, data = asgi_call("POST", "/api/v1/traces", body, auth(prod_key))
        assert status == 201, data
        trace = Trace.objects.get(trace_id=orjson.loads(data)["id"])
        assert (trace.price_source, trace.price_version, trace.cost) == ("team", f"team:{row.pk}@r{n}", expected)
        row = services.price_update(
            price=row, changes=services.clean_price({"input_per_mtok": "2", "output_per_mtok": "4"}, partial=True),
            actor="t",
        )  # fmt: skip


@pytest.mark.django_db(transaction=True)
def test_pricing_on_an_event_loop_with_a_stale_copy_rechecks_in_a_helper_thread(team):
    import asyncio

    row = add(team, model="acme-7b")
    compiled_cache.forget()

    async def on_the_loop():
        return price(team)

    got = asyncio.run(on_the_loop())  # a query here would raise SynchronousOnlyOperation
    assert (got.source, got.version) == ("team", f"team:{row.pk}@r1")
