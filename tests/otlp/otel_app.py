"""An ordinary OpenTelemetry-instrumented app, run as its own process by tests/otlp/test_real_sdks.py.

    python otel_app.py <instrumentation> <encoding> <tracerelay url> <api key> <openai base url>

<instrumentation>: `openai-v2` (opentelemetry-instrumentation-openai-v2), `openinference`
(openinference-instrumentation-openai) or `openllmetry` (opentelemetry-instrumentation-openai).
<encoding>: `protobuf` exports with the SDK's own OTLP/HTTP exporter; `json` (the Python SDK has
no JSON exporter) encodes the SDK's finished spans with the SDK's own OTLP encoder and posts them
as OTLP JSON, as the Node SDK's JSON exporter does.

The app makes one plain and one streamed chat completion with the real `openai` SDK, flushes,
and prints one JSON line: the export results and the spans' ids.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import urllib.request
from collections.abc import Sequence

INSTRUMENTATION, ENCODING, URL, KEY, OPENAI_BASE = sys.argv[1:6]
ENDPOINT = URL + "/api/v1/otlp/v1/traces"

if INSTRUMENTATION == "openai-v2":
    # Message content on the span itself (gen_ai.input/output.messages), as the current semconv has it.
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
if INSTRUMENTATION == "openllmetry":
    os.environ["TRACELOOP_TRACE_CONTENT"] = "true"

import openai  # noqa: E402
from google.protobuf import json_format  # noqa: E402
from opentelemetry import trace  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult  # noqa: E402

results: list[str] = []
span_ids: list[str] = []


class Recording(SpanExporter):
    """Exports with ``inner`` (or as OTLP JSON) and notes each result."""

    def __init__(self, inner: SpanExporter | None) -> None:
        self.inner = inner

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        span_ids.extend(format(s.context.span_id, "016x") for s in spans)
        result = self.inner.export(spans) if self.inner is not None else post_json(spans)
        results.append(result.name)
        return result

    def shutdown(self) -> None:
        if self.inner is not None:
            self.inner.shutdown()


def post_json(spans: Sequence[ReadableSpan]) -> SpanExportResult:
    data = json_format.MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for resource_spans in data["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:
                for name in ("traceId", "spanId", "parentSpanId"):
                    if name in span:
                        span[name] = base64.b64decode(span[name]).hex()
    request = urllib.request.Request(
        ENDPOINT,
        data=json.dumps(data).encode(),
        headers={"Content-Type": "application/json", "X-Service-Key": KEY},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        body = json.loads(response.read())
    return SpanExportResult.SUCCESS if response.status == 200 and not body else SpanExportResult.FAILURE


provider = TracerProvider(resource=Resource.create({"service.name": "otel-app", "deployment.environment.name": "ci"}))
inner = (
    OTLPSpanExporter(endpoint=ENDPOINT, headers={"Authorization": f"Bearer {KEY}"}) if ENCODING == "protobuf" else None
)
provider.add_span_processor(SimpleSpanProcessor(Recording(inner)))
trace.set_tracer_provider(provider)

if INSTRUMENTATION == "openai-v2":
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor as Instrumentor
elif INSTRUMENTATION == "openinference":
    from openinference.instrumentation.openai import OpenAIInstrumentor as Instrumentor  # type: ignore[no-redef]
else:
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor as Instrumentor  # type: ignore[no-redef]
Instrumentor().instrument(tracer_provider=provider)

client = openai.OpenAI(api_key="sk-test", base_url=OPENAI_BASE)
with trace.get_tracer("otel-app").start_as_current_span("handle request"):  # a non-LLM parent span
    client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Say hello to the tests."}]
    )
    stream = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "Stream a hello."}],
        stream=True,
        stream_options={"include_usage": True},
    )
    for _ in stream:
        pass
provider.shutdown()
print(json.dumps({"results": results, "span_ids": span_ids}))
