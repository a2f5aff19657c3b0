"""Span → trace item, per attribute convention (pure: no database)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from traces.normalize import TraceValidationError, normalize_trace
from traces.otlp.mapping import SpanRefused, span_to_item
from traces.otlp.spans import iter_spans

from .builders import START, export_request, llm_span, span

# Normalising prices every call: without a database, no team's own prices (tests/prices has those).
pytestmark = pytest.mark.usefixtures("no_team_prices")

MS = 1_000_000


def item_of(s: Any, resource: dict[str, Any] | None = None) -> dict[str, Any] | None:
    (plain,) = iter_spans(export_request(s, resource=resource))
    return span_to_item(plain)


# (attributes, expected fields of the item) per convention and naming generation.
CONVENTIONS = [
    pytest.param(
        {
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.response.model": "gpt-4o-2024-08-06",
            "gen_ai.usage.input_tokens": 100,
            "gen_ai.usage.output_tokens": 20,
        },
        {"model": "gpt-4o-2024-08-06", "provider": "openai", "prompt_tokens": 100, "completion_tokens": 20},
        id="genai-current",
    ),
    pytest.param(
        {
            "gen_ai.system": "anthropic",
            "gen_ai.request.model": "claude-3-5-sonnet-20241022",
            "gen_ai.usage.prompt_tokens": 30,
            "gen_ai.usage.completion_tokens": 4,
        },
        {"model": "claude-3-5-sonnet-20241022", "provider": "anthropic", "prompt_tokens": 30, "completion_tokens": 4},
        id="genai-older-names",
    ),
    pytest.param(
        {"gen_ai.system": "aws.bedrock", "gen_ai.request.model": "m", "gen_ai.usage.input_tokens": 1},
        {"provider": "aws", "prompt_tokens": 1},
        id="genai-provider-name-mapped-to-price-tables",
    ),
    pytest.param(
        {
            "openinference.span.kind": "LLM",
            "llm.model_name": "gpt-4o-mini",
            "llm.provider": "openai",
            "llm.system": "openai",
            "llm.token_count.prompt": 9,
            "llm.token_count.completion": 3,
            "llm.token_count.total": 12,
        },
        {"model": "gpt-4o-mini", "provider": "openai", "prompt_tokens": 9, "completion_tokens": 3},
        id="openinference",
    ),
    pytest.param(
        {
            "openinference.span.kind": "LLM",
            "llm.model_name": "gpt-4o",
            "llm.system": "openai",
            "llm.token_count.prompt": 9,
            "llm.token_count.total": 15,
        },  # fmt: skip
        {"provider": "openai", "prompt_tokens": 9, "total_tokens": 15},
        id="openinference-total-completes-a-missing-part",
    ),
    pytest.param(
        {
            "llm.request.type": "chat",
            "gen_ai.system": "openai",
            "gen_ai.request.model": "gpt-3.5-turbo",
            "llm.usage.prompt_tokens": 40,
            "llm.usage.completion_tokens": 2,
            "llm.usage.total_tokens": 42,
            "traceloop.workflow.name": "support",
        },
        {"model": "gpt-3.5-turbo", "prompt_tokens": 40, "completion_tokens": 2},
        id="openllmetry",
    ),
    pytest.param(
        {"gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 7.0, "gen_ai.usage.output_tokens": "3"},
        {"prompt_tokens": 7, "completion_tokens": 3},
        id="counts-as-float-or-digit-string",
    ),
    pytest.param(
        {
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "o3",
            "gen_ai.usage.input_tokens": 1000,
            "gen_ai.usage.output_tokens": 300,
            "gen_ai.usage.cache_read.input_tokens": 800,
            "gen_ai.usage.reasoning.output_tokens": 200,
        },
        {"prompt_tokens": 1000, "cached_tokens": 800, "reasoning_tokens": 200, "completion_tokens": 300},
        id="genai-usage-parts",
    ),
    pytest.param(
        {
            "gen_ai.system": "anthropic",
            "gen_ai.request.model": "claude-sonnet-4-5",
            "gen_ai.usage.input_tokens": 20,
            "gen_ai.usage.output_tokens": 5,
            "gen_ai.usage.cache_read_input_tokens": 300,
            "gen_ai.usage.cache_creation_input_tokens": 100,
        },
        # Anthropic's input_tokens passed on as they are: the cache parts are added back to the prompt.
        {"prompt_tokens": 420, "cached_tokens": 300, "cache_write_tokens": 100},
        id="openllmetry-anthropic-cache-parts",
    ),
    pytest.param(
        {
            "openinference.span.kind": "LLM",
            "llm.model_name": "gpt-4o-audio-preview",
            "llm.token_count.prompt": 500,
            "llm.token_count.completion": 60,
            "llm.token_count.prompt_details.cache_read": 100,
            "llm.token_count.prompt_details.cache_write": 50,
            "llm.token_count.prompt_details.audio": 200,
            "llm.token_count.completion_details.reasoning": 10,
            "llm.token_count.completion_details.audio": 40,
        },
        {
            "prompt_tokens": 500,
            "cached_tokens": 100,
            "cache_write_tokens": 50,
            "input_audio_tokens": 200,
            "reasoning_tokens": 10,
            "output_audio_tokens": 40,
        },
        id="openinference-usage-parts",
    ),
]


@pytest.mark.parametrize("attrs, expected", CONVENTIONS)
def test_it_maps_each_convention(attrs: dict[str, Any], expected: dict[str, Any]) -> None:
    item = item_of(span(attrs))
    assert item is not None
    for field, value in expected.items():
        assert item[field] == value, field
    assert "total_tokens" in item or "total_tokens" not in expected


def test_usage_parts_are_not_repeated_in_metadata_and_odd_ones_are_kept_within_bounds() -> None:
    attrs = {
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 2,
        "gen_ai.usage.reasoning_tokens": 50,
        "llm.token_count.prompt_details.audio": 40,
    }
    item = item_of(span(attrs))
    assert item is not None
    assert not any("token" in key for key in item["metadata"])
    record = normalize_trace(item, team_id=1, source="otlp")
    assert (record.reasoning_tokens, record.input_audio_tokens) == (2, 10)


def test_what_our_otlp_exporter_sends_comes_back_whole() -> None:
    """The GenAI conventions' usage breakdown (integrations.exporters.otlp_encoding.GENAI_USAGE_PARTS)."""
    from integrations.exporters.otlp_encoding import GENAI_USAGE_PARTS

    parts = {"cached_tokens": 300, "cache_write_tokens": 50, "input_audio_tokens": 40, "input_image_tokens": 30,
             "reasoning_tokens": 20, "output_audio_tokens": 10, "output_image_tokens": 5}  # fmt: skip
    attrs = {
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.usage.input_tokens": 1000,
        "gen_ai.usage.output_tokens": 100,
        **{GENAI_USAGE_PARTS[name]: value for name, value in parts.items()},
    }
    item = item_of(span(attrs))
    assert item is not None
    record = normalize_trace(item, team_id=1, source="otlp")
    assert {name: getattr(record, name) for name in parts} == parts


