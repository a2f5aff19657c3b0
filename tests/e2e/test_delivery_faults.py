"""End to end through the API, rules, the outbox, Redis and a real Celery worker, to a webhook
receiver on loopback: the happy path and the faults (destination down, permanent errors, all down
then replay, Redis down during ingest, a worker killed mid-delivery)."""

from __future__ import annotations

import logging
import signal

import pytest

from delivery.models import Delivery, DeliveryStatus

from .conftest import _point_celery_at, statuses_by_destination, trace, wait_for
from .processes import RedisServer
from .sink import WebhookSink

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SECRET = "whsec_e2e_0123456789"


@pytest.fixture
def sink():
    with WebhookSink(secret=SECRET) as server:
        yield server


@pytest.fixture
def backup_sink():
    with WebhookSink() as server:
        yield server


def _all_delivered(sink: WebhookSink, ids: list[str]) -> bool:
    return set(ids) <= set(sink.stored)


def test_a_trace_reaches_the_webhook_through_rules(product, sink, start_worker, api):
    product.integration(
        "hook",
        "webhook",
        {"url": sink.url, "secret": SECRET},
        retry_policy={"max_attempts": 3, "base_delay_s": 0.1, "max_delay_s": 1},
    )
    product.rules({"name": "errors to the hook", "condition": "error == true", "destinations": ["hook"]})
    start_worker()

    failed, ok = product.ingest(
        trace(status="error", error={"type": "Timeout", "message": "upstream timed out"}, tags=["e2e"]),
        trace(),
    )

    assert sink.wait_until(lambda s: failed in s.stored, timeout=30), sink.requests
    assert sink.errors == []
    received = sink.stored[failed]
    assert (received["model"], received["status"], received["tags"]) == ("gpt-4o", "error", ["e2e"])
    assert received["error"] == {"type": "Timeout", "message": "upstream timed out"}
    assert ok not in sink.stored
    assert sink.duplicates == {}
    # The API shows where the trace went and how it went.
    detail = api.get(f"/api/v1/traces/{failed}").json()
    assert detail["destinations"] == ["hook"]
    rows = wait_for(lambda: [d for d in product.deliveries(trace=failed) if d["status"] == "delivered"], 10)
    assert rows[0]["destination"] == "hook" and rows[0]["attempts"] == 1 and rows[0]["rule"] == "errors to the hook"
    assert product.deliveries(trace=ok) == []


def test_a_destination_down_then_back_gets_the_trace_once(product, sink, start_worker):
    product.webhook("hook", sink.url, attempts=5, headers={})
    product.rules({"name": "all", "destinations": ["hook"]})
    sink.secret = None
    sink.answer(503, 502, 500)  # down for three tries, then back
    start_worker()

    [trace_id] = product.ingest(trace())

    assert sink.wait_until(lambda s: trace_id in s.stored, timeout=30), sink.requests
    assert [r["status"] for r in sink.requests] == [503, 502, 500, 200]
    assert sink.sends[trace_id] == 1
    row = wait_for(lambda: Delivery.objects.filter(status=DeliveryStatus.DELIVERED).first(), 10, "delivered row")
    assert row.attempts == 4
    assert "HTTP 500" in row.last_error


def test_a_permanent_error_goes_to_the_fallback(product, sink, backup_sink, start_worker):
    sink.secret = None
    sink.always(422)
    product.webhook("primary", sink.url, attempts=5)
    product.webhook("backup", backup_sink.url)
    product.rules({"name": "all", "destinations": [{"name": "primary", "fallback": [{"name": "backup"}]}]})
    start_worker()

    [trace_id] = product.ingest(trace())

    assert backup_sink.wait_until(lambda s: trace_id in s.stored, timeout=30)
    assert len(sink.requests) == 1  # no retries of a 422
    assert backup_sink.sends[trace_id] == 1
    wait_for(lambda: statuses_by_destination(trace_id) == {"primary": "failed", "backup": "delivered"}, 10)
    primary = Delivery.objects.get(destination="primary")
    assert primary.last_status_code == 422
    assert Delivery.objects.get(destination="backup").fallback_of_id == primary.pk


