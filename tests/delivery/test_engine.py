"""The delivery engine against a scripted destination: outcomes, retries, fallbacks, dead letters, claims."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from delivery import states
from delivery.engine import deliver_batch
from delivery.models import Delivery, DeliveryStatus
from tests.factories import TraceFactory

from .scripted import make_delivery, make_integration, permanent, statuses, transient

pytestmark = pytest.mark.django_db


@pytest.fixture
def primary(team):
    return make_integration(team, "primary", retry_policy={"max_attempts": 3, "base_delay_s": 2, "max_delay_s": 60})


def test_it_delivers_a_pending_row(team, primary, scripted, published):
    row = make_delivery(team, "primary")

    report = deliver_batch([row.pk])

    row.refresh_from_db()
    assert report.delivered == 1
    assert row.status == DeliveryStatus.DELIVERED
    assert row.attempts == 1
    assert row.delivered_at is not None
    assert row.integration_id == primary.pk
    assert row.claim_token is None
    assert scripted["primary"].sent_ids == [row.trace.trace_id]


def test_it_sends_batches_per_destination_up_to_max_batch(team, primary, scripted, published):
    make_integration(team, "other")
    rows = [make_delivery(team, "primary") for _ in range(7)] + [make_delivery(team, "other") for _ in range(2)]

    deliver_batch([r.pk for r in rows])

    assert [len(c) for c in scripted["primary"].calls] == [3, 3, 1]  # ScriptedExporter.max_batch = 3
    assert [len(c) for c in scripted["other"].calls] == [2]
    assert set(statuses(*rows)) == {DeliveryStatus.DELIVERED}


def test_it_passes_the_routed_tags_to_the_target(team, primary, scripted, published):
    trace = TraceFactory(team=team)
    row = Delivery.objects.create(
        team=team, trace=trace, destination="primary", spec={"name": "primary", "tags": ["vip"], "fallback": []}
    )

    deliver_batch([row.pk])

    assert scripted["primary"].targets[0].tags == ("vip",)


def test_it_does_nothing_for_rows_that_are_not_pending_or_not_due(team, primary, scripted, published):
    done = make_delivery(team, "primary", status=DeliveryStatus.DELIVERED)
    later = make_delivery(team, "primary", next_attempt_at=timezone.now() + timedelta(minutes=5))

    report = deliver_batch([done.pk, later.pk, 999_999_999])

    assert report.skipped == 3
    assert scripted["primary"].calls == []
    assert statuses(done, later) == [DeliveryStatus.DELIVERED, DeliveryStatus.PENDING]


def test_it_schedules_a_retry_after_a_transient_failure(team, primary, scripted, published):
    scripted["primary"].outcomes = [transient("primary answered HTTP 503")]
    row = make_delivery(team, "primary")
    before = timezone.now()

    report = deliver_batch([row.pk])

    row.refresh_from_db()
    assert report.retried == 1
    assert row.status == DeliveryStatus.PENDING
    assert row.attempts == 1
    assert row.last_error == "primary answered HTTP 503"
    assert row.last_status_code == 503
    # attempt 1 with base 2 s: full jitter in [0, 2 s]
    assert before <= row.next_attempt_at <= timezone.now() + timedelta(seconds=2)
    assert published == [([row.pk], pytest.approx((row.next_attempt_at - row.updated_at).total_seconds(), abs=0.01))]


def test_it_honours_retry_after_as_a_floor(team, primary, scripted, published):
    scripted["primary"].outcomes = [transient(retry_after=45)]
    row = make_delivery(team, "primary")

    deliver_batch([row.pk])

    row.refresh_from_db()
    assert row.next_attempt_at >= row.updated_at + timedelta(seconds=45)
    assert published[0][1] == pytest.approx(45)


def test_it_delivers_once_the_destination_is_back(team, primary, scripted, published):
    scripted["primary"].outcomes = [transient(), transient()]
    row = make_delivery(team, "primary")

    for _ in range(3):
        Delivery.objects.filter(pk=row.pk).update(next_attempt_at=timezone.now())  # time passes
        deliver_batch([row.pk])

    row.refresh_from_db()
    assert row.status == DeliveryStatus.DELIVERED
    assert row.attempts == 3
    assert scripted["primary"].sent_ids == [row.trace.trace_id] * 3
    assert (row.last_error, row.last_status_code) == ("503 Service Unavailable", 503)  # the last failure stays visible


def test_it_dead_letters_after_the_last_attempt(team, primary, scripted, published):
    scripted["primary"].default = transient("still down")
    row = make_delivery(team, "primary")

    for _ in range(3):
        Delivery.objects.filter(pk=row.pk).update(next_attempt_at=timezone.now())
        deliver_batch([row.pk])

    row.refresh_from_db()
    assert row.status == DeliveryStatus.DEAD
    assert row.attempts == 3
    assert row.last_error == "gave up after 3 attempts: HTTP 503: still down"
    assert len(scripted["primary"].calls) == 3


def test_it_skips_to_the_fallback_on_a_permanent_error(team, primary, scripted, published):
    make_integration(team, "backup")
    scripted["primary"].outcomes = [permanent("primary answered HTTP 400: bad payload")]
    row = make_delivery(team, "primary", fallback=["backup"])

    report = deliver_batch([row.pk])

    row.refresh_from_db()
    assert row.status == DeliveryStatus.FAILED
    assert row.attempts == 1
    assert row.last_status_code == 400
    fallback = Delivery.objects.get(fallback_of=row)
    assert fallback.destination == "backup"
    assert fallback.trace_id == row.trace_id
    assert fallback.status == DeliveryStatus.PENDING
    assert report.fallbacks == [fallback.pk]

    deliver_batch([fallback.pk])

    assert statuses(fallback) == [DeliveryStatus.DELIVERED]
    assert scripted["backup"].sent_ids == [row.trace.trace_id]


def test_it_uses_fallbacks_only_when_the_primary_gives_up(team, primary, scripted, published):
    make_integration(team, "backup")
    scripted["primary"].outcomes = [transient()]
    row = make_delivery(team, "primary", fallback=["backup"])

    deliver_batch([row.pk])

    assert not Delivery.objects.filter(fallback_of=row).exists()


def test_it_tries_fallbacks_in_order_then_dead_letters(team, primary, scripted, published):
    make_integration(team, "second")
    make_integration(team, "third")
    for name in ("primary", "second", "third"):
        scripted[name].default = permanent(f"{name} refused")
    row = make_delivery(team, "primary", fallback=["second", "third"])

    deliver_batch([row.pk])
    second = Delivery.objects.get(fallback_of=row)
    deliver_batch([second.pk])
    third = Delivery.objects.get(fallback_of=second)
    deliver_batch([third.pk])

    assert (second.destination, third.destination) == ("second", "third")
    assert statuses(row, second, third) == [DeliveryStatus.FAILED, DeliveryStatus.FAILED, DeliveryStatus.DEAD]
    assert Delivery.objects.get(pk=third.pk).last_error == "HTTP 400: third refused"
    assert not Delivery.objects.filter(fallback_of=third).exists()


def test_it_skips_a_fallback_the_trace_already_goes_to(team, primary, scripted, published):
    make_integration(team, "backup")
    make_integration(team, "last")
    scripted["primary"].outcomes = [permanent()]
    row = make_delivery(team, "primary", fallback=["backup", "last"])
    make_delivery(team, "backup", trace=row.trace)  # routed there directly too

    deliver_batch([row.pk])

    assert Delivery.objects.get(fallback_of=row).destination == "last"


def test_it_dead_letters_a_row_whose_integration_was_deleted(team, scripted, published):
    row = make_delivery(team, "vanished")

    report = deliver_batch([row.pk])

    row.refresh_from_db()
    assert report.dead == 1
    assert row.status == DeliveryStatus.DEAD
    assert "'vanished' cannot be resolved" in row.last_error
    assert "no enabled integration named or of platform 'vanished'" in row.last_error


def test_it_goes_to_the_fallback_when_the_integration_is_disabled(team, scripted, published):
    make_integration(team, "off", enabled=False)
    make_integration(team, "backup")
    row = make_delivery(team, "off", fallback=["backup"])

    deliver_batch([row.pk])

    row.refresh_from_db()
    assert row.status == DeliveryStatus.FAILED
    assert "disabled" in row.last_error
    assert Delivery.objects.get(fallback_of=row).destination == "backup"


def test_an_exporter_crash_is_a_transient_failure_not_a_stuck_row(team, primary, scripted, published):
    scripted["primary"].outcomes = [ZeroDivisionError("oops")]
    row = make_delivery(team, "primary")

    deliver_batch([row.pk])

    row.refresh_from_db()
    assert row.status == DeliveryStatus.PENDING
    assert row.last_error == "exporter error: ZeroDivisionError: oops"


def test_a_row_claimed_by_another_worker_is_not_sent_again(team, primary, scripted, published):
    row = make_delivery(team, "primary")
    token, claimed = states.claim([{"id": row.pk}])  # worker A holds it

    report = deliver_batch([row.pk])  # worker B gets the same ids

    assert [r["id"] for r in claimed] == [row.pk]
    assert report.skipped == 1
    assert scripted["primary"].calls == []
    assert statuses(row) == [DeliveryStatus.SENDING]


def test_two_claims_of_the_same_rows_never_both_win(team, primary):
    rows = [make_delivery(team, "primary") for _ in range(5)]
    ids = [r.pk for r in rows]

    _, first = states.claim([{"id": i} for i in ids])
    _, second = states.claim([{"id": i} for i in ids])

    assert len(first) == 5
    assert second == []


def test_a_worker_whose_claim_was_taken_back_does_not_overwrite_the_row(team, primary, scripted, published):
    row = make_delivery(team, "primary")
    old_token, claimed = states.claim([{"id": row.pk}])
    # The sweeper took the row back (claim expired) and another worker delivered it.
    Delivery.objects.filter(pk=row.pk).update(status=DeliveryStatus.DELIVERED, claim_token=None)

    changed = states.mine(old_token, claimed).update(status=DeliveryStatus.PENDING)

    assert changed == 0
    assert statuses(row) == [DeliveryStatus.DELIVERED]


def test_rows_with_different_routed_options_go_in_different_batches(team, primary, scripted, published):
    a, b = (
        Delivery.objects.create(
            team=team, trace=TraceFactory(team=team), destination="primary", spec={"name": "primary", "tags": [tag]}
        )
        for tag in ("a", "b")
    )

    deliver_batch([a.pk, b.pk])

    assert sorted(t.tags for t in scripted["primary"].targets) == [("a",), ("b",)]


def test_a_destination_that_cannot_be_prepared_is_retried_not_crashed(team, scripted, published):
    integration = make_integration(team, "locked")
    type(integration).objects.filter(pk=integration.pk).update(secrets="not-a-fernet-token")
    row = make_delivery(team, "locked")

    report = deliver_batch([row.pk])

    row.refresh_from_db()
    assert report.retried == 1
    assert row.status == DeliveryStatus.PENDING
    assert row.attempts == 1
    assert "cannot prepare destination 'locked': ValueError: secret cannot be decrypted" in row.last_error


def test_outcomes_are_counted_per_destination_for_metrics(team, primary, scripted, published):
    from prometheus_client import REGISTRY

    def value(outcome: str) -> float:
        return (
            REGISTRY.get_sample_value("tracerelay_deliveries_total", {"destination": "primary", "outcome": outcome})
            or 0.0
        )

    delivered, retried = value("delivered"), value("retried")
    deliver_batch([make_delivery(team, "primary").pk, make_delivery(team, "primary").pk])
    scripted["primary"].outcomes = [transient()]
    deliver_batch([make_delivery(team, "primary").pk])
    assert (value("delivered"), value("retried")) == (delivered + 2, retried + 1)
