"""Real OpenTelemetry SDK apps, instrumented by the real instrumentation libraries around the real
`openai` SDK (against a fake OpenAI on loopback), exporting to the endpoint of a live server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from traces.models import Trace

APP = Path(__file__).with_name("otel_app.py")
ROOT = APP.parent.parent.parent


def run_app(instrumentation: str, encoding: str, live_url: str, key: str, upstream: Any) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, str(APP), instrumentation, encoding, live_url, key, upstream.url + "/v1"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "instrumentation, encoding",
    [
        ("openai-v2", "protobuf"),
        ("openinference", "protobuf"),
        ("openllmetry", "protobuf"),
        ("openai-v2", "json"),
        ("openinference", "json"),
    ],
)
def test_an_instrumented_app_s_calls_become_traces(
    transactional_db, team, prod_key, live_url, otlp_upstream, instrumentation: str, encoding: str
) -> None:
    out = run_app(instrumentation, encoding, live_url, prod_key._raw, otlp_upstream)
    assert out["results"] and set(out["results"]) == {"SUCCESS"}
    spans = list(Trace.objects.filter(team=team).order_by("timestamp"))
    assert len(spans) == 3, [t.trace_id for t in spans]  # the app's own span and its two chat calls
    parent, plain, streamed = spans
    assert (parent.kind, parent.name, parent.parent_id, parent.cost) == ("other", "handle request", "", None)
    traces = [plain, streamed]
    for trace in traces:
        assert (trace.kind, trace.run_id, trace.parent_id) == ("llm", parent.run_id, parent.trace_id)
        assert trace.source == "otlp"
        assert trace.model.startswith("gpt-4o-mini")
        assert trace.provider == "openai"
        assert trace.service_name == "otel-app" and trace.environment == "ci"
        assert trace.prompt_tokens > 0 and trace.completion_tokens > 0
        assert trace.cost is not None and trace.cost > 0
        assert trace.latency_ms is not None and trace.status == "success"
        assert trace.metadata["otel.span_id"] in out["span_ids"]
        assert "otel.parent_span_id" in trace.metadata
    assert "Say hello to the tests." in json.dumps(plain.input)
    assert "Stream a hello." in json.dumps(streamed.input)
    assert "Hello there!" in json.dumps(plain.output)
    assert "Hello there!" in json.dumps(streamed.output)
    if instrumentation == "openinference":  # it marks the first streamed token with an event
        assert streamed.time_to_first_token_ms is not None and plain.time_to_first_token_ms is None
