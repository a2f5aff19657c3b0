"""The OTLP-family exporters (generic OTLP, Phoenix, MLflow, Langfuse, Weave) against fake
receivers that decode what arrives with opentelemetry-proto's ExportTraceServiceRequest."""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Callable
from typing import Any

import pytest

from integrations.exporters import ids
from integrations.exporters.base import ExportError
from tests.fakes import (
    FakeLangfuse,
    FakeMlflow,
    FakeOtlpCollector,
    FakePhoenix,
    FakeServer,
    FakeWeave,
    Reply,
)

from .conftest import make_error_record, make_exporter, make_record

Setup = Callable[[], tuple[FakeServer, str, Callable[[str], dict[str, Any]]]]

FAMILY: dict[str, Setup] = {
    "otlp": lambda: (
        FakeOtlpCollector(required_headers={"x-api-key": "collector-secret"}),
        "otlp",
        lambda url: {"endpoint": url, "headers": {"x-api-key": "collector-secret"}},
    ),
    "phoenix": lambda: (
        FakePhoenix(api_key="px-key"),
        "phoenix",
        lambda url: {"host": url, "projectName": "checkout", "apiKey": "px-key"},
    ),
    "mlflow": lambda: (
        FakeMlflow(experiments=("12",), token="ml-token"),
        "mlflow",
        lambda url: {"host": url, "experimentId": "12", "token": "ml-token"},
    ),
    "langfuse": lambda: (
        FakeLangfuse(public_key="pk-lf-1", secret_key="sk-lf-1"),
        "langfuse",
        lambda url: {"publicKey": "pk-lf-1", "secretKey": "sk-lf-1", "host": url},
    ),
    "weave": lambda: (
        FakeWeave(api_key="wb-key", project_id="acme/shop"),
        "weave",
        lambda url: {"apiKey": "wb-key", "entity": "acme", "project": "shop", "host": url},
    ),
}


@pytest.fixture(params=sorted(FAMILY))
def family(request: pytest.FixtureRequest):
    server, platform, config_for = FAMILY[request.param]()
    with server:
        yield server, platform, config_for(server.url)


def test_it_sends_valid_gzipped_protobuf_with_genai_attributes(family, http) -> None:
    server, platform, config = family
    exporter = make_exporter(platform, config, http)

    exporter.export([make_record(), make_error_record()])

    assert server.problems == []
    request = server.requests[-1]
    assert request.header("content-type") == "application/x-protobuf"
    assert request.header("content-encoding") == "gzip"
    assert gzip.decompress(request.body) == request.content
    assert len(server.spans) == 2
    ok, failed = server.spans
    assert ok.name == "chat gpt-4o-mini"
    assert ok.kind == 3  # CLIENT
    attrs = ok.attributes
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.provider.name"] == "openai"
    assert attrs["gen_ai.request.model"] == "gpt-4o-mini"
    assert attrs["gen_ai.usage.input_tokens"] == 12
    assert attrs["gen_ai.usage.output_tokens"] == 7
    assert attrs["gen_ai.request.temperature"] == 0.2
    assert attrs["gen_ai.request.max_tokens"] == 64
    assert attrs["gen_ai.response.finish_reasons"] == ["stop"]
    assert attrs["gen_ai.conversation.id"] == "sess-42"
    assert attrs["user.id"] == "user-9"
    assert attrs["tracerelay.trace_id"] == "trc_0190a1b2c3d4e5f6"
    assert attrs["tracerelay.cost_usd"] == pytest.approx(0.0000063)
    assert attrs["tracerelay.tags"] == ["checkout", "beta", "tracerelay"]
    # metadata mapping: renamed, dropped, JSON for structures
    assert attrs["tracerelay.metadata.account"] == "acme"
    assert "tracerelay.metadata.internal_note" not in attrs
    assert json.loads(attrs["tracerelay.metadata.plan"]) == {"tier": "pro"}
    inputs = json.loads(attrs["gen_ai.input.messages"])
    assert inputs == [
        {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
        {"role": "user", "parts": [{"type": "text", "content": "What is OTLP?"}]},
    ]
    outputs = json.loads(attrs["gen_ai.output.messages"])
    assert outputs == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "The OpenTelemetry protocol."}],
            "finish_reason": "stop",
        }
    ]
    assert ok.end_ns - ok.start_ns == 850 * 1_000_000
    assert ok.status_code == 1  # OK
    assert ok.resource["service.name"] == "shop-api"
    assert ok.resource["deployment.environment.name"] == "production"

    assert failed.status_code == 2  # ERROR
    assert failed.status_message == "upstream closed the connection"
    assert failed.attributes["error.type"] == "APIConnectionError"
    exception = {"exception.type": "APIConnectionError", "exception.message": "upstream closed the connection"}
    assert ("exception", exception) in failed.events


