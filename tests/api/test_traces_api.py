from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from delivery.models import Delivery
from traces.models import Trace

from ..factories import RoutingRuleFactory, TraceFactory

pytestmark = pytest.mark.django_db

TRACE = {
    "model": "gpt-4o",
    "provider": "openai",
    "prompt_tokens": 100,
    "completion_tokens": 50,
    "total_tokens": 150,
    "latency_ms": 420,
    "timestamp": "2025-01-31T12:00:00Z",
}


def post(client, path, body):
    return client.post(path, body, format="json")


def test_it_stores_a_trace_and_returns_it_with_its_cost(api):
    r = post(api, "/api/v1/traces", {**TRACE, "tags": ["t"], "metadata": {"k": "v"}, "input": "hi"})
    assert r.status_code == 201
    assert r["Content-Type"] == "application/json"
    body = r.json()
    assert body["id"].startswith("trc_")
    assert body["cost"] == pytest.approx(0.00075)
    assert body["unpriced"] is False and body["price_source"] == "genai-prices" and body["price_version"]
    assert body["timestamp"] == "2025-01-31T12:00:00Z"
    assert body["tags"] == ["t"] and body["metadata"] == {"k": "v"} and body["input"] == "hi"
    assert body["environment"] == "production" and body["source"] == "api"
    assert Trace.objects.get(trace_id=body["id"]).team_id == api.key.team_id


def test_sending_an_id_again_returns_the_stored_trace_with_200(api):
    first = post(api, "/api/v1/traces", {**TRACE, "id": "order-42"})
    again = post(api, "/api/v1/traces", {**TRACE, "id": "order-42", "model": "different"})
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["model"] == "gpt-4o"
    assert Trace.objects.filter(trace_id="order-42").count() == 1


def test_development_and_ci_keys_may_ingest_and_read(dev_api, ci_api):
    for client, environment in ((dev_api, "development"), (ci_api, "ci")):
        r = post(client, "/api/v1/traces", TRACE)
        assert r.status_code == 201 and r.json()["environment"] == environment
        assert client.get(f"/api/v1/traces/{r.json()['id']}").status_code == 200
        assert client.get("/api/v1/traces").status_code == 200


def test_a_batch_stores_the_valid_items_and_reports_each(api):
    r = post(
        api,
        "/api/v1/traces/batch",
        {"traces": [TRACE, {**TRACE, "prompt_tokens": -1}, {**TRACE, "id": "b-1"}, {**TRACE, "id": "b-1"}]},
    )
    assert r.status_code == 207
    body = r.json()
    assert (body["created"], body["existing"], body["failed"]) == (2, 1, 1)
    assert [x["status"] for x in body["results"]] == [201, 400, 201, 200]
    assert body["results"][1] == {
        "index": 1,
        "status": 400,
        "id": None,
        "errors": {"prompt_tokens": ["Must not be negative."]},
    }
    assert body["results"][2]["id"] == "b-1" and body["results"][3]["id"] == "b-1"
    assert Trace.objects.filter(team=api.key.team).count() == 2


def test_a_batch_with_no_failures_is_200(api):
    r = post(api, "/api/v1/traces/batch", {"traces": [TRACE] * 3})
    assert r.status_code == 200
    assert r.json()["created"] == 3


def test_a_trace_shows_its_routing_and_delivery_status(api):
    RoutingRuleFactory(
        team=api.key.team,
        name="all",
        destinations=[{"name": "webhook", "sample_rate": 1.0, "tags": [], "fallback": []}],
    )
    created = post(api, "/api/v1/traces", TRACE).json()
    assert created["destinations"] == ["webhook"]
    Delivery.objects.filter(trace__trace_id=created["id"]).update(status="delivered", attempts=1)
    body = api.get(f"/api/v1/traces/{created['id']}").json()
    assert body["routing"] == [
        {"destination": "webhook", "rule": "all", "kept": True, "rate": 1.0, "reason": "matched rule 'all'"}
    ]
    [delivery] = body["deliveries"]
    assert (delivery["destination"], delivery["status"], delivery["attempts"], delivery["rule"]) == (
        "webhook",
        "delivered",
        1,
        "all",
    )
    assert delivery["id"] == Delivery.objects.get(trace__trace_id=created["id"]).pk  # to replay it by id