def test_all_down_dead_letters_then_a_replay_delivers_once(product, api, sink, backup_sink, start_worker):
    sink.secret = None
    sink.always(503)
    backup_sink.always(503)
    product.webhook("primary", sink.url, attempts=2)
    product.webhook("backup", backup_sink.url, attempts=2)
    product.rules({"name": "all", "destinations": [{"name": "primary", "fallback": [{"name": "backup"}]}]})
    start_worker()

    [trace_id] = product.ingest(trace())

    wait_for(lambda: statuses_by_destination(trace_id) == {"primary": "failed", "backup": "dead"}, 30, "dead letter")
    assert len(sink.requests) == 2 and len(backup_sink.requests) == 2
    dead = product.deliveries(status="dead")
    assert [d["destination"] for d in dead] == ["backup"]
    assert "HTTP 503" in dead[0]["last_error"]

    backup_sink.always(200)
    response = api.post("/api/v1/deliveries/replay", {"destination": "backup"}, format="json")
    assert response.json() == {"replayed": 1}
    again = api.post("/api/v1/deliveries/replay", {}, format="json")  # nothing dead any more
    assert again.json() == {"replayed": 0}

    assert backup_sink.wait_until(lambda s: trace_id in s.stored, timeout=30)
    wait_for(lambda: statuses_by_destination(trace_id)["backup"] == "delivered", 10)
    assert backup_sink.sends[trace_id] == 1
    row = Delivery.objects.get(destination="backup")
    assert (row.replay_count, row.attempts) == (1, 1)


def test_no_trace_is_lost_when_redis_is_down_during_ingest(
    product, sink, worker_env, start_worker, e2e_dir, settings, caplog
):
    """A Redis of its own: stopped while traces come in, started again; the sweeper delivers them."""
    import copy

    sink.secret = None
    redis = RedisServer(e2e_dir).start()
    try:
        _point_celery_at(redis.url)
        caches = copy.deepcopy(settings.CACHES)
        caches["default"]["LOCATION"] = redis.url
        settings.CACHES = caches
        product.webhook("hook", sink.url)
        product.rules({"name": "all", "destinations": ["hook"]})
        start_worker(REDIS_URL=redis.url, CELERY_BROKER_URL=redis.url)

        redis.kill()
        with caplog.at_level(logging.WARNING):
            ids = product.ingest(trace(), trace(model="claude-sonnet-4-5", provider="anthropic"), trace())
            ids += product.ingest(trace())
        assert "could not publish" in caplog.text
        assert Delivery.objects.filter(status=DeliveryStatus.PENDING).count() == 4
        assert sink.requests == []

        redis.start()
        assert sink.wait_until(lambda s: _all_delivered(s, ids), timeout=60), sink.requests
        assert all(sink.sends[i] == 1 for i in ids)
        wait_for(lambda: Delivery.objects.filter(status=DeliveryStatus.DELIVERED).count() == 4, 10)
    finally:
        redis.stop()


def test_a_worker_killed_mid_delivery_is_redelivered_without_duplicates(product, sink, start_worker):
    sink.secret = None
    product.webhook("hook", sink.url)
    product.rules({"name": "all", "destinations": ["hook"]})
    sink.hold_next()
    first = start_worker()

    ids = product.ingest(*(trace() for _ in range(5)))

    assert sink.holding.wait(30), "the worker never sent"
    assert Delivery.objects.filter(status=DeliveryStatus.SENDING).count() == 5
    first.kill(signal.SIGKILL)  # the whole worker, mid-request
    sink.release()  # the receiver still processes the orphaned request, as a real one would

    start_worker()  # the sweeper takes the rows back once their claim expires (4 s here)

    wait_for(lambda: Delivery.objects.filter(status=DeliveryStatus.DELIVERED).count() == 5, 60, "redelivery")
    assert set(sink.stored) == set(ids)  # every trace stored once, by its stable id
    assert len(sink.requests) == 2  # the orphaned request and the redelivery
    assert sink.requests[0]["ids"] == sink.requests[1]["ids"]
    assert all(sink.sends[i] == 2 for i in ids)  # sent twice, kept once: the receiver dedupes by trace id
    assert {d.attempts for d in Delivery.objects.all()} == {2}