def test_it_uses_ids_derived_from_team_and_trace_so_a_resend_is_not_a_duplicate(family, http) -> None:
    server, platform, config = family
    exporter = make_exporter(platform, config, http)
    record = make_record()

    exporter.export([record])
    exporter.export([record])

    assert server.exports == 2
    assert len(server.spans) == 1
    span = server.spans[0]
    assert span.trace_id == ids.otel_trace_id(7, "trc_0190a1b2c3d4e5f6").hex()
    assert span.span_id == ids.otel_span_id(7, "trc_0190a1b2c3d4e5f6").hex()


def test_the_same_trace_id_in_another_team_gets_other_ids(family, http) -> None:
    server, platform, config = family
    exporter = make_exporter(platform, config, http)

    exporter.export([make_record(team_id=1), make_record(team_id=2)])

    assert len({s.trace_id for s in server.spans}) == 2


def test_its_connection_check_passes_with_the_right_credentials(family, http) -> None:
    server, platform, config = family
    result = make_exporter(platform, config, http).check()

    assert result.ok, result.message
    assert result.status_code == 200
    assert result.latency_ms is not None and result.latency_ms >= 0
    assert server.problems == []


@pytest.mark.parametrize("status", [401, 403])
def test_it_reports_rejected_credentials_as_permanent(family, http, status: int) -> None:
    server, platform, config = family
    server.queue(Reply(status, {"error": "bad key"}))

    with pytest.raises(ExportError) as caught:
        make_exporter(platform, config, http).export([make_record()])

    assert caught.value.permanent is True
    assert caught.value.status_code == status


def test_the_check_fails_with_wrong_credentials(family, http) -> None:
    server, platform, config = family
    server.queue(Reply(401, {"error": "Invalid credentials"}))

    result = make_exporter(platform, config, http).check()

    assert result.ok is False
    assert result.status_code == 401
    assert "Authentication failed" in result.message


def test_it_can_send_uncompressed(http) -> None:
    with FakeOtlpCollector() as server:
        exporter = make_exporter("otlp", {"endpoint": server.url + "/v1/traces", "compression": "none"}, http)
        exporter.export([make_record()])

    assert server.problems == []
    assert server.requests[0].header("content-encoding") is None
    assert len(server.spans) == 1


def test_a_bare_collector_url_gets_the_traces_path(http) -> None:
    with FakeOtlpCollector() as server:
        make_exporter("otlp", {"endpoint": server.url}, http).export([make_record()])

    assert server.requests[0].path == "/v1/traces"
    assert server.problems == []


def test_a_custom_otlp_path_is_used_as_given(http) -> None:
    with FakeOtlpCollector() as server:
        server.traces_path = "/otlp/v1/traces"
        make_exporter("otlp", {"endpoint": server.url + "/otlp/v1/traces"}, http).export([make_record()])

    assert server.problems == []
    assert server.requests[0].path == "/otlp/v1/traces"


def test_a_partial_success_rejecting_every_span_is_a_permanent_error_naming_them(http) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    response = ExportTraceServiceResponse()
    response.partial_success.rejected_spans = 1
    response.partial_success.error_message = "span too large"
    with FakeOtlpCollector() as server:
        server.queue(Reply(200, response.SerializeToString(), {"Content-Type": "application/x-protobuf"}))
        with pytest.raises(ExportError) as caught:
            make_exporter("otlp", {"endpoint": server.url}, http).export([make_record()])

    assert caught.value.permanent is True
    assert "rejected 1 of 1 spans: span too large" in caught.value.message


def test_phoenix_gets_openinference_attributes_and_its_project_as_a_resource_attribute(http) -> None:
    with FakePhoenix() as server:
        make_exporter("phoenix", {"host": server.url, "projectName": "checkout"}, http).export([make_record()])

    assert server.problems == []
    assert server.requests[0].header("authorization") is None  # no key configured: none sent
    span = server.spans[0]
    assert span.resource["openinference.project.name"] == "checkout"
    a = span.attributes
    assert a["openinference.span.kind"] == "LLM"
    assert a["llm.model_name"] == "gpt-4o-mini"
    assert a["llm.provider"] == "openai"
    assert a["llm.token_count.prompt"] == 12
    assert a["llm.token_count.completion"] == 7
    assert a["llm.token_count.total"] == 19
    assert a["llm.cost.total"] == pytest.approx(0.0000063)
    assert a["llm.input_messages.1.message.role"] == "user"
    assert a["llm.input_messages.1.message.content"] == "What is OTLP?"
    assert a["llm.output_messages.0.message.content"] == "The OpenTelemetry protocol."
    assert json.loads(a["llm.invocation_parameters"]) == {"temperature": 0.2, "max_tokens": 64}
    assert a["input.mime_type"] == "application/json"
    assert json.loads(a["input.value"])["messages"][1]["content"] == "What is OTLP?"
    assert a["session.id"] == "sess-42"
    assert a["user.id"] == "user-9"
    assert a["tag.tags"] == ["checkout", "beta", "tracerelay"]
    assert json.loads(a["metadata"]) == {"account": "acme", "plan": {"tier": "pro"}}


