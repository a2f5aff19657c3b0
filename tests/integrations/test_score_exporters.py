"""Scores in each destination's own terms, against the fakes that check the wire format: Langfuse
scores (`POST /api/public/scores`), LangSmith feedback (`POST /feedback`), Weave feedback
(`POST /feedback/create`), MLflow assessments and OTLP log records, on the ids the trace got there;
the webhook's `score` event is tested end to end in tests/scores, MLflow against a real server in
test_mlflow_assessments.py."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from integrations.exporters import ids
from integrations.exporters.base import ExportError
from tests.fakes import (
    FakeDatadog,
    FakeHelicone,
    FakeLangfuse,
    FakeLangSmith,
    FakeMlflow,
    FakeOtlpCollector,
    FakePhoenix,
    FakeWeave,
)
from tests.fakes.server import Reply
from traces.records import ScoreRecord

from .conftest import make_exporter, make_record


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


def test_weave_gets_feedback_on_the_call_its_span_became(http) -> None:
    named = [*SCORES, score("wandb.reaction.1", 1, "numeric", score_id="s4")]
    with FakeWeave(api_key="wandb-key", project_id="team/proj") as server:
        exporter = make_exporter("weave", {"apiKey": "wandb-key", "projectId": "team/proj", "host": server.url}, http)
        exporter.export_scores(named)
        exporter.export_scores(named[:1])  # a re-send: the same feedback id
    assert server.problems == []
    assert len(server.feedback) == 4
    call_id = ids.otel_span_id(7, "trc_0190a1b2c3d4e5f6").hex()
    assert {f["weave_ref"] for f in server.feedback.values()} == {f"weave:///team/proj/call/{call_id}"}
    by_type = {f["feedback_type"]: f for f in server.feedback.values()}
    assert by_type["helpfulness"]["payload"] == {
        "value": 0.8,
        "data_type": "numeric",
        "source": "human",
        "tracerelay_score_id": "s1",
        "comment": "good",
    }
    assert by_type["thumbs"]["payload"]["value"] is False and "comment" not in by_type["thumbs"]["payload"]
    assert by_type["topic"]["payload"]["value"] == "billing"
    # A name in Weave's own namespace is not read as a Weave reaction.
    assert "tracerelay.wandb.reaction.1" in by_type
    assert by_type["helpfulness"]["creator"] == "tracerelay (human)"


def test_weave_refusing_feedback_is_an_export_error_with_its_reason(http) -> None:
    with FakeWeave() as server:
        server.queue(Reply(400, {"reason": "Feedback payload too large"}))
        exporter = make_exporter("weave", {"apiKey": "wandb-key", "projectId": "team/proj", "host": server.url}, http)
        with pytest.raises(ExportError, match="payload too large") as caught:
            exporter.export_scores(SCORES[:1])
    assert caught.value.permanent


def test_mlflow_gets_feedback_assessments_on_the_trace_and_span(http) -> None:
    with FakeMlflow(experiments=("12",)) as server:
        exporter = make_exporter("mlflow", {"host": server.url, "experimentId": "12"}, http)
        exporter.export_scores(SCORES)
        exporter.export_scores(SCORES)  # MLflow's 500 on a duplicate id, then a read: stored, delivered
    assert server.problems == []
    assert len(server.assessments) == 3
    trace_id = "tr-" + ids.otel_trace_id(7, "trc_0190a1b2c3d4e5f6").hex()
    by_name = {a["assessment_name"]: a for a in server.assessments.values()}
    assert {a["trace_id"] for a in by_name.values()} == {trace_id}
    assert {a["span_id"] for a in by_name.values()} == {ids.otel_span_id(7, "trc_0190a1b2c3d4e5f6").hex()}
    assert by_name["helpfulness"]["feedback"] == {"value": 0.8}
    assert by_name["helpfulness"]["rationale"] == "good"
    assert by_name["helpfulness"]["source"] == {"source_type": "HUMAN", "source_id": "human"}
    assert by_name["thumbs"]["feedback"] == {"value": False} and "rationale" not in by_name["thumbs"]
    assert by_name["topic"]["metadata"]["tracerelay.data_type"] == "categorical"


def test_otlp_gets_scores_as_log_records_on_the_span_it_received(http) -> None:
    with FakeOtlpCollector() as server:
        exporter = make_exporter("otlp", {"endpoint": f"{server.url}/v1/traces"}, http)
        exporter.export([make_record()])
        exporter.export_scores(SCORES)
    assert server.problems == []
    assert [r.path for r in server.requests] == ["/v1/traces", "/v1/logs"]
    span = server.spans[0]
    assert len(server.logs) == 3
    assert {(log.trace_id, log.span_id) for log in server.logs} == {(span.trace_id, span.span_id)}
    assert {log.event_name for log in server.logs} == {"tracerelay.score"}
    assert {log.severity_text for log in server.logs} == {"INFO"}
    by_name = {log.attributes["tracerelay.score.name"]: log.attributes for log in server.logs}
    assert by_name["helpfulness"] == {
        "tracerelay.score.id": "s1",
        "tracerelay.score.name": "helpfulness",
        "tracerelay.score.value": 0.8,
        "tracerelay.score.data_type": "numeric",
        "tracerelay.score.comment": "good",
        "tracerelay.score.source": "human",
        "tracerelay.trace_id": "trc_0190a1b2c3d4e5f6",
    }
    assert by_name["thumbs"]["tracerelay.score.value"] is False and "tracerelay.score.comment" not in by_name["thumbs"]
    assert by_name["topic"]["tracerelay.score.value"] == "billing"


@pytest.mark.parametrize(
    ("endpoint", "logs"),
    [("/v1/traces", "/v1/logs"), ("", "/v1/logs"), ("/otel/v1/traces", "/otel/v1/logs"), ("/ingest", None)],
)
def test_the_otlp_logs_url_sits_beside_the_traces_url(http, endpoint, logs) -> None:
    exporter = make_exporter("otlp", {"endpoint": f"http://127.0.0.1:4318{endpoint}"}, http)
    assert exporter.logs_url() == (f"http://127.0.0.1:4318{logs}" if logs else None)


def test_otlp_without_a_logs_url_refuses_scores_for_good(http) -> None:
    exporter = make_exporter("otlp", {"endpoint": "http://127.0.0.1:9/ingest"}, http)
    with pytest.raises(ExportError, match="logs URL is unknown") as caught:
        exporter.export_scores(SCORES)
    assert caught.value.permanent


def test_otlp_log_records_rejected_by_the_collector_fail_with_its_message(http) -> None:
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse

    answer = ExportLogsServiceResponse()
    answer.partial_success.rejected_log_records = 2
    answer.partial_success.error_message = "logs pipeline disabled"
    with FakeOtlpCollector() as server:
        server.queue(Reply(200, answer.SerializeToString(), {"Content-Type": "application/x-protobuf"}))
        exporter = make_exporter("otlp", {"endpoint": server.url}, http)
        with pytest.raises(ExportError, match="rejected 2 of 3 score log records: logs pipeline disabled") as caught:
            exporter.export_scores(SCORES)
    assert caught.value.permanent


def test_helicone_gets_integer_and_boolean_scores_on_the_request_it_logged(http) -> None:
    with FakeHelicone(api_key="sk-helicone-test") as server:
        config = {"apiKey": "sk-helicone-test", "endpoint": server.url, "apiUrl": server.url}
        exporter = make_exporter("helicone", config, http)
        exporter.export([make_record(trace_id="trc_0190a1b2c3d4e5f6", team_id=7)])
        for one in (*SCORES[:2], score("stars", 4, "numeric", score_id="s4")):
            exporter.export_scores([one])
        exporter.export_scores([score("stars", 4, "numeric", score_id="s4")])  # a re-send overwrites
    assert server.problems == []
    request_id = str(ids.run_uuid(7, "trc_0190a1b2c3d4e5f6"))
    assert list(server.logs) == [request_id]
    assert server.scores == {request_id: {"helpfulness": 1, "thumbs": False, "stars": 4}}
    scored = [r for r in server.requests if r.path.endswith("/score")]
    assert {r.header("authorization") for r in scored} == {"Bearer sk-helicone-test"}
    assert scored[0].json() == {"scores": {"helpfulness": 1}}


def test_helicone_rounds_a_fractional_score_and_warns(http) -> None:
    with FakeHelicone() as server:
        exporter = make_exporter("helicone", {"apiKey": "sk-helicone-test", "apiUrl": server.url}, http)
        exporter.export_scores([score("helpfulness", 2.5, "numeric")])
        assert exporter.warning == "Helicone takes integer scores: 'helpfulness' 2.5 was sent as 3"
        exporter.export_scores([score("stars", 3.0, "numeric")])
        assert exporter.warning is None
    assert server.problems == []
    assert server.scores[str(ids.run_uuid(7, "trc_0190a1b2c3d4e5f6"))] == {"helpfulness": 3, "stars": 3}


@pytest.mark.parametrize(
    ("value", "data_type", "reason"),
    [
        ("billing", "categorical", "numbers and booleans only"),
        (float("nan"), "numeric", "not finite"),
        (1e300, "numeric", "64-bit"),
    ],
)
def test_helicone_refuses_what_it_cannot_store_for_good_without_sending(http, value, data_type, reason) -> None:
    with FakeHelicone() as server:
        exporter = make_exporter("helicone", {"apiKey": "sk-helicone-test", "apiUrl": server.url}, http)
        with pytest.raises(ExportError, match=reason) as caught:
            exporter.export_scores([score("topic", value, data_type)])
    assert caught.value.permanent
    assert server.requests == []


def test_helicone_refuses_a_score_on_a_span_it_never_logged(http) -> None:
    from dataclasses import replace

    with FakeHelicone() as server:
        exporter = make_exporter("helicone", {"apiKey": "sk-helicone-test", "apiUrl": server.url}, http)
        with pytest.raises(ExportError, match="span of kind 'tool'") as caught:
            exporter.export_scores([replace(score("stars", 4, "numeric"), trace_kind="tool")])
        exporter.export_scores([replace(score("stars", 4, "numeric"), trace_kind="embedding")])
    assert caught.value.permanent
    assert [r.path for r in server.requests] == [f"/v1/request/{ids.run_uuid(7, 'trc_0190a1b2c3d4e5f6')}/score"]


def test_helicone_refusing_a_score_is_a_permanent_error_with_its_reason(http) -> None:
    with FakeHelicone() as server:
        server.queue(Reply(400, {"data": None, "error": "Invalid score value for stars"}))
        exporter = make_exporter("helicone", {"apiKey": "sk-helicone-test", "apiUrl": server.url}, http)
        with pytest.raises(ExportError, match="Invalid score value for stars") as caught:
            exporter.export_scores([score("stars", 4, "numeric")])
    assert caught.value.permanent and caught.value.status_code == 400


def test_helicone_answering_200_with_an_error_is_a_retryable_failure(http) -> None:
    with FakeHelicone() as server:
        server.queue(Reply(200, {"data": None, "error": "Error adding scores: timeout"}))
        exporter = make_exporter("helicone", {"apiKey": "sk-helicone-test", "apiUrl": server.url}, http)
        with pytest.raises(ExportError, match="did not store the score: Error adding scores") as caught:
            exporter.export_scores([score("stars", 4, "numeric")])
    assert not caught.value.permanent


def test_every_platform_takes_scores() -> None:
    from integrations.registry import PLATFORMS, exporter_class

    assert [p for p in PLATFORMS if not exporter_class(p).supports_scores] == []
