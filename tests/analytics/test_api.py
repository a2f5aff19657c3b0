"""GET /api/v1/analytics over HTTP: keys and scopes, tenants, parameters, the queue and rate limits."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from analytics import rollups
from delivery.models import Delivery
from traces.models import Trace

from ..factories import TraceFactory

pytestmark = pytest.mark.django_db
URL = "/api/v1/analytics"
SECTIONS = {"range", "totals", "latency_ms", "ttft_ms", "series", "groups", "queue", "rate_limits"}


@pytest.fixture
def stored(team, other_team):
    now = timezone.now()
    return [
        TraceFactory(team=team, timestamp=now - timedelta(minutes=5), cost=Decimal("0.5"), latency_ms=100),
        TraceFactory(
            team=team, timestamp=now - timedelta(minutes=3), cost=Decimal("0.25"), latency_ms=300, status="error"
        ),
        TraceFactory(team=other_team, timestamp=now - timedelta(minutes=2), cost=Decimal("7"), latency_ms=5000),
    ]


def test_it_needs_a_key(anon_api):
    r = anon_api.get(URL)
    assert r.status_code == 401
    assert r["Content-Type"] == "application/problem+json"


def test_a_ci_key_may_not_read_analytics(ci_api):
    r = ci_api.get(URL)
    assert r.status_code == 403
    assert r.json()["required_scope"] == "analytics:read"


@pytest.mark.parametrize("client", ["api", "dev_api"])
def test_it_answers_with_the_teams_own_figures(request, stored, client):
    r = request.getfixturevalue(client).get(URL, {"time_range": "1h"})
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["totals"]["count"] == 2
    assert body["totals"]["errors"] == 1
    assert body["totals"]["error_rate"] == 0.5
    assert body["totals"]["cost"] == 0.75
    assert body["range"]["interval"] == "minute"
    assert sum(p["count"] for p in body["series"]) == 2
    assert body["groups"] is None
    assert set(body) == {
        "range",
        "source",
        "totals",
        "latency_ms",
        "ttft_ms",
        "series",
        "groups",
        "queue",
        "rate_limits",
        "score",
    }
    assert body["score"] is None


@pytest.mark.parametrize("param", ["user_id", "session_id"])
def test_a_user_or_session_filter_counts_only_their_traces(api, team, param):
    now = timezone.now()
    TraceFactory(team=team, timestamp=now - timedelta(minutes=4), **{param: "u-1"})
    TraceFactory(team=team, timestamp=now - timedelta(minutes=3), **{param: "u-2"})
    TraceFactory(team=team, timestamp=now - timedelta(minutes=2))
    body = api.get(URL, {"time_range": "1h", param: "u-1"}).json()
    assert (body["totals"]["count"], body["source"]) == (1, "raw")


def test_another_team_sees_only_its_own(stored, other_api):
    body = other_api.get(URL, {"time_range": "1h", "group_by": "model"}).json()
    assert body["totals"]["count"] == 1
    assert body["totals"]["cost"] == 7.0
    assert [g["key"] for g in body["groups"]] == ["gpt-4o"]


def test_folded_and_unfolded_figures_agree_over_http(stored, api):
    before = api.get(URL, {"time_range": "24h", "group_by": "status"}).json()
    rollups.fold()
    after = api.get(URL, {"time_range": "24h", "group_by": "status"}).json()
    for body in (before, after):
        body.pop("queue")
    assert before == after


@pytest.mark.parametrize(
    ("params", "param"),
    [
        ({"interval": "week"}, "interval"),
        ({"group_by": "colour"}, "group_by"),
        ({"tz": "Mars/Olympus_Mons"}, "tz"),
        ({"limit": "0"}, "limit"),
        ({"status": "meh"}, "status"),
        ({"since": "yesterday"}, "since"),
        ({"since": "2026-01-02T00:00:00Z", "until": "2026-01-01T00:00:00Z"}, "since"),
        ({"modle": "gpt-4o"}, "modle"),
        ({"since": "2020-01-01T00:00:00Z", "interval": "minute"}, "interval"),
    ],
)
def test_bad_parameters_are_a_400_naming_them(api, params, param):
    r = api.get(URL, params)
    assert r.status_code == 400, r.content
    assert r["Content-Type"] == "application/problem+json"
    assert param in r.json()["errors"]


def test_a_raw_scan_over_the_limit_is_a_400_that_says_so(api, team, settings):
    settings.TRACERELAY_ANALYTICS_RAW_SCAN_MAX = 2
    now = timezone.now()
    for _ in range(3):
        TraceFactory(team=team, timestamp=now - timedelta(minutes=1), latency_ms=50)
    r = api.get(URL, {"time_range": "1h", "latency_max": "100"})
    assert r.status_code == 400
    body = r.json()
    assert body["raw_scan_limit"] == 2
    assert "latency filter" in body["detail"]
    # The rollups answer the same range without the filter.
    assert api.get(URL, {"time_range": "1h"}).status_code == 200


def test_the_queue_counts_deliveries_per_destination(api, team, other_team):
    trace = TraceFactory(team=team)
    other = TraceFactory(team=other_team)
    Delivery.objects.create(team=team, trace=trace, destination="langfuse", status="pending")
    Delivery.objects.create(team=team, trace=trace, destination="datadog", status="pending", attempts=2)
    Delivery.objects.create(team=team, trace=TraceFactory(team=team), destination="datadog", status="dead")
    Delivery.objects.create(team=team, trace=TraceFactory(team=team), destination="datadog", status="delivered")
    Delivery.objects.create(team=other_team, trace=other, destination="langfuse", status="pending")
    queue = api.get(URL).json()["queue"]
    assert queue["deliveries"] == [
        {"destination": "datadog", "pending": 0, "retrying": 1, "dead": 1},
        {"destination": "langfuse", "pending": 1, "retrying": 0, "dead": 0},
    ]
    assert set(queue["broker"]) == {"ingest", "delivery", "reports", "backfill"}  # the test settings use Redis


def test_rate_limits_show_the_last_headers_per_upstream(api, team):
    now = timezone.now()

    def limited(minutes: int, upstream: str, remaining: str) -> Trace:
        return TraceFactory(
            team=team,
            status="rate_limited",
            provider="openai",
            timestamp=now - timedelta(minutes=minutes),
            metadata={
                "rate_limit": {"x-ratelimit-remaining-requests": remaining, "x-ratelimit-remaining-tokens": "0"},
                "proxy": {"upstream": upstream},
            },
        )

    for minutes, upstream, remaining in ((30, "main", "5"), (10, "main", "0"), (20, "backup", "7")):
        limited(minutes, upstream, remaining)
    body = api.get(URL, {"time_range": "1h"}).json()["rate_limits"]
    assert [(x["upstream"], x["remaining_requests"], x["remaining_tokens"]) for x in body["latest"]] == [
        ("main", 0, 0),
        ("backup", 7, 0),
    ]
    assert sum(p["rate_limited"] for p in body["series"]) == 3
    assert {p["provider"] for p in body["series"]} == {"openai"}


def test_the_schema_documents_the_response(api):
    schema = api.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    operation = schema["paths"]["/api/v1/analytics"]["get"]
    assert {p["name"] for p in operation["parameters"]} >= {"interval", "group_by", "limit", "tz", "model", "tag"}
    ref = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    component = schema["components"]["schemas"][ref.rsplit("/", 1)[1]]
    assert set(component["properties"]) >= {
        "range",
        "totals",
        "latency_ms",
        "ttft_ms",
        "series",
        "groups",
        "queue",
        "rate_limits",
    }
