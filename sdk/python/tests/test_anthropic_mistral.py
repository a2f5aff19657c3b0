"""The real `anthropic` and `mistralai` SDKs against the fake upstream, instrumented by ours."""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import pytest
import tracerelay
from fake_transport import FakeTransport, start_sdk
from mistralai.client import Mistral

from tests.proxy.fake_upstream import CHAT_WORDS, FakeUpstream

MESSAGES = [{"role": "user", "content": "Bonjour"}]
CLAUDE_REPLY = "Bonjour! How can I help?"


def traces(transport: FakeTransport) -> list[dict[str, Any]]:
    assert tracerelay.flush(timeout=5)
    return transport.traces


@pytest.fixture
def claude(upstream: FakeUpstream) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=upstream.url + "/anthropic", api_key="sk-ant", max_retries=0)


def test_a_message_is_one_trace_with_cache_tokens_counted_as_prompt(
    transport: FakeTransport, claude: anthropic.Anthropic
) -> None:
    start_sdk(transport)
    reply = claude.messages.create(model="claude-sonnet-4-5", max_tokens=64, messages=MESSAGES)
    assert reply.content[0].text == CLAUDE_REPLY  # type: ignore[union-attr]
    (trace,) = traces(transport)
    assert (trace["model"], trace["provider"]) == ("claude-sonnet-4-5", "anthropic")
    assert trace["output"] == {
        "role": "assistant",
        "content": [{"type": "text", "text": CLAUDE_REPLY}],
        "stop_reason": "end_turn",
    }
    assert (trace["prompt_tokens"], trace["completion_tokens"]) == (21 + 4, 9)
    assert trace["input"]["messages"] == MESSAGES and trace["input"]["max_tokens"] == 64


def test_a_streamed_message_is_rebuilt_with_its_usage(transport: FakeTransport, claude: anthropic.Anthropic) -> None:
    start_sdk(transport)
    events = list(claude.messages.create(model="claude-sonnet-4-5", max_tokens=64, messages=MESSAGES, stream=True))
    assert [e.type for e in events][0] == "message_start" and events[-1].type == "message_stop"
    (trace,) = traces(transport)
    assert trace["output"]["content"] == [{"type": "text", "text": CLAUDE_REPLY}]
    assert (trace["prompt_tokens"], trace["completion_tokens"]) == (25, 9)
    assert 0 < trace["time_to_first_token_ms"] <= trace["latency_ms"]


def test_async_messages_streamed_and_not(transport: FakeTransport, upstream: FakeUpstream) -> None:
    start_sdk(transport)

    async def app() -> None:
        client = anthropic.AsyncAnthropic(base_url=upstream.url + "/anthropic", api_key="k", max_retries=0)
        await client.messages.create(model="claude-a", max_tokens=8, messages=MESSAGES)
        stream = await client.messages.create(model="claude-b", max_tokens=8, messages=MESSAGES, stream=True)
        async for _ in stream:
            pass

    asyncio.run(app())
    by_model = {t["model"]: t for t in traces(transport)}
    assert by_model["claude-a"]["completion_tokens"] == by_model["claude-b"]["completion_tokens"] == 9
    assert "time_to_first_token_ms" in by_model["claude-b"]


def test_an_anthropic_429_is_rate_limited(transport: FakeTransport, claude: anthropic.Anthropic) -> None:
    start_sdk(transport)
    with pytest.raises(anthropic.RateLimitError):
        claude.messages.create(model="error-429", max_tokens=8, messages=MESSAGES)
    (trace,) = traces(transport)
    assert trace["status"] == "rate_limited" and trace["error"]["type"] == "RateLimitError"


@pytest.fixture
def mistral(upstream: FakeUpstream) -> Mistral:
    return Mistral(api_key="k", server_url=upstream.url)


def test_mistral_chat_streams_and_embeddings(transport: FakeTransport, mistral: Mistral) -> None:
    start_sdk(transport)
    reply = mistral.chat.complete(model="mistral-small-latest", messages=MESSAGES)
    assert reply.choices[0].message.content == "".join(CHAT_WORDS)
    text = "".join(e.data.choices[0].delta.content or "" for e in mistral.chat.stream(model="ms", messages=MESSAGES))
    assert text == "".join(CHAT_WORDS)
    mistral.embeddings.create(model="mistral-embed", inputs=["a", "b"])
    chat, stream, embed = traces(transport)
    assert {t["provider"] for t in (chat, stream, embed)} == {"mistral"}
    assert chat["output"]["content"] == stream["output"]["content"] == "".join(CHAT_WORDS)
    assert (chat["prompt_tokens"], chat["completion_tokens"]) == (reply.usage.prompt_tokens, len(CHAT_WORDS))
    assert "time_to_first_token_ms" in stream and stream["metadata"]["sdk"]["stream"] is True
    assert embed["output"] == {"embeddings": 2, "dimensions": 8} and embed["prompt_tokens"] == 8


def test_mistral_async(transport: FakeTransport, mistral: Mistral) -> None:
    start_sdk(transport)

    async def app() -> None:
        await mistral.chat.complete_async(model="ma", messages=MESSAGES)
        async for _ in await mistral.chat.stream_async(model="mb", messages=MESSAGES):
            pass
        await mistral.embeddings.create_async(model="me", inputs=["a"])

    asyncio.run(app())
    models = sorted(t["model"].split("-2024")[0] for t in traces(transport))
    assert models == ["ma", "mb", "me"]


def test_an_async_anthropic_call_through_the_tracerelay_proxy_names_its_run(
    transport: FakeTransport, upstream: FakeUpstream
) -> None:
    # The SDK's server is the fake upstream: a client pointed at <server>/api/v1/proxy/anthropic is proxied.
    start_sdk(transport, base_url=upstream.url)
    proxied = anthropic.AsyncAnthropic(base_url=upstream.url + "/api/v1/proxy/anthropic", api_key="sk", max_retries=0)

    async def run() -> str:
        async with tracerelay.trace("plan", kind="agent") as block:
            await proxied.messages.create(model="claude-sonnet-4-5", max_tokens=8, messages=MESSAGES)
            return block.id

    block_id = asyncio.run(run())
    sent = upstream.last()
    assert sent.path == "/api/v1/proxy/anthropic/v1/messages"
    assert (sent.headers["x-service-run-id"], sent.headers["x-service-parent-id"]) == (block_id, block_id)
    assert [t["name"] for t in traces(transport)] == ["plan"]  # the call is the proxy's to record
