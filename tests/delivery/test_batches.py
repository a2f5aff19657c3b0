"""A batch is re-sent whole: the same rows in one request, so the webhook's delivery id repeats.

Re-sends come from a retry (a transient failure), from another worker taking over the claims of
one that died mid-send, and from a replay of a whole dead batch; the task that carries them may
name only part of a batch, or several batches mixed with new rows.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from delivery import lease, services, sweeper
from delivery.batches import units
from delivery.engine import deliver_batch
from delivery.models import Delivery, DeliveryStatus, DeliveryWorker
from integrations.exporters import ids as export_ids
from integrations.exporters import webhook
from tests.e2e.sink import WebhookSink

from .scripted import make_delivery, make_integration, permanent, transient

pytestmark = pytest.mark.django_db


@pytest.fixture
def primary(team):
    return make_integration(team, "primary", retry_policy={"max_attempts": 5, "base_delay_s": 2, "max_delay_s": 60})


def _due(*rows: Delivery) -> None:
    """Time passes: the rows' retry is due."""
    Delivery.objects.filter(pk__in=[r.pk for r in rows]).update(next_attempt_at=timezone.now())


def _batch_ids(*rows: Delivery) -> set[uuid.UUID | None]:
    return set(Delivery.objects.filter(pk__in=[r.pk for r in rows]).values_list("batch_id", flat=True))


def test_a_claim_stamps_the_rows_it_sends_with_one_new_batch_per_request(team, primary, scripted, published):
    rows = [make_delivery(team, "primary") for _ in range(5)]

    deliver_batch([r.pk for r in rows])

    assert [len(c) for c in scripted["primary"].calls] == [3, 2]  # ScriptedExporter.max_batch = 3
    first, second = _batch_ids(*rows[:3]), _batch_ids(*rows[3:])
    assert len(first) == len(second) == 1 and first != second and None not in first | second


def test_a_retry_re_forms_the_batch_whole_when_its_task_names_one_row(team, primary, scripted, published):
    scripted["primary"].outcomes = [transient()]
    a, b, c = (make_delivery(team, "primary") for _ in range(3))
    deliver_batch([a.pk, b.pk, c.pk])
    later = [make_delivery(team, "primary") for _ in range(2)]  # new rows meanwhile
    _due(a, b, c)

    deliver_batch([later[0].pk, c.pk, later[1].pk])  # the task names one member of the batch only

    first, again, new = scripted["primary"].calls
    assert again == first  # the same traces, in the same order, in one request
    assert set(new) == {r.trace.trace_id for r in later}  # new rows are a batch of their own
    assert Delivery.objects.filter(status=DeliveryStatus.DELIVERED).count() == 5


def test_every_member_of_a_failed_batch_waits_the_same_backoff(team, primary, scripted, published):
    scripted["primary"].outcomes = [transient()]
    rows = [make_delivery(team, "primary") for _ in range(3)]
    Delivery.objects.filter(pk=rows[0].pk).update(attempts=3)  # joined with more attempts behind it

    deliver_batch([r.pk for r in rows])

    assert len(set(Delivery.objects.values_list("next_attempt_at", flat=True))) == 1
    assert [sorted(ids) for ids, _ in published] == [sorted(r.pk for r in rows)]


def test_rows_taken_over_from_a_dead_worker_go_out_as_the_batches_they_were(team, primary, scripted, published):
    rows = [make_delivery(team, "primary") for _ in range(6)]
    dead = _dead_worker()
    with _claims_by(dead):
        scripted["primary"].default = _Crash()  # the worker dies inside both sends
        with pytest.raises(_Crash):
            deliver_batch([r.pk for r in rows[:3]])
        with pytest.raises(_Crash):
            deliver_batch([r.pk for r in rows[3:]])
    scripted["primary"].default = None
    originals = [set(c) for c in scripted["primary"].calls]
    assert Delivery.objects.filter(status=DeliveryStatus.SENDING).count() == 6

    assert sweeper.take_over_expired() == 6
    [(taken, _)] = published
    assert sorted(taken) == sorted(r.pk for r in rows)
    # The re-sends come in a different grouping: a task with one row of each batch, then the rest.
    deliver_batch([rows[5].pk, rows[0].pk])
    deliver_batch(taken)

    resent = [set(c) for c in scripted["primary"].calls[2:]]
    assert sorted(map(sorted, resent)) == sorted(map(sorted, originals))
    assert Delivery.objects.filter(status=DeliveryStatus.DELIVERED, attempts=2).count() == 6
    assert not DeliveryWorker.objects.filter(pk=dead).exists()  # nothing left: forgotten


