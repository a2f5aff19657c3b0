"""Scores on runs (`POST`/`GET /api/v1/runs/{run_id}/scores`): a run's score goes on its root span and
is routed like it; the list holds every span's scores, each naming its span."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from delivery import outbox, scores
from traces.models import Score

from ..factories import TraceFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_broker(monkeypatch):
    monkeypatch.setattr(outbox, "publish", lambda ids, *, countdown=None: True)
    monkeypatch.setattr(scores, "publish", lambda ids, *, countdown=None: True)


@pytest.fixture
def run(team):
    now = timezone.now()
    root = TraceFactory(team=team, run_id="run-checkout-1", trace_id="span-root", kind="chain", timestamp=now)
    child = TraceFactory(
        team=team, run_id="run-checkout-1", trace_id="span-llm", parent_id="span-root", timestamp=now + timedelta(1)
    )
    return root, child


def post(api, run_id, body, capture):
    with capture(execute=True):
        return api.post(f"/api/v1/runs/{run_id}/scores", body, format="json")


def test_a_run_score_goes_on_its_root_span(api, run, django_capture_on_commit_callbacks):
    root, _child = run
    r = post(api, "run-checkout-1", {"name": "helpful", "value": 0.75}, django_capture_on_commit_callbacks)
    assert r.status_code == 201, r.content
    body = r.json()
    assert set(body) == {"id", "trace_id", "name", "value", "data_type", "comment", "source", "created_at"}
    assert body["trace_id"] == "span-root" and body["value"] == 0.75 and body["data_type"] == "numeric"
    score = Score.objects.get()
    assert score.trace_id == root.pk and score.number == 0.75
    # the trace's own list has it too: it is the root span's score
    assert [s["id"] for s in api.get("/api/v1/traces/span-root/scores").json()] == [body["id"]]


def test_the_run_list_holds_every_spans_scores(api, run, django_capture_on_commit_callbacks):
    on_run = post(api, "run-checkout-1", {"name": "thumbs", "value": True}, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        on_span = api.post("/api/v1/traces/span-llm/scores", {"name": "tone", "value": "polite"}, format="json")
    assert on_run.status_code == on_span.status_code == 201
    listed = api.get("/api/v1/runs/run-checkout-1/scores")
    assert listed.status_code == 200
    assert [(s["trace_id"], s["name"], s["value"]) for s in listed.json()] == [
        ("span-root", "thumbs", True),
        ("span-llm", "tone", "polite"),
    ]


def test_a_run_of_its_own_is_scored_on_its_span(api, team, django_capture_on_commit_callbacks):
    trace = TraceFactory(team=team)
    r = post(api, trace.trace_id, {"name": "q", "value": 1}, django_capture_on_commit_callbacks)
    assert r.status_code == 201 and r.json()["trace_id"] == trace.trace_id
    assert [s["name"] for s in api.get(f"/api/v1/runs/{trace.trace_id}/scores").json()] == ["q"]


def test_an_unknown_or_other_teams_run_is_a_404(api, other_team, django_capture_on_commit_callbacks):
    theirs = TraceFactory(team=other_team, run_id="their-run")
    for run_id in ("no-such-run", theirs.run_id):
        r = post(api, run_id, {"name": "q", "value": 1}, django_capture_on_commit_callbacks)
        assert r.status_code == 404 and r["Content-Type"] == "application/problem+json"
        assert api.get(f"/api/v1/runs/{run_id}/scores").status_code == 404
    assert not Score.objects.exists()


def test_a_bad_body_is_answered_before_the_404(api, django_capture_on_commit_callbacks):
    r = post(api, "no-such-run", {"name": "has space", "value": 1}, django_capture_on_commit_callbacks)
    assert r.status_code == 400 and r.json()["type"].endswith("/invalid-score")
    assert "name" in r.json()["errors"]
    r = post(api, "no-such-run", {"name": "q", "value": None}, django_capture_on_commit_callbacks)
    assert r.status_code == 400 and "value" in r.json()["errors"]


def test_a_run_whose_root_has_not_arrived_is_a_409(api, team, django_capture_on_commit_callbacks):
    TraceFactory(team=team, run_id="run-orphan", trace_id="child-only", parent_id="root-later")
    r = post(api, "run-orphan", {"name": "q", "value": 1}, django_capture_on_commit_callbacks)
    assert r.status_code == 409 and r.json()["type"].endswith("/run-without-root")
    assert not Score.objects.exists()
    assert api.get("/api/v1/runs/run-orphan/scores").json() == []
