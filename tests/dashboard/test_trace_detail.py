"""/traces/<id>: every role reads a trace of its team; another team's is a 404; members and up retry
a dead or failed delivery through the API's replay service (audited)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from accounts.models import AuditEvent
from delivery.models import Delivery

from ..factories import TraceFactory
from .conftest import ROLES

pytestmark = pytest.mark.django_db


@pytest.fixture
def trace(team):
    return TraceFactory(
        team=team,
        trace_id="trc-detail",
        input={"messages": [{"role": "user", "content": "lorem ipsum " * 300}]},
        output={"role": "assistant", "content": "Hello there"},
        cost=Decimal("0.00042"),
        client_cost=Decimal("0.0005"),
        price_source="genai-prices",
        price_version="0.0.30",
        destinations=["langfuse"],
        routing=[
            {"destination": "langfuse", "rule": "prod-to-langfuse", "kept": True, "rate": 1.0, "reason": "matched"},
            {
                "destination": "datadog",
                "rule": "sample-dd",
                "kept": False,
                "rate": 0.1,
                "reason": "sampled out: 0.52 ≥ rate 0.1",
            },
        ],
    )


@pytest.fixture
def dead(team, trace):
    return Delivery.objects.create(
        team=team, trace=trace, destination="langfuse", status="dead", attempts=8, last_error="HTTP 503 from langfuse"
    )


@pytest.mark.parametrize("role", ROLES)
def test_every_role_reads_the_detail(as_role, role, trace, dead):
    response = as_role(role).get("/traces/trc-detail")
    assert response.status_code == 200
    text = response.content.decode()
    for shown in (
        "Hello there",
        "$0.00042",
        "$0.0005",
        "genai-prices",
        "0.0.30",
        "prod-to-langfuse",
        "sampled out",
        "sample-dd",
        "HTTP 503 from langfuse",
        '<details class="json-fold">',
    ):
        assert shown in text, shown
    assert ("Retry delivery to langfuse" in text) == (role != "viewer")


def test_an_unpriced_trace_says_so(as_role, team):
    TraceFactory(team=team, trace_id="free", cost=None, unpriced=True, usage_estimated=True)
    text = as_role("viewer").get("/traces/free").content.decode()
    assert "unpriced" in text and "estimated" in text and "$0" not in text


def test_another_teams_trace_is_a_404(as_role, trace):
    assert as_role("outsider").get("/traces/trc-detail").status_code == 404
    assert as_role("owner").get("/traces/no-such-trace").status_code == 404


@pytest.mark.parametrize("role", ["owner", "admin", "member"])
def test_members_and_up_retry_a_dead_delivery(as_role, role, trace, dead):
    response = as_role(role).post(f"/traces/trc-detail/deliveries/{dead.pk}/retry", follow=True)
    assert response.status_code == 200 and "queued again" in response.content.decode()
    dead.refresh_from_db()
    assert dead.status == "pending" and dead.replay_count == 1 and dead.attempts == 0
    event = AuditEvent.objects.get(action="delivery.replay")
    assert event.target == str(dead.pk) and event.actor.startswith("user:")


def test_a_viewer_may_not_retry(as_role, trace, dead):
    assert as_role("viewer").post(f"/traces/trc-detail/deliveries/{dead.pk}/retry").status_code == 403
    dead.refresh_from_db()
    assert dead.status == "dead"


def test_an_outsider_cannot_retry_another_teams_delivery(as_role, trace, dead):
    assert as_role("outsider").post(f"/traces/trc-detail/deliveries/{dead.pk}/retry").status_code == 404
    dead.refresh_from_db()
    assert dead.status == "dead"


def test_a_delivery_of_another_trace_is_a_404(as_role, team, trace, dead):
    TraceFactory(team=team, trace_id="other")
    assert as_role("owner").post(f"/traces/other/deliveries/{dead.pk}/retry").status_code == 404


def test_retrying_a_delivered_one_says_it_is_not_replayable(as_role, team, trace):
    done = Delivery.objects.create(team=team, trace=trace, destination="langfuse", status="delivered")
    response = as_role("member").post(f"/traces/trc-detail/deliveries/{done.pk}/retry", follow=True)
    assert "Not retried" in response.content.decode()
    done.refresh_from_db()
    assert done.status == "delivered"


def test_retry_is_a_post(as_role, trace, dead):
    assert as_role("owner").get(f"/traces/trc-detail/deliveries/{dead.pk}/retry").status_code == 405


def test_a_structural_span_is_no_unpriced_call(as_role, team):
    TraceFactory(team=team, trace_id="tool-1", kind="tool", name="search_docs", model="", cost=None, unpriced=False)
    text = as_role("viewer").get("/traces/tool-1").content.decode()
    assert "search_docs" in text and "not a call: a tool span is never priced" in text
    assert "unpriced" not in text


def test_the_cost_card_breaks_the_cost_down_by_part(as_role, team):
    from config.money import usd
    from traces import pricing
    from traces.usage import TokenDetails

    usage = {"prompt_tokens": 10_000, "completion_tokens": 500}
    details = TokenDetails(cached_tokens=6_000, cache_write_tokens=1_000, reasoning_tokens=200)
    priced = pricing.price(model="claude-sonnet-4-5", provider="anthropic", **usage, details=details)
    parts = {
        p.key: p for p in pricing.breakdown(model="claude-sonnet-4-5", provider="anthropic", **usage, details=details)
    }
    TraceFactory(
        team=team,
        trace_id="cached",
        model="claude-sonnet-4-5",
        provider="anthropic",
        **usage,
        **details.as_dict(),
        cost=priced.cost,
        price_source="genai-prices",
    )
    text = as_role("viewer").get("/traces/cached").content.decode()
    assert 'aria-label="Cost breakdown"' in text
    for key, label, tokens in [
        ("input_tokens", "Input", 3_000),
        ("cache_read_tokens", "Cached input", 6_000),
        ("cache_write_tokens", "Cache write", 1_000),
        ("output_tokens", "Output", 500),
    ]:
        assert parts[key].tokens == tokens
        assert f'data-part="{key}"><td>{label}</td><td class="num">{tokens:,}</td>' in text
        assert usd(parts[key].cost, exact=True) in text
    assert "Output includes 200 reasoning tokens, at the output rate." in text


def test_a_plain_call_shows_input_and_output_only_and_a_span_no_breakdown(as_role, team):
    TraceFactory(team=team, trace_id="plain", model="gpt-4o", provider="openai", prompt_tokens=10, completion_tokens=5,
                 cost=Decimal("0.000075"), price_source="genai-prices")  # fmt: skip
    TraceFactory(team=team, trace_id="tool", kind="tool", model="", cost=None, price_source="")
    text = as_role("viewer").get("/traces/plain").content.decode()
    assert 'data-part="input_tokens"' in text and 'data-part="output_tokens"' in text
    assert 'data-part="cache_read_tokens"' not in text
    assert 'aria-label="Cost breakdown"' not in as_role("viewer").get("/traces/tool").content.decode()


def test_a_team_priced_call_is_broken_down_by_the_team_price_and_a_revised_one_is_not(as_role, team):
    from traces import pricing
    from traces.prices import services as price_services
    from traces.usage import TokenDetails

    price = price_services.price_create(
        team_id=team.pk,
        data=price_services.clean_price(
            {"model": "acme-private-*", "input_per_mtok": "2", "output_per_mtok": "8", "cached_input_per_mtok": "0.5"}
        ),
        actor="test",
    )
    usage = {"prompt_tokens": 10_000, "completion_tokens": 1_000}
    details = TokenDetails(cached_tokens=4_000, reasoning_tokens=300)
    priced = pricing.price(model="acme-private-7b", provider="acme", **usage, details=details, team_id=team.pk)
    assert priced.source == "team" and priced.cost == Decimal("0.022")  # 6k×2 + 4k×0.5 + 1k×8, per Mtok
    TraceFactory(team=team, trace_id="own", model="acme-private-7b", provider="acme", **usage, **details.as_dict(),
                 cost=priced.cost, price_source=priced.source, price_version=priced.version)  # fmt: skip
    text = as_role("viewer").get("/traces/own").content.decode()
    rows = [("input_tokens", "Input", 6_000), ("cache_read_tokens", "Cached input", 4_000),
            ("output_tokens", "Output", 700), ("output_reasoning_tokens", "Reasoning", 300)]  # fmt: skip
    for key, label, tokens in rows:
        assert f'data-part="{key}"><td>{label}</td><td class="num">{tokens:,}</td>' in text

    # Revised since: the stored cost no longer follows from the price, so no breakdown pretends it does.
    price_services.price_update(price=price, changes={"input_per_mtok": Decimal("3")}, actor="test")
    assert 'aria-label="Cost breakdown"' not in as_role("viewer").get("/traces/own").content.decode()
