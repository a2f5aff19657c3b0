"""The circuit breaker per (team, destination): open after N transient failures, defer without
spending attempts, one probe when half-open, close on its success."""

from __future__ import annotations

import time

import pytest
from django.utils import timezone

from delivery.breaker import CircuitBreaker
from delivery.engine import deliver_batch
from delivery.models import Delivery, DeliveryStatus

from .scripted import make_delivery, make_integration, permanent, statuses, transient

pytestmark = pytest.mark.django_db


@pytest.fixture
def breaker_settings(settings):
    settings.TRACERELAY_BREAKER_FAILURES = 2
    settings.TRACERELAY_BREAKER_COOLDOWN_S = 30
    return settings


def _due_now(*rows: Delivery) -> None:
    Delivery.objects.filter(pk__in=[r.pk for r in rows]).update(next_attempt_at=timezone.now())


def _expire_cooldown(breaker: CircuitBreaker) -> None:
    from django.core.cache import cache

    cache.set(breaker.open_key, time.time() - 1, timeout=600)


def test_it_opens_after_consecutive_failures_and_defers_without_spending_attempts(
    team, breaker_settings, scripted, published
):
    make_integration(team, "flaky")
    scripted["flaky"].default = transient()
    first, second, third = (make_delivery(team, "flaky") for _ in range(3))

    deliver_batch([first.pk])
    deliver_batch([second.pk])  # second consecutive failure: open
    report = deliver_batch([third.pk])

    third.refresh_from_db()
    assert CircuitBreaker(team.pk, "flaky").is_open()
    assert report.deferred == 1
    assert third.attempts == 0
    assert third.status == DeliveryStatus.PENDING
    assert (third.next_attempt_at - timezone.now()).total_seconds() == pytest.approx(30, abs=2)
    assert len(scripted["flaky"].calls) == 2  # the third was never sent
    assert published[-1][0] == [third.pk]


def test_it_is_per_destination_and_per_team(team, other_team, breaker_settings, scripted, published):
    make_integration(team, "flaky")
    make_integration(team, "fine")
    scripted["flaky"].default = transient()
    for _ in range(2):
        deliver_batch([make_delivery(team, "flaky").pk])

    assert CircuitBreaker(team.pk, "flaky").is_open()
    assert not CircuitBreaker(team.pk, "fine").is_open()
    assert not CircuitBreaker(other_team.pk, "flaky").is_open()
    fine = make_delivery(team, "fine")
    deliver_batch([fine.pk])
    assert statuses(fine) == [DeliveryStatus.DELIVERED]


def test_a_success_resets_the_failure_count(team, breaker_settings, scripted, published):
    make_integration(team, "flaky")
    scripted["flaky"].outcomes = [transient(), None, transient()]
    for _ in range(3):
        deliver_batch([make_delivery(team, "flaky").pk])

    assert not CircuitBreaker(team.pk, "flaky").is_open()


def test_half_open_sends_one_probe_and_closes_on_success(team, breaker_settings, scripted, published):
    make_integration(team, "flaky")
    scripted["flaky"].outcomes = [transient(), transient()]
    for _ in range(2):
        deliver_batch([make_delivery(team, "flaky").pk])
    breaker = CircuitBreaker(team.pk, "flaky")
    _expire_cooldown(breaker)
    rows = [make_delivery(team, "flaky") for _ in range(4)]

    report = deliver_batch([r.pk for r in rows])

    # The probe (one row) went through and closed the circuit; the rest followed in the same run.
    assert scripted["flaky"].calls[2] == [rows[0].trace.trace_id]
    assert report.delivered == 4
    assert not breaker.is_open()


def test_a_failed_probe_opens_the_circuit_again(team, breaker_settings, scripted, published):
    make_integration(team, "flaky")
    scripted["flaky"].default = transient()
    for _ in range(2):
        deliver_batch([make_delivery(team, "flaky").pk])
    breaker = CircuitBreaker(team.pk, "flaky")
    _expire_cooldown(breaker)
    rows = [make_delivery(team, "flaky") for _ in range(3)]

    report = deliver_batch([r.pk for r in rows])

    assert len(scripted["flaky"].calls) == 3  # two failures, then one probe
    assert report.retried == 1 and report.deferred == 2
    assert breaker.is_open()
    assert [Delivery.objects.get(pk=r.pk).attempts for r in rows] == [1, 0, 0]


def test_only_one_worker_gets_the_probe(team, breaker_settings):
    breaker = CircuitBreaker(team.pk, "flaky", threshold=1, cooldown_s=30)
    breaker.record_failure()
    _expire_cooldown(breaker)

    first = CircuitBreaker(team.pk, "flaky").acquire()
    second = CircuitBreaker(team.pk, "flaky").acquire()

    assert first.allowed and first.probe
    assert not second.allowed


def test_permanent_errors_do_not_open_the_circuit(team, breaker_settings, scripted, published):
    make_integration(team, "picky")
    scripted["picky"].default = permanent()
    for _ in range(3):
        deliver_batch([make_delivery(team, "picky").pk])

    assert not CircuitBreaker(team.pk, "picky").is_open()


def test_deferred_rows_are_sent_when_the_circuit_closes(team, breaker_settings, scripted, published):
    make_integration(team, "flaky")
    scripted["flaky"].outcomes = [transient(), transient()]
    for _ in range(2):
        deliver_batch([make_delivery(team, "flaky").pk])
    waiting = make_delivery(team, "flaky")
    deliver_batch([waiting.pk])
    assert statuses(waiting) == [DeliveryStatus.PENDING]

    _expire_cooldown(CircuitBreaker(team.pk, "flaky"))
    _due_now(waiting)
    deliver_batch([waiting.pk])

    waiting.refresh_from_db()
    assert waiting.status == DeliveryStatus.DELIVERED
    assert waiting.attempts == 1
