"""Retention deletes what is old (traces with their deliveries, rollups) and nothing else."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from analytics import rollups
from analytics.models import DayRollup, HourRollup, MinuteRollup, Retention
from analytics.retention import retention_enforce
from delivery.models import Delivery, RunRoute
from traces.models import Trace

from ..factories import TraceFactory

pytestmark = pytest.mark.django_db


def _trace(team, age: timedelta, *, delivered: bool = False) -> Trace:
    trace = TraceFactory(team=team, timestamp=timezone.now() - age)
    if delivered:
        Delivery.objects.create(team=team, trace=trace, destination="langfuse", status="delivered")
    return trace


def test_it_deletes_only_traces_older_than_the_teams_retention(team, other_team, settings):
    settings.TRACERELAY_RETENTION_TRACE_DAYS = 30
    Retention.objects.create(team=other_team, trace_days=7)
    old = _trace(team, timedelta(days=31), delivered=True)
    kept = _trace(team, timedelta(days=29), delivered=True)
    other_old = _trace(other_team, timedelta(days=8), delivered=True)
    other_kept = _trace(other_team, timedelta(days=6))
    report = retention_enforce(batch=1)
    assert report.traces == 2
    assert set(Trace.objects.values_list("pk", flat=True)) == {kept.pk, other_kept.pk}
    assert list(Delivery.objects.values_list("trace_id", flat=True)) == [kept.pk]
    assert not Trace.objects.filter(pk__in=[old.pk, other_old.pk]).exists()


def test_it_deletes_the_destinations_of_runs_nothing_was_stored_in_since(team, settings):
    settings.TRACERELAY_RETENTION_TRACE_DAYS = 30
    now = timezone.now()
    RunRoute.objects.create(team=team, run_id="old", destinations={"hook": {}}, updated_at=now - timedelta(days=31))
    RunRoute.objects.create(team=team, run_id="live", destinations={"hook": {}}, updated_at=now - timedelta(days=29))
    retention_enforce()
    assert list(RunRoute.objects.values_list("run_id", flat=True)) == ["live"]


def test_it_deletes_old_rollups_and_keeps_the_rest(team, settings):
    settings.TRACERELAY_RETENTION_ROLLUP_DAYS = 100
    settings.TRACERELAY_RETENTION_MINUTE_HOURS = 48
    for age in (timedelta(days=101), timedelta(days=50), timedelta(hours=50), timedelta(hours=1)):
        _trace(team, age)
    rollups.fold()
    now = timezone.now()
    minute_floor = int((now - timedelta(hours=48)).timestamp())
    rollup_floor = int((now - timedelta(days=100)).timestamp())
    hours_before = HourRollup.objects.count()
    report = retention_enforce(now=now, batch=3)
    assert report.rollups > 0
    assert MinuteRollup.objects.exists()
    assert not MinuteRollup.objects.filter(bucket__lt=minute_floor).exists()
    assert not HourRollup.objects.filter(bucket__lt=rollup_floor).exists()
    assert not DayRollup.objects.filter(bucket__lt=rollup_floor - 86400).exists()
    assert HourRollup.objects.filter(bucket__lt=minute_floor).exists()  # hours outlive minutes
    assert HourRollup.objects.count() < hours_before
    # The 50-day-old trace is still counted by the hour and day rollups (its raw row is gone).
    assert Trace.objects.count() == 2


def test_a_team_may_keep_rollups_longer(team, settings):
    settings.TRACERELAY_RETENTION_ROLLUP_DAYS = 30
    Retention.objects.create(team=team, rollup_days=365)
    _trace(team, timedelta(days=200))
    rollups.fold()
    retention_enforce()
    assert DayRollup.objects.filter(team=team).exists()
    assert Trace.objects.count() == 0  # raw traces: the default 30 days
