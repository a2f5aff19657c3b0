from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest

from integrations import urlguard
from integrations.exporters.base import Exporter, Target
from integrations.registry import exporter_class
from traces.records import TraceRecord


def make_record(**overrides: Any) -> TraceRecord:
    """A realistic failed-then-answered chat call; override what a test cares about."""
    values: dict[str, Any] = {
        "trace_id": "trc_0190a1b2c3d4e5f6",
        "team_id": 7,
        "model": "gpt-4o-mini",
        "provider": "openai",
        "prompt_tokens": 12,
        "completion_tokens": 7,
        "total_tokens": 19,
        "latency_ms": 850,
        "time_to_first_token_ms": 210,
        "timestamp": datetime.now(UTC).replace(microsecond=123456) - timedelta(minutes=5),
        "status": "success",
        "input": {
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "What is OTLP?"},
            ],
            "temperature": 0.2,
            "max_tokens": 64,
        },
        "output": {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "The OpenTelemetry protocol."},
                    "finish_reason": "stop",
                }
            ],
        },
        "tags": ("checkout", "beta"),
        "metadata": {"customer": "acme", "internal_note": "drop me", "plan": {"tier": "pro"}},
        "environment": "production",
        "service_name": "shop-api",
        "session_id": "sess-42",
        "user_id": "user-9",
        "cost": Decimal("0.0000063"),
    }
    values.update(overrides)
    return TraceRecord(**values)


def make_error_record(**overrides: Any) -> TraceRecord:
    return make_record(
        **{
            "trace_id": "trc_failed_1",
            "status": "error",
            "error_type": "APIConnectionError",
            "error_message": "upstream closed the connection",
            "output": None,
            "completion_tokens": 0,
            "total_tokens": 12,
            **overrides,
        }
    )


DEFAULT_MAPPING: dict[str, Any] = {"customer": "account", "internal_note": None}


def config_for(platform: str, url: str) -> dict[str, Any]:
    """A valid config of each platform, aimed at ``url``."""
    return {
        "otlp": {"endpoint": url + "/v1/traces"},
        "phoenix": {"host": url},
        "mlflow": {"host": url, "experimentId": "1"},
        "langfuse": {"publicKey": "pk", "secretKey": "sk", "host": url},
        "langsmith": {"apiKey": "k", "endpoint": url},
        "helicone": {"apiKey": "k", "endpoint": url, "apiUrl": url},
        "datadog": {"apiKey": "k", "mlApp": "app", "endpoint": url},
        "weave": {"apiKey": "k", "projectId": "a/b", "host": url},
        "webhook": {"url": url + "/hook"},
    }[platform]


def make_exporter(
    platform: str,
    config: dict[str, Any],
    client: httpx.Client,
    *,
    tags: tuple[str, ...] = ("tracerelay",),
    metadata_mapping: dict[str, Any] | None = None,
    timeout_s: float = 5.0,
    name: str = "dest",
) -> Exporter:
    cls = exporter_class(platform)
    cleaned = cls.validate_config(config)
    target = Target(
        platform=cls.platform,
        name=name,
        config=cleaned,
        tags=tags,
        metadata_mapping=DEFAULT_MAPPING if metadata_mapping is None else metadata_mapping,
        timeout_s=timeout_s,
    )
    return cls(target, client)


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client() as client:
        yield client


@pytest.fixture(autouse=True)
def _fresh_url_verdicts() -> Iterator[None]:
    urlguard.forget_resolutions()
    yield
    urlguard.forget_resolutions()
