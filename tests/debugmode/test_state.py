"""Debug mode's state: on for the chosen period, off by itself when it has passed, seen by every
process within a second, and one dict look-up per check on the hot path."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from accounts.models import AuditEvent
from debugmode import state
from debugmode.models import DebugMode
from debugmode.services import UnknownDuration, debug_mode_disable, debug_mode_enable

pytestmark = pytest.mark.django_db


def test_it_is_off_for_a_team_that_never_turned_it_on(team):
    assert state.active(team.pk) is False


@pytest.mark.parametrize(("duration", "seconds"), [("15m", 900), ("1h", 3600), ("4h", 14400), ("24h", 86400)])
def test_it_is_on_for_the_chosen_period(team, debug_on, duration, seconds):
    row = debug_on(duration)
    assert row.duration_s == seconds
    assert abs((row.until - row.changed_at).total_seconds() - seconds) < 1
    assert state.active(team.pk) is True
    assert AuditEvent.objects.filter(team=team, action="debug_mode.enable").exists()


def test_an_unknown_period_is_refused(team):
    with pytest.raises(UnknownDuration, match="15 minutes, 1 hour, 4 hours, 24 hours"):
        debug_mode_enable(team_id=team.pk, duration="7d", actor="user:test")
    assert not DebugMode.objects.filter(team=team).exists()


def test_it_switches_itself_off_when_the_time_has_passed(team, debug_on, monkeypatch):
    row = debug_on("15m")
    assert state.active(team.pk) is True
    later = row.until.timestamp() + 1
    monkeypatch.setattr(state, "wall", lambda: later)
    assert state.active(team.pk) is False  # no task ran: the check compares with the clock


def test_turning_it_off_is_seen_at_once_here(team, debug_on, django_capture_on_commit_callbacks):
    debug_on()
    assert state.active(team.pk) is True
    with django_capture_on_commit_callbacks(execute=True):
        debug_mode_disable(team_id=team.pk, actor="user:test")
    assert state.active(team.pk) is False


def test_another_process_sees_a_change_within_a_second(team, debug_on, monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(state, "clock", lambda: now[0])
    assert state.active(team.pk) is False
    # Another process turns it on: it writes the row and the shared cache, and its bus message is
    # lost (worst case). This process's copy says "off" until it rechecks.
    monkeypatch.setattr(state, "forget", lambda team_id=None: None)  # the bus callback, in this process
    debug_on()
    now[0] += 0.5
    assert state.active(team.pk) is False
    now[0] += 0.6
    assert state.active(team.pk) is True


def test_the_hot_path_asks_the_shared_cache_at_most_once_a_second(team, monkeypatch, django_assert_num_queries):
    now = [1000.0]
    monkeypatch.setattr(state, "clock", lambda: now[0])
    gets = []
    real_get = cache.get
    monkeypatch.setattr(cache, "get", lambda key, *a, **k: gets.append(key) or real_get(key, *a, **k))
    state.active(team.pk)
    with django_assert_num_queries(0):
        for _ in range(10_000):
            now[0] += 0.00005  # 10,000 checks in half a second
            assert state.active(team.pk) is False
    assert gets == [state.cache_key(team.pk)]
