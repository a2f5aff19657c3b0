"""/analytics: the "Score: <name>" chart, chosen from the team's numeric score names, drawn from the
API's `score` answer; the score filter narrows the figures like the feed's."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from traces.models import Score, ScoreType

from ..factories import TraceFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def scored(team, other_team):
    now = timezone.now() - timedelta(hours=2)

    def score(name, value, team=team, data_type=ScoreType.NUMERIC):
        trace = TraceFactory(team=team, timestamp=now)
        number = None if data_type == ScoreType.CATEGORICAL else float(value)
        Score.objects.create(team=team, trace=trace, name=name, value=value, number=number, data_type=data_type)

    score("helpful", 0.25)
    score("helpful", 0.75)
    score("thumbs", True, data_type=ScoreType.BOOLEAN)
    score("topic", "billing", data_type=ScoreType.CATEGORICAL)
    score("secret", 1, team=other_team)


def _options(page: str, name: str) -> list[str]:
    select = re.search(rf'<select name="{name}"[^>]*>(.*?)</select>', page, re.S)[1]
    return re.findall(r'<option value="([^"]*)"', select)


def test_the_selector_lists_numeric_scores_and_no_chart_by_default(as_role, scored):
    page = as_role("viewer").get("/analytics").content.decode()
    assert _options(page, "score") == ["", "helpful", "thumbs"]
    assert _options(page, "score_name") == ["", "helpful", "thumbs", "topic"]
    assert 'id="chart-score"' not in page


def test_choosing_a_score_draws_its_average(as_role, scored):
    r = as_role("viewer").get("/analytics", {"time_range": "24h", "interval": "hour", "score": "helpful"})
    assert r.status_code == 200
    page = r.content.decode()
    chart = page[page.index('id="chart-score"') :]
    chart = chart[: chart.index("</section>")]
    assert "Score: helpful" in chart and "Average per interval of 2 scores (overall 0.5)" in chart
    assert "average 0.5" in html.unescape(chart)  # the interval's column title
    # the chart's links open the feed without the chart's own parameter
    assert not any("score=" in h for h in re.findall(r'href="([^"]+)"', chart))


def test_an_empty_score_says_so(as_role, scored):
    page = as_role("viewer").get("/analytics", {"score": "topic"}).content.decode()
    assert "No scores of this name on the traces in this range" in page


def test_the_score_filter_narrows_the_figures(as_role, scored):
    r = as_role("viewer").get("/analytics", {"score.helpful.min": "0.5", "time_range": "24h"})
    assert r.status_code == 200
    assert r.context["totals"]["count"] == 1


def test_a_bad_score_name_is_an_error_not_a_500(as_role, scored):
    r = as_role("viewer").get("/analytics", {"score": "has space"})
    assert r.status_code == 400
