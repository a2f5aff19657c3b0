"""The real `google-genai` SDK against a fake Gemini API on loopback, instrumented by ours: sync and
async, streamed and not, embeddings, errors; tokens from `usage_metadata`."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
import tracerelay
from fake_gemini import MODEL_VERSION, PROMPT_TOKENS, WORDS, FakeGemini
from fake_transport import FakeTransport, start_sdk
from tracerelay import instrument

genai = pytest.importorskip("google.genai")
from google.genai import errors  # noqa: E402

REPLY = "".join(WORDS)


@pytest.fixture(scope="module")
def gemini() -> Iterator[FakeGemini]:
    fake = FakeGemini()
    yield fake
    fake.stop()


@pytest.fixture
def client(gemini: FakeGemini) -> Any:
    return genai.Client(api_key="gm-test", http_options={"base_url": gemini.url, "retry_options": {"attempts": 1}})


def traces(transport: FakeTransport) -> list[dict[str, Any]]:
    assert tracerelay.flush(timeout=5)
    return transport.traces


def test_generate_content_is_one_trace_with_prompt_reply_and_usage(transport: FakeTransport, client: Any) -> None:
    start_sdk(transport, service_name="bot")
    reply = client.models.generate_content(model="gemini-2.0-flash", contents="Say hello")
    assert reply.text == REPLY
    (trace,) = traces(transport)
    assert (trace["provider"], trace["model"]) == ("google", MODEL_VERSION)
    assert trace["input"] == {"model": "gemini-2.0-flash", "contents": "Say hello"}
    assert trace["output"] == {"role": "model", "content": REPLY, "finish_reason": "STOP"}
    # thinking tokens are billed as output
    assert (trace["prompt_tokens"], trace["completion_tokens"]) == (PROMPT_TOKENS, len(WORDS) + 2)
    assert "time_to_first_token_ms" not in trace and trace["metadata"]["sdk"]["stream"] is False


def test_a_stream_is_one_trace_and_the_app_gets_every_chunk(transport: FakeTransport, client: Any) -> None:
    start_sdk(transport)
    chunks = [c.text for c in client.models.generate_content_stream(model="gemini-2.0-flash", contents="Say hello")]
    assert chunks == WORDS
    (trace,) = traces(transport)
    assert trace["output"]["content"] == REPLY and trace["completion_tokens"] == len(WORDS) + 2
    assert trace["metadata"]["sdk"]["stream"] is True and 0 < trace["time_to_first_token_ms"] <= trace["latency_ms"]


def test_async_calls_streamed_and_not(transport: FakeTransport, client: Any) -> None:
    start_sdk(transport)

    async def run() -> tuple[str, list[str]]:
        one = await client.aio.models.generate_content(model="gemini-2.0-flash", contents="hi")
        stream = await client.aio.models.generate_content_stream(model="gemini-2.0-flash", contents="hi")
        return one.text, [c.text async for c in stream]

    text, words = asyncio.run(run())
    assert text == REPLY and words == WORDS
    plain, streamed = sorted(traces(transport), key=lambda t: t["metadata"]["sdk"]["stream"])
    assert plain["output"]["content"] == streamed["output"]["content"] == REPLY
    assert plain["prompt_tokens"] == streamed["prompt_tokens"] == PROMPT_TOKENS
    assert "time_to_first_token_ms" in streamed


def test_embeddings_and_errors(transport: FakeTransport, client: Any) -> None:
    start_sdk(transport)
    result = client.models.embed_content(model="text-embedding-004", contents=["a", "b"])
    assert len(result.embeddings) == 2
    with pytest.raises(errors.ClientError):
        client.models.generate_content(model="error-429", contents="hi")
    embedded, failed = traces(transport)
    assert embedded["output"] == {"embeddings": 2, "dimensions": 3} and "prompt_tokens" not in embedded
    assert embedded["metadata"]["sdk"]["endpoint"] == "embeddings"
    assert failed["model"] == "error-429" and failed["error"]["type"] == "ClientError"


def test_installed_methods_and_uninstall_restores_them(transport: FakeTransport, client: Any) -> None:
    start_sdk(transport)
    assert "Models.generate_content" in instrument.installed()["google.genai.models"]
    instrument.uninstall()
    client.models.generate_content(model="gemini-2.0-flash", contents="hi")
    assert traces(transport) == []
