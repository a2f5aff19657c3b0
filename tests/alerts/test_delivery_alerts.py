"""Alerts on an integration's deliveries: delivery_failure_rate, dead_letters and oldest_pending_s
with scope {"integration": "<name>"}, on the same windows and notifications as spend alerts; the
API refuses what does not fit, naming the field; the integration's page lists its alerts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from alerts import services
from alerts.definition import AlertError, parse_alert
from alerts.models import AlertEvent
from delivery.models import Delivery, DeliveryStatus

from ..factories import IntegrationFactory, TraceFactory
from ..fakes.server import FakeServer

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 11, 18, 12, 0, 30, tzinfo=UTC)
URL = "/api/v1/alerts"


@pytest.fixture(autouse=True)
def loopback_ok(settings):
    settings.TRACERELAY_ALLOW_PRIVATE_DESTINATIONS = True


@pytest.fixture
def hook(team):
    return IntegrationFactory(team=team, name="orders-hook", config={"url": "http://127.0.0.1:9/h", "headers": {}})


def make(team, metric: str, threshold: Any, **body: Any):
    spec = parse_alert(
        {
            "name": metric,
            "metric": metric,
            "threshold": threshold,
            "window": {"type": "rolling", "minutes": 60},
            "scope": {"integration": "orders-hook"},
            **body,
        }
    )
    return services.alert_create(team_id=team.id, spec=spec, actor="test")[0]


def delivery(team, integration, status: str, *, created: datetime, updated: datetime | None = None):
    row = Delivery.objects.create(
        team=team, trace=TraceFactory(team=team), destination=integration.name, integration=integration, status=status
    )
    Delivery.objects.filter(pk=row.pk).update(created_at=created, updated_at=updated or created)
    return row


def test_the_failure_rate_fires_and_notifies_like_a_spend_alert(team, hook):
    with FakeServer() as receiver:
        alert = make(team, "delivery_failure_rate", 0.25, notify={"webhooks": [{"url": receiver.url}]})
        for status in ["delivered", "delivered", "delivered", "dead"]:
            delivery(team, hook, status, created=NOW - timedelta(minutes=5))
        delivery(team, hook, "pending", created=NOW - timedelta(minutes=5))  # not settled: not counted
        delivery(team, hook, "dead", created=NOW - timedelta(hours=3))  # outside the window

        outcome = services.evaluate(alert.pk, NOW)

        assert outcome.value == Decimal("0.25") and outcome.event == "fired"
        assert receiver.wait_for(1)
        body = receiver.requests[0].json()
    assert body["type"] == "alert.fired" and body["value"] == 0.25 and body["threshold"] == 0.25


def test_dead_letters_count_those_dead_lettered_in_the_window(team, hook):
    alert = make(team, "dead_letters", 2)
    delivery(team, hook, "dead", created=NOW - timedelta(hours=5), updated=NOW - timedelta(minutes=1))
    delivery(team, hook, "dead", created=NOW - timedelta(minutes=30))
    delivery(team, hook, "dead", created=NOW - timedelta(hours=2))  # dead-lettered before the window
    other = IntegrationFactory(team=team, name="other", config={"url": "http://127.0.0.1:9/o", "headers": {}})
    delivery(team, other, "dead", created=NOW - timedelta(minutes=1))  # another integration's

    outcome = services.evaluate(alert.pk, NOW)

    assert outcome.value == 2 and outcome.event == "fired"


def test_oldest_pending_is_the_age_of_the_oldest_waiting_delivery(team, hook):
    alert = make(team, "oldest_pending_s", 600)
    delivery(team, hook, "pending", created=NOW - timedelta(minutes=4))
    delivery(team, hook, "delivered", created=NOW - timedelta(hours=1))

    assert services.evaluate(alert.pk, NOW).value == 240
    delivery(team, hook, "sending", created=NOW - timedelta(minutes=11))
    outcome = services.evaluate(alert.pk, NOW + timedelta(seconds=20))
    assert outcome.value == 680 and outcome.event == "fired"
    Delivery.objects.filter(status__in=["pending", "sending"]).update(status=DeliveryStatus.DELIVERED)
    assert services.evaluate(alert.pk, NOW + timedelta(seconds=40)).event == "resolved"
    assert [e.kind for e in AlertEvent.objects.filter(alert=alert).order_by("at")] == ["fired", "resolved"]


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"metric": "dead_letters", "scope": {}}, "scope.integration", "measures one integration"),
        (
            {"metric": "dead_letters", "scope": {"integration": "orders-hook", "model": "gpt-4o"}},
            "scope.model",
            "scoped by integration only",
        ),
        ({"metric": "cost", "scope": {"integration": "orders-hook"}}, "scope.integration", "measures traces"),
        (
            {"metric": "delivery_failure_rate", "threshold": 5, "scope": {"integration": "orders-hook"}},
            "threshold",
            "fraction from 0 to 1",
        ),
        ({"metric": "dead_letters", "scope": {"integration": "nope"}}, "scope.integration", "No integration named"),
        ({"metric": "latency"}, "metric", "delivery_failure_rate"),
    ],
)
def test_the_api_refuses_what_does_not_fit_naming_the_field(api, hook, body, field, message):
    payload = {"name": "x", "threshold": 1, "window": {"type": "rolling", "minutes": 10}, **body}

    response = api.post(URL, payload, format="json")

    assert response.status_code == 400, response.content
    assert response["Content-Type"].startswith("application/problem+json")
    assert message in response.json()["errors"][field][0]


def test_the_api_creates_a_delivery_alert(api, hook):
    payload = {
        "name": "Hook failing",
        "metric": "delivery_failure_rate",
        "threshold": 0.1,
        "window": {"type": "rolling", "minutes": 15},
        "scope": {"integration": "orders-hook"},
    }

    response = api.post(URL, payload, format="json")

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["metric"] == "delivery_failure_rate" and body["scope"] == {"integration": "orders-hook"}


def test_parse_alert_alone_refuses_a_delivery_metric_without_an_integration():
    with pytest.raises(AlertError) as caught:
        parse_alert(
            {"name": "x", "metric": "oldest_pending_s", "threshold": 60, "window": {"type": "rolling", "minutes": 5}}
        )
    assert "scope.integration" in caught.value.errors
