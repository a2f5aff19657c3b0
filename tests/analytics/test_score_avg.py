"""`GET /api/v1/analytics?score=<name>`: a numeric score's average and count over the range and per
interval, on the traces the feed's filters select, from the Score table."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from traces.scores import score_names

from ..factories import TraceFactory, score_of

pytestmark = pytest.mark.django_db
URL = "/api/v1/analytics"
DAY = datetime(2026, 11, 20, tzinfo=UTC)


def scored(team, when, name, value, **trace):
    t = TraceFactory(team=team, timestamp=when, **trace)
    score_of(t, name, value)
    return t


@pytest.fixture
def scores(team, other_team):
    scored(team, DAY + timedelta(hours=1, minutes=5), "helpful", 0.2, model="gpt-4o")
    scored(team, DAY + timedelta(hours=1, minutes=40), "helpful", 0.6, model="gpt-4o-mini")
    scored(team, DAY + timedelta(hours=3, minutes=1), "helpful", 1.0, model="gpt-4o")
    scored(team, DAY + timedelta(hours=3, minutes=2), "topic", "billing")  # categorical: no number
    scored(team, DAY + timedelta(hours=2), "thumbs", True)
    scored(team, DAY + timedelta(hours=2, minutes=1), "thumbs", False)
    scored(team, DAY + timedelta(hours=5), "helpful", 0.0)  # outside the range
    scored(other_team, DAY + timedelta(hours=1), "helpful", 0.9)  # another team's


def ask(api, **params):
    base = {"since": "2026-11-20T01:00:00Z", "until": "2026-11-20T04:00:00Z", "interval": "hour"}
    r = api.get(URL, {**base, **params})
    assert r.status_code == 200, r.content
    return r.json()


def test_the_average_and_count_per_interval(api, scores):
    body = ask(api, score="helpful")["score"]
    assert body["name"] == "helpful" and body["count"] == 3
    assert body["avg"] == pytest.approx(0.6)
    assert [(p["t"], p["count"], p["avg"] and round(p["avg"], 6)) for p in body["series"]] == [
        ("2026-11-20T01:00:00Z", 2, 0.4),
        ("2026-11-20T02:00:00Z", 0, None),
        ("2026-11-20T03:00:00Z", 1, 1.0),
    ]


def test_the_feed_filters_select_the_traces(api, scores):
    body = ask(api, score="helpful", model="gpt-4o")["score"]
    assert body["count"] == 2 and body["avg"] == pytest.approx(0.6)
    assert ask(api, score="helpful", model="claude*")["score"]["count"] == 0
    both = ask(api, score="helpful", **{"score.helpful.min": "0.5"})["score"]
    assert both["count"] == 2 and both["avg"] == pytest.approx(0.8)


def test_a_boolean_averages_as_the_share_of_true_and_a_category_is_not_counted(api, scores):
    assert ask(api, score="thumbs")["score"]["avg"] == pytest.approx(0.5)
    topic = ask(api, score="topic")["score"]
    assert topic["count"] == 0 and topic["avg"] is None


def test_days_in_a_time_zone_bucket_like_the_other_series(api, team):
    scored(team, datetime(2026, 11, 20, 23, 30, tzinfo=UTC), "helpful", 1.0)  # Nov 21 in Paris
    scored(team, datetime(2026, 11, 20, 22, 30, tzinfo=UTC), "helpful", 0.0)  # Nov 20 in Paris
    paris = {"since": "2026-11-19T23:00:00Z", "until": "2026-11-21T23:00:00Z", "interval": "day", "tz": "Europe/Paris"}
    body = ask(api, score="helpful", **paris)
    assert [p["t"] for p in body["series"]] == [p["t"] for p in body["score"]["series"]]
    assert [(p["count"], p["avg"]) for p in body["score"]["series"]] == [(1, 0.0), (1, 1.0)]


@pytest.mark.parametrize("bad", ["has space", "x" * 201, "a/b", ""])
def test_a_bad_score_name_is_a_400_naming_it(api, bad):
    r = api.get(URL, {"score": bad})
    assert r.status_code == 400 and r.json()["parameter"] == "score"


def test_score_names_lists_the_teams_numeric_ones(team, scores):
    assert score_names(team.pk, numeric=True) == ["helpful", "thumbs"]


def test_a_score_filter_narrows_the_totals_too(api, scores):
    """The rollups know no scores: a `score.<name>` filter is counted from the raw traces."""
    body = ask(api, **{"score.helpful.min": "0.5"})
    assert body["source"] == "raw" and body["totals"]["count"] == 2  # 0.6 and 1.0
    assert ask(api)["totals"]["count"] == 6
