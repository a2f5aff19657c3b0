from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.http import QueryDict

from accounts.models import Team
from traces.filters import FilterError, parse_trace_filter
from traces.models import Trace

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def parse(query: str):
    return parse_trace_filter(QueryDict(query), now=NOW)


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("status=maybe", "status"),
        ("status=success,nope", "status"),
        ("cost_min=abc", "cost_min"),
        ("cost_min=-1", "cost_min"),
        ("cost_max=NaN", "cost_max"),
        ("cost_min=2&cost_max=1", "cost_min"),
        ("latency_min=1.5", "latency_min"),
        ("latency_max=-4", "latency_max"),
        ("latency_max=99999999999", "latency_max"),
        ("latency_min=9&latency_max=1", "latency_min"),
        ("since=yesterday", "since"),
        ("until=2025-13-01", "until"),
        ("since=2025-02-01&until=2025-01-01", "since"),
        ("time_range=2w", "time_range"),
        ("metadata.=x", "metadata."),
        ("model=" + "m" * 201, "model"),
        ("tag=a%00b", "tag"),
        ("unpriced=maybe", "unpriced"),
        ("usage_estimated=yes", "usage_estimated"),
    ],
)
def test_it_names_the_bad_parameter(query, param):
    with pytest.raises(FilterError) as info:
        parse(query)
    assert info.value.param == param


def test_it_parses_every_filter():
    f = parse(
        "model=gpt-4*&provider=OpenAI&status=error,rate_limited,failed&cost_min=0.01&cost_max=2"
        "&latency_min=10&latency_max=900&destination=langfuse&destination=webhook&tag=a,b&tag=c"
        "&metadata.customer=acme&environment=prod&until=2025-06-01T11:00:00%2B02:00&time_range=24h"
    )
    assert f.model == "gpt-4*" and f.provider == "openai"
    assert f.statuses == ("error", "rate_limited")
    assert (f.cost_min, f.cost_max) == (Decimal("0.01"), Decimal("2"))
    assert (f.latency_min, f.latency_max) == (10, 900)
    assert f.destinations == ("langfuse", "webhook")
    assert f.tags == ("a", "b", "c")
    assert f.metadata == (("customer", "acme"),)
    assert f.since == NOW - timedelta(hours=24)
    assert f.until == datetime(2025, 6, 1, 9, 0, tzinfo=UTC)


def test_an_unencoded_plus_in_a_time_offset_still_parses():
    assert parse("since=2025-06-01T10:00:00 02:00").since == datetime(2025, 6, 1, 8, 0, tzinfo=UTC)


def make(team: Team, **fields) -> Trace:
    values = {
        "model": "gpt-4o",
        "provider": "openai",
        "timestamp": NOW,
        "trace_id": f"t{Trace.objects.count()}",
    }
    values.update(fields)
    return Trace.objects.create(team=team, **values)


@pytest.mark.django_db
def test_every_filter_works():
    team = Team.objects.create(name="t")
    other = Team.objects.create(name="o")
    a = make(
        team,
        model="gpt-4o-mini",
        tags=["beta", "x"],
        destinations=["langfuse"],
        metadata={"customer": "acme", "n": 5, "flag": True},
        cost=Decimal("0.5"),
        latency_ms=100,
    )
    b = make(
        team,
        model="claude-3",
        provider="anthropic",
        status="error",
        tags=["betamax"],
        destinations=["webhook", "langfuse"],
        metadata={"customer": "acme corp", "n": "5", "none": None},
        cost=Decimal("2"),
        latency_ms=900,
        environment="ci",
    )
    c = make(team, model="gpt-4", status="rate_limited", timestamp=NOW - timedelta(days=3), metadata={"n": 5.0})
    make(other, tags=["beta"], metadata={"customer": "acme"})

    def ids(query: str) -> set[str]:
        qs = Trace.objects.filter(team=team)
        return set(parse(query).apply(qs).values_list("trace_id", flat=True))

    assert ids("") == {a.trace_id, b.trace_id, c.trace_id}
    assert ids("model=gpt-4*") == {a.trace_id, c.trace_id}
    assert ids("model=gpt-4") == {c.trace_id}
    assert ids("provider=anthropic") == {b.trace_id}
    assert ids("status=error,rate_limited") == {b.trace_id, c.trace_id}
    assert ids("cost_min=1") == {b.trace_id}
    assert ids("cost_max=1") == {a.trace_id}
    assert ids("latency_min=500") == {b.trace_id}
    assert ids("latency_max=500") == {a.trace_id}
    assert ids("tag=beta") == {a.trace_id}  # "betamax" is not "beta"
    assert ids("tag=beta&tag=x") == {a.trace_id}
    assert ids("tag=beta&tag=nope") == set()
    assert ids("destination=langfuse") == {a.trace_id, b.trace_id}
    assert ids("destination=webhook") == {b.trace_id}
    assert ids("metadata.customer=acme") == {a.trace_id}
    assert ids("metadata.customer=acme%20corp") == {b.trace_id}
    assert ids("metadata.n=5") == {a.trace_id, b.trace_id, c.trace_id}  # 5, "5" and 5.0
    assert ids("metadata.flag=true") == {a.trace_id}
    assert ids("metadata.none=null") == {b.trace_id}
    assert ids("metadata.missing=x") == set()
    assert ids("environment=ci") == {b.trace_id}
    assert ids("time_range=24h") == {a.trace_id, b.trace_id}
    assert ids("since=2025-05-28T00:00:00Z&until=2025-05-30T00:00:00Z") == {c.trace_id}