PROMPTS = [
    pytest.param(
        {
            "gen_ai.input.messages": orjson.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": "Hi?"}]}]
            ).decode(),
            "gen_ai.output.messages": orjson.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": "Hello."}], "finish_reason": "stop"}]
            ).decode(),
            "gen_ai.system_instructions": orjson.dumps([{"type": "text", "content": "Be brief."}]).decode(),
        },
        [],
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}],
        {"role": "assistant", "content": "Hello.", "finish_reason": "stop"},
        id="genai-messages-attributes",
    ),
    pytest.param(
        {},
        [
            (
                "gen_ai.client.inference.operation.details",
                START,
                {
                    "gen_ai.input.messages": [{"role": "user", "parts": [{"type": "text", "content": "Q"}]}],
                    "gen_ai.output.messages": [{"role": "assistant", "parts": [{"type": "text", "content": "A"}]}],
                },
            ),
        ],  # fmt: skip
        [{"role": "user", "content": "Q"}],
        {"role": "assistant", "content": "A"},
        id="genai-details-event",
    ),
    pytest.param(
        {
            "gen_ai.prompt.0.role": "system",
            "gen_ai.prompt.0.content": "Be brief.",
            "gen_ai.prompt.1.role": "user",
            "gen_ai.prompt.1.content": "Hi?",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": "Hello.",
            "gen_ai.completion.0.finish_reason": "stop",
        },
        [],
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}],
        {"role": "assistant", "content": "Hello.", "finish_reason": "stop"},
        id="flattened-gen_ai.prompt.N",
    ),
    pytest.param(
        {
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": "Hi?",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.contents.0.message_content.type": "text",
            "llm.output_messages.0.message.contents.0.message_content.text": "Hello.",
            "input.value": '{"messages": []}',
            "input.mime_type": "application/json",
        },
        [],
        [{"role": "user", "content": "Hi?"}],
        {"role": "assistant", "content": "Hello."},
        id="openinference-messages",
    ),
    pytest.param(
        {"input.value": '{"q": 1}', "input.mime_type": "application/json", "output.value": "plain answer"},
        [],
        {"q": 1},
        "plain answer",
        id="openinference-input-output-value",
    ),
    pytest.param(
        {},
        [
            ("gen_ai.system.message", START, {"content": "Be brief."}),
            ("gen_ai.user.message", START, {"content": "Hi?"}),
            (
                "gen_ai.choice",
                START + MS,
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Hello."}},
            ),
        ],  # fmt: skip
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}],
        {"role": "assistant", "content": "Hello.", "finish_reason": "stop"},
        id="genai-message-events",
    ),
    pytest.param(
        {},
        [
            ("gen_ai.content.prompt", START, {"gen_ai.prompt": '[{"role": "user", "content": "Hi?"}]'}),
            ("gen_ai.content.completion", START, {"gen_ai.completion": '[{"role": "assistant", "content": "Yo"}]'}),
        ],
        [{"role": "user", "content": "Hi?"}],
        {"role": "assistant", "content": "Yo"},
        id="genai-content-events",
    ),
    pytest.param(
        {"traceloop.entity.input": "in", "traceloop.entity.output": "out"},
        [],
        "in",
        "out",
        id="traceloop-entity",
    ),
]


