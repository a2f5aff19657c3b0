"""How free-form trace input/output becomes messages, and the metadata mapping."""

from __future__ import annotations

from integrations.exporters.calls import (
    Message,
    ToolCall,
    genai_provider,
    input_messages,
    mapped_metadata,
    output_messages,
)


def test_openai_chat_requests_and_responses() -> None:
    request = {"model": "gpt-4o", "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
    response = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
                },
                "finish_reason": "tool_calls",
            }
        ]
    }

    assert input_messages(request) == [Message(role="user", content="hi")]
    assert output_messages(response) == [
        Message(role="assistant", content="", tool_calls=(ToolCall("c1", "f", "{}"),), finish_reason="tool_calls")
    ]


def test_anthropic_requests_and_responses() -> None:
    request = {"system": "Be brief.", "messages": [{"role": "user", "content": "hi"}]}
    response = {
        "type": "message",
        "role": "assistant",
        "content": [
            {"type": "text", "text": "hello"},
            {"type": "tool_use", "id": "t1", "name": "g", "input": {"x": 1}},
        ],
        "stop_reason": "end_turn",
    }

    assert input_messages(request) == [Message("system", "Be brief."), Message("user", "hi")]
    assert output_messages(response) == [
        Message("assistant", "hello", tool_calls=(ToolCall("t1", "g", '{"x":1}'),), finish_reason="end_turn")
    ]


def test_plain_strings_lists_and_odd_json() -> None:
    assert input_messages("hello") == [Message("user", "hello")]
    assert output_messages("hi there") == [Message("assistant", "hi there", finish_reason="stop")]
    assert input_messages([{"role": "user", "content": "a"}, "b"]) == [Message("user", "a"), Message("user", "b")]
    assert input_messages({"query": "x"}) == [Message("user", '{"query":"x"}')]
    assert output_messages(42) == [Message("assistant", "42")]
    assert input_messages(None) == [] and output_messages(None) == []
    assert input_messages({"prompt": "complete me"}) == [Message("user", "complete me")]


def test_metadata_mapping_renames_drops_and_passes_through() -> None:
    metadata = {"customer": "acme", "secret_note": "x", "plan": "pro"}
    mapping = {"customer": "account", "secret_note": None}

    assert mapped_metadata(metadata, mapping) == {"account": "acme", "plan": "pro"}


def test_provider_names_map_to_genai_semconv_values() -> None:
    assert genai_provider("openai") == "openai"
    assert genai_provider("Azure") == "azure.ai.openai"
    assert genai_provider("bedrock") == "aws.bedrock"
    assert genai_provider("mistral") == "mistral_ai"
    assert genai_provider("my-vllm") == "my-vllm"
    assert genai_provider("") == "unknown"
