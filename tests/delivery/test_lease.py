"""Worker leases: a live worker renews its lease, a dead one's claims are taken over in seconds.

The real thing (a Celery worker killed with SIGKILL, another taking over) is in
tests/e2e/test_delivery_lease.py; here the pieces, one at a time.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from prometheus_client import REGISTRY

from delivery import lease, sweeper
from delivery.engine import deliver_batch
from delivery.models import Delivery, DeliveryStatus, DeliveryWorker

from .scripted import make_delivery, make_integration, statuses


def _worker(*, seconds_ago: float) -> uuid.UUID:
    worker = uuid.uuid4()
    beat = timezone.now() - timedelta(seconds=seconds_ago)
    DeliveryWorker.objects.create(id=worker, hostname="h", pid=1, started_at=beat, heartbeat_at=beat)
    return worker


def _sending(team, worker: uuid.UUID | None, *, claimed_s_ago: float = 1) -> Delivery:
    return make_delivery(
        team,
        "a",
        status=DeliveryStatus.SENDING,
        claimed_by=worker,
        claim_token=uuid.uuid4(),
        claimed_at=timezone.now() - timedelta(seconds=claimed_s_ago),
        attempts=1,
    )


def _taken_over(reason: str) -> float:
    return REGISTRY.get_sample_value("tracerelay_delivery_claims_taken_over_total", {"reason": reason}) or 0.0


@pytest.mark.django_db
def test_it_takes_over_the_rows_of_a_worker_whose_lease_expired(team, published, settings):
    settings.TRACERELAY_DELIVERY_LEASE_S = 20
    dead, alive = _worker(seconds_ago=21), _worker(seconds_ago=2)
    theirs = [_sending(team, dead) for _ in range(3)]
    busy = _sending(team, alive, claimed_s_ago=120)  # a slow send of a live worker
    unleased = _sending(team, None)  # claimed where no lease was held: left to the claim timeout
    before = _taken_over("lease_expired")

    taken = sweeper.take_over_expired()

    assert taken == 3
    assert statuses(*theirs) == [DeliveryStatus.PENDING] * 3
    assert statuses(busy, unleased) == [DeliveryStatus.SENDING] * 2
    row = Delivery.objects.get(pk=theirs[0].pk)
    assert row.claim_token is None and row.attempts == 1 and "lease" in row.last_error
    assert [sorted(ids) for ids, _ in published] == [sorted(r.pk for r in theirs)]
    assert _taken_over("lease_expired") == before + 3
    # The dead worker held nothing more: it is forgotten; the live one stays.
    assert list(DeliveryWorker.objects.values_list("pk", flat=True)) == [alive]


@pytest.mark.django_db
def test_a_lease_counts_by_the_database_clock_and_the_configured_length(team, published, settings):
    settings.TRACERELAY_DELIVERY_LEASE_S = 60
    worker = _worker(seconds_ago=30)
    row = _sending(team, worker)

    assert sweeper.take_over_expired() == 0
    settings.TRACERELAY_DELIVERY_LEASE_S = 15
    assert sweeper.take_over_expired() == 1
    assert statuses(row) == [DeliveryStatus.PENDING]


@pytest.mark.django_db
def test_with_no_expired_lease_it_reads_only_the_worker_table(team, published, django_assert_num_queries):
    _worker(seconds_ago=1)
    _sending(team, None, claimed_s_ago=3600)

    with django_assert_num_queries(1):
        assert sweeper.take_over_expired() == 0


@pytest.mark.django_db
def test_the_sweeper_takes_over_expired_leases_only_when_allowed(team, published, settings):
    settings.TRACERELAY_DELIVERY_LEASE_S = 20
    settings.TRACERELAY_DELIVERY_CLAIM_TIMEOUT_S = 300
    row = _sending(team, _worker(seconds_ago=60))

    assert sweeper.sweep(take_over=False).reclaimed == 0
    assert statuses(row) == [DeliveryStatus.SENDING]
    assert sweeper.sweep().reclaimed == 1
    assert statuses(row) == [DeliveryStatus.PENDING]


@pytest.mark.django_db
def test_the_claim_timeout_still_takes_back_a_claim_held_too_long_by_a_live_worker(team, published, settings):
    settings.TRACERELAY_DELIVERY_CLAIM_TIMEOUT_S = 300
    stuck = _sending(team, _worker(seconds_ago=1), claimed_s_ago=400)  # a thread stuck in a live process
    before = _taken_over("claim_timeout")

    assert sweeper.sweep().reclaimed == 1

    assert statuses(stuck) == [DeliveryStatus.PENDING]
    assert _taken_over("claim_timeout") == before + 1


@pytest.mark.django_db
def test_a_claim_carries_this_process_s_lease(team, scripted, published, monkeypatch):
    make_integration(team, "a")
    worker = _worker(seconds_ago=0)
    monkeypatch.setattr(lease, "current", lambda: worker)
    row = make_delivery(team, "a")
    scripted["a"].default = None

    deliver_batch([row.pk])

    assert Delivery.objects.get(pk=row.pk).claimed_by == worker


@pytest.mark.django_db
def test_a_heartbeat_renews_the_lease_and_registers_again_if_it_was_forgotten(settings):
    own = lease.Lease(worker_id=_worker(seconds_ago=30), pid=1)

    own.renew()
    renewed = DeliveryWorker.objects.get(pk=own.worker_id).heartbeat_at
    assert timezone.now() - renewed < timedelta(seconds=5)

    DeliveryWorker.objects.filter(pk=own.worker_id).delete()  # taken for dead while it was paused
    own.renew()
    assert DeliveryWorker.objects.filter(pk=own.worker_id).exists()


@pytest.mark.django_db
def test_a_worker_takes_over_only_after_its_own_heartbeats_held_for_three_intervals(
    team, published, settings, monkeypatch
):
    settings.TRACERELAY_DELIVERY_LEASE_S = 20
    settings.TRACERELAY_DELIVERY_HEARTBEAT_S = 5
    clock = [1000.0]
    monkeypatch.setattr(lease.time, "monotonic", lambda: clock[0])
    row = _sending(team, _worker(seconds_ago=3600))
    own = lease.Lease(worker_id=uuid.uuid4(), pid=1)

    own.beat()  # first heartbeat: healthy from now on
    clock[0] += 14
    own.beat()
    assert statuses(row) == [DeliveryStatus.SENDING]

    clock[0] += 1
    own.beat()
    assert statuses(row) == [DeliveryStatus.PENDING]


@pytest.mark.django_db
def test_a_failed_heartbeat_restarts_the_wait(team, published, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(lease.time, "monotonic", lambda: clock[0])
    own = lease.Lease(worker_id=uuid.uuid4(), pid=1)
    own.beat()
    clock[0] += lease.settle_seconds()
    assert own.may_take_over()

    def database_away(self):
        raise RuntimeError("connection refused")

    monkeypatch.setattr(lease.Lease, "renew", database_away)
    own.beat()  # the database was away: everyone's heartbeats may have failed

    assert own.healthy_since is None and not own.may_take_over()


def test_the_heartbeat_is_at_most_a_third_of_the_lease_and_three_of_them_settle_a_worker(settings):
    settings.TRACERELAY_DELIVERY_LEASE_S = 6
    settings.TRACERELAY_DELIVERY_HEARTBEAT_S = 5
    assert (lease.heartbeat_seconds(), lease.settle_seconds()) == (2, 6)
    settings.TRACERELAY_DELIVERY_HEARTBEAT_S = 1
    assert (lease.heartbeat_seconds(), lease.settle_seconds()) == (1, 3)


def test_a_process_without_a_lease_takes_nothing_over():
    assert lease.current() is None
    assert not lease.may_take_over()


@pytest.mark.django_db(transaction=True)
def test_a_started_lease_beats_from_its_thread_and_a_stop_hands_its_rows_over_at_once(team, published, settings):
    settings.TRACERELAY_DELIVERY_LEASE_S = 20
    settings.TRACERELAY_DELIVERY_HEARTBEAT_S = 0.2
    worker = lease.start()
    try:
        assert lease.start() == worker  # idempotent
        assert lease.current() == worker
        first = DeliveryWorker.objects.get(pk=worker).heartbeat_at
        _wait(lambda: DeliveryWorker.objects.get(pk=worker).heartbeat_at > first, "a heartbeat")
        row = _sending(team, worker)
        assert sweeper.take_over_expired() == 0
    finally:
        lease.stop()

    assert lease.current() is None
    assert DeliveryWorker.objects.get(pk=worker).heartbeat_at == lease.STOPPED
    assert sweeper.take_over_expired() == 1
    assert statuses(row) == [DeliveryStatus.PENDING]
    connection.close()


def _wait(predicate, what: str, timeout: float = 10.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_a_threads_worker_holds_a_lease_from_its_start_and_a_prefork_parent_leaves_it_to_its_children(monkeypatch):
    from types import SimpleNamespace

    from celery.concurrency.prefork import TaskPool as PreforkPool
    from celery.concurrency.thread import TaskPool as ThreadsPool

    from delivery import tasks

    started: list[str] = []
    monkeypatch.setattr(lease, "start", lambda: started.append("lease"))

    tasks._start_lease(sender=SimpleNamespace(pool=object.__new__(PreforkPool)))
    assert started == []  # its children fork later: it must open no database connection
    tasks._start_child_lease()
    assert started == ["lease"]  # each child its own
    tasks._start_lease(sender=SimpleNamespace(pool=object.__new__(ThreadsPool)))
    assert started == ["lease", "lease"]


@pytest.mark.django_db
def test_the_admin_lists_the_workers_and_their_leases_read_only(admin_client):
    worker = _worker(seconds_ago=3)
    DeliveryWorker.objects.filter(pk=worker).update(hostname="delivery-host-1", pid=4242)

    page = admin_client.get("/admin/delivery/deliveryworker/").content.decode()

    assert "delivery-host-1" in page and "4242" in page
    assert admin_client.get("/admin/delivery/deliveryworker/add/").status_code == 403
    changed = admin_client.post(f"/admin/delivery/deliveryworker/{worker}/change/", {"hostname": "x"})
    assert changed.status_code == 403
