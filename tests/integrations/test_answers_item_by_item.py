"""Each exporter reads its destination's answer item by item: a batch partly refused returns the
refused items (with the destination's reason), the others count as delivered. Against the fakes,
which check the wire format of every request."""

from __future__ import annotations

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from integrations.exporters.base import ExportError
from tests.fakes import FakeDatadog, FakeLangfuse, FakeLangSmith, Reply

from .conftest import make_error_record, make_exporter, make_record


def partial(rejected: int, message: str) -> Reply:
    response = ExportTraceServiceResponse()
    response.partial_success.rejected_spans = rejected
    response.partial_success.error_message = message
    return Reply(200, response.SerializeToString(), {"Content-Type": "application/x-protobuf"})


def test_langfuse_partly_refusing_a_batch_refuses_only_the_spans_it_refuses_alone(http) -> None:
    records = [make_record(trace_id=f"trc_lf_{n}") for n in range(3)]
    with FakeLangfuse(public_key="pk-lf-1", secret_key="sk-lf-1") as server:
        # The batch: 1 of 3 refused; then each span alone: the second is the one.
        server.queue(partial(1, "batch partly refused"), Reply(200), partial(1, "input too large"), Reply(200))
        exporter = make_exporter("langfuse", {"publicKey": "pk-lf-1", "secretKey": "sk-lf-1", "host": server.url}, http)

        refused = exporter.export(records)

    assert server.problems == []
    assert len(server.requests) == 4
    assert list(refused or {}) == [1]
    assert refused[1].permanent and "input too large" in refused[1].message


def test_a_generic_collector_partly_refusing_a_batch_takes_it_with_a_warning(http) -> None:
    from tests.fakes import FakeOtlpCollector

    with FakeOtlpCollector() as server:
        server.queue(partial(1, "span too large"))
        exporter = make_exporter("otlp", {"endpoint": server.url}, http)
        refused = exporter.export([make_record(), make_error_record()])
        assert not refused
        assert exporter.warning is not None
        assert "rejected 1 of the 2 spans of this batch without saying which" in exporter.warning
        assert exporter.warning.endswith(": span too large")
        exporter.export([make_record()])
        assert exporter.warning is None  # the next batch starts clean
    assert len(server.requests) == 2  # no re-send: a collector may store a span twice


def test_a_collector_rejecting_every_span_fails_the_batch_for_good_with_its_message(http) -> None:
    from tests.fakes import FakeOtlpCollector

    with FakeOtlpCollector() as server:
        server.queue(partial(2, "tenant over its span limit"))
        exporter = make_exporter("otlp", {"endpoint": server.url}, http)
        with pytest.raises(ExportError, match="rejected 2 of 2 spans: tenant over its span limit") as caught:
            exporter.export([make_record(), make_error_record()])
    assert caught.value.permanent and exporter.warning is None
    assert len(server.requests) == 1


def test_a_json_partial_success_is_read_the_same_way(http) -> None:
    from tests.fakes import FakeOtlpCollector

    with FakeOtlpCollector() as server:
        server.queue(Reply(200, {"partialSuccess": {"rejectedSpans": "1", "errorMessage": "bad attribute"}}))
        exporter = make_exporter("otlp", {"endpoint": server.url}, http)
        assert not exporter.export([make_record(), make_error_record()])
    assert exporter.warning is not None and exporter.warning.endswith(": bad attribute")


def test_langsmith_409_on_a_batch_is_resolved_run_by_run(http) -> None:
    old, new = make_record(trace_id="trc_stored"), make_record(trace_id="trc_new")
    with FakeLangSmith() as server:
        exporter = make_exporter("langsmith", {"apiKey": "lsv2-test", "endpoint": server.url}, http)
        exporter.export([old])  # stored before

        refused = exporter.export([old, new])  # LangSmith refuses the whole batch: one run exists

    assert server.problems == []
    assert len(server.requests) == 4  # the first batch, the batch again (409), then each run alone
    assert not refused
    assert len(server.runs) == 2  # the new run got through, sent alone


def test_langsmith_refusing_one_run_alone_refuses_that_run_with_its_reason(http) -> None:
    old, new = make_record(trace_id="trc_stored"), make_record(trace_id="trc_new")
    with FakeLangSmith() as server:
        exporter = make_exporter("langsmith", {"apiKey": "lsv2-test", "endpoint": server.url}, http)
        exporter.export([old])
        server.queue(Reply(409, {"detail": "Run already exists"}), Reply(409), Reply(422, {"detail": "bad run"}))

        refused = exporter.export([old, new])

    assert list(refused or {}) == [1]
    assert refused[1].permanent and "bad run" in refused[1].message


def test_langsmith_error_body_on_a_2xx_fails_the_batch(http) -> None:
    with FakeLangSmith() as server:
        server.queue(Reply(200, {"errors": ["project is archived"]}))
        exporter = make_exporter("langsmith", {"apiKey": "lsv2-test", "endpoint": server.url}, http)

        with pytest.raises(ExportError, match="project is archived") as caught:
            exporter.export([make_record()])

    assert caught.value.permanent is False


def test_datadog_refuses_only_the_chunk_it_refused(http, monkeypatch) -> None:
    from integrations.exporters import datadog

    monkeypatch.setattr(datadog, "PAYLOAD_LIMIT", 1)  # one span per request
    records = [make_record(trace_id=f"trc_dd_{n}") for n in range(3)]
    with FakeDatadog() as server:
        server.queue(Reply(202, b""), Reply(400, {"errors": ["span too large"]}))
        exporter = make_exporter("datadog", {"apiKey": "dd-test-key", "mlApp": "app", "endpoint": server.url}, http)

        refused = exporter.export(records)

    assert server.problems == []
    assert len(server.requests) == 3 and len(server.spans) == 1  # the third went through the fake's checks
    assert list(refused or {}) == [1]
    assert refused[1].permanent and "span too large" in refused[1].message


def test_datadog_errors_in_a_2xx_body_fail_the_whole_batch(http) -> None:
    with FakeDatadog() as server:
        server.queue(Reply(202, {"errors": ["ml_app is not allowed"]}))
        exporter = make_exporter("datadog", {"apiKey": "dd-test-key", "mlApp": "app", "endpoint": server.url}, http)

        with pytest.raises(ExportError, match="ml_app is not allowed"):
            exporter.export([make_record()])
