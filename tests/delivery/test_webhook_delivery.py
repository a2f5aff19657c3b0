"""The engine with the real webhook exporter against a receiver on loopback that checks the format."""

from __future__ import annotations

import pytest
from django.utils import timezone

from delivery.engine import deliver_batch
from delivery.models import Delivery, DeliveryStatus
from tests.e2e.sink import WebhookSink
from tests.factories import TraceFactory

from .scripted import make_delivery, make_integration, statuses

pytestmark = pytest.mark.django_db

SECRET = "whsec_0123456789abcdef"


@pytest.fixture
def sink():
    with WebhookSink(secret=SECRET) as server:
        yield server


@pytest.fixture
def hook(team, sink):
    return make_integration(
        team,
        "hook",
        config={"url": sink.url, "headers": {}, "secret": SECRET},
        retry_policy={"max_attempts": 3, "base_delay_s": 1, "max_delay_s": 10},
        timeout_s=2,
    )


def test_it_delivers_signed_batches_the_receiver_accepts(team, hook, sink, published):
    rows = [make_delivery(team, "hook") for _ in range(150)]

    report = deliver_batch([r.pk for r in rows])

    assert report.delivered == 150
    assert sink.errors == []
    assert [len(r["ids"]) for r in sink.requests] == [100, 50]  # the webhook exporter's max_batch
    assert set(sink.stored) == {r.trace.trace_id for r in rows}
    assert sink.duplicates == {}


def test_a_retry_after_from_the_receiver_sets_the_next_attempt(team, hook, sink, published):
    sink.answer(503, retry_after=7)
    row = make_delivery(team, "hook")

    deliver_batch([row.pk])

    row.refresh_from_db()
    assert row.status == DeliveryStatus.PENDING
    assert row.last_status_code == 503
    assert "HTTP 503" in row.last_error
    assert (row.next_attempt_at - row.updated_at).total_seconds() >= 7


def test_a_4xx_goes_to_the_fallback_receiver(team, hook, sink, published):
    with WebhookSink() as backup_sink:
        make_integration(team, "backup", config={"url": backup_sink.url, "headers": {}})
        sink.always(422)
        row = make_delivery(team, "hook", fallback=["backup"])

        deliver_batch([row.pk])
        fallback = Delivery.objects.get(fallback_of=row)
        deliver_batch([fallback.pk])

        assert statuses(row, fallback) == [DeliveryStatus.FAILED, DeliveryStatus.DELIVERED]
        assert Delivery.objects.get(pk=row.pk).last_status_code == 422
        assert set(backup_sink.stored) == {row.trace.trace_id}
        assert sink.stored == {}


def test_a_slow_receiver_times_out_and_is_retried(team, sink, published):
    make_integration(team, "slow", config={"url": sink.url, "headers": {}, "secret": SECRET}, timeout_s=0.3)
    sink.latency_s = 1.0
    row = make_delivery(team, "slow")

    deliver_batch([row.pk])

    row.refresh_from_db()
    assert row.status == DeliveryStatus.PENDING
    assert "timed out after 0.3s" in row.last_error


def test_an_ad_hoc_webhook_url_from_a_rule_needs_no_integration(team, published):
    with WebhookSink() as adhoc:
        trace = TraceFactory(team=team)
        row = Delivery.objects.create(
            team=team, trace=trace, destination="webhook", spec={"name": "webhook", "url": adhoc.url, "fallback": []}
        )

        deliver_batch([row.pk])

        row.refresh_from_db()
        assert row.status == DeliveryStatus.DELIVERED
        assert row.integration_id is None
        assert adhoc.errors == []
        assert list(adhoc.stored) == [trace.trace_id]


def test_a_redelivered_batch_keeps_its_ids(team, hook, sink, published):
    sink.answer(500)
    rows = [make_delivery(team, "hook") for _ in range(3)]

    deliver_batch([r.pk for r in rows])
    Delivery.objects.filter(pk__in=[r.pk for r in rows]).update(next_attempt_at=timezone.now())
    deliver_batch([r.pk for r in rows])

    first, second = sink.requests
    assert first["ids"] == second["ids"]
    assert first["status"] == 500 and second["status"] == 200
    assert sink.duplicates == {}