def test_a_batch_some_of_whose_rows_left_is_sent_as_the_rest(team, primary, scripted, published):
    scripted["primary"].outcomes = [transient()]
    a, b, c = (make_delivery(team, "primary") for _ in range(3))
    deliver_batch([a.pk, b.pk, c.pk])
    Delivery.objects.filter(pk=b.pk).update(status=DeliveryStatus.DEAD)  # e.g. ran out of attempts
    _due(a, c)

    deliver_batch([a.pk])

    assert scripted["primary"].calls[1] == [a.trace.trace_id, c.trace.trace_id]


def test_a_batch_with_a_row_not_due_yet_sends_its_due_rows_as_a_new_batch(team, primary, scripted, published):
    scripted["primary"].outcomes = [transient()]
    a, b, c = (make_delivery(team, "primary") for _ in range(3))
    deliver_batch([a.pk, b.pk, c.pk])
    [stored] = _batch_ids(a, b, c)
    Delivery.objects.filter(pk=c.pk).update(next_attempt_at=timezone.now() + timedelta(minutes=5))  # e.g. edited
    _due(a, b)

    deliver_batch([a.pk, b.pk])

    assert scripted["primary"].calls[1] == [a.trace.trace_id, b.trace.trace_id]
    assert stored not in _batch_ids(a, b)
    assert _batch_ids(c) == {stored}


def test_a_stored_batch_larger_than_the_destination_takes_is_split():
    rows = [{"id": i, "batch_id": uuid.UUID(int=1)} for i in range(5)] + [{"id": 9, "batch_id": None}]

    planned = units(rows, size=3)

    assert [(bid, [r["id"] for r in members]) for bid, members in planned] == [(None, [9, 0, 1]), (None, [2, 3, 4])]


def test_a_stored_batch_goes_before_new_rows_and_is_never_cut_by_them():
    stored = [{"id": i, "batch_id": uuid.UUID(int=7)} for i in (4, 5)]
    fresh = [{"id": i, "batch_id": None} for i in (1, 2, 3)]

    planned = units([fresh[0], stored[0], *fresh[1:], stored[1]], size=3)

    assert [(bid, [r["id"] for r in members]) for bid, members in planned] == [
        (uuid.UUID(int=7), [4, 5]),
        (None, [1, 2, 3]),
    ]


def test_a_half_open_circuit_probes_with_a_stored_batch_whole(team, primary, scripted, published, settings):
    from delivery.breaker import CircuitBreaker

    settings.TRACERELAY_BREAKER_FAILURES = 1
    settings.TRACERELAY_BREAKER_COOLDOWN_S = 0
    scripted["primary"].outcomes = [transient()]
    rows = [make_delivery(team, "primary") for _ in range(3)]
    deliver_batch([r.pk for r in rows])  # fails and opens the circuit
    assert CircuitBreaker(team.pk, "primary").acquire().probe  # cool-down over: the next send probes
    CircuitBreaker(team.pk, "primary").release_probe()
    _due(*rows)

    deliver_batch([rows[1].pk])

    assert scripted["primary"].calls[1] == scripted["primary"].calls[0]


def test_replaying_a_whole_dead_batch_sends_it_as_it_was(team, primary, scripted, published):
    scripted["primary"].outcomes = [permanent()]
    rows = [make_delivery(team, "primary") for _ in range(3)]
    deliver_batch([r.pk for r in rows])
    assert Delivery.objects.filter(status=DeliveryStatus.DEAD).count() == 3

    services.deliveries_replay_dead(team_id=team.pk, actor="test")
    deliver_batch([rows[2].pk])

    assert scripted["primary"].calls[1] == scripted["primary"].calls[0]


# --- with the real webhook exporter: the receiver sees the same delivery id ------------------------


@pytest.fixture
def sink():
    with WebhookSink() as server:
        yield server


