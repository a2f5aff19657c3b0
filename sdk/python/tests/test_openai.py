"""The real `openai` SDK against a fake upstream on loopback, instrumented by ours."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import openai
import pytest
import tracerelay
from fake_transport import FakeTransport, start_sdk
from tracerelay import instrument
from tracerelay._ids import sample_point

from tests.proxy.fake_upstream import CHAT_WORDS, FakeUpstream

MESSAGES = [{"role": "user", "content": "Say hello"}]
REPLY = "".join(CHAT_WORDS)


@pytest.fixture
def client(upstream: FakeUpstream) -> openai.OpenAI:
    return openai.OpenAI(base_url=upstream.url + "/v1", api_key="sk-test", max_retries=0)


@pytest.fixture
def aclient(upstream: FakeUpstream) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=upstream.url + "/v1", api_key="sk-test", max_retries=0)


def traces(transport: FakeTransport) -> list[dict[str, Any]]:
    assert tracerelay.flush(timeout=5)
    return transport.traces


def test_a_chat_completion_is_one_trace_with_prompt_reply_and_usage(
    transport: FakeTransport, client: openai.OpenAI
) -> None:
    start_sdk(transport, service_name="bot", environment="dev")
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, temperature=0.2)
    assert reply.choices[0].message.content == REPLY
    (trace,) = traces(transport)
    assert trace["model"] == "gpt-4o-mini-2024-07-18" and trace["provider"] == "openai"
    assert trace["input"] == {"model": "gpt-4o-mini", "messages": MESSAGES, "temperature": 0.2}
    assert trace["output"] == {"role": "assistant", "content": REPLY}
    assert (trace["prompt_tokens"], trace["completion_tokens"]) == (
        reply.usage.prompt_tokens,  # type: ignore[union-attr]
        reply.usage.completion_tokens,  # type: ignore[union-attr]
    )
    assert trace["latency_ms"] > 0 and "time_to_first_token_ms" not in trace
    assert (trace["service_name"], trace["environment"]) == ("bot", "dev")
    assert trace["metadata"]["sdk"]["endpoint"] == "chat" and trace["timestamp"].endswith("+00:00")


def test_a_stream_gets_usage_and_the_app_sees_the_chunks_it_would_have(
    transport: FakeTransport, client: openai.OpenAI, upstream: FakeUpstream
) -> None:
    plain = [c.model_dump() for c in client.chat.completions.create(model="m", messages=MESSAGES, stream=True)]
    start_sdk(transport)
    upstream.clear()
    seen = [c.model_dump() for c in client.chat.completions.create(model="m", messages=MESSAGES, stream=True)]
    assert upstream.last().json()["stream_options"] == {"include_usage": True}  # asked for on the app's behalf
    assert len(seen) == len(plain) and all(c["choices"] for c in seen)  # ...and the usage chunk kept from it
    assert "".join(c["choices"][0]["delta"]["content"] or "" for c in seen) == REPLY
    (trace,) = traces(transport)
    assert trace["output"]["content"] == REPLY and trace["completion_tokens"] == len(CHAT_WORDS)
    assert trace["metadata"]["sdk"] == {**trace["metadata"]["sdk"], "stream": True, "usage_injected": True}
    assert 0 < trace["time_to_first_token_ms"] <= trace["latency_ms"]


def test_a_stream_that_asked_for_usage_itself_keeps_its_usage_chunk(
    transport: FakeTransport, client: openai.OpenAI
) -> None:
    start_sdk(transport)
    stream = client.chat.completions.create(
        model="m", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    assert chunks[-1].usage is not None and chunks[-1].choices == []
    (trace,) = traces(transport)
    assert trace["completion_tokens"] == len(CHAT_WORDS) and "usage_injected" not in trace["metadata"]["sdk"]


def test_inject_stream_usage_false_sends_the_request_unchanged(
    transport: FakeTransport, client: openai.OpenAI, upstream: FakeUpstream
) -> None:
    start_sdk(transport, inject_stream_usage=False)
    upstream.clear()
    list(client.chat.completions.create(model="m", messages=MESSAGES, stream=True))
    assert "stream_options" not in upstream.last().json()
    (trace,) = traces(transport)
    assert "prompt_tokens" not in trace  # the server estimates, and flags it


def test_a_stream_left_early_is_recorded_with_what_arrived(transport: FakeTransport, client: openai.OpenAI) -> None:
    start_sdk(transport)
    stream = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    for i, _ in enumerate(stream):
        if i == 2:
            break
    stream.close()
    del stream
    gc.collect()
    (trace,) = traces(transport)
    assert trace["output"]["content"] == CHAT_WORDS[0] + CHAT_WORDS[1]
    assert "error" not in trace


def test_async_calls_and_streams_are_traced(transport: FakeTransport, aclient: openai.AsyncOpenAI) -> None:
    start_sdk(transport)

    async def app() -> str:
        await aclient.chat.completions.create(model="a1", messages=MESSAGES)
        stream = await aclient.chat.completions.create(model="a2", messages=MESSAGES, stream=True)
        text = ""
        async for chunk in stream:
            text += chunk.choices[0].delta.content or ""
        await aclient.embeddings.create(model="text-embedding-3-small", input="hi")
        return text

    assert asyncio.run(app()) == REPLY
    by_model = {t["model"].split("-2024")[0]: t for t in traces(transport)}
    assert by_model["a1"]["output"]["content"] == REPLY
    assert by_model["a2"]["output"]["content"] == REPLY and by_model["a2"]["completion_tokens"] == len(CHAT_WORDS)
    assert by_model["text-embedding-3-small"]["output"] == {"embeddings": 1, "dimensions": 8}


def test_responses_streamed_and_not(transport: FakeTransport, client: openai.OpenAI) -> None:
    start_sdk(transport)
    client.responses.create(model="gpt-4.1", input="Capital of France?")
    events = list(client.responses.create(model="gpt-4.1", input="Capital of France?", stream=True))
    assert events[-1].type == "response.completed"
    plain, streamed = traces(transport)
    for trace in (plain, streamed):
        assert trace["output"][0]["content"][0]["text"] == "Paris is the capital of France."
        assert (trace["prompt_tokens"], trace["completion_tokens"]) == (12, 7)
        assert trace["input"]["input"] == "Capital of France?"
    assert "time_to_first_token_ms" in streamed and "time_to_first_token_ms" not in plain


def test_embeddings_record_counts_not_vectors(transport: FakeTransport, client: openai.OpenAI) -> None:
    start_sdk(transport)
    client.embeddings.create(model="text-embedding-3-small", input=["a", "b", "c"])
    (trace,) = traces(transport)
    assert trace["output"] == {"embeddings": 3, "dimensions": 8}
    assert (trace["prompt_tokens"], trace["completion_tokens"]) == (12, 0)


@pytest.mark.parametrize(
    ("model", "status", "error_type"),
    [("error-429", "rate_limited", "RateLimitError"), ("error-500", "error", "InternalServerError")],
)
def test_a_provider_error_is_raised_to_the_app_and_traced_with_its_type(
    transport: FakeTransport, client: openai.OpenAI, model: str, status: str, error_type: str
) -> None:
    start_sdk(transport)
    with pytest.raises(openai.APIStatusError):
        client.chat.completions.create(model=model, messages=MESSAGES)
    (trace,) = traces(transport)
    assert trace["status"] == status and trace["error"]["type"] == error_type
    assert (trace["prompt_tokens"], trace["completion_tokens"]) == (0, 0)
    assert trace["metadata"]["status_code"] == int(model[-3:])


def test_an_unreachable_provider_is_an_error_trace(transport: FakeTransport) -> None:
    start_sdk(transport)
    down = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k", max_retries=0)
    with pytest.raises(openai.APIConnectionError):
        down.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    (trace,) = traces(transport)
    assert trace["status"] == "error" and trace["error"]["type"] == "APIConnectionError"


def test_the_messages_list_is_captured_as_it_was_at_the_call(transport: FakeTransport, client: openai.OpenAI) -> None:
    start_sdk(transport, batch=True, flush_interval=60)
    history = list(MESSAGES)
    client.chat.completions.create(model="m", messages=history)
    history.append({"role": "assistant", "content": "later"})
    (trace,) = traces(transport)
    assert trace["input"]["messages"] == MESSAGES


def test_capture_content_false_sends_metrics_only(transport: FakeTransport, client: openai.OpenAI) -> None:
    start_sdk(transport, capture_content=False)
    client.chat.completions.create(model="m", messages=MESSAGES)
    (trace,) = traces(transport)
    assert "input" not in trace and "output" not in trace and trace["prompt_tokens"] > 0


def test_raw_response_calls_still_work(transport: FakeTransport, client: openai.OpenAI) -> None:
    start_sdk(transport)
    raw = client.chat.completions.with_raw_response.create(model="m", messages=MESSAGES)
    assert raw.parse().choices[0].message.content == REPLY
    (trace,) = traces(transport)
    assert trace["model"] == "m" and trace["provider"] == "openai"


def test_blocks_and_the_calls_inside_them_form_one_run(transport: FakeTransport, client: openai.OpenAI) -> None:
    start_sdk(transport)
    with tracerelay.trace("answer-question", kind="agent", user_id="u-7", tags=["rag"]) as outer:
        with tracerelay.trace("retrieve", kind="retrieval") as inner:
            client.embeddings.create(model="text-embedding-3-small", input="q")
        client.chat.completions.create(model="m", messages=MESSAGES)
        outer.set_output("done")
    by_name = {t["name"]: t for t in traces(transport)}
    root, child = by_name["answer-question"], by_name["retrieve"]
    embedding, chat = by_name["embeddings text-embedding-3-small"], by_name["chat m"]
    assert root["id"] == outer.id and child["id"] == inner.id and root["output"] == "done"
    assert (root["kind"], root["run_id"], root["parent_id"]) == ("agent", outer.id, None)
    assert (child["kind"], child["run_id"], child["parent_id"]) == ("retrieval", outer.id, outer.id)
    assert (embedding["kind"], embedding["run_id"], embedding["parent_id"]) == ("embedding", outer.id, inner.id)
    assert (chat["kind"], chat["run_id"], chat["parent_id"]) == ("llm", outer.id, outer.id)
    assert chat["model"] == "m-2024-07-18" and embedding["model"] == "text-embedding-3-small"
    assert {t["user_id"] for t in by_name.values()} == {"u-7"}
    assert all(t["tags"] == ["rag"] for t in by_name.values())
    # A block is no call: no fake model, provider or token counts (the server never prices or estimates it).
    for block in (root, child):
        assert not {"model", "provider", "prompt_tokens", "completion_tokens"} & set(block), block
        assert "session_id" not in block and "parent_id" not in block["metadata"]


def test_a_call_outside_any_block_is_a_run_of_its_own(transport: FakeTransport, client: openai.OpenAI) -> None:
    start_sdk(transport)
    client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    (trace,) = traces(transport)
    assert (trace["kind"], trace["name"]) == ("llm", "chat gpt-4o-mini")
    assert "run_id" not in trace and "parent_id" not in trace  # the server makes it a run of one


def test_concurrent_async_blocks_keep_their_own_runs(transport: FakeTransport, aclient: openai.AsyncOpenAI) -> None:
    start_sdk(transport)

    @tracerelay.trace("lookup", kind="tool")
    async def lookup(city: str) -> str:
        await aclient.chat.completions.create(model=f"m-{city}", messages=MESSAGES)
        return city.upper()

    async def handle(city: str) -> str:
        async with tracerelay.trace(f"request {city}", kind="workflow") as block:
            return await lookup(city) + block.run_id

    async def main() -> list[str]:
        return await asyncio.gather(handle("paris"), handle("oslo"))

    asyncio.run(main())
    sent = traces(transport)
    assert len(sent) == 6
    by_name = {t["name"]: t for t in sent}
    for city in ("paris", "oslo"):
        root, call = by_name[f"request {city}"], by_name[f"chat m-{city}"]
        (tool,) = [t for t in sent if t["kind"] == "tool" and t["run_id"] == root["id"]]
        assert root["parent_id"] is None and root["kind"] == "workflow"
        assert (tool["parent_id"], tool["output"]) == (root["id"], city.upper())
        assert tool["input"] == {"args": [city], "kwargs": {}}
        assert (call["run_id"], call["parent_id"]) == (root["id"], tool["id"])


def test_an_unknown_block_kind_is_sent_as_chain_and_said_once(
    transport: FakeTransport, caplog: pytest.LogCaptureFixture
) -> None:
    start_sdk(transport)
    for _ in range(3):
        with tracerelay.trace("step", kind="llm"):  # llm is a call's kind: a block names no model
            pass
    assert {t["kind"] for t in traces(transport)} == {"chain"}
    assert caplog.text.count("is not a block kind") == 1


def test_a_failing_block_is_an_error_span_without_tokens(transport: FakeTransport) -> None:
    start_sdk(transport)
    with pytest.raises(KeyError):
        with tracerelay.trace("parse", kind="tool"):
            raise KeyError("city")
    (trace,) = traces(transport)
    assert trace["status"] == "error" and trace["error"]["type"] == "KeyError"
    assert "prompt_tokens" not in trace and "model" not in trace


def test_sampling_keeps_or_drops_a_run_whole(transport: FakeTransport, client: openai.OpenAI) -> None:
    start_sdk(transport, sampling_rate=0.5)
    runs = []
    for i in range(40):
        with tracerelay.trace(f"run-{i}") as root:
            with tracerelay.trace("inner"):
                client.embeddings.create(model="e", input="q")
        runs.append(root.run_id)
    sent = traces(transport)
    kept = {r for r in runs if sample_point(r) < 0.5}
    assert 0 < len(kept) < 40
    assert {t["run_id"] for t in sent} == kept
    assert len(sent) == 3 * len(kept)  # every span of a kept run, none of a dropped one
    assert tracerelay.stats()["sampled_out"] == 3 * (40 - len(kept))


def test_a_call_through_the_tracerelay_proxy_is_left_to_it_and_names_its_run(
    transport: FakeTransport, upstream: FakeUpstream
) -> None:
    # The SDK's server is the fake upstream here: a client pointed at <server>/api/v1/proxy is proxied.
    start_sdk(transport, base_url=upstream.url)
    proxied = openai.OpenAI(base_url=upstream.url + "/api/v1/proxy", api_key="sk-test", max_retries=0)
    proxied.chat.completions.create(model="m", messages=MESSAGES)  # outside a block: no run headers
    outside = upstream.last().headers
    with tracerelay.trace("agent", kind="agent") as block:
        proxied.chat.completions.create(model="m", messages=MESSAGES, extra_headers={"X-Trace": "app's own"})
    inside = upstream.last().headers
    assert "x-service-run-id" not in outside and "x-service-parent-id" not in outside
    assert (inside["x-service-run-id"], inside["x-service-parent-id"]) == (block.run_id, block.id)
    assert inside["x-trace"] == "app's own"  # the application's own extra headers are kept
    assert upstream.last().path == "/api/v1/proxy/chat/completions"
    # Only the block is sent by the SDK: the proxy records the two calls itself.
    assert [t["name"] for t in traces(transport)] == ["agent"]


def test_uninstall_restores_the_original_methods(transport: FakeTransport) -> None:
    original = openai.resources.chat.completions.completions.Completions.create
    start_sdk(transport)
    assert openai.resources.chat.completions.completions.Completions.create is not original
    instrument.uninstall()
    assert openai.resources.chat.completions.completions.Completions.create is original
