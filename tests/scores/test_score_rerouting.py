"""The sweeper routes again a score whose routing on commit was lost (a crash between the two): the
score has no row for a destination its trace was delivered to. Bounded per pass, never twice."""

from __future__ import annotations

import copy
import secrets
import uuid
from datetime import datetime, timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone

from delivery.models import DeliveryStatus, ScoreDelivery
from delivery.scores import REROUTE_MARK, reroute_scores, route_scores, sweep_scores
from tests.delivery.scripted import make_delivery
from traces.models import Score

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _isolated(settings):
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["KEY_PREFIX"] = f"tr-test-reroute-{uuid.uuid4().hex[:12]}"
    settings.CACHES = caches
    settings.TRACERELAY_OUTBOX_SWEEP_GRACE_S = 30.0


def lost_score(trace, *, at: datetime, name: str = "q") -> Score:
    """A score stored at ``at`` whose routing on commit never ran (Score.objects.create does not route)."""
    pk = uuid.UUID(int=(int(at.timestamp() * 1000) << 80) | secrets.randbits(80))
    return Score.objects.create(
        id=pk, team_id=trace.team_id, trace=trace, name=name, value=1, data_type="numeric", created_at=at
    )


def later(seconds: float) -> datetime:
    return timezone.now() + timedelta(seconds=seconds)


def test_a_score_whose_routing_was_lost_is_routed_by_the_sweeper_once(
    team, published, django_capture_on_commit_callbacks
) -> None:
    hook = make_delivery(team, "hook", status=DeliveryStatus.DELIVERED)
    make_delivery(team, "other", trace=hook.trace, status=DeliveryStatus.DELIVERED)
    score = lost_score(hook.trace, at=timezone.now())

    assert reroute_scores(now=later(5)) == 0  # younger than the grace: the routing on commit goes first
    with django_capture_on_commit_callbacks(execute=True):
        assert reroute_scores(now=later(31)) == 1

    rows = ScoreDelivery.objects.filter(score=score)
    assert sorted(rows.values_list("destination", flat=True)) == ["hook", "other"]
    assert sorted(published[-1]) == sorted(rows.values_list("pk", flat=True))
    cache.delete(REROUTE_MARK)  # even looking back the whole hour again: nothing left to route
    assert reroute_scores(now=later(32)) == 0
    sweep_scores(now=later(33))
    assert rows.count() == 2


def test_a_routed_score_and_an_undelivered_trace_are_left_alone(team, published) -> None:
    delivered = make_delivery(team, "hook", status=DeliveryStatus.DELIVERED)
    routed = lost_score(delivered.trace, at=timezone.now())
    route_scores([routed.pk])
    dead = make_delivery(team, "hook", status=DeliveryStatus.DEAD)
    pending = make_delivery(team, "hook")
    for row in (dead, pending):
        lost_score(row.trace, at=timezone.now())
    before = ScoreDelivery.objects.count()

    assert reroute_scores(now=later(31)) == 0
    assert ScoreDelivery.objects.count() == before == 1


def test_only_a_missing_destination_gets_a_row(team, published) -> None:
    first = make_delivery(team, "hook", status=DeliveryStatus.DELIVERED)
    score = lost_score(first.trace, at=timezone.now())
    route_scores([score.pk])  # routed when only "hook" had the trace ...
    make_delivery(team, "late", trace=first.trace, status=DeliveryStatus.DELIVERED)  # ... a follow was lost

    assert reroute_scores(now=later(31)) == 1
    assert sorted(ScoreDelivery.objects.values_list("destination", flat=True)) == ["hook", "late"]


def test_a_pass_is_bounded_and_the_next_one_carries_on(team, published) -> None:
    now = timezone.now()
    for n in range(3):
        row = make_delivery(team, "hook", status=DeliveryStatus.DELIVERED)
        lost_score(row.trace, at=now - timedelta(seconds=n))

    assert reroute_scores(now=later(31), limit=2) == 2
    assert reroute_scores(now=later(32), limit=2) == 1
    assert ScoreDelivery.objects.count() == 3


def test_the_lookback_is_an_hour_and_a_pass_starts_where_the_last_stopped(team, published) -> None:
    now = timezone.now()
    old = make_delivery(team, "hook", status=DeliveryStatus.DELIVERED)
    lost_score(old.trace, at=now - timedelta(hours=2))
    missed = make_delivery(team, "hook", status=DeliveryStatus.DELIVERED)
    lost_score(missed.trace, at=now - timedelta(minutes=10))

    assert reroute_scores(now=now) == 1  # the score of ten minutes ago; the one of two hours ago is too old
    assert ScoreDelivery.objects.get().delivery_id == missed.pk
    assert cache.get(REROUTE_MARK) == pytest.approx((now - timedelta(seconds=30)).timestamp())

    # A score stored before the mark (less a grace) is not looked at again: the pass is short.
    again = make_delivery(team, "hook", status=DeliveryStatus.DELIVERED)
    lost_score(again.trace, at=now - timedelta(minutes=5))
    assert reroute_scores(now=now + timedelta(seconds=30)) == 0
    cache.delete(REROUTE_MARK)  # the cache forgot: the whole hour again
    assert reroute_scores(now=now + timedelta(seconds=60)) == 1
