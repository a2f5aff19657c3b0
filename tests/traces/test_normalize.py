from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from traces.normalize import TraceValidationError, normalize_trace

# Normalising prices every call: without a database, no team's own prices (tests/prices has those).
pytestmark = pytest.mark.usefixtures("no_team_prices")


def norm(data, **kw):
    return normalize_trace(data, team_id=1, **kw)


def errors_of(data, **kw) -> dict[str, list[str]]:
    with pytest.raises(TraceValidationError) as info:
        norm(data, **kw)
    assert info.value.status == 400
    return info.value.errors


def test_it_needs_only_a_model_and_fills_the_rest():
    record = norm({"model": "gpt-4o"}, environment="ci")
    assert record.trace_id.startswith("trc_") and len(record.trace_id) == 36
    assert record.provider == "openai"
    assert record.status == "success"
    assert record.environment == "ci"
    assert record.timestamp is not None and record.timestamp.tzinfo is not None
    assert (record.prompt_tokens, record.completion_tokens, record.total_tokens) == (0, 0, 0)
    assert record.usage_estimated is True


def test_it_keeps_what_the_client_sent():
    record = norm(
        {
            "id": "my-trace.1:a",
            "model": "claude-3-5-sonnet-20241022",
            "provider": "Anthropic",
            "prompt_tokens": 1000,
            "completion_tokens": 200,
            "total_tokens": 1200,
            "latency_ms": 812.6,
            "time_to_first_token_ms": 90,
            "timestamp": "2025-01-31T12:00:00+02:00",
            "tags": ["beta", "beta", "checkout"],
            "metadata": {"customer": "acme", "n": 5},
            "environment": "staging",
            "service_name": "shop",
            "session_id": "s1",
            "user_id": "u1",
            "input": [{"role": "user", "content": "hi"}],
            "output": "hello",
            "cost": 0.5,
        },
        environment="production",
    )
    assert record.trace_id == "my-trace.1:a"
    assert record.provider == "anthropic"
    assert record.latency_ms == 813
    assert record.timestamp == datetime(2025, 1, 31, 10, 0, tzinfo=UTC)
    assert record.tags == ("beta", "checkout")
    assert record.metadata == {"customer": "acme", "n": 5}
    assert record.environment == "staging"
    assert record.client_cost == Decimal("0.5")
    assert record.cost == Decimal("0.0060000000")  # $3/MTok in, $15/MTok out
    assert record.usage_estimated is False
    assert record.price_source == "genai-prices" and record.price_version


def test_it_sets_error_status_when_an_error_is_given():
    record = norm({"model": "gpt-4o", "error": {"type": "Timeout", "message": "took too long"}})
    assert (record.status, record.error_type, record.error_message) == ("error", "Timeout", "took too long")
    assert norm({"model": "gpt-4o", "error": "boom"}).error_message == "boom"
    assert norm({"model": "gpt-4o", "status": "rate_limited", "error": "429"}).status == "rate_limited"


def test_it_completes_a_missing_part_from_total_tokens():
    record = norm({"model": "gpt-4o", "prompt_tokens": 10, "total_tokens": 25})
    assert (record.prompt_tokens, record.completion_tokens) == (10, 15)
    assert record.usage_estimated is False


def test_it_flags_usage_estimated_from_the_text_when_tokens_are_missing():
    record = norm({"model": "gpt-4o", "input": "x" * 400, "output": "y" * 40})
    assert (record.prompt_tokens, record.completion_tokens) == (100, 10)
    assert record.usage_estimated is True
    assert record.cost is not None and record.cost > 0


