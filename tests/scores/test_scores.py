"""Scores: the API's shapes and refusals, and scores following their trace to a webhook (the real
exporter against the checking receiver on loopback), whether the trace was delivered before or after."""

from __future__ import annotations

import copy
import uuid

import pytest

from delivery import engine, outbox
from delivery.engine import deliver_batch
from delivery.models import DeliveryStatus, ScoreDelivery, ScoreStatus
from delivery.scores import send_scores
from tests.delivery.scripted import make_delivery, make_integration
from tests.e2e.sink import WebhookSink
from tests.factories import TraceFactory
from traces.models import Score

pytestmark = pytest.mark.django_db

SECRET = "whsec_0123456789abcdef"


@pytest.fixture(autouse=True)
def _isolated(settings, monkeypatch):
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["KEY_PREFIX"] = f"tr-test-scores-{uuid.uuid4().hex[:12]}"
    settings.CACHES = caches
    engine.forget_resolved()
    monkeypatch.setattr(outbox, "publish", lambda ids, *, countdown=None: True)
    yield
    engine.forget_resolved()


@pytest.fixture
def sink():
    with WebhookSink(secret=SECRET) as server:
        yield server


@pytest.fixture
def hook(team, sink):
    return make_integration(team, "hook", config={"url": sink.url, "headers": {}, "secret": SECRET}, timeout_s=2)


def post_score(api, trace_id, body, capture):
    with capture(execute=True):
        return api.post(f"/api/v1/traces/{trace_id}/scores", body, format="json")


@pytest.mark.parametrize(
    ("value", "data_type"),
    [(0.8, "numeric"), (3, "numeric"), (True, "boolean"), (False, "boolean"), ("relevant", "categorical")],
)
def test_a_score_is_stored_with_the_type_of_its_value(api, team, value, data_type, django_capture_on_commit_callbacks):
    trace = TraceFactory(team=team)
    r = post_score(
        api, trace.trace_id, {"name": "quality", "value": value, "comment": "ok"}, django_capture_on_commit_callbacks
    )
    assert r.status_code == 201, r.content
    body = r.json()
    assert set(body) == {"id", "trace_id", "name", "value", "data_type", "comment", "source", "created_at"}
    assert body["trace_id"] == trace.trace_id and body["name"] == "quality" and body["value"] == value
    assert type(body["value"]) is type(value)
    assert body["data_type"] == data_type and body["comment"] == "ok" and body["source"] == "api"

    listed = api.get(f"/api/v1/traces/{trace.trace_id}/scores").json()
    assert listed == [body]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"value": 1}, "name"),
        ({"name": "q"}, "value"),
        ({"name": "q", "value": None}, "value"),
        ({"name": "q", "value": [1]}, "value"),
        ({"name": "q", "value": {"a": 1}}, "value"),
        ({"name": "q", "value": ""}, "value"),
        ({"name": "has space", "value": 1}, "name"),
        ({"name": "q", "value": 1, "comment": 5}, "comment"),
        ({"name": "q", "value": 1, "source": ""}, "source"),
        ({"name": "q", "value": 1, "extra": 1}, "extra"),
    ],
)
def test_a_bad_score_is_a_problem_naming_the_field(api, team, body, field, django_capture_on_commit_callbacks):
    trace = TraceFactory(team=team)
    r = post_score(api, trace.trace_id, body, django_capture_on_commit_callbacks)
    assert r.status_code == 400
    assert r["Content-Type"] == "application/problem+json"
    assert field in r.json()["errors"]
    assert not Score.objects.exists()


def test_a_body_that_is_not_an_object_is_refused(api, team, django_capture_on_commit_callbacks):
    trace = TraceFactory(team=team)
    r = post_score(api, trace.trace_id, [1], django_capture_on_commit_callbacks)
    assert r.status_code == 400 and r["Content-Type"] == "application/problem+json"


def test_another_teams_trace_is_a_404(api, other_team, django_capture_on_commit_callbacks):
    trace = TraceFactory(team=other_team)
    r = post_score(api, trace.trace_id, {"name": "q", "value": 1}, django_capture_on_commit_callbacks)
    assert r.status_code == 404
    assert api.get(f"/api/v1/traces/{trace.trace_id}/scores").status_code == 404


def test_a_score_goes_to_the_webhook_that_received_its_trace(
    api, team, hook, sink, published, django_capture_on_commit_callbacks
):
    row = make_delivery(team, "hook")
    assert deliver_batch([row.pk]).delivered == 1
    r = post_score(
        api,
        row.trace.trace_id,
        {"name": "thumbs", "value": True, "comment": "nice"},
        django_capture_on_commit_callbacks,
    )
    assert r.status_code == 201

    assert len(published) == 1
    report = send_scores(published[0])

    assert report.delivered == 1
    assert sink.errors == []
    score = sink.scores[r.json()["id"]]
    assert score == {
        **{k: r.json()[k] for k in ("id", "trace_id", "name", "value", "data_type", "comment", "source")},
        "run_id": row.trace.run_id,
        "created_at": score["created_at"],
    }
    assert ScoreDelivery.objects.get().status == ScoreStatus.DELIVERED


def test_a_score_follows_a_trace_delivered_later(api, team, hook, sink, published, django_capture_on_commit_callbacks):
    row = make_delivery(team, "hook")
    r = post_score(api, row.trace.trace_id, {"name": "accuracy", "value": 0.5}, django_capture_on_commit_callbacks)
    assert r.status_code == 201
    assert published == [[]] or published == []  # nothing has the trace yet
    assert not ScoreDelivery.objects.exists()

    with django_capture_on_commit_callbacks(execute=True):
        deliver_batch([row.pk])

    assert row.trace.trace_id in sink.stored
    assert len(published) >= 1
    send_scores(published[-1])
    assert sink.scores[r.json()["id"]]["value"] == 0.5
    assert sink.scores[r.json()["id"]]["trace_id"] == row.trace.trace_id
    assert sink.errors == []


