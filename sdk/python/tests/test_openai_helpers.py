"""openai's helpers: `chat.completions.stream()` (the streaming helper with its events) and the
structured-output `parse()` of chat completions and responses, sync and async: one trace each."""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest
import tracerelay
from fake_transport import FakeTransport, start_sdk

from tests.proxy.fake_upstream import CHAT_WORDS, FakeUpstream

MESSAGES = [{"role": "user", "content": "Say hello"}]
REPLY = "".join(CHAT_WORDS)
JSON_FORMAT = {"type": "json_object"}


@pytest.fixture
def client(upstream: FakeUpstream) -> openai.OpenAI:
    return openai.OpenAI(base_url=upstream.url + "/v1", api_key="sk-test", max_retries=0)


@pytest.fixture
def aclient(upstream: FakeUpstream) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=upstream.url + "/v1", api_key="sk-test", max_retries=0)


def traces(transport: FakeTransport) -> list[dict[str, Any]]:
    assert tracerelay.flush(timeout=5)
    return transport.traces


def test_the_streaming_helper_is_one_trace_with_usage(transport: FakeTransport, client: openai.OpenAI) -> None:
    start_sdk(transport)
    with client.chat.completions.stream(model="gpt-4o-mini", messages=MESSAGES) as stream:
        deltas = [e.delta for e in stream if e.type == "content.delta"]
        final = stream.get_final_completion()
    assert "".join(deltas) == REPLY and final.choices[0].message.content == REPLY
    (trace,) = traces(transport)
    assert trace["output"]["content"] == REPLY and trace["provider"] == "openai"
    assert trace["completion_tokens"] == len(CHAT_WORDS) and trace["prompt_tokens"] > 0
    assert trace["metadata"]["sdk"]["stream"] is True and 0 < trace["time_to_first_token_ms"] <= trace["latency_ms"]


def test_the_async_streaming_helper_is_one_trace(transport: FakeTransport, aclient: openai.AsyncOpenAI) -> None:
    start_sdk(transport)

    async def run() -> str:
        async with aclient.chat.completions.stream(model="gpt-4o-mini", messages=MESSAGES) as stream:
            async for _ in stream:
                pass
            final = await stream.get_final_completion()
        return final.choices[0].message.content or ""

    assert asyncio.run(run()) == REPLY
    (trace,) = traces(transport)
    assert trace["output"]["content"] == REPLY and trace["completion_tokens"] == len(CHAT_WORDS)


def test_chat_parse_is_one_trace(transport: FakeTransport, client: openai.OpenAI) -> None:
    start_sdk(transport)
    parsed = client.chat.completions.parse(model="gpt-4o-mini", messages=MESSAGES, response_format=JSON_FORMAT)
    assert parsed.choices[0].message.content == REPLY
    (trace,) = traces(transport)
    assert trace["input"]["response_format"] == JSON_FORMAT and trace["output"]["content"] == REPLY
    assert (trace["prompt_tokens"], trace["completion_tokens"]) == (
        parsed.usage.prompt_tokens,  # type: ignore[union-attr]
        parsed.usage.completion_tokens,  # type: ignore[union-attr]
    )
    assert trace["metadata"]["sdk"]["stream"] is False


def test_async_chat_parse_is_one_trace(transport: FakeTransport, aclient: openai.AsyncOpenAI) -> None:
    start_sdk(transport)
    parsed = asyncio.run(
        aclient.chat.completions.parse(model="gpt-4o-mini", messages=MESSAGES, response_format=JSON_FORMAT)
    )
    (trace,) = traces(transport)
    assert trace["output"]["content"] == REPLY and trace["completion_tokens"] == parsed.usage.completion_tokens  # type: ignore[union-attr]


def test_responses_parse_is_one_trace(transport: FakeTransport, client: openai.OpenAI) -> None:
    start_sdk(transport)
    response = client.responses.parse(model="gpt-4o-mini", input="Say hello")
    (trace,) = traces(transport)
    assert trace["metadata"]["sdk"]["endpoint"] == "responses" and trace["input"]["input"] == "Say hello"
    assert trace["completion_tokens"] == response.usage.output_tokens  # type: ignore[union-attr]


def test_a_failed_parse_is_one_trace_with_its_error(transport: FakeTransport, client: openai.OpenAI) -> None:
    start_sdk(transport)
    with pytest.raises(openai.RateLimitError):
        client.chat.completions.parse(model="error-429", messages=MESSAGES, response_format=JSON_FORMAT)
    (trace,) = traces(transport)
    assert trace["status"] == "rate_limited" and trace["error"]["type"] == "RateLimitError"