def test_the_webhook_delivery_id_repeats_when_a_dead_worker_s_batches_are_re_sent(team, sink, published):
    make_integration(team, "hook", config={"url": sink.url, "headers": {}}, timeout_s=5)
    rows = [make_delivery(team, "hook") for _ in range(250)]
    dead = _dead_worker()
    with _claims_by(dead), _crash_after_sending():
        for start in range(0, 250, 50):  # five tasks of 50 rows: batches of 50
            with pytest.raises(_Crash):
                deliver_batch([r.pk for r in rows[start : start + 50]])
    originals = {r["delivery"]: set(r["ids"]) for r in sink.requests}
    assert len(originals) == 5

    sweeper.take_over_expired()
    [(taken, _)] = published
    for start in range(0, 250, 100):  # re-sent by tasks of 100 rows, in another order
        deliver_batch(sorted(taken, reverse=True)[start : start + 100])

    resent = {r["delivery"]: set(r["ids"]) for r in sink.requests[5:]}
    assert resent == originals
    for delivery_id, members in resent.items():
        assert delivery_id == export_ids.batch_key(team.pk, list(members))
    assert sink.kept_by_delivery_id() == 250  # a receiver deduplicating on the header keeps no copy twice
    assert Delivery.objects.filter(status=DeliveryStatus.DELIVERED).count() == 250


# --- helpers -------------------------------------------------------------------------------------


class _Crash(BaseException):
    """The worker process dying mid-send: nothing after it runs, the rows stay in sending."""


def _dead_worker() -> uuid.UUID:
    worker = uuid.uuid4()
    long_ago = timezone.now() - timedelta(hours=1)
    DeliveryWorker.objects.create(id=worker, hostname="gone", pid=1, started_at=long_ago, heartbeat_at=long_ago)
    return worker


class _claims_by:
    """Claims made inside are stamped with ``worker`` (as a worker process's would be)."""

    def __init__(self, worker: uuid.UUID) -> None:
        self.worker = worker

    def __enter__(self) -> None:
        self.patch = pytest.MonkeyPatch()
        self.patch.setattr(lease, "current", lambda: self.worker)

    def __exit__(self, *exc: object) -> None:
        self.patch.undo()


class _crash_after_sending:
    """The webhook request reaches the receiver (which stores it), then the worker dies."""

    def __enter__(self) -> None:
        original = webhook.WebhookExporter.export_encoded

        def send_then_die(exporter, batch):
            original(exporter, batch)
            raise _Crash

        self.patch = pytest.MonkeyPatch()
        self.patch.setattr(webhook.WebhookExporter, "export_encoded", send_then_die)

    def __exit__(self, *exc: object) -> None:
        self.patch.undo()


# --- two workers racing for the same batch ---------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_batch_claimed_for_a_re_send_is_never_split_between_two_workers(team):
    """Another transaction holds one row of a stored batch (a worker in the middle of claiming it).
    A plain claim skips the locked row and takes the others: the batch would go out split. A
    re-send's claim waits for it instead, and then wins all of the batch, or none of it."""
    import threading

    from django.db import connection, transaction

    from delivery.states import claim

    stored = uuid.uuid4()

    def batch() -> list[dict]:
        rows = [make_delivery(team, "primary", batch_id=stored) for _ in range(3)]
        return list(Delivery.objects.filter(pk__in=[r.pk for r in rows]).order_by("pk").values("id"))

    def holding_middle_row(rows: list[dict], release: threading.Event, held: threading.Event) -> threading.Thread:
        def hold() -> None:
            with transaction.atomic():
                Delivery.objects.select_for_update().get(pk=rows[1]["id"])
                held.set()
                release.wait(30)
            connection.close()

        thread = threading.Thread(target=hold)
        thread.start()
        assert held.wait(10)
        return thread

    skipped = batch()
    release, held = threading.Event(), threading.Event()
    holder = holding_middle_row(skipped, release, held)
    _, won = claim(skipped, batch_id=stored)
    assert sorted(r["id"] for r in won) == [skipped[0]["id"], skipped[2]["id"]]  # split
    release.set()
    holder.join()

    whole = batch()
    release, held = threading.Event(), threading.Event()
    holder = holding_middle_row(whole, release, held)
    result: list[list[dict]] = []

    def re_send_claim() -> None:
        result.append(claim(whole, batch_id=stored, whole=True)[1])
        connection.close()

    claimer = threading.Thread(target=re_send_claim)
    claimer.start()
    _wait_for_a_lock_wait()
    assert result == []  # still waiting for the held row
    release.set()
    holder.join()
    claimer.join(30)
    assert sorted(r["id"] for r in result[0]) == [r["id"] for r in whole]  # all of it

    assert claim(whole, batch_id=stored, whole=True)[1] == []  # the other worker: none of it


def _wait_for_a_lock_wait(timeout: float = 10.0) -> None:
    import time

    from django.db import connections

    deadline = time.monotonic() + timeout
    with connections["default"].cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            if cursor.fetchone()[0]:
                return
            time.sleep(0.02)
    raise AssertionError("no claim is waiting for a lock")