def test_phoenix_refuses_json_which_is_why_we_send_protobuf(http) -> None:
    import httpx

    with FakePhoenix() as server:
        response = httpx.post(server.url + "/v1/traces", json={"resourceSpans": []})

    assert response.status_code == 415


def test_mlflow_gets_the_experiment_header(http) -> None:
    with FakeMlflow(experiments=("3",)) as server:
        make_exporter("mlflow", {"host": server.url, "experimentId": "3"}, http).export([make_record()])

    assert server.problems == []
    assert server.requests[0].header("x-mlflow-experiment-id") == "3"


def test_mlflow_basic_auth_when_configured(http) -> None:
    with FakeMlflow(username="ml", password="pw") as server:
        config = {"host": server.url, "experimentId": "1", "username": "ml", "password": "pw"}
        make_exporter("mlflow", config, http).export([make_record()])

    assert server.problems == []
    assert len(server.spans) == 1


def test_the_mlflow_check_fails_for_a_missing_experiment(http) -> None:
    with FakeMlflow(experiments=("1",)) as server:
        result = make_exporter("mlflow", {"host": server.url, "experimentId": "99"}, http).check()

    assert result.ok is False
    assert result.status_code == 404
    assert "Not found" in result.message


def test_langfuse_gets_basic_auth_the_ingestion_version_and_its_own_attributes(http) -> None:
    with FakeLangfuse(public_key="pk-lf-1", secret_key="sk-lf-1") as server:
        config = {"publicKey": "pk-lf-1", "secretKey": "sk-lf-1", "host": server.url}
        make_exporter("langfuse", config, http).export([make_record(), make_error_record()])

    assert server.problems == []
    request = server.requests[0]
    assert request.path == "/api/public/otel/v1/traces"
    assert request.header("authorization") == "Basic " + base64.b64encode(b"pk-lf-1:sk-lf-1").decode()
    assert request.header("x-langfuse-ingestion-version") == "4"
    ok, failed = server.spans
    a = ok.attributes
    assert a["langfuse.observation.type"] == "generation"
    assert a["langfuse.observation.model.name"] == "gpt-4o-mini"
    assert json.loads(a["langfuse.observation.usage_details"]) == {"input": 12, "output": 7, "total": 19}
    assert json.loads(a["langfuse.observation.cost_details"]) == {"total": pytest.approx(0.0000063)}
    assert json.loads(a["langfuse.observation.model.parameters"]) == {"temperature": 0.2, "max_tokens": 64}
    assert a["langfuse.observation.level"] == "DEFAULT"
    assert a["langfuse.trace.tags"] == ["checkout", "beta", "tracerelay"]
    assert a["langfuse.trace.metadata.account"] == "acme"
    assert a["langfuse.environment"] == "production"
    assert a["user.id"] == "user-9"
    assert a["session.id"] == "sess-42"
    assert json.loads(a["langfuse.observation.completion_start_time"]).endswith("Z")
    assert json.loads(a["langfuse.observation.output"])["choices"][0]["message"]["content"].startswith("The Open")
    b = failed.attributes
    assert b["langfuse.observation.level"] == "ERROR"
    assert b["langfuse.observation.status_message"] == "APIConnectionError: upstream closed the connection"


def test_weave_gets_basic_api_auth_the_project_header_and_threads(http) -> None:
    with FakeWeave(api_key="wb-key", project_id="acme/shop") as server:
        config = {"apiKey": "wb-key", "projectId": "acme/shop", "host": server.url}
        make_exporter("weave", config, http).export([make_record()])

    assert server.problems == []
    request = server.requests[0]
    assert request.path == "/otel/v1/traces"
    assert request.header("authorization") == "Basic " + base64.b64encode(b"api:wb-key").decode()
    assert request.header("project_id") == "acme/shop"
    span = server.spans[0]
    assert span.resource["wandb.entity"] == "acme"
    assert span.resource["wandb.project"] == "shop"
    assert span.attributes["wandb.thread_id"] == "sess-42"


def test_weave_agents_view_uses_its_own_path(http) -> None:
    with FakeWeave(api_key="k", project_id="a/b") as server:
        config = {"apiKey": "k", "projectId": "a/b", "host": server.url, "view": "agents"}
        make_exporter("weave", config, http).export([make_record()])

    assert server.problems == []
    assert server.requests[0].path == "/agents/otel/v1/traces"


def test_embeddings_are_embedding_spans(http) -> None:
    record = make_record(model="text-embedding-3-small", input={"input": "hello"}, output=None, completion_tokens=0)
    with FakePhoenix() as server:
        make_exporter("phoenix", {"host": server.url}, http).export([record])

    assert server.problems == []
    span = server.spans[0]
    assert span.name == "embeddings text-embedding-3-small"
    assert span.attributes["openinference.span.kind"] == "EMBEDDING"
