"""The sweeper re-dispatches rows whose task was lost and takes back claims of dead workers."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from delivery import sweeper
from delivery.engine import deliver_batch
from delivery.models import Delivery, DeliveryStatus
from delivery.tasks import SWEEPER_TASK_NAME, ensure_sweeper_schedule

from .scripted import make_delivery, make_integration, statuses

pytestmark = pytest.mark.django_db


@pytest.fixture
def sweep_settings(settings):
    settings.TRACERELAY_OUTBOX_SWEEP_GRACE_S = 30
    settings.TRACERELAY_DELIVERY_CLAIM_TIMEOUT_S = 300
    return settings


def _ago(seconds: float):
    return timezone.now() - timedelta(seconds=seconds)


def test_it_dispatches_pending_rows_whose_publish_was_lost(team, sweep_settings, published):
    lost = make_delivery(team, "a", next_attempt_at=_ago(60))
    fresh = make_delivery(team, "a", next_attempt_at=_ago(5))  # its task may still be on the way
    future = make_delivery(team, "a", next_attempt_at=_ago(-600))
    done = make_delivery(team, "a", next_attempt_at=_ago(60), status=DeliveryStatus.DELIVERED)

    report = sweeper.sweep()

    assert report.dispatched == 1
    assert published == [([lost.pk], None)]
    lost.refresh_from_db()
    assert lost.dispatched_at is not None
    assert {fresh.pk, future.pk, done.pk}.isdisjoint(published[0][0])


def test_it_does_not_dispatch_the_same_row_again_within_the_grace_period(team, sweep_settings, published):
    make_delivery(team, "a", next_attempt_at=_ago(60))

    sweeper.sweep()
    sweeper.sweep()

    assert len(published) == 1


def test_a_retry_whose_countdown_task_was_lost_is_swept_after_its_time(team, sweep_settings, published):
    retry = make_delivery(team, "a", next_attempt_at=_ago(40), dispatched_at=_ago(100))

    sweeper.sweep()

    assert published == [([retry.pk], None)]


def test_it_takes_back_rows_claimed_by_a_worker_that_died(team, sweep_settings, published, scripted):
    make_integration(team, "a")
    stuck = make_delivery(team, "a", status=DeliveryStatus.SENDING, claimed_at=_ago(400), attempts=1)
    busy = make_delivery(team, "a", status=DeliveryStatus.SENDING, claimed_at=_ago(10), attempts=1)

    report = sweeper.sweep()

    stuck.refresh_from_db()
    assert report.reclaimed == 1
    assert stuck.status == DeliveryStatus.PENDING
    assert stuck.claim_token is None
    assert "stopped before recording an outcome" in stuck.last_error
    assert published == [([stuck.pk], None)]
    assert statuses(busy) == [DeliveryStatus.SENDING]

    deliver_batch(published[0][0])
    stuck.refresh_from_db()
    assert stuck.status == DeliveryStatus.DELIVERED
    assert stuck.attempts == 2


def test_it_sweeps_at_most_the_limit_per_run(team, sweep_settings, published):
    for _ in range(5):
        make_delivery(team, "a", next_attempt_at=_ago(60))

    report = sweeper.sweep(limit=3)

    assert report.dispatched == 3
    assert Delivery.objects.filter(dispatched_at__isnull=True).count() == 2


def test_nothing_is_marked_dispatched_twice_when_the_broker_is_down(team, sweep_settings, monkeypatch):
    from delivery import outbox

    monkeypatch.setattr(outbox, "publish", lambda ids, **kw: False)
    make_delivery(team, "a", next_attempt_at=_ago(60))

    assert sweeper.sweep().dispatched == 0


def test_the_periodic_task_is_written_with_the_configured_interval(settings):
    settings.TRACERELAY_OUTBOX_SWEEP_INTERVAL_S = 7

    ensure_sweeper_schedule()
    ensure_sweeper_schedule()  # idempotent

    task = PeriodicTask.objects.get(name=SWEEPER_TASK_NAME)
    assert task.task == "routing.sweep_outbox"
    assert task.queue == "delivery"
    assert (task.interval.every, task.interval.period) == (7, "seconds")
    assert task.enabled
