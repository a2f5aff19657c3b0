"""`POST /api/v1/otlp/v1/traces` through Django: encodings, partial success, dedupe, auth, scopes, tenants."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from django.db import OperationalError
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from accounts.models import ENVIRONMENT_SCOPES, Scope
from tests.factories import ApiKeyFactory
from traces.models import Trace
from traces.otlp import views

from .builders import JSON, PATH, PROTOBUF, export_request, gz, llm_span, otlp_json, protobuf, span


def post(client: Any, body: bytes, content_type: str = PROTOBUF, **headers: str) -> Any:
    return client.post(PATH, data=body, content_type=content_type, headers=headers)


def ok_response(r: Any) -> ExportTraceServiceResponse:
    assert r.status_code == 200, r.content
    assert r["Content-Type"] == PROTOBUF
    return ExportTraceServiceResponse.FromString(r.content)


def status_of(r: Any) -> status_pb2.Status:
    assert r["Content-Type"] == PROTOBUF
    return status_pb2.Status.FromString(r.content)


def test_it_stores_protobuf_spans_as_priced_traces(api, team) -> None:
    s = llm_span(attrs={"gen_ai.input.messages": '[{"role":"user","parts":[{"type":"text","content":"Hi"}]}]'})
    response = ok_response(post(api, protobuf(s, resource={"service.name": "shop"})))
    assert not response.HasField("partial_success")
    trace = Trace.objects.get(team=team)
    assert trace.trace_id == f"otel-{s.trace_id.hex()}-{s.span_id.hex()}"
    assert (trace.source, trace.model, trace.provider, trace.service_name) == ("otlp", "gpt-4o-mini", "openai", "shop")
    assert (trace.prompt_tokens, trace.completion_tokens, trace.latency_ms) == (12, 7, 850)
    assert trace.cost and trace.cost > 0 and not trace.unpriced
    assert trace.input == [{"role": "user", "content": "Hi"}]
    assert trace.environment == "production"  # the key's, as no resource attribute names one


@pytest.mark.parametrize("snake", [False, True])
def test_it_reads_otlp_json(api, team, snake: bool) -> None:
    s = llm_span()
    body = otlp_json(export_request(s))
    if snake:
        body = _snake(body)
    r = post(api, orjson.dumps(body), JSON)
    assert r.status_code == 200 and r["Content-Type"] == JSON
    assert r.json() == {}
    assert Trace.objects.get(team=team).trace_id == f"otel-{s.trace_id.hex()}-{s.span_id.hex()}"


def _snake(value: Any) -> Any:
    if isinstance(value, dict):
        return {"".join("_" + c.lower() if c.isupper() else c for c in k): _snake(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_snake(v) for v in value]
    return value


def test_it_reads_gzip(api, team) -> None:
    ok_response(post(api, gz(protobuf(llm_span(), llm_span())), PROTOBUF, content_encoding="gzip"))
    assert Trace.objects.filter(team=team).count() == 2


def test_it_reports_refused_spans_as_partial_success_and_stores_the_rest(api, team) -> None:
    good = llm_span()
    bad_tokens = llm_span(attrs={"gen_ai.usage.input_tokens": "many"})
    bad_id = llm_span(span_id=b"\x00" * 8)
    not_llm = span({"http.route": "/orders"})
    response = ok_response(post(api, protobuf(good, bad_tokens, not_llm, bad_id)))
    assert response.partial_success.rejected_spans == 2
    message = response.partial_success.error_message
    assert "prompt_tokens: Must be an integer" in message and bad_tokens.span_id.hex() in message
    assert "spanId 8 bytes" in message
    assert set(Trace.objects.filter(team=team).values_list("trace_id", "kind")) == {
        (f"otel-{good.trace_id.hex()}-{good.span_id.hex()}", "llm"),
        (f"otel-{not_llm.trace_id.hex()}-{not_llm.span_id.hex()}", "other"),  # every span is kept
    }


def test_it_answers_partial_success_in_json(api) -> None:
    body = otlp_json(export_request(llm_span(attrs={"gen_ai.usage.output_tokens": -3})))
    r = post(api, orjson.dumps(body), JSON)
    assert r.status_code == 200
    partial = r.json()["partialSuccess"]
    assert int(partial["rejectedSpans"]) == 1 and "Must not be negative" in partial["errorMessage"]


def test_it_refuses_a_json_span_whose_ids_are_not_hex(api, team) -> None:
    body = otlp_json(export_request(llm_span(), llm_span()))
    body["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["traceId"] = "not-hex"
    r = post(api, orjson.dumps(body), JSON)
    assert int(r.json()["partialSuccess"]["rejectedSpans"]) == 1
    assert Trace.objects.filter(team=team).count() == 1


def test_a_resent_span_is_stored_once(api, team) -> None:
    body = protobuf(llm_span(), llm_span())
    ok_response(post(api, body))
    first = set(Trace.objects.filter(team=team).values_list("id", flat=True))
    response = ok_response(post(api, body))
    assert not response.HasField("partial_success")
    assert set(Trace.objects.filter(team=team).values_list("id", flat=True)) == first


def test_the_same_span_from_two_teams_is_two_traces(api, team, other_team) -> None:
    body = protobuf(llm_span())
    other = ApiKeyFactory(team=other_team)
    ok_response(post(api, body))
    ok_response(_post_with(other._raw, body))
    assert Trace.objects.filter(team=team).count() == 1
    assert Trace.objects.filter(team=other_team).count() == 1
    mine, theirs = Trace.objects.get(team=team), Trace.objects.get(team=other_team)
    assert mine.trace_id == theirs.trace_id and mine.api_key_id != theirs.api_key_id


def _post_with(raw_key: str, body: bytes, header: str = "authorization") -> Any:
    from django.test import Client

    value = f"Bearer {raw_key}" if header == "authorization" else raw_key
    return Client().post(PATH, data=body, content_type=PROTOBUF, headers={header: value})


def test_it_accepts_the_key_in_x_service_key(team, prod_key) -> None:
    ok_response(_post_with(prod_key._raw, protobuf(llm_span()), header="x-service-key"))
    assert Trace.objects.filter(team=team).count() == 1


@pytest.mark.parametrize(
    "headers",
    [{}, {"authorization": "Bearer tr_prod_nope"}, {"authorization": "Basic dXNlcjpwYXNz"}, {"x-service-key": "x"}],
)
def test_it_refuses_requests_without_a_valid_key(db, headers: dict[str, str]) -> None:
    from django.test import Client

    r = Client().post(PATH, data=protobuf(llm_span()), content_type=PROTOBUF, headers=headers)
    assert r.status_code == 401 and r["WWW-Authenticate"].startswith("Bearer")
    assert status_of(r).code == code_pb2.UNAUTHENTICATED
    assert not Trace.objects.exists()


def test_a_revoked_key_is_refused(team) -> None:
    from django.utils import timezone

    key = ApiKeyFactory(team=team, revoked_at=timezone.now())
    assert _post_with(key._raw, protobuf(llm_span())).status_code == 401


@pytest.mark.parametrize("environment", ["production", "development", "ci"])
def test_every_key_environment_may_send(team, environment: str) -> None:
    key = ApiKeyFactory(team=team, environment=environment)
    ok_response(_post_with(key._raw, protobuf(llm_span())))
    assert Trace.objects.get(team=team).environment == environment


def test_a_key_without_the_ingest_scope_is_forbidden(team, monkeypatch) -> None:
    monkeypatch.setitem(ENVIRONMENT_SCOPES, "ci", frozenset({Scope.TRACES_READ}))
    r = _post_with(ApiKeyFactory(team=team, environment="ci")._raw, protobuf(llm_span()))
    assert r.status_code == 403 and status_of(r).code == code_pb2.PERMISSION_DENIED
    assert not Trace.objects.exists()


def test_an_empty_request_is_a_success(api) -> None:
    assert not ok_response(post(api, b"")).HasField("partial_success")


def test_when_the_database_is_away_it_answers_503_with_retry_after(api, monkeypatch) -> None:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("connection refused")

    monkeypatch.setattr("traces.otlp.services._ingest", fail)
    r = post(api, protobuf(llm_span()))
    assert r.status_code == 503 and r["Retry-After"] == "5"
    assert status_of(r).code == code_pb2.UNAVAILABLE


def test_when_too_many_requests_wait_it_sheds_load_with_503(api, settings, monkeypatch) -> None:
    monkeypatch.setattr(views._Pending, "count", settings.OTLP_MAX_PENDING)
    r = post(api, protobuf(llm_span()))
    assert r.status_code == 503 and r["Retry-After"] == "1"
    assert not Trace.objects.exists()


def test_get_is_405(api) -> None:
    r = api.get(PATH)
    assert r.status_code == 405 and r["Allow"] == "POST"


def test_the_openapi_document_describes_it(api) -> None:
    schema = api.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    operation = schema["paths"][PATH]["post"]
    assert set(operation["requestBody"]["content"]) == {PROTOBUF, JSON}
    assert {"200", "400", "401", "413", "415", "503"} <= set(operation["responses"])


# What the Node SDK's JSON exporter (@opentelemetry/exporter-trace-otlp-http) sends for one
# @arizeai/openinference-instrumentation-openai span that failed with a 429: hex ids, integer enums,
# 64-bit integers as strings, arrays of attributes.
NODE_JSON = {
    "resourceSpans": [
        {
            "resource": {
                "attributes": [
                    {"key": "service.name", "value": {"stringValue": "node-app"}},
                    {"key": "telemetry.sdk.language", "value": {"stringValue": "nodejs"}},
                ],
                "droppedAttributesCount": 0,
            },
            "scopeSpans": [
                {
                    "scope": {"name": "@arizeai/openinference-instrumentation-openai", "version": "4.2.7"},
                    "spans": [
                        {
                            "traceId": "5b8efff798038103d269b633813fc60c",
                            "spanId": "eee19b7ec3c1b174",
                            "parentSpanId": "eee19b7ec3c1b173",
                            "name": "OpenAI Chat Completions",
                            "kind": 1,
                            "startTimeUnixNano": "1767225600000000000",
                            "endTimeUnixNano": "1767225600420000000",
                            "attributes": [
                                {"key": "openinference.span.kind", "value": {"stringValue": "LLM"}},
                                {"key": "llm.model_name", "value": {"stringValue": "gpt-4o-mini"}},
                                {"key": "llm.provider", "value": {"stringValue": "openai"}},
                                {"key": "llm.token_count.prompt", "value": {"intValue": "15"}},
                                {"key": "llm.input_messages.0.message.role", "value": {"stringValue": "user"}},
                                {"key": "llm.input_messages.0.message.content", "value": {"stringValue": "Hi"}},
                                {"key": "session.id", "value": {"stringValue": "sess-42"}},
                                {"key": "tag.tags", "value": {"arrayValue": {"values": [{"stringValue": "web"}]}}},
                            ],
                            "droppedAttributesCount": 0,
                            "events": [
                                {
                                    "timeUnixNano": "1767225600400000000",
                                    "name": "exception",
                                    "attributes": [
                                        {"key": "exception.type", "value": {"stringValue": "RateLimitError"}},
                                        {"key": "exception.message", "value": {"stringValue": "429 Too Many"}},
                                    ],
                                }
                            ],
                            "status": {"code": 2, "message": "429 Too Many Requests"},
                            "links": [],
                        }
                    ],
                }
            ],
        }
    ]
}


def test_it_reads_what_the_node_sdk_sends(api, team) -> None:
    r = post(api, orjson.dumps(NODE_JSON), JSON)
    assert r.status_code == 200 and r.json() == {}
    trace = Trace.objects.get(team=team)
    assert trace.trace_id == "otel-5b8efff798038103d269b633813fc60c-eee19b7ec3c1b174"
    assert (trace.model, trace.provider, trace.prompt_tokens, trace.latency_ms) == ("gpt-4o-mini", "openai", 15, 420)
    assert (trace.status, trace.error_type, trace.error_message) == (
        "rate_limited",
        "RateLimitError",
        "429 Too Many Requests",
    )
    assert (trace.service_name, trace.session_id, trace.tags) == ("node-app", "sess-42", ["web"])
    assert trace.input == [{"role": "user", "content": "Hi"}]
    assert trace.metadata["otel.parent_span_id"] == "eee19b7ec3c1b173"
    assert (trace.run_id, trace.parent_id, trace.kind) == (
        "5b8efff798038103d269b633813fc60c",
        "otel-5b8efff798038103d269b633813fc60c-eee19b7ec3c1b173",  # from OTLP JSON's hex parentSpanId
        "llm",
    )
    assert trace.metadata["otel.scope"] == "@arizeai/openinference-instrumentation-openai"


def test_x_service_key_is_read_when_authorization_has_another_scheme(team, prod_key) -> None:
    from django.test import Client

    headers = {"authorization": "Basic dXNlcjpwYXNz", "x-service-key": prod_key._raw}
    r = Client().post(PATH, data=protobuf(llm_span()), content_type=PROTOBUF, headers=headers)
    assert r.status_code == 200 and Trace.objects.filter(team=team).count() == 1


def test_the_same_span_twice_in_one_request_is_stored_once(api, team) -> None:
    s = llm_span()
    response = ok_response(post(api, protobuf(s, s)))
    assert not response.HasField("partial_success")
    assert Trace.objects.filter(team=team).count() == 1
