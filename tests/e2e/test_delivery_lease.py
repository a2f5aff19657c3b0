"""Worker leases with real Celery workers: a worker killed with SIGKILL mid-send has its claims
taken over by another within seconds (the claim timeout is 300 s here, so only the lease can do
it), re-sent as the same batch with the same delivery id; a live worker's slow send is never
taken over, however long it takes."""

from __future__ import annotations

import signal
from datetime import timedelta

import pytest
from django.db.models import F

from delivery.models import Delivery, DeliveryStatus, DeliveryWorker

from .conftest import trace, wait_for
from .sink import WebhookSink

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

LEASE_S = 2.0


@pytest.fixture
def sink():
    with WebhookSink() as server:
        yield server


def _leased(start_worker):
    def start():
        return start_worker(
            TRACERELAY_DELIVERY_LEASE_S=str(LEASE_S),
            TRACERELAY_DELIVERY_HEARTBEAT_S="0.3",
            TRACERELAY_DELIVERY_CLAIM_TIMEOUT_S="300",
        )

    return start


def test_a_killed_worker_s_batch_is_taken_over_in_seconds_and_re_sent_with_its_delivery_id(product, sink, start_worker):
    product.webhook("hook", sink.url)
    product.rules({"name": "all", "destinations": ["hook"]})
    start = _leased(start_worker)
    sink.hold_next()
    first = start()

    ids = product.ingest(*(trace() for _ in range(150)))  # one task: a batch of 100, then 50

    assert sink.holding.wait(30), "the worker never sent"
    held = list(Delivery.objects.filter(status=DeliveryStatus.SENDING).values_list("claimed_by", flat=True))
    assert len(held) == 100 and None not in held  # claimed under the worker's lease
    dead = set(DeliveryWorker.objects.values_list("pk", flat=True))  # its main process and its child
    first.kill(signal.SIGKILL)  # the whole worker, mid-request
    sink.release()  # the receiver still stores the orphaned request, as a real one would
    assert sink.wait_until(lambda s: len(s.requests) == 1)
    original = sink.requests[0]

    start()  # takes over once the dead worker's lease expires (2 s) and its own heartbeats settled

    wait_for(lambda: Delivery.objects.filter(status=DeliveryStatus.DELIVERED).count() == 150, 60, "the takeover")
    resent = [r for r in sink.requests[1:] if r["delivery"] == original["delivery"]]
    assert len(resent) == 1 and resent[0]["ids"] == original["ids"]  # the same batch, the same id
    assert set(sink.stored) == set(ids)
    assert sink.kept_by_delivery_id() == 150  # deduplicating on the header alone keeps no trace twice
    taken = Delivery.objects.filter(trace__trace_id__in=original["ids"])
    assert {(d.attempts, d.status) for d in taken} == {(2, DeliveryStatus.DELIVERED)}
    assert "lease" in taken[0].last_error
    wait_for(lambda: not DeliveryWorker.objects.filter(pk__in=dead).exists(), 30, "the dead worker forgotten")


def test_a_live_worker_s_slow_send_is_never_taken_over(product, sink, start_worker):
    policy = {"max_attempts": 3, "base_delay_s": 0.1, "max_delay_s": 1}
    product.integration("hook", "webhook", {"url": sink.url}, retry_policy=policy, timeout_s=120)
    product.rules({"name": "all", "destinations": ["hook"]})
    start = _leased(start_worker)
    sink.hold_next()  # the destination takes as long as this test wants
    start()

    ids = product.ingest(*(trace() for _ in range(5)))
    assert sink.holding.wait(30), "the worker never sent"
    start()  # a second worker, whose heartbeat looks for expired leases every 0.3 s

    # Every worker, the second one included, has renewed its lease for three lease lengths while
    # the send was held: the second could have taken the rows over many times had the first's
    # lease not been renewed.
    wait_for(lambda: DeliveryWorker.objects.count() >= 2, 30, "both workers' leases")
    wait_for(
        lambda: not DeliveryWorker.objects.filter(heartbeat_at__lt=F("started_at") + _seconds(3 * LEASE_S)).exists(),
        60,
        "three lease lengths",
    )
    assert Delivery.objects.filter(status=DeliveryStatus.SENDING).count() == 5
    sink.release()

    wait_for(lambda: Delivery.objects.filter(status=DeliveryStatus.DELIVERED).count() == 5, 30, "delivery")
    assert len(sink.requests) == 1
    assert all(sink.sends[i] == 1 for i in ids)
    assert {d.attempts for d in Delivery.objects.all()} == {1}


def _seconds(n: float) -> timedelta:
    return timedelta(seconds=n)
