"""Chat completions through the proxy: plain, streamed, tool calls; bytes and traces."""

from __future__ import annotations

import json
from decimal import Decimal

import orjson

HELLO = [{"role": "user", "content": "Hi"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]


def test_it_forwards_a_chat_completion_byte_for_byte(http, direct, proxy, fake_upstream, prod_key):
    # Odd spacing on purpose: the proxy must not re-serialise what it does not change.
    body = b'{"model": "gpt-4o-mini",   "messages": [{"role": "user", "content": "Hi"}]}'
    expected = direct.post("/v1/chat/completions", content=body, headers={"content-type": "application/json"})
    fake_upstream.clear()

    response = http.post(
        "/chat/completions",
        content=body,
        headers={"content-type": "application/json", "authorization": "Bearer sk-client"},
    )

    assert response.status_code == 200
    assert response.content == expected.content
    assert response.headers["content-type"] == expected.headers["content-type"]
    assert response.headers["x-request-id"] == "req_fake_json"
    assert fake_upstream.last().body == body
    assert fake_upstream.last().path == "/v1/chat/completions"

    trace = proxy.trace(response.headers["x-service-id"])
    assert trace.source == "proxy"
    assert trace.team_id == prod_key.team_id and trace.api_key_id == prod_key.id
    assert trace.model == "gpt-4o-mini-2024-07-18"
    assert trace.provider == "openai"
    assert (trace.prompt_tokens, trace.completion_tokens, trace.total_tokens) == (9, 8, 17)
    assert trace.cost is not None and trace.cost > Decimal(0) and not trace.unpriced
    assert not trace.usage_estimated
    assert trace.status == "success" and trace.error_type == ""
    assert trace.input == orjson.loads(body)
    assert trace.output == {"role": "assistant", "content": "Hello there! How can I help?", "refusal": None}
    assert trace.latency_ms is not None and trace.time_to_first_token_ms is None
    assert trace.metadata["proxy"] == {
        "upstream": "openai",
        "method": "POST",
        "path": "/chat/completions",
        "status_code": 200,
        "stream": False,
    }


def test_it_works_with_the_openai_sdk(openai_client, proxy, fake_upstream):
    raw = openai_client.chat.completions.with_raw_response.create(model="gpt-4o-mini", messages=HELLO)

    completion = raw.parse()
    assert completion.choices[0].message.content == "Hello there! How can I help?"
    assert completion.usage.total_tokens == 17
    assert fake_upstream.last().headers["Authorization"] == "Bearer sk-client-key"
    trace = proxy.trace(raw.headers["x-service-id"])
    assert trace.model == completion.model
    assert trace.total_tokens == completion.usage.total_tokens


def test_a_stream_passes_through_unchanged_while_its_usage_is_captured(http, direct, proxy, fake_upstream):
    body = {"model": "gpt-4o-mini", "messages": HELLO, "stream": True}
    expected = direct.post("/v1/chat/completions", json=body)
    assert b'"usage"' not in expected.content  # what OpenAI sends when usage was not asked for
    fake_upstream.clear()

    response = http.post("/chat/completions", json=body)

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.content == expected.content  # the injected usage is invisible to the client
    # ...but the upstream was asked for it,
    assert fake_upstream.last().json()["stream_options"] == {"include_usage": True}
    # ...and the trace has it.
    trace = proxy.trace(response.headers["x-service-id"])
    assert (trace.prompt_tokens, trace.completion_tokens) == (9, 8)
    assert not trace.usage_estimated
    assert trace.output == {"role": "assistant", "content": "Hello there! How can I help?"}
    assert trace.time_to_first_token_ms is not None
    assert trace.time_to_first_token_ms <= trace.latency_ms
    assert trace.input == body  # the client's request, not the rewritten one
    assert trace.metadata["proxy"]["stream"] is True
    assert trace.metadata["proxy"]["usage_injected"] is True


def test_a_stream_that_asked_for_usage_keeps_it(http, direct, proxy, fake_upstream):
    body = orjson.dumps(
        {"model": "gpt-4o-mini", "messages": HELLO, "stream": True, "stream_options": {"include_usage": True}}
    )
    expected = direct.post("/v1/chat/completions", content=body)
    fake_upstream.clear()

    response = http.post("/chat/completions", content=body)

    assert response.content == expected.content
    assert b'"choices":[],"usage":{"prompt_tokens":9' in response.content
    assert fake_upstream.last().body == body  # nothing to inject: forwarded as sent
    trace = proxy.trace(response.headers["x-service-id"])
    assert trace.total_tokens == 17
    assert "usage_injected" not in trace.metadata["proxy"]


def test_the_sdk_streams_tool_calls(openai_client, proxy):
    stream = openai_client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=HELLO, tools=TOOLS, stream=True
    )
    arguments = ""
    usage_chunks = 0
    for chunk in stream.parse():
        if chunk.usage is not None:
            usage_chunks += 1
        for choice in chunk.choices:
            for call in choice.delta.tool_calls or []:
                arguments += call.function.arguments or ""

    assert json.loads(arguments) == {"city": "Paris"}
    assert usage_chunks == 0  # the client did not ask for usage, so it never sees any
    trace = proxy.trace(stream.headers["x-service-id"])
    assert trace.output["tool_calls"] == [
        {"id": "call_abc123", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}
    ]
    assert trace.completion_tokens == 17
    assert trace.input["tools"] == TOOLS


