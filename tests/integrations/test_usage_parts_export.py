"""Usage parts (cached, cache-write, reasoning, audio tokens) reach the destinations that have fields
for them, each in its own vocabulary; the fakes validate the wire format (issue 26)."""

from __future__ import annotations

import json

from tests.fakes import (
    FakeDatadog,
    FakeHelicone,
    FakeLangfuse,
    FakeLangSmith,
    FakeMlflow,
    FakeOtlpCollector,
    FakePhoenix,
    FakeWeave,
    FakeWebhookReceiver,
)

from .conftest import make_exporter, make_record

PARTS = {"prompt_tokens": 1000, "completion_tokens": 300, "total_tokens": 1300, "cached_tokens": 800,
         "cache_write_tokens": 100, "reasoning_tokens": 200, "input_audio_tokens": 50}  # fmt: skip


def test_the_webhook_carries_every_part(http) -> None:
    with FakeWebhookReceiver(secret="whsec_0123456789abcdef") as server:
        config = {"url": server.url + "/hook", "secret": "whsec_0123456789abcdef"}
        make_exporter("webhook", config, http).export([make_record(**PARTS)])
    assert server.problems == []
    (trace,) = server.requests[0].json()["traces"]
    assert (trace["cached_tokens"], trace["cache_write_tokens"], trace["reasoning_tokens"]) == (800, 100, 200)
    assert (trace["input_audio_tokens"], trace["output_audio_tokens"], trace["output_image_tokens"]) == (50, 0, 0)


def test_langfuse_gets_the_parts_taken_out_of_input_and_output(http) -> None:
    with FakeLangfuse(public_key="pk-lf-1", secret_key="sk-lf-1") as server:
        config = {"publicKey": "pk-lf-1", "secretKey": "sk-lf-1", "host": server.url}
        make_exporter("langfuse", config, http).export([make_record(**PARTS)])
    assert server.problems == []
    details = json.loads(server.spans[0].attributes["langfuse.observation.usage_details"])
    assert details == {
        "input": 1000 - 800 - 100 - 50,
        "input_cached_tokens": 800,
        "input_cache_creation": 100,
        "input_audio_tokens": 50,
        "output": 100,
        "output_reasoning_tokens": 200,
        "total": 1300,
    }


def test_phoenix_gets_openinference_token_count_details(http) -> None:
    with FakePhoenix() as server:
        make_exporter("phoenix", {"host": server.url, "projectName": "p"}, http).export([make_record(**PARTS)])
    assert server.problems == []
    a = server.spans[0].attributes
    assert a["llm.token_count.prompt_details.cache_read"] == 800
    assert a["llm.token_count.prompt_details.cache_write"] == 100
    assert a["llm.token_count.prompt_details.audio"] == 50
    assert a["llm.token_count.completion_details.reasoning"] == 200
    assert "llm.token_count.completion_details.audio" not in a  # none reported: none sent


def test_an_otlp_collector_gets_the_semantic_conventions_usage_breakdown(http) -> None:
    media = {**PARTS, "input_image_tokens": 40, "output_audio_tokens": 30, "output_image_tokens": 20}
    with FakeOtlpCollector() as server:
        records = [make_record(**media), make_record(trace_id="trc_plain")]
        make_exporter("otlp", {"endpoint": server.url}, http).export(records)
    assert server.problems == []
    a = server.spans[0].attributes
    assert a["gen_ai.usage.input_tokens"] == 1000
    assert a["gen_ai.usage.cache_read.input_tokens"] == 800
    assert a["gen_ai.usage.cache_creation.input_tokens"] == 100
    assert a["gen_ai.usage.reasoning.output_tokens"] == 200
    assert (a["gen_ai.usage.audio.input_tokens"], a["gen_ai.usage.image.input_tokens"]) == (50, 40)
    assert (a["gen_ai.usage.audio.output_tokens"], a["gen_ai.usage.image.output_tokens"]) == (30, 20)
    plain = server.spans[1].attributes
    assert not [k for k in plain if k.startswith("gen_ai.usage.") and k.count(".") > 2]  # none reported: none sent


def test_mlflow_gets_its_token_usage_with_the_cache_counts(http) -> None:
    embedding = make_record(model="text-embedding-3-small", input={"input": "hi"}, output=None, completion_tokens=0,
                            prompt_tokens=5, total_tokens=5, trace_id="trc_embed")  # fmt: skip
    with FakeMlflow(experiments=("3",)) as server:
        config = {"host": server.url, "experimentId": "3"}
        make_exporter("mlflow", config, http).export([make_record(**PARTS), embedding])
    assert server.problems == []
    call, embed = (json.loads(s.attributes["mlflow.chat.tokenUsage"]) for s in server.spans)
    assert call == {
        "input_tokens": 1000,
        "output_tokens": 300,
        "total_tokens": 1300,
        "cache_read_input_tokens": 800,
        "cache_creation_input_tokens": 100,
    }
    assert embed == {"input_tokens": 5, "output_tokens": 0, "total_tokens": 5}  # MLflow's own translation skips it
    assert server.spans[0].attributes["gen_ai.usage.cache_read.input_tokens"] == 800  # and the semconv, as any OTLP


def test_weave_gets_the_reasoning_tokens_where_it_reads_them(http) -> None:
    with FakeWeave(api_key="wb-key", project_id="acme/shop") as server:
        config = {"apiKey": "wb-key", "projectId": "acme/shop", "host": server.url}
        make_exporter("weave", config, http).export([make_record(**PARTS), make_record(trace_id="trc_plain")])
    assert server.problems == []
    reasoning, plain = (s.attributes for s in server.spans)
    assert reasoning["gen_ai.usage.reasoning_tokens"] == 200
    assert reasoning["gen_ai.usage.input_tokens"] == 1000
    assert "gen_ai.usage.reasoning_tokens" not in plain


def test_langsmith_gets_usage_metadata_token_details(http) -> None:
    with FakeLangSmith(api_key="lsv2-key") as server:
        config = {"apiKey": "lsv2-key", "projectId": "shop", "endpoint": server.url}
        make_exporter("langsmith", config, http).export([make_record(**PARTS)])
    assert server.problems == []
    usage = next(iter(server.runs.values()))["outputs"]["usage_metadata"]
    assert usage["input_token_details"] == {"cache_read": 800, "cache_creation": 100, "audio": 50}
    assert usage["output_token_details"] == {"reasoning": 200}


def test_datadog_gets_its_cache_and_reasoning_metrics(http) -> None:
    with FakeDatadog(api_key="dd-key") as server:
        config = {"apiKey": "dd-key", "mlApp": "shop-llm", "endpoint": server.url}
        make_exporter("datadog", config, http).export([make_record(**PARTS)])
    assert server.problems == []
    metrics = server.spans[0]["metrics"]
    assert (metrics["cache_read_input_tokens"], metrics["cache_write_input_tokens"]) == (800, 100)
    assert metrics["reasoning_output_tokens"] == 200


def test_helicone_gets_openai_usage_details(http) -> None:
    with FakeHelicone(api_key="sk-h") as server:
        make_exporter("helicone", {"apiKey": "sk-h", "endpoint": server.url}, http).export([make_record(**PARTS)])
    assert server.problems == []
    usage = next(iter(server.logs.values()))["providerResponse"]["json"]["usage"]
    assert usage["prompt_tokens_details"] == {"cached_tokens": 800, "audio_tokens": 50}
    assert usage["completion_tokens_details"] == {"reasoning_tokens": 200, "audio_tokens": 0}
