"""Scores in each destination's own terms, against the fakes that check the wire format: Langfuse
scores (`POST /api/public/scores`) and LangSmith feedback (`POST /feedback`), on the ids the trace
got there; the webhook's `score` event is tested end to end in tests/scores."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from integrations.exporters import ids
from tests.fakes import FakeDatadog, FakeLangfuse, FakeLangSmith, FakePhoenix
from traces.records import ScoreRecord

from .conftest import make_exporter


def score(name: str, value, data_type: str, comment: str = "", score_id: str = "0193-a") -> ScoreRecord:
    return ScoreRecord(
        score_id=score_id,
        team_id=7,
        trace_id="trc_0190a1b2c3d4e5f6",
        run_id="trc_0190a1b2c3d4e5f6",
        name=name,
        value=value,
        data_type=data_type,
        comment=comment,
        source="human",
        created_at=datetime.now(UTC),
    )


SCORES = [
    score("helpfulness", 0.8, "numeric", "good", score_id="s1"),
    score("thumbs", False, "boolean", score_id="s2"),
    score("topic", "billing", "categorical", score_id="s3"),
]


def test_langfuse_gets_scores_on_the_trace_and_observation_it_received(http) -> None:
    with FakeLangfuse() as server:
        config = {"publicKey": "pk-lf-test", "secretKey": "sk-lf-test", "host": server.url}
        exporter = make_exporter("langfuse", config, http)
        exporter.export_scores(SCORES)
        exporter.export_scores(SCORES[:1])  # a re-send: the same id, the same score
    assert server.problems == []
    assert len(server.scores) == 3
    by_name = {s["name"]: s for s in server.scores.values()}
    trace_hex = ids.otel_trace_id(7, "trc_0190a1b2c3d4e5f6").hex()
    span_hex = ids.otel_span_id(7, "trc_0190a1b2c3d4e5f6").hex()
    assert all(s["traceId"] == trace_hex and s["observationId"] == span_hex for s in server.scores.values())
    assert (by_name["helpfulness"]["value"], by_name["helpfulness"]["dataType"]) == (0.8, "NUMERIC")
    assert by_name["helpfulness"]["comment"] == "good"
    assert (by_name["thumbs"]["value"], by_name["thumbs"]["dataType"]) == (0, "BOOLEAN")
    assert (by_name["topic"]["value"], by_name["topic"]["dataType"]) == ("billing", "CATEGORICAL")


def test_langsmith_gets_feedback_on_the_run_and_a_resend_is_not_a_duplicate(http) -> None:
    with FakeLangSmith(api_key="lsv2-key") as server:
        config = {"apiKey": "lsv2-key", "projectId": "shop", "endpoint": server.url}
        exporter = make_exporter("langsmith", config, http)
        exporter.export_scores(SCORES)
        exporter.export_scores(SCORES)  # 409s: already stored, not an error
    assert server.problems == []
    assert len(server.feedback) == 3
    run_id = str(ids.run_uuid(7, "trc_0190a1b2c3d4e5f6"))
    by_key = {f["key"]: f for f in server.feedback.values()}
    assert all(f["run_id"] == run_id for f in server.feedback.values())
    assert by_key["helpfulness"]["score"] == 0.8 and by_key["helpfulness"]["comment"] == "good"
    assert by_key["thumbs"]["score"] == 0
    assert by_key["topic"]["value"] == "billing" and "score" not in by_key["topic"]


def test_datadog_gets_evaluations_joined_to_the_span_it_received(http) -> None:
    named = [*SCORES, score("user.rating:v2", 4, "numeric", score_id="s4")]
    with FakeDatadog(api_key="dd-key") as server:
        config = {"apiKey": "dd-key", "mlApp": "shop", "endpoint": server.url}
        make_exporter("datadog", config, http).export_scores(named)
    assert server.problems == []
    assert server.requests[0].header("dd-api-key") == "dd-key"
    by_label = {m["label"]: m for m in server.evaluations}
    span_id = str(int.from_bytes(ids.otel_span_id(7, "trc_0190a1b2c3d4e5f6"), "big"))
    assert all(m["join_on"]["span"]["span_id"] == span_id and m["ml_app"] == "shop" for m in server.evaluations)
    assert by_label["helpfulness"]["score_value"] == 0.8 and by_label["helpfulness"]["reasoning"] == "good"
    assert by_label["thumbs"]["boolean_value"] is False and by_label["thumbs"]["metric_type"] == "boolean"
    assert by_label["topic"]["categorical_value"] == "billing"
    assert by_label["user_rating_v2"]["score_value"] == 4


def test_phoenix_gets_span_annotations_on_the_span_it_received(http) -> None:
    with FakePhoenix(api_key="px-key") as server:
        config = {"host": server.url, "apiKey": "px-key"}
        exporter = make_exporter("phoenix", config, http)
        exporter.export_scores(SCORES)
        exporter.export_scores(SCORES)  # the same identifiers: updated, not doubled
    assert server.problems == []
    assert len(server.annotations) == 3
    span_hex = ids.otel_span_id(7, "trc_0190a1b2c3d4e5f6").hex()
    by_name = {a["name"]: a for a in server.annotations.values()}
    assert all(a["span_id"] == span_hex and a["annotator_kind"] == "HUMAN" for a in server.annotations.values())
    assert by_name["helpfulness"]["result"] == {"score": 0.8, "explanation": "good"}
    assert by_name["thumbs"]["result"] == {"label": "false", "score": 0}
    assert by_name["topic"]["result"] == {"label": "billing"}


@pytest.mark.parametrize("platform", ["helicone"])
def test_a_platform_without_scores_says_so(platform) -> None:
    from integrations.registry import exporter_class

    assert exporter_class(platform).supports_scores is False