def test_it_flags_an_unknown_model_unpriced_never_zero():
    record = norm({"model": "my-own-finetune", "prompt_tokens": 10})
    assert record.unpriced is True
    assert record.cost is None
    assert record.provider == ""


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({}, "model"),
        ({"model": ""}, "model"),
        ({"model": 5}, "model"),
        ({"model": "m" * 201}, "model"),
        ({"model": "m", "prompt_tokens": -1}, "prompt_tokens"),
        ({"model": "m", "completion_tokens": "12"}, "completion_tokens"),
        ({"model": "m", "prompt_tokens": 1.5}, "prompt_tokens"),
        ({"model": "m", "prompt_tokens": True}, "prompt_tokens"),
        ({"model": "m", "prompt_tokens": 2**31}, "prompt_tokens"),
        ({"model": "m", "prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 4}, "total_tokens"),
        ({"model": "m", "prompt_tokens": 5, "total_tokens": 4}, "total_tokens"),
        ({"model": "m", "status": "maybe"}, "status"),
        ({"model": "m", "status": 1}, "status"),
        ({"model": "m", "status": "Failed"}, "status"),
        ({"model": "m", "latency_ms": -3}, "latency_ms"),
        ({"model": "m", "latency_ms": "fast"}, "latency_ms"),
        ({"model": "m", "timestamp": "yesterday"}, "timestamp"),
        ({"model": "m", "timestamp": 1700000000}, "timestamp"),
        ({"model": "m", "timestamp": "9999-12-31T23:59:59Z"}, "timestamp"),
        ({"model": "m", "timestamp": "0001-01-01T00:00:00Z"}, "timestamp"),
        ({"model": "m", "timestamp": "1969-12-31T23:59:59Z"}, "timestamp"),
        ({"model": "m", "timestamp": "1999-12-31T23:59:59Z"}, "timestamp"),
        ({"model": "m", "timestamp": "2999-01-01T00:00:00Z"}, "timestamp"),
        ({"model": "m", "latency_ms": 1e300}, "latency_ms"),
        ({"model": "m", "time_to_first_token_ms": 2**31}, "time_to_first_token_ms"),
        ({"model": "m", "tags": "a,b"}, "tags"),
        ({"model": "m", "tags": ["ok", 3]}, "tags[1]"),
        ({"model": "m", "tags": [f"t{i}" for i in range(51)]}, "tags"),
        ({"model": "m", "metadata": ["a"]}, "metadata"),
        ({"model": "m", "metadata": {f"k{i}": i for i in range(65)}}, "metadata"),
        ({"model": "m", "error": 5}, "error"),
        ({"model": "m", "id": "has space"}, "id"),
        ({"model": "m", "id": "x" * 129}, "id"),
        ({"model": "m", "cost": -1}, "cost"),
        ({"model": "m", "cost": "0.1"}, "cost"),
        ({"model": "m\x00"}, "model"),
        ({"model": "m", "environment": 3}, "environment"),
    ],
)
def test_it_refuses_bad_fields_naming_them(data, field):
    assert field in errors_of(data)


def test_it_accepts_timestamps_at_the_edges_of_the_range():
    from datetime import timedelta

    earliest = normalize_trace({"model": "m", "timestamp": "2000-01-01T00:00:00Z", "latency_ms": 2**31 - 1}, team_id=1)
    assert earliest.timestamp == datetime(2000, 1, 1, tzinfo=UTC)
    soon = (datetime.now(tz=UTC) + timedelta(hours=23)).isoformat()
    assert normalize_trace({"model": "m", "timestamp": soon}, team_id=1).timestamp is not None


def test_it_reports_every_bad_field_at_once():
    errors = errors_of({"prompt_tokens": -1, "status": "nope", "tags": 3})
    assert set(errors) == {"model", "prompt_tokens", "status", "tags"}


def test_it_refuses_a_trace_that_is_not_an_object():
    with pytest.raises(TraceValidationError):
        normalize_trace(["model"], team_id=1)  # type: ignore[arg-type]


def test_it_refuses_an_oversized_trace_with_413(settings):
    settings.TRACE_MAX_BYTES = 1000
    with pytest.raises(TraceValidationError) as info:
        norm({"model": "m", "input": "x" * 2000})
    assert info.value.status == 413
    assert "1000 bytes" in info.value.errors[""][0]


def test_it_keeps_an_oversized_proxy_trace_without_its_bodies(settings):
    settings.TRACE_MAX_BYTES = 1000
    record = norm({"model": "gpt-4o", "prompt_tokens": 3, "input": "x" * 2000, "output": "y"}, source="proxy")
    assert record.input == {"truncated": True, "bytes": record.input["bytes"]}
    assert record.output is None
    assert record.prompt_tokens == 3


@pytest.mark.parametrize(
    ("trace", "field"),
    [
        ({"input": "a\x00b"}, "input"),
        ({"output": [{"content": "ok"}, {"content": "x\x00"}]}, "output[1].content"),
        ({"metadata": {"k": ["\x00"]}}, "metadata.k[0]"),
        ({"metadata": {"k\x00": 1}}, "metadata.'k\\x00'"),
        ({"error": {"message": "x\x00"}}, "error.message"),
        ({"model": "m\x00"}, "model"),
        ({"tags": ["a", "b\x00"]}, "tags[1]"),
        ({"user_id": "u\x00"}, "user_id"),
    ],
)
def test_a_nul_anywhere_a_client_sends_is_refused_naming_the_field(trace, field):
    with pytest.raises(TraceValidationError) as info:
        norm({"model": "m", **trace})
    assert info.value.status == 400
    assert field in info.value.errors, info.value.errors
    assert "NUL" in info.value.errors[field][0]


def test_the_proxy_records_what_it_saw_with_nul_replaced():
    record = norm(
        {"model": "m", "input": "a\x00b", "metadata": {"k": ["\x00"]}, "error": {"message": "x\x00"}}, source="proxy"
    )
    assert record.input == "a\ufffdb"
    assert record.metadata == {"k": ["\ufffd"]}
    assert record.error_message == "x\ufffd"