@pytest.mark.parametrize("attrs, events, prompt, reply", PROMPTS)
def test_it_finds_prompts_and_replies(attrs: dict[str, Any], events: list[Any], prompt: Any, reply: Any) -> None:
    item = item_of(span({"gen_ai.request.model": "gpt-4o", **attrs}, events=events))
    assert item is not None
    assert item["input"] == prompt
    assert item["output"] == reply
    assert not any(k.startswith(("gen_ai.input", "gen_ai.prompt", "llm.input", "input.")) for k in item["metadata"])


KINDS = [
    # GenAI semantic conventions: gen_ai.operation.name
    ({"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}, "llm"),
    ({"gen_ai.operation.name": "text_completion", "gen_ai.request.model": "gpt-3.5-turbo-instruct"}, "llm"),
    ({"gen_ai.operation.name": "generate_content", "gen_ai.request.model": "gemini-2.0-flash"}, "llm"),
    ({"gen_ai.operation.name": "embeddings", "gen_ai.request.model": "text-embedding-3-small"}, "embedding"),
    ({"gen_ai.operation.name": "invoke_agent", "gen_ai.request.model": "gpt-4o"}, "agent"),
    ({"gen_ai.operation.name": "create_agent", "gen_ai.agent.name": "Math Tutor"}, "agent"),
    ({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather"}, "tool"),
    ({"gen_ai.operation.name": "invoke_workflow"}, "workflow"),
    ({"gen_ai.operation.name": "retrieval", "gen_ai.data_source.id": "H7STPQYOND"}, "retrieval"),
    ({"gen_ai.operation.name": "search_memory"}, "retrieval"),
    ({"gen_ai.operation.name": "plan"}, "chain"),
    # OpenInference: openinference.span.kind
    ({"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o"}, "llm"),
    ({"openinference.span.kind": "EMBEDDING", "embedding.model_name": "e5"}, "embedding"),
    ({"openinference.span.kind": "CHAIN", "llm.model_name": "gpt-4o"}, "chain"),
    ({"openinference.span.kind": "TOOL"}, "tool"),
    ({"openinference.span.kind": "AGENT"}, "agent"),
    ({"openinference.span.kind": "RETRIEVER"}, "retrieval"),
    ({"openinference.span.kind": "RERANKER"}, "retrieval"),
    ({"openinference.span.kind": "GUARDRAIL"}, "guardrail"),
    ({"openinference.span.kind": "EVALUATOR"}, "other"),
    ({"openinference.span.kind": "UNKNOWN"}, "other"),
    # OpenLLMetry / Traceloop: traceloop.span.kind, and llm.request.type on its call spans
    ({"traceloop.span.kind": "workflow", "gen_ai.request.model": "gpt-4o"}, "workflow"),
    ({"traceloop.span.kind": "task"}, "chain"),
    ({"traceloop.span.kind": "agent"}, "agent"),
    ({"traceloop.span.kind": "tool"}, "tool"),
    ({"llm.request.type": "chat", "gen_ai.request.model": "gpt-4o"}, "llm"),
    ({"llm.request.type": "embedding", "gen_ai.request.model": "text-embedding-3-small"}, "embedding"),
    ({"llm.request.type": "rerank", "gen_ai.request.model": "rerank-v3.5"}, "retrieval"),
    # no known kind: a call when it names a model, else other
    ({"gen_ai.request.model": "gpt-4o", "gen_ai.operation.name": "my_custom_op"}, "llm"),
    ({"http.request.method": "GET", "http.route": "/orders"}, "other"),
    ({"db.system.name": "postgresql", "traceloop.span.kind": "something_new"}, "other"),
]


@pytest.mark.parametrize("attrs, kind", KINDS, ids=[f"{k}-{i}" for i, (_, k) in enumerate(KINDS)])
def test_every_span_is_kept_with_the_kind_of_its_convention(attrs: dict[str, Any], kind: str) -> None:
    item = item_of(span(attrs, name="the span's name"))
    assert item is not None
    assert (item["kind"], item["name"]) == (kind, "the span's name")
    normalize_trace(item, team_id=1)  # every kind passes the REST API's rules


@pytest.mark.parametrize(
    "attrs",
    [
        pytest.param({"gen_ai.operation.name": "invoke_agent", "gen_ai.request.model": "gpt-4o"}, id="genai-agent"),
        pytest.param({"openinference.span.kind": "CHAIN", "llm.model_name": "gpt-4o"}, id="openinference-chain"),
        pytest.param({"traceloop.span.kind": "workflow", "gen_ai.request.model": "gpt-4o"}, id="traceloop-workflow"),
    ],
)
def test_a_wrappers_usage_stays_in_its_metadata_and_is_never_priced(attrs: dict[str, Any]) -> None:
    usage = {"gen_ai.usage.input_tokens": 500, "gen_ai.usage.output_tokens": 90, "llm.token_count.total": 590}
    item = item_of(span({**attrs, **usage}))
    assert item is not None and item["kind"] not in ("llm", "embedding")
    assert item["model"] == "gpt-4o"  # shown on the span, not priced
    assert not {"prompt_tokens", "completion_tokens", "total_tokens"} & set(item)
    assert {k: item["metadata"][k] for k in usage} == usage
    record = normalize_trace(item, team_id=1)
    assert (record.prompt_tokens, record.completion_tokens, record.cost, record.unpriced) == (0, 0, None, False)


def test_a_call_naming_no_model_is_kept_as_an_unknown_model() -> None:
    item = item_of(span({"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 3}))
    assert item is not None and (item["kind"], item["model"], item["prompt_tokens"]) == ("llm", "unknown", 3)
    assert normalize_trace(item, team_id=1).unpriced


def test_the_run_fields_come_from_the_span_ids() -> None:
    run, root_id = bytes.fromhex("0af7651916cd43dd8448eb211c80319c"), bytes.fromhex("00f067aa0ba902b7")
    root = span({"gen_ai.operation.name": "invoke_agent"}, name="invoke_agent triage", trace_id=run, span_id=root_id)
    child = llm_span(trace_id=root.trace_id, span_id=bytes.fromhex("b7ad6b7169203331"), parent_span_id=root.span_id)
    root_item, child_item = item_of(root), item_of(child)
    assert root_item is not None and child_item is not None
    assert root_item["run_id"] == child_item["run_id"] == "0af7651916cd43dd8448eb211c80319c"
    assert root_item["parent_id"] is None and root_item["name"] == "invoke_agent triage"
    assert child_item["parent_id"] == root_item["id"] == "otel-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7"
    record = normalize_trace(child_item, team_id=1)
    assert (record.run_id, record.parent_id, record.kind) == (child_item["run_id"], root_item["id"], "llm")


def test_a_long_span_name_is_cut_to_the_column() -> None:
    item = item_of(span({}, name="n" * 500))
    assert item is not None and len(item["name"]) == 200
    normalize_trace(item, team_id=1)


def test_a_tool_spans_arguments_and_result_are_its_input_and_output() -> None:
    attrs = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.call.arguments": '{"location": "Paris"}',
        "gen_ai.tool.call.result": '{"sky": "rainy", "temperature_f": 57}',
    }
    item = item_of(span(attrs, name="execute_tool get_weather"))
    assert item is not None and item["kind"] == "tool"
    assert (item["input"], item["output"]) == ({"location": "Paris"}, {"sky": "rainy", "temperature_f": 57})
    assert item["metadata"]["gen_ai.tool.name"] == "get_weather"
    assert "gen_ai.tool.call.arguments" not in item["metadata"]


def test_it_derives_id_timing_and_context() -> None:
    s = llm_span(
        trace_id=bytes.fromhex("0af7651916cd43dd8448eb211c80319c"),
        span_id=bytes.fromhex("b7ad6b7169203331"),
        parent_span_id=bytes.fromhex("00f067aa0ba902b7"),
        duration_ms=1234.5,
        attrs={"session.id": "s-1", "user.id": "u-1", "gen_ai.response.time_to_first_chunk": 0.25, "x.custom": 5},
    )
    item = item_of(s, resource={"deployment.environment.name": "staging", "service.name": "api"})
    assert item is not None
    assert item["id"] == "otel-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331"
    assert item["timestamp"].startswith("2026-01-01T00:00:00")
    assert item["latency_ms"] == 1234.5
    assert item["time_to_first_token_ms"] == 250
    assert (item["service_name"], item["environment"], item["session_id"], item["user_id"]) == (
        "api",
        "staging",
        "s-1",
        "u-1",
    )
    meta = item["metadata"]
    assert meta["otel.trace_id"] == "0af7651916cd43dd8448eb211c80319c"
    assert meta["otel.span_id"] == "b7ad6b7169203331"
    assert meta["otel.parent_span_id"] == "00f067aa0ba902b7"
    assert meta["x.custom"] == 5
    assert "gen_ai.usage.input_tokens" not in meta  # mapped, not repeated


def test_it_takes_ttft_from_openinference_first_token_event() -> None:
    s = llm_span(events=[("First Token Stream Event", START + 180 * MS, {})])
    assert item_of(s)["time_to_first_token_ms"] == 180  # type: ignore[index]


def test_it_uses_the_conversation_id_and_older_environment_name() -> None:
    item = item_of(llm_span(attrs={"gen_ai.conversation.id": "conv-9"}), resource={"deployment.environment": "qa"})
    assert item is not None and item["session_id"] == "conv-9" and item["environment"] == "qa"


@pytest.mark.parametrize(
    "status, attrs, events, expected_status, expected_type",
    [
        (2, {}, [("exception", START, {"exception.type": "ValueError", "exception.message": "bad"})], "error",
         "ValueError"),
        (2, {"error.type": "openai.RateLimitError"}, [], "rate_limited", "openai.RateLimitError"),
        (0, {"error.type": "429"}, [], "rate_limited", "429"),
        (2, {"error.type": "500", "http.response.status_code": 500}, [], "error", "500"),
        (0, {}, [], None, None),
    ],
)  # fmt: skip
def test_it_maps_errors(status: int, attrs: Any, events: Any, expected_status: Any, expected_type: Any) -> None:
    item = item_of(llm_span(status=status, status_message="boom" if status else "", attrs=attrs, events=events))
    assert item is not None
    assert item.get("status") == expected_status
    if expected_type is not None:
        assert item["error"]["type"] == expected_type


def test_it_bounds_metadata_to_the_trace_limits() -> None:
    many = {f"attr.{i}": "v" * 5000 for i in range(200)}
    item = item_of(llm_span(attrs=many))
    assert item is not None
    record = normalize_trace(item, team_id=1)  # passes the REST API's limits
    assert len(record.metadata) <= 64
    assert record.metadata["otel.dropped_attributes"] > 0
    assert all(len(v) <= 2000 for v in record.metadata.values() if isinstance(v, str))


def test_it_cuts_over_long_context_fields_rather_than_losing_the_call() -> None:
    item = item_of(llm_span(attrs={"session.id": "s" * 500}))
    assert item is not None and len(item["session_id"]) == 200
    normalize_trace(item, team_id=1)


def test_it_refuses_a_span_with_invalid_ids() -> None:
    with pytest.raises(SpanRefused):
        item_of(llm_span(trace_id=b"\x00" * 16))
    with pytest.raises(SpanRefused):
        item_of(llm_span(span_id=b"\x01\x02"))


def test_the_largest_start_time_maps_and_is_refused_as_out_of_range() -> None:
    item = item_of(llm_span(start=2**64 - 10**12, duration_ms=0.5))
    assert item is not None and item["timestamp"].startswith("2554")
    with pytest.raises(TraceValidationError) as caught:
        normalize_trace(item, team_id=1)
    assert "timestamp" in caught.value.errors


def test_a_span_ending_before_it_starts_is_refused_by_validation() -> None:
    item = item_of(llm_span(duration_ms=-5))
    assert item is not None
    with pytest.raises(TraceValidationError) as caught:
        normalize_trace(item, team_id=1)
    assert "latency_ms" in caught.value.errors


def test_text_parts_are_joined_and_other_parts_kept() -> None:
    texts = [{"type": "text", "content": "Hello, "}, {"type": "text", "content": "world"}]
    mixed = [{"type": "text", "content": "What is this?"}, {"type": "uri", "modality": "image", "uri": "https://x/y"}]
    messages = [{"role": "user", "parts": texts}, {"role": "user", "parts": mixed}]
    item = item_of(span({"gen_ai.request.model": "gpt-4o", "gen_ai.input.messages": orjson.dumps(messages).decode()}))
    assert item is not None
    assert item["input"] == [{"role": "user", "content": "Hello, world"}, {"role": "user", "content": mixed}]