def test_a_plain_tool_call_is_traced(openai_client, proxy):
    raw = openai_client.chat.completions.with_raw_response.create(model="gpt-4o-mini", messages=HELLO, tools=TOOLS)

    call = raw.parse().choices[0].message.tool_calls[0]
    assert call.function.name == "get_weather"
    trace = proxy.trace(raw.headers["x-service-id"])
    assert trace.output["tool_calls"][0]["function"]["arguments"] == '{"city":"Paris"}'
    assert trace.output["content"] is None


def test_a_streamed_answer_arrives_before_the_upstream_finishes(http, proxy, fake_upstream):
    # slow-stream sends one event, then keeps the stream open for seconds: the client gets that
    # event at once, which it could not if the proxy buffered the stream.
    body = {"model": "slow-stream", "messages": HELLO, "stream": True}
    with http.stream("POST", "/chat/completions", json=body) as response:
        first = next(response.iter_raw())
        trace_id = response.headers["x-service-id"]
    assert first.startswith(b"data: {")
    assert b'"content":"Hel"' in first
    proxy.trace(trace_id)  # the writer has it (disconnect details are covered in test_failures)


def test_a_gzipped_answer_passes_through_compressed_and_is_still_traced(http, direct, proxy, fake_upstream):
    body = {"model": "gpt-4o-mini", "messages": HELLO}
    headers = {"x-fake-gzip": "1", "accept-encoding": "gzip"}
    expected = direct.post("/v1/chat/completions", json=body, headers=headers)
    fake_upstream.clear()

    response = http.post("/chat/completions", json=body, headers={**headers, "accept-encoding": "gzip, br, zstd"})

    assert response.headers["content-encoding"] == "gzip"
    assert response.content == expected.content  # httpx decoded both
    assert fake_upstream.last().headers["Accept-Encoding"] == "gzip"  # only what the writer can decode
    trace = proxy.trace(response.headers["x-service-id"])
    assert trace.total_tokens == 17
    assert trace.output["content"] == "Hello there! How can I help?"


def test_legacy_completions_are_traced(openai_client, proxy):
    raw = openai_client.completions.with_raw_response.create(model="gpt-3.5-turbo-instruct", prompt="Hello")

    assert raw.parse().choices[0].text == " world"
    trace = proxy.trace(raw.headers["x-service-id"])
    assert (trace.prompt_tokens, trace.completion_tokens) == (2, 1)
    assert trace.output == " world"
