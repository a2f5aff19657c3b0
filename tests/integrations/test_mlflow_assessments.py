"""Scores as MLflow 3 feedback assessments, against a REAL `mlflow server` on loopback: the trace goes
in over OTLP, the scores as assessments, and MLflow's own read API gives them back (value, source,
rationale, on the span our trace became). A re-send of the same score is not a second assessment."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from integrations.exporters import ids
from integrations.exporters.base import ExportError
from tests.e2e.processes import MLFLOW_BIN, MlflowServer
from tests.fakes import FakeServer, Reply
from traces.records import ScoreRecord

from .conftest import make_exporter, make_record

pytestmark = pytest.mark.e2e

TRACE = "trc_mlflow_scores_1"


@pytest.fixture(scope="module")
def mlflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MlflowServer]:
    if not MLFLOW_BIN.exists():
        pytest.fail(f"{MLFLOW_BIN} is missing: bin/test installs mlflow into its own venv")
    server = MlflowServer(Path(tmp_path_factory.mktemp("mlflow")))
    server.start()
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def _experiment(mlflow: MlflowServer) -> str:
    name = f"tracerelay-scores-{uuid.uuid4().hex[:8]}"
    response = httpx.post(f"{mlflow.url}/api/2.0/mlflow/experiments/create", json={"name": name}, timeout=30)
    response.raise_for_status()
    return str(response.json()["experiment_id"])


def _assessments(mlflow: MlflowServer, trace_id: str) -> list[dict[str, Any]]:
    response = httpx.get(f"{mlflow.url}/api/3.0/mlflow/traces/{trace_id}", timeout=10)
    response.raise_for_status()
    return response.json()["trace"]["trace_info"].get("assessments", [])


def score(name: str, value: Any, data_type: str, *, source: str = "human", comment: str = "", sid: str) -> ScoreRecord:
    return ScoreRecord(
        score_id=sid,
        team_id=7,
        trace_id=TRACE,
        run_id=TRACE,
        name=name,
        value=value,
        data_type=data_type,
        comment=comment,
        source=source,
        created_at=datetime(2026, 11, 27, 12, 0, tzinfo=UTC),
    )


def test_scores_land_as_assessments_on_the_trace_and_a_resend_is_not_a_second(mlflow, http) -> None:
    experiment = _experiment(mlflow)
    exporter = make_exporter("mlflow", {"host": mlflow.url, "experimentId": experiment}, http, timeout_s=60)
    assert not exporter.export([make_record(trace_id=TRACE)])
    trace_id = "tr-" + ids.otel_trace_id(7, TRACE).hex()
    scores = [
        score("helpfulness", 0.8, "numeric", comment="right, a bit long", sid="s-1"),
        score("thumbs", False, "boolean", source="api", sid="s-2"),
        score("topic", "billing", "categorical", source="llm_judge", sid="s-3"),
    ]

    exporter.export_scores(scores)
    exporter.export_scores(scores[:2])  # a re-send (a lost answer): the same ids, nothing doubled

    found = {a["assessment_name"]: a for a in _assessments(mlflow, trace_id)}
    assert len(_assessments(mlflow, trace_id)) == 3
    span_hex = ids.otel_span_id(7, TRACE).hex()
    assert {a["span_id"] for a in found.values()} == {span_hex}
    assert found["helpfulness"]["feedback"]["value"] == 0.8
    assert found["helpfulness"]["rationale"] == "right, a bit long"
    assert found["helpfulness"]["source"] == {"source_type": "HUMAN", "source_id": "human"}
    assert found["thumbs"]["feedback"]["value"] is False
    assert found["thumbs"]["source"]["source_type"] == "CODE"
    assert found["topic"]["feedback"]["value"] == "billing"
    assert found["topic"]["source"]["source_type"] == "LLM_JUDGE"
    assert found["topic"]["metadata"]["tracerelay.score_id"] == "s-3"
    # One read by id, as MLflow's client does it.
    one = httpx.get(
        f"{mlflow.url}/api/3.0/mlflow/traces/{trace_id}/assessments/{found['thumbs']['assessment_id']}", timeout=10
    )
    assert one.status_code == 200 and one.json()["assessment"]["assessment_name"] == "thumbs"


def test_a_refusal_is_raised_unless_the_assessment_is_stored_already(http) -> None:
    """MLflow answers a duplicate assessment id with a 500: a read of that id tells a re-send of a
    stored score (delivered) from a real failure (raised as it came, retryable)."""
    stored = Reply(200, {"assessment": {"assessment_id": "a-1"}})
    missing = Reply(404, {"error_code": "RESOURCE_DOES_NOT_EXIST"})
    duplicate = Reply(500, {"error_code": "INTERNAL_ERROR", "message": "constraint violation"})
    with FakeServer() as server:
        exporter = make_exporter("mlflow", {"host": server.url, "experimentId": "1"}, http)
        server.queue(duplicate, stored)
        exporter.export_scores([score("q", 1, "numeric", sid="s-dup")])
        server.queue(duplicate, missing)
        with pytest.raises(ExportError) as caught:
            exporter.export_scores([score("q", 1, "numeric", sid="s-new")])
    assert caught.value.status_code == 500 and not caught.value.permanent
    posted = server.requests[0]
    assert posted.method == "POST" and posted.path.endswith("/assessments")
    assert server.requests[1].method == "GET"
    assert server.requests[1].path == f"{posted.path}/{posted.json()['assessment']['assessment_id']}"