def test_score_mappings_rename_and_withhold(api, team, sink, published, django_capture_on_commit_callbacks):
    make_integration(
        team,
        "hook",
        config={
            "url": sink.url,
            "headers": {},
            "secret": SECRET,
            "score_mappings": {"thumbs": "user_feedback", "internal": None},
        },
    )
    row = make_delivery(team, "hook")
    deliver_batch([row.pk])
    for name in ("thumbs", "internal", "other"):
        assert (
            post_score(
                api, row.trace.trace_id, {"name": name, "value": 1}, django_capture_on_commit_callbacks
            ).status_code
            == 201
        )

    send_scores([i for ids in published for i in ids])

    assert sorted(s["name"] for s in sink.scores.values()) == ["other", "user_feedback"]
    statuses = {d.score.name: (d.status, d.sent_name) for d in ScoreDelivery.objects.select_related("score")}
    assert statuses == {
        "thumbs": (ScoreStatus.DELIVERED, "user_feedback"),
        "internal": (ScoreStatus.WITHHELD, ""),
        "other": (ScoreStatus.DELIVERED, "other"),
    }


def test_a_refused_score_is_retried_then_delivered_once(
    api, team, hook, sink, published, django_capture_on_commit_callbacks
):
    row = make_delivery(team, "hook")
    deliver_batch([row.pk])
    r = post_score(api, row.trace.trace_id, {"name": "q", "value": "good"}, django_capture_on_commit_callbacks)
    sink.answer(503)

    first = send_scores(published[-1])
    assert first.retried == 1 and sink.scores == {}
    ScoreDelivery.objects.update(next_attempt_at=ScoreDelivery.objects.get().created_at)  # due now
    second = send_scores(published[-1])

    assert second.delivered == 1
    assert sink.score_sends[r.json()["id"]] == 1
    assert send_scores(published[-1]).skipped == 1  # delivered rows are never sent again


def test_a_trace_not_delivered_there_gets_no_score(
    api, team, hook, sink, published, django_capture_on_commit_callbacks
):
    row = make_delivery(team, "hook", status=DeliveryStatus.DEAD)
    post_score(api, row.trace.trace_id, {"name": "q", "value": 1}, django_capture_on_commit_callbacks)
    assert not ScoreDelivery.objects.exists()


@pytest.mark.parametrize(
    "mappings",
    [["thumbs"], {"thumbs": 5}, {"has space": "x"}, {"thumbs": ""}],
)
def test_the_integration_api_refuses_bad_score_mappings(api, mappings):
    config = {"url": "http://127.0.0.1:9/h", "headers": {}, "score_mappings": mappings}
    r = api.post("/api/v1/integrations", {"name": "h", "platform": "webhook", "config": config}, format="json")
    assert r.status_code == 400 and r["Content-Type"] == "application/problem+json"
    assert "config.score_mappings" in r.json()["errors"], r.json()


def test_the_integration_api_keeps_score_mappings(api):
    config = {"url": "http://127.0.0.1:9/h", "headers": {}, "score_mappings": {"thumbs": "fb", "x": None}}
    r = api.post("/api/v1/integrations", {"name": "h", "platform": "webhook", "config": config}, format="json")
    assert r.status_code == 201, r.content
    assert r.json()["config"]["score_mappings"] == {"thumbs": "fb", "x": None}


def test_the_feed_filters_by_score(api, team, django_capture_on_commit_callbacks):
    good, bad, categorical, none = (TraceFactory(team=team) for _ in range(4))
    for trace, name, value in (
        (good, "helpfulness", 0.9),
        (bad, "helpfulness", 0.2),
        (good, "thumbs", True),
        (bad, "thumbs", False),
        (categorical, "topic", "billing"),
    ):
        post_score(api, trace.trace_id, {"name": name, "value": value}, django_capture_on_commit_callbacks)

    def ids(query):
        r = api.get("/api/v1/traces?" + query)
        assert r.status_code == 200, r.content
        return {t["id"] for t in r.json()["data"]}

    assert ids("score.helpfulness.min=0.5") == {good.trace_id}
    assert ids("score.helpfulness.max=0.5") == {bad.trace_id}
    assert ids("score.helpfulness=0.2") == {bad.trace_id}
    assert ids("score.thumbs=true") == {good.trace_id}
    assert ids("score.thumbs.max=0") == {bad.trace_id}
    assert ids("score.topic=billing") == {categorical.trace_id}
    assert none.trace_id not in ids("score.helpfulness.min=0")
    for bad_query in ("score.helpfulness.min=high", "score.=1", "score.thumbs="):
        r = api.get("/api/v1/traces?" + bad_query)
        assert r.status_code == 400 and r["Content-Type"] == "application/problem+json", bad_query


def test_a_null_source_and_comment_are_the_defaults(api, team):
    trace = TraceFactory(team=team, trace_id="trc-null-source")
    r = api.post(
        "/api/v1/traces/trc-null-source/scores",
        {"name": "thumbs", "value": True, "source": None, "comment": None},
        format="json",
    )
    assert r.status_code == 201, r.content
    assert (r.json()["source"], r.json()["comment"], r.json()["trace_id"]) == ("api", "", trace.trace_id)
