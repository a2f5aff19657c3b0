"""Score widgets: `metric` score_avg or score_count with `score` naming the score: the analytics API's
`score` answer, over the range (a number) or per interval (a line, bars, a table); checked like the
other fields; `score` in a widget's JSON only when it has one."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from dashboards.answers import widget_answer
from dashboards.cards import card
from dashboards.definition import check_widget
from traces.models import Score, ScoreType

from ..factories import TraceFactory

pytestmark = pytest.mark.django_db
URL = "/api/v1/dashboards"


@pytest.fixture
def scored(team):
    now = timezone.now() - timedelta(minutes=30)
    for value in (0.2, 0.4, 0.9):
        trace = TraceFactory(team=team, timestamp=now)
        Score.objects.create(
            team=team, trace=trace, name="helpful", value=value, number=value, data_type=ScoreType.NUMERIC
        )


def widget(**fields):
    return check_widget(
        {"title": "Helpfulness", "metric": "score_avg", "score": "helpful", "chart": "number", **fields}
    )


def test_a_number_is_the_scores_average_over_the_range(api, team, scored):
    answer = widget_answer(team_id=team.pk, widget=widget())
    api_score = api.get("/api/v1/analytics", {"time_range": "24h", "score": "helpful"}).json()["score"]
    assert answer.error == "" and answer.value == pytest.approx(0.5) == pytest.approx(api_score["avg"])
    assert answer.count == 3
    shown = card(answer)
    assert shown["value"] == "0.5" and shown["metric_label"] == "Score average: helpful"


def test_a_line_is_the_score_per_interval(team, scored):
    answer = widget_answer(team_id=team.pk, widget=widget(metric="score_count", chart="line", interval="hour"))
    assert sum(v or 0 for _t, v in answer.points) == 3 and len(answer.points) >= 24
    assert "<svg" in str(card(answer)["svg"])


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"score": None}, "score"),
        ({"score": "has space"}, "score"),
        ({"metric": "count", "score": "helpful"}, "score"),
        ({"chart": "bar", "group_by": "model"}, "group_by"),
    ],
)
def test_a_bad_score_widget_names_the_field(api, fields, field):
    body = {"title": "H", "metric": "score_avg", "score": "helpful", "chart": "number", **fields}
    r = api.post(URL, {"name": "Scores", "widgets": [body]}, format="json")
    assert r.status_code == 400, r.content
    assert f"widgets[0].{field}" in r.json()["errors"]


def test_the_api_keeps_score_only_on_score_widgets(api):
    widgets = [
        {"title": "H", "metric": "score_avg", "score": "helpful", "chart": "line"},
        {"title": "Calls", "metric": "count", "chart": "number"},
    ]
    r = api.post(URL, {"name": "Scores", "widgets": widgets}, format="json")
    assert r.status_code == 201, r.content
    got = r.json()["widgets"]
    assert got[0]["score"] == "helpful" and got[0]["metric"] == "score_avg"
    assert "score" not in got[1]
    assert api.get(f"{URL}/{r.json()['id']}").json()["widgets"] == got
