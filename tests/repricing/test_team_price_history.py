"""Issue 26's check, through the API alone: a private model stays unpriced until the team prices it;
the price applies to calls from its `effective_from`, and a re-pricing job fixes the earlier calls and
the analytics totals to match."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from analytics import rollups
from repricing import services
from traces.models import Trace

# Committed for real: the fold counts traces by the transaction that stored them (one per request here).
pytestmark = pytest.mark.django_db(transaction=True)
DAY = datetime(2026, 11, 3, tzinfo=UTC)


@pytest.fixture(autouse=True)
def in_process(monkeypatch):
    monkeypatch.setattr(services, "dispatch", lambda job_id: services.job_run(job_id=job_id))


def _call(api, hour: int, **extra) -> None:
    body = {"model": "acme-private-7b", "prompt_tokens": 2_000, "completion_tokens": 500,
            "timestamp": (DAY + timedelta(hours=hour)).isoformat(), **extra}  # fmt: skip
    assert api.post("/api/v1/traces", body, format="json").status_code == 201


def _totals(api) -> dict:
    params = {"since": DAY.isoformat(), "until": (DAY + timedelta(days=1)).isoformat()}
    return api.get("/api/v1/analytics", params).json()["totals"]


def test_a_team_price_prices_a_private_model_from_when_it_applies_and_repricing_fixes_the_history(api, team):
    for hour in (1, 2, 3, 4):
        _call(api, hour)
    rollups.fold()
    assert Trace.objects.filter(team=team, unpriced=True).count() == 4
    assert _totals(api)["unpriced"] == 4

    price = api.post(
        "/api/v1/prices",
        {
            "model": "acme-private-*",
            "input_per_mtok": "2",
            "output_per_mtok": "8",
            "effective_from": (DAY + timedelta(hours=3)).isoformat(),
        },  # fmt: skip
        format="json",
    )
    assert price.status_code == 201, price.content
    version = f"team:{price.json()['id']}@r1"
    _call(api, 5)  # a new call at or after effective_from: priced as it arrives
    new = Trace.objects.get(team=team, timestamp=DAY + timedelta(hours=5))
    assert (new.cost, new.price_source, new.price_version) == (Decimal("0.008"), "team", version)

    job = api.post(  # (dispatched, and so run here, once the job is committed)
        "/api/v1/prices/reprice",
        {"since": DAY.isoformat(), "until": (DAY + timedelta(days=1)).isoformat(), "model": "acme-private-*"},
        format="json",
    )
    assert job.status_code == 202, job.content
    done = api.get(f"/api/v1/prices/reprice/{job.json()['id']}").json()
    assert done["status"] == "succeeded" and done["traces_changed"] == 2  # hours 3 and 4; 1 and 2 predate it

    by_hour = {t.timestamp.hour: t for t in Trace.objects.filter(team=team)}
    assert [by_hour[h].unpriced for h in (1, 2, 3, 4, 5)] == [True, True, False, False, False]
    assert all(by_hour[h].cost == Decimal("0.008") and by_hour[h].price_source == "team" for h in (3, 4, 5))
    rollups.fold()
    totals = _totals(api)
    assert totals["unpriced"] == 2
    assert round(totals["cost"], 10) == 0.024
