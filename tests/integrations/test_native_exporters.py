"""LangSmith runs, Helicone custom log, Datadog LLM Observability intake and the signed webhook,
against fakes that validate the JSON with strict schemas (tests/fakes/schemas.py) and the auth."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from integrations.exporters import ids
from integrations.exporters.base import ExportError
from integrations.exporters.webhook import sign, verify_signature
from tests.fakes import FakeDatadog, FakeHelicone, FakeLangSmith, FakeWebhookReceiver, Reply

from .conftest import make_error_record, make_exporter, make_record

# --- LangSmith -----------------------------------------------------------------------------------


def test_langsmith_gets_valid_llm_runs_with_usage_cost_and_metadata(http) -> None:
    with FakeLangSmith(api_key="lsv2-key") as server:
        config = {"apiKey": "lsv2-key", "projectId": "shop", "endpoint": server.url, "tenantId": "ws-1"}
        make_exporter("langsmith", config, http).export([make_record(), make_error_record()])

    assert server.problems == []
    request = server.requests[0]
    assert request.path == "/runs/batch"
    assert request.header("x-api-key") == "lsv2-key"
    assert request.header("x-tenant-id") == "ws-1"
    run_id = str(ids.run_uuid(7, "trc_0190a1b2c3d4e5f6"))
    run = server.runs[run_id]
    assert run["trace_id"] == run_id
    assert run["dotted_order"].endswith(run_id)
    assert run["run_type"] == "llm"
    assert run["session_name"] == "shop"
    assert run["inputs"]["messages"][1] == {"role": "user", "content": "What is OTLP?"}
    assert run["outputs"]["choices"][0]["message"]["content"] == "The OpenTelemetry protocol."
    assert run["outputs"]["usage_metadata"] == {
        "input_tokens": 12,
        "output_tokens": 7,
        "total_tokens": 19,
        "total_cost": pytest.approx(0.0000063),
    }
    metadata = run["extra"]["metadata"]
    assert metadata["ls_provider"] == "openai"
    assert metadata["ls_model_name"] == "gpt-4o-mini"
    assert metadata["user_id"] == "user-9"
    assert metadata["session_id"] == "sess-42"
    assert metadata["account"] == "acme"
    assert "internal_note" not in metadata
    assert run["tags"] == ["checkout", "beta", "tracerelay"]
    assert run["error"] is None
    start = datetime.fromisoformat(run["start_time"])
    end = datetime.fromisoformat(run["end_time"])
    assert end - start == timedelta(milliseconds=850)
    failed = server.runs[str(ids.run_uuid(7, "trc_failed_1"))]
    assert failed["error"] == "APIConnectionError: upstream closed the connection"


def test_langsmith_treats_409_on_a_resend_as_already_stored(http) -> None:
    with FakeLangSmith() as server:
        exporter = make_exporter("langsmith", {"apiKey": "lsv2-test", "endpoint": server.url}, http)
        exporter.export([make_record()])
        exporter.export([make_record()])  # the fake answers 409: the run id is taken

    assert [r.path for r in server.requests] == ["/runs/batch", "/runs/batch"]
    assert len(server.runs) == 1
    assert server.problems == []


def test_langsmith_check_uses_the_sessions_list(http) -> None:
    with FakeLangSmith(api_key="good") as server:
        ok = make_exporter("langsmith", {"apiKey": "good", "endpoint": server.url}, http).check()
        bad = make_exporter("langsmith", {"apiKey": "bad", "endpoint": server.url}, http).check()

    assert ok.ok and ok.status_code == 200
    assert not bad.ok and bad.status_code == 401
    assert server.requests[0].path == "/sessions"


# --- Helicone ------------------------------------------------------------------------------------


def test_helicone_gets_one_valid_log_per_trace_with_its_headers_in_meta(http) -> None:
    with FakeHelicone(api_key="sk-h") as server:
        config = {"apiKey": "sk-h", "endpoint": server.url}
        make_exporter("helicone", config, http).export([make_record()])

    assert server.problems == []
    request = server.requests[0]
    assert request.path == "/custom/v1/log"
    assert request.header("authorization") == "Bearer sk-h"
    log = next(iter(server.logs.values()))
    meta = log["providerRequest"]["meta"]
    assert meta["Helicone-Request-Id"] == str(ids.run_uuid(7, "trc_0190a1b2c3d4e5f6"))
    assert meta["Helicone-User-Id"] == "user-9"
    assert meta["Helicone-Session-Id"] == "sess-42"
    assert meta["Helicone-Property-Tags"] == "checkout,beta,tracerelay"
    assert meta["Helicone-Property-Environment"] == "production"
    assert meta["Helicone-Property-account"] == "acme"
    assert "Helicone-Property-internal_note" not in meta
    assert log["providerRequest"]["url"] == "custom-model-nopath"
    assert log["providerRequest"]["json"]["model"] == "gpt-4o-mini"
    assert log["providerRequest"]["json"]["temperature"] == 0.2
    response = log["providerResponse"]
    assert response["status"] == 200
    assert response["json"]["usage"] == {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}
    timing = log["timing"]
    start_ms = timing["startTime"]["seconds"] * 1000 + timing["startTime"]["milliseconds"]
    end_ms = timing["endTime"]["seconds"] * 1000 + timing["endTime"]["milliseconds"]
    assert end_ms - start_ms == 850
    assert timing["timeToFirstToken"] == 210


def test_helicone_gets_the_upstream_status_of_failed_calls(http) -> None:
    with FakeHelicone() as server:
        exporter = make_exporter("helicone", {"apiKey": "sk-helicone-test", "endpoint": server.url}, http)
        exporter.export([make_error_record(trace_id="e1", error_type="503")])
        exporter.export([make_record(trace_id="r1", status="rate_limited", error_type="", error_message="")])

    assert server.problems == []
    by_trace = "Helicone-Property-Tracerelay-Trace-Id"
    statuses = {log["providerRequest"]["meta"][by_trace]: log for log in server.logs.values()}
    assert statuses["e1"]["providerResponse"]["status"] == 503
    assert statuses["e1"]["providerResponse"]["json"]["error"]["message"] == "upstream closed the connection"
    assert statuses["r1"]["providerResponse"]["status"] == 429


def test_helicone_200_with_an_error_body_is_a_retryable_failure(http) -> None:
    with FakeHelicone() as server:
        server.storage_error = "clickhouse insert failed"
        exporter = make_exporter("helicone", {"apiKey": "sk-helicone-test", "endpoint": server.url}, http)
        with pytest.raises(ExportError) as caught:
            exporter.export([make_record()])

    assert caught.value.permanent is False
    assert "clickhouse insert failed" in caught.value.message
    assert caught.value.status_code == 200


def test_helicone_sends_one_request_per_trace(http) -> None:
    from integrations.exporters.helicone import HeliconeExporter

    assert HeliconeExporter.max_batch == 1
    with FakeHelicone() as server:
        exporter = make_exporter("helicone", {"apiKey": "sk-helicone-test", "endpoint": server.url}, http)
        exporter.export([make_record(trace_id="a"), make_record(trace_id="b")])

    assert len(server.logs) == 2
    assert server.problems == []


def test_helicone_check_queries_the_rest_api(http) -> None:
    with FakeHelicone(api_key="right") as server:
        ok = make_exporter("helicone", {"apiKey": "right", "apiUrl": server.url}, http).check()
        bad = make_exporter("helicone", {"apiKey": "wrong", "apiUrl": server.url}, http).check()

    assert ok.ok
    assert not bad.ok and bad.status_code == 401
    assert server.requests[0].path == "/v1/request/query"


# --- Datadog -------------------------------------------------------------------------------------


def test_datadog_gets_a_valid_llm_span_payload(http) -> None:
    with FakeDatadog(api_key="dd-key") as server:
        config = {"apiKey": "dd-key", "mlApp": "shop-llm", "endpoint": server.url}
        make_exporter("datadog", config, http).export([make_record(), make_error_record()])

    assert server.problems == []
    request = server.requests[0]
    assert request.path == "/api/intake/llm-obs/v1/trace/spans"
    assert request.header("dd-api-key") == "dd-key"
    payload = server.payloads[0]["data"]["attributes"]
    assert payload["ml_app"] == "shop-llm"
    ok, failed = server.spans
    assert ok["parent_id"] == "undefined"
    assert ok["trace_id"] == ids.otel_trace_id(7, "trc_0190a1b2c3d4e5f6").hex()
    assert ok["span_id"] == str(int.from_bytes(ids.otel_span_id(7, "trc_0190a1b2c3d4e5f6"), "big"))
    assert ok["duration"] == 850_000_000
    assert ok["status"] == "ok"
    assert ok["session_id"] == "sess-42"
    assert ok["meta"]["kind"] == "llm"
    assert ok["meta"]["model_name"] == "gpt-4o-mini"
    assert ok["meta"]["model_provider"] == "openai"
    assert ok["meta"]["input"]["messages"][1] == {"role": "user", "content": "What is OTLP?"}
    assert ok["meta"]["output"]["messages"][0]["content"] == "The OpenTelemetry protocol."
    assert ok["meta"]["metadata"]["account"] == "acme"
    assert ok["meta"]["metadata"]["tracerelay_cost_usd"] == pytest.approx(0.0000063)
    assert ok["metrics"] == {"input_tokens": 12, "output_tokens": 7, "total_tokens": 19, "time_to_first_token": 0.21}
    assert {"env:production", "service:shop-api", "user_id:user-9", "checkout", "tracerelay"} <= set(ok["tags"])
    assert failed["status"] == "error"
    assert failed["meta"]["error"] == {"message": "upstream closed the connection", "type": "APIConnectionError"}


def test_datadog_sets_aside_a_span_older_than_a_day_and_sends_the_rest(http) -> None:
    old = make_record(timestamp=datetime.now(UTC) - timedelta(hours=25))
    fresh = make_record()
    with FakeDatadog() as server:
        exporter = make_exporter("datadog", {"apiKey": "dd-test-key", "mlApp": "app", "endpoint": server.url}, http)
        batch, refused = exporter.encode_batch([old, fresh])
        exporter.export_encoded(batch)

    assert list(refused) == [0]
    assert "more than 24 hours ago" in refused[0] and "at most 24 hours old" in refused[0]
    assert server.problems == []
    assert [s["meta"]["metadata"]["tracerelay_trace_id"] for s in server.spans] == [fresh.trace_id]


def test_datadog_check_validates_the_key(http) -> None:
    with FakeDatadog(api_key="dd-key") as server:
        ok = make_exporter("datadog", {"apiKey": "dd-key", "mlApp": "a", "endpoint": server.url}, http).check()
        bad = make_exporter("datadog", {"apiKey": "nope", "mlApp": "a", "endpoint": server.url}, http).check()

    assert ok.ok and server.requests[0].path == "/api/v1/validate"
    assert not bad.ok and bad.status_code == 403


def test_datadog_url_follows_the_site(http) -> None:
    exporter = make_exporter("datadog", {"apiKey": "k", "mlApp": "a", "site": "datadoghq.eu"}, http)
    assert exporter.base_url == "https://api.datadoghq.eu"


# --- webhook -------------------------------------------------------------------------------------

SECRET = "whsec_0123456789abcdef"


def test_the_webhook_gets_our_documented_json_signed_with_hmac(http) -> None:
    with FakeWebhookReceiver(secret=SECRET) as server:
        config = {"url": server.url + "/hook", "secret": SECRET, "headers": {"X-Env": "prod"}}
        make_exporter("webhook", config, http, name="my-hook").export([make_record(), make_error_record()])

    assert server.problems == []
    request = server.requests[0]
    assert request.header("x-env") == "prod"
    assert request.header("x-tracerelay-event") == "traces"
    assert request.header("idempotency-key") == request.header("x-tracerelay-delivery")
    signature = request.header("x-tracerelay-signature")
    t, v1 = (part.split("=", 1)[1] for part in signature.split(","))
    assert abs(int(t) - time.time()) < 60
    assert sign(SECRET, request.body, int(t)) == signature
    assert len(v1) == 64
    body = request.json()
    assert body["destination"] == "my-hook"
    first, second = body["traces"]
    assert first["id"] == "trc_0190a1b2c3d4e5f6"
    assert first["metadata"] == {"account": "acme", "plan": {"tier": "pro"}}
    assert first["tags"] == ["checkout", "beta", "tracerelay"]
    assert first["cost"] == pytest.approx(0.0000063)
    assert first["latency_ms"] == 850
    assert first["error"] is None
    assert second["status"] == "error"
    assert second["error"] == {"type": "APIConnectionError", "message": "upstream closed the connection"}


def test_a_webhook_resend_carries_the_same_delivery_id(http) -> None:
    with FakeWebhookReceiver() as server:
        exporter = make_exporter("webhook", {"url": server.url + "/hook"}, http)
        exporter.export([make_record(trace_id="a"), make_record(trace_id="b")])
        exporter.export([make_record(trace_id="b"), make_record(trace_id="a")])

    first, second = server.requests
    assert first.header("x-tracerelay-delivery") == second.header("x-tracerelay-delivery")
    assert len(server.deliveries) == 1
    assert first.header("x-tracerelay-signature") is None  # no secret, no signature


def test_a_receiver_with_another_secret_refuses_the_delivery_permanently(http) -> None:
    with FakeWebhookReceiver(secret="another-secret-0000") as server:
        exporter = make_exporter("webhook", {"url": server.url + "/hook", "secret": SECRET}, http)
        with pytest.raises(ExportError) as caught:
            exporter.export([make_record()])

    assert caught.value.permanent is True
    assert caught.value.status_code == 401


def test_the_webhook_check_sends_a_signed_ping(http) -> None:
    with FakeWebhookReceiver(secret=SECRET) as server:
        result = make_exporter("webhook", {"url": server.url + "/hook", "secret": SECRET}, http).check()

    assert result.ok, result.message
    assert server.pings[0]["type"] == "ping"
    assert server.requests[0].header("x-tracerelay-event") == "ping"


def test_signature_verification_refuses_tampering_and_old_timestamps() -> None:
    body = b'{"type":"traces"}'
    header = sign(SECRET, body)
    assert verify_signature(SECRET, header, body)
    assert not verify_signature(SECRET, header, body + b" ")
    assert not verify_signature("other-secret-value", header, body)
    stale = sign(SECRET, body, int(time.time()) - 3600)
    assert not verify_signature(SECRET, stale, body)
    assert not verify_signature(SECRET, "garbage", body)


def test_the_custom_webhook_alias_is_the_webhook_exporter() -> None:
    from integrations.exporters.webhook import WebhookExporter
    from integrations.registry import exporter_class

    assert exporter_class("custom-webhook") is WebhookExporter


def test_run_ids_are_uuid5_and_stable() -> None:
    first = ids.run_uuid(1, "trc_x")
    assert first == ids.run_uuid(1, "trc_x")
    assert first.version == 5
    assert first != ids.run_uuid(2, "trc_x")
    assert isinstance(first, uuid.UUID)
    assert ids.otel_trace_id(1, "trc_x") != ids.otel_trace_id(1, "trc_y")
    assert len(ids.otel_trace_id(1, "trc_x")) == 16 and len(ids.otel_span_id(1, "trc_x")) == 8


def test_a_429_reply_to_any_native_exporter_keeps_retry_after(http) -> None:
    with FakeLangSmith() as server:
        server.queue(Reply(429, {"detail": "rate limited"}, {"Retry-After": "12"}))
        with pytest.raises(ExportError) as caught:
            make_exporter("langsmith", {"apiKey": "lsv2-test", "endpoint": server.url}, http).export([make_record()])

    assert caught.value.permanent is False
    assert caught.value.retry_after == 12
