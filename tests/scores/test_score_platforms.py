"""Scores routed to Weave, MLflow and OTLP integrations through the scores' outbox (`route_scores` →
`send_scores`), against the fakes that check each wire format: the integration's
``config.score_mappings`` renames a score there or withholds it, as for every other platform."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from delivery import engine, scores
from delivery.models import DeliveryStatus, ScoreDelivery, ScoreStatus
from delivery.scores import route_scores, send_scores
from tests.delivery.scripted import make_delivery, make_integration
from tests.fakes import FakeMlflow, FakeOtlpCollector, FakeServer, FakeWeave
from traces.models import Score

pytestmark = pytest.mark.django_db

MAPPINGS = {"thumbs": "user_feedback", "internal": None}


@pytest.fixture(autouse=True)
def _isolated(settings, monkeypatch):
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["KEY_PREFIX"] = f"tr-test-score-platforms-{uuid.uuid4().hex[:12]}"
    settings.CACHES = caches
    engine.forget_resolved()
    monkeypatch.setattr(scores, "publish", lambda ids, *, countdown=None: True)
    yield
    engine.forget_resolved()


def _weave() -> tuple[FakeServer, Callable[[str], dict[str, Any]], Callable[[Any], dict[str, Any]]]:
    server = FakeWeave(api_key="wandb-key", project_id="team/proj")
    return (
        server,
        lambda url: {"apiKey": "wandb-key", "entity": "team", "project": "proj", "host": url},
        lambda s: {f["feedback_type"]: f["payload"]["value"] for f in s.feedback.values()},
    )


def _mlflow() -> tuple[FakeServer, Callable[[str], dict[str, Any]], Callable[[Any], dict[str, Any]]]:
    server = FakeMlflow(experiments=("3",))
    return (
        server,
        lambda url: {"host": url, "experimentId": "3"},
        lambda s: {a["assessment_name"]: a["feedback"]["value"] for a in s.assessments.values()},
    )


def _otlp() -> tuple[FakeServer, Callable[[str], dict[str, Any]], Callable[[Any], dict[str, Any]]]:
    server = FakeOtlpCollector()
    return (
        server,
        lambda url: {"endpoint": f"{url}/v1/traces"},
        lambda s: {log.attributes["tracerelay.score.name"]: log.attributes["tracerelay.score.value"] for log in s.logs},
    )


@pytest.fixture(params=["weave", "mlflow", "otlp"])
def destination(request) -> Iterator[tuple[str, FakeServer, Callable[[str], dict[str, Any]], Callable]]:
    server, config, received = {"weave": _weave, "mlflow": _mlflow, "otlp": _otlp}[request.param]()
    with server:
        yield request.param, server, config, received


def test_scores_reach_the_platform_renamed_or_withheld_by_score_mappings(team, destination) -> None:
    platform, server, config, received = destination
    make_integration(team, "dest", platform=platform, config={**config(server.url), "score_mappings": MAPPINGS})
    row = make_delivery(team, "dest", status=DeliveryStatus.DELIVERED)
    posted = (("thumbs", True, "boolean"), ("internal", 0.2, "numeric"), ("topic", "x", "categorical"))
    made = [
        Score.objects.create(team=team, trace=row.trace, name=name, value=value, data_type=kind, source="human")
        for name, value, kind in posted
    ]

    ids = route_scores([s.pk for s in made])
    report = send_scores(ids)

    assert server.problems == []
    assert (report.delivered, report.withheld, report.dead) == (2, 1, 0)
    assert received(server) == {"user_feedback": True, "topic": "x"}
    statuses = {d.score.name: (d.status, d.sent_name) for d in ScoreDelivery.objects.select_related("score")}
    assert statuses == {
        "thumbs": (ScoreStatus.DELIVERED, "user_feedback"),
        "internal": (ScoreStatus.WITHHELD, ""),
        "topic": (ScoreStatus.DELIVERED, "topic"),
    }
    assert send_scores(ids).skipped == 3  # nothing is sent twice