def test_the_feed_pages_newest_first_with_a_cursor(api):
    now = timezone.now()
    team = api.key.team
    rows = [TraceFactory(team=team, trace_id=f"t{i}", timestamp=now - timedelta(minutes=i)) for i in range(7)]
    TraceFactory(team=team, trace_id="tie", timestamp=rows[2].timestamp)  # equal timestamps page by id
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        r = api.get("/api/v1/traces", {"limit": 3, **({"cursor": cursor} if cursor else {})})
        assert r.status_code == 200
        body = r.json()
        seen += [t["id"] for t in body["data"]]
        pages += 1
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert pages == 3
    assert sorted(seen) == sorted([*(f"t{i}" for i in range(7)), "tie"]) and len(seen) == 8
    stamps = [Trace.objects.get(trace_id=i).timestamp for i in seen]
    assert stamps == sorted(stamps, reverse=True)
    assert "input" not in body["data"][0]  # the feed leaves the bodies to GET one trace


def test_the_feed_filters(api):
    team = api.key.team
    TraceFactory(
        team=team, trace_id="a", model="gpt-4o", tags=["beta"], metadata={"customer": "acme"}, destinations=["langfuse"]
    )
    TraceFactory(team=team, trace_id="b", model="claude-3", status="error", latency_ms=5000)
    for query, expected in [
        ({"model": "gpt-*"}, ["a"]),
        ({"status": "error"}, ["b"]),
        ({"latency_min": 1000}, ["b"]),
        ({"tag": "beta"}, ["a"]),
        ({"destination": "langfuse"}, ["a"]),
        ({"metadata.customer": "acme"}, ["a"]),
        ({"time_range": "1h"}, ["a", "b"]),
    ]:
        r = api.get("/api/v1/traces", query)
        assert r.status_code == 200, (query, r.json())
        assert sorted(t["id"] for t in r.json()["data"]) == expected, query


def test_the_feed_finds_unpriced_and_usage_estimated_traces(api):
    team = api.key.team
    TraceFactory(team=team, trace_id="priced", cost="0.01")
    TraceFactory(team=team, trace_id="unknown", cost=None, unpriced=True)
    TraceFactory(team=team, trace_id="guessed", cost="0.02", usage_estimated=True)
    for query, expected in [
        ({"unpriced": "true"}, ["unknown"]),
        ({"unpriced": "false"}, ["guessed", "priced"]),
        ({"usage_estimated": "true"}, ["guessed"]),
        ({"usage_estimated": "false", "unpriced": "false"}, ["priced"]),
    ]:
        r = api.get("/api/v1/traces", query)
        assert r.status_code == 200, (query, r.json())
        assert sorted(t["id"] for t in r.json()["data"]) == expected, query
    r = api.get("/api/v1/traces", {"unpriced": "sometimes"})
    assert r.status_code == 400 and r.json()["parameter"] == "unpriced"


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"cursor": "garbage!"}, "cursor"),
        ({"status": "weird"}, "status"),
        ({"cost_min": "cheap"}, "cost_min"),
        ({"since": "not-a-date"}, "since"),
        ({"time_range": "3y"}, "time_range"),
    ],
)
def test_a_bad_filter_is_a_400_naming_the_parameter(api, query, param):
    r = api.get("/api/v1/traces", query)
    assert r.status_code == 400
    assert r["Content-Type"] == "application/problem+json"
    body = r.json()
    assert body["parameter"] == param and param in body["errors"]


def test_another_teams_trace_is_a_404_without_a_leak(api, other_api):
    mine = post(api, "/api/v1/traces", {**TRACE, "id": "secret-1"}).json()
    r = other_api.get(f"/api/v1/traces/{mine['id']}")
    assert r.status_code == 404
    assert r["Content-Type"] == "application/problem+json"
    assert "gpt-4o" not in r.content.decode()
    assert other_api.get("/api/v1/traces").json()["data"] == []
    # and the other team may use the same id for its own trace
    assert post(other_api, "/api/v1/traces", {**TRACE, "id": "secret-1"}).status_code == 201


def test_an_unknown_query_parameter_is_a_400_so_typos_never_match_everything(api):
    r = api.get("/api/v1/traces", {"modle": "gpt-4o"})
    assert r.status_code == 400 and r.json()["parameter"] == "modle"
    assert api.get("/plants", {"limt": 1}).json()["parameter"] == "limt"


def test_a_number_postgres_reads_back_beyond_64_bits_does_not_break_reading(api):
    # jsonb keeps -3.9e48 exactly and psycopg returns it as an int orjson cannot encode.
    created = post(api, "/api/v1/traces", {**TRACE, "metadata": {"big": -3.888e48}}).json()
    assert api.get("/api/v1/traces").status_code == 200
    detail = api.get(f"/api/v1/traces/{created['id']}")
    assert detail.status_code == 200
    assert detail.json()["metadata"]["big"] == -3888000000000000000000000000000000000000000000000
