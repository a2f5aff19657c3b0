"""The feed's score filter: a score name (the team's, in a select) with a value or a min/max makes the
API's `score.<name>` filter in the URL, parsed by the feed's own parser; a URL carrying one fills the
fields; a bad one is an error next to its field."""

from __future__ import annotations

import re

import pytest

from ..factories import TraceFactory, score_of

pytestmark = pytest.mark.django_db


def _ids(response) -> list[str]:
    return re.findall(r"open trace ([^<]+)</span>", response.content.decode())


@pytest.fixture
def scored(team, other_team):
    def score(trace_id, name, value, team=team):
        score_of(TraceFactory(team=team, trace_id=trace_id), name, value)

    score("low", "helpful", 0.2)
    score("high", "helpful", 0.9)
    score("up", "thumbs", True)
    score("billing", "topic", "billing")
    score("theirs", "secret_metric", 1, team=other_team)
    TraceFactory(team=team, trace_id="unscored")


def test_the_select_lists_the_teams_score_names(as_role, scored):
    page = as_role("viewer").get("/traces").content.decode()
    select = re.search(r'<select name="score_name"[^>]*>(.*?)</select>', page, re.S)[1]
    assert re.findall(r'<option value="([^"]*)"', select) == ["", "helpful", "thumbs", "topic"]


def test_min_and_max_make_the_apis_filter_in_a_clean_url(as_role, scored):
    client = as_role("viewer")
    r = client.get("/traces", {"score_name": "helpful", "score_min": "0.5", "score_max": "", "score_value": ""})
    assert r.status_code == 302 and r["Location"] == "/traces?score.helpful.min=0.5"
    r = client.get(r["Location"])
    assert _ids(r) == ["high"]
    form = r.context["form"]
    assert form["score_name"].value() == "helpful" and form["score_min"].value() == "0.5"
    assert 'option value="helpful" selected' in r.content.decode()


@pytest.mark.parametrize(("name", "value", "shown"), [("thumbs", "true", ["up"]), ("topic", "billing", ["billing"])])
def test_a_value_matches_a_boolean_or_a_category(as_role, scored, name, value, shown):
    r = as_role("viewer").get(
        "/traces", {"score_name": name, "score_value": value}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="feed-page"
    )
    assert r["HX-Push-Url"] == f"/traces?score.{name}={value}"
    assert _ids(r) == shown


def test_the_form_replaces_the_urls_score_of_that_name(as_role, scored):
    r = as_role("viewer").get("/traces?score.helpful.min=0.5&score_name=helpful&score_max=0.5&score_value=")
    assert r.status_code == 302 and r["Location"] == "/traces?score.helpful.max=0.5"


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("score_name=helpful&score_min=lots", "score_min"),
        ("score_name=helpful", "score_value"),
        ("score_min=0.5", "score_name"),
        ("score_name=has%20space&score_value=1", "score_value"),
    ],
)
def test_a_bad_score_filter_is_an_error_next_to_its_field(as_role, scored, query, field):
    r = as_role("viewer").get(f"/traces?{query}")
    assert r.status_code == 400, r.content[:300]
    assert r.context["form"].errors[field]
