"""Scores routed to a Helicone integration through the scores' outbox (`route_scores` →
`send_scores`), against the fake Helicone that checks jawn's ``AddScores`` (Bearer key, a UUID
request id, ``{"scores": {name: integer | boolean}}``): on the request id the log was sent with,
renamed or withheld by ``config.score_mappings``, a categorical score dead with the reason, a
non-integer rounded with a warning, a 4xx dead-lettered with Helicone's reason, a 5xx retried."""

from __future__ import annotations

import copy
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from delivery import engine, scores
from delivery.models import DeliveryStatus, ScoreDelivery, ScoreStatus
from delivery.scores import route_scores, send_scores
from integrations.exporters import ids
from tests.delivery.scripted import make_delivery, make_integration
from tests.factories import TraceFactory
from tests.fakes import FakeHelicone
from tests.fakes.server import Reply
from traces.models import Score

pytestmark = pytest.mark.django_db

KEY = "sk-helicone-test"


@pytest.fixture(autouse=True)
def _isolated(settings, monkeypatch):
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["KEY_PREFIX"] = f"tr-test-helicone-scores-{uuid.uuid4().hex[:12]}"
    settings.CACHES = caches
    engine.forget_resolved()
    monkeypatch.setattr(scores, "publish", lambda ids, *, countdown=None: True)
    yield
    engine.forget_resolved()


@pytest.fixture
def helicone():
    with FakeHelicone(api_key=KEY) as server:
        yield server


def _delivered_trace(team, server, **config):
    make_integration(
        team, "hc", platform="helicone", config={"apiKey": KEY, "endpoint": server.url, "apiUrl": server.url, **config}
    )
    return make_delivery(team, "hc", status=DeliveryStatus.DELIVERED)


def _post(team, row, *posted):
    made = [
        Score.objects.create(team=team, trace=row.trace, name=name, value=value, data_type=kind, source="human")
        for name, value, kind in posted
    ]
    return route_scores([s.pk for s in made])


def _rows():
    return {d.score.name: d for d in ScoreDelivery.objects.select_related("score")}


def test_scores_reach_helicone_on_the_logged_request_renamed_withheld_or_refused(team, helicone) -> None:
    row = _delivered_trace(team, helicone, score_mappings={"thumbs": "helicone-score-feedback", "internal": None})
    sent = _post(
        team,
        row,
        ("thumbs", True, "boolean"),
        ("internal", 0.2, "numeric"),
        ("stars", 4, "numeric"),
        ("topic", "billing", "categorical"),
    )

    report = send_scores(sent)

    assert helicone.problems == []
    assert (report.delivered, report.withheld, report.dead) == (2, 1, 1)
    request_id = str(ids.run_uuid(team.pk, row.trace.trace_id))
    assert helicone.scores == {request_id: {"helicone-score-feedback": True, "stars": 4}}
    rows = _rows()
    assert (rows["thumbs"].status, rows["thumbs"].sent_name) == (ScoreStatus.DELIVERED, "helicone-score-feedback")
    assert (rows["stars"].status, rows["stars"].last_error) == (ScoreStatus.DELIVERED, "")
    assert rows["internal"].status == ScoreStatus.WITHHELD
    assert rows["topic"].status == ScoreStatus.DEAD
    assert "numbers and booleans only" in rows["topic"].last_error and "'billing'" in rows["topic"].last_error
    assert send_scores(sent).skipped == 4  # nothing is sent twice


def test_a_fractional_score_is_rounded_and_the_delivery_says_so(team, helicone) -> None:
    row = _delivered_trace(team, helicone)
    sent = _post(team, row, ("helpfulness", 0.5, "numeric"), ("loss", -2.5, "numeric"), ("ok", 0.25, "numeric"))

    report = send_scores(sent)

    assert helicone.problems == []
    assert report.delivered == 3
    request_id = str(ids.run_uuid(team.pk, row.trace.trace_id))
    assert helicone.scores[request_id] == {"helpfulness": 1, "loss": -3, "ok": 0}
    rows = _rows()
    assert rows["helpfulness"].status == ScoreStatus.DELIVERED
    assert rows["helpfulness"].last_error == (
        "delivered with a warning: Helicone takes integer scores: 'helpfulness' 0.5 was sent as 1"
    )


def test_a_refusal_is_dead_with_helicones_reason(team, helicone) -> None:
    row = _delivered_trace(team, helicone)
    helicone.queue(Reply(400, {"data": None, "error": "Request not found for scoring"}))
    sent = _post(team, row, ("stars", 4, "numeric"))

    report = send_scores(sent)

    assert (report.delivered, report.dead, report.retried) == (0, 1, 0)
    dead = _rows()["stars"]
    assert dead.status == ScoreStatus.DEAD and dead.attempts == 1
    assert "HTTP 400" in dead.last_error and "Request not found for scoring" in dead.last_error
    assert helicone.scores == {}


def test_a_wrong_key_is_dead_with_the_401(team, helicone) -> None:
    make_integration(
        team, "hc", platform="helicone", config={"apiKey": "sk-wrong", "endpoint": helicone.url, "apiUrl": helicone.url}
    )
    row = make_delivery(team, "hc", status=DeliveryStatus.DELIVERED)
    report = send_scores(_post(team, row, ("stars", 4, "numeric")))
    assert report.dead == 1
    assert "HTTP 401" in _rows()["stars"].last_error


@pytest.mark.parametrize(
    "failure",
    [
        Reply(503, "upstream unavailable"),
        Reply(500, {"data": None, "error": "Error adding scores: kafka down"}),
        Reply(200, {"data": None, "error": "Error adding scores: kafka down"}),
    ],
    ids=["503", "500", "200-with-error"],
)
def test_a_server_failure_is_retried_then_delivered(team, helicone, failure) -> None:
    row = _delivered_trace(team, helicone)
    helicone.queue(failure)
    sent = _post(team, row, ("stars", 4, "numeric"))

    first = send_scores(sent)

    assert (first.delivered, first.retried, first.dead) == (0, 1, 0)
    waiting = _rows()["stars"]
    assert waiting.status == ScoreStatus.PENDING and waiting.attempts == 1
    assert waiting.last_error
    assert helicone.scores == {}

    ScoreDelivery.objects.filter(pk=waiting.pk).update(next_attempt_at=timezone.now() - timedelta(seconds=1))
    second = send_scores(sent)

    assert second.delivered == 1
    done = _rows()["stars"]
    assert (done.status, done.attempts, done.last_error) == (ScoreStatus.DELIVERED, 2, "")
    assert helicone.scores == {str(ids.run_uuid(team.pk, row.trace.trace_id)): {"stars": 4}}


def test_a_score_on_a_structural_span_is_dead_without_a_request(team, helicone) -> None:
    make_integration(
        team, "hc", platform="helicone", config={"apiKey": KEY, "endpoint": helicone.url, "apiUrl": helicone.url}
    )
    agent = TraceFactory(team=team, kind="agent")
    row = make_delivery(team, "hc", trace=agent, status=DeliveryStatus.DELIVERED)

    report = send_scores(_post(team, row, ("stars", 4, "numeric")))

    assert report.dead == 1
    assert "is on a span of kind 'agent', which Helicone never received" in _rows()["stars"].last_error
    assert [r for r in helicone.requests if r.path.endswith("/score")] == []
