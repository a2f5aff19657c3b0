"""The other APIs through the proxy: embeddings, responses, models, any path; Anthropic's Messages API."""

from __future__ import annotations

HELLO = [{"role": "user", "content": "Hi"}]


def test_embeddings_are_traced_without_their_vectors(openai_client, proxy):
    raw = openai_client.embeddings.with_raw_response.create(model="text-embedding-3-small", input=["a", "b"])

    assert len(raw.parse().data) == 2
    trace = proxy.trace(raw.headers["x-service-id"])
    assert trace.model == "text-embedding-3-small"
    assert (trace.prompt_tokens, trace.completion_tokens) == (8, 0)
    assert trace.output == {"embeddings": 2, "dimensions": 8}
    assert trace.cost is not None and not trace.unpriced


def test_the_responses_api_is_traced(openai_client, proxy):
    raw = openai_client.responses.with_raw_response.create(model="gpt-4o", input="Capital of France?")

    assert raw.parse().output_text == "Paris is the capital of France."
    trace = proxy.trace(raw.headers["x-service-id"])
    assert (trace.prompt_tokens, trace.completion_tokens) == (12, 7)
    assert trace.output[0]["content"][0]["text"] == "Paris is the capital of France."
    assert trace.input == {"model": "gpt-4o", "input": "Capital of France?"}


def test_a_streamed_response_is_traced_from_its_completed_event(openai_client, proxy, fake_upstream):
    raw = openai_client.responses.with_raw_response.create(model="gpt-4o", input="Capital?", stream=True)

    text = "".join(event.delta for event in raw.parse() if event.type == "response.output_text.delta")
    assert text == "Paris is the capital of France."
    assert "stream_options" not in fake_upstream.last().json()  # the Responses API reports usage itself
    trace = proxy.trace(raw.headers["x-service-id"])
    assert (trace.prompt_tokens, trace.completion_tokens) == (12, 7)
    assert trace.time_to_first_token_ms is not None
    assert trace.output[0]["type"] == "message"


def test_a_call_without_llm_usage_is_traced_with_zero_tokens(openai_client, proxy, fake_upstream):
    raw = openai_client.models.with_raw_response.list()

    assert [m.id for m in raw.parse()] == ["gpt-4o-mini"]
    assert fake_upstream.last().method == "GET"
    trace = proxy.trace(raw.headers["x-service-id"])
    assert trace.model == "unknown"
    assert (trace.prompt_tokens, trace.completion_tokens) == (0, 0)
    assert trace.status == "success"
    assert trace.metadata["proxy"]["method"] == "GET"
    assert trace.metadata["proxy"]["path"] == "/models"


def test_any_path_and_query_string_are_forwarded_as_encoded(http, fake_upstream):
    response = http.delete("/files/file-a%2Fb?purpose=fine-tune&x=%20y")

    assert response.status_code == 200
    assert response.json()["method"] == "DELETE"
    assert fake_upstream.last().raw_path == "/v1/files/file-a%2Fb?purpose=fine-tune&x=%20y"


def test_dot_dot_segments_are_refused(http, fake_upstream):
    response = http.get("/models/../../admin", follow_redirects=False)
    # httpx normalises the URL itself, so send the raw path another way:
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(str(http.base_url))
    with socket.create_connection((parts.hostname, parts.port)) as sock:
        request = (
            f"GET /api/v1/proxy/models/../../secrets HTTP/1.1\r\nHost: x\r\n"
            f"X-Service-Key: {http.headers['x-service-key']}\r\nConnection: close\r\n\r\n"
        )
        sock.sendall(request.encode())
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 400")
    assert b"application/problem+json" in answer
    assert b"x-service-id: trc_" in answer
    assert all(r.path != "/secrets" for r in fake_upstream.requests)
    assert response.status_code in (200, 404)  # httpx's normalised /admin went to the fake's echo


def test_anthropic_messages_are_traced(anthropic_client, proxy, fake_upstream):
    raw = anthropic_client.messages.with_raw_response.create(
        model="claude-3-5-haiku-latest", max_tokens=100, messages=HELLO
    )

    message = raw.parse()
    assert message.content[0].text == "Bonjour! How can I help?"
    upstream = fake_upstream.last()
    assert upstream.path == "/anthropic/v1/messages"
    # The SDK's credentials (x-api-key, or Authorization in newer SDKs) go upstream untouched.
    credentials = upstream.headers.get("X-Api-Key") or upstream.headers.get("Authorization")
    assert credentials in ("sk-ant-client-key", "Bearer sk-ant-client-key")
    assert upstream.headers["Anthropic-Version"]
    assert "X-Service-Key" not in upstream.headers
    trace = proxy.trace(raw.headers["x-service-id"])
    assert trace.provider == "anthropic"
    assert trace.model == "claude-3-5-haiku-latest"
    # 21 input + 4 read from the cache (Anthropic counts them apart), 9 output.
    assert (trace.prompt_tokens, trace.completion_tokens) == (25, 9)
    assert trace.output == {"role": "assistant", "content": [{"type": "text", "text": "Bonjour! How can I help?"}]}
    assert trace.cost is not None and not trace.unpriced


def test_an_anthropic_stream_is_traced_from_its_events(anthropic_client, direct, http, proxy, fake_upstream):
    with anthropic_client.messages.stream(model="claude-3-5-haiku-latest", max_tokens=100, messages=HELLO) as stream:
        text = "".join(stream.text_stream)
        trace_id = stream.response.headers["x-service-id"]
    assert text == "Bonjour! How can I help?"

    trace = proxy.trace(trace_id)
    assert (trace.prompt_tokens, trace.completion_tokens) == (25, 9)
    assert trace.output["content"][0]["text"] == "Bonjour! How can I help?"
    assert trace.time_to_first_token_ms is not None

    # Byte for byte too: nothing is injected into Anthropic streams.
    body = {"model": "claude-3-5-haiku-latest", "max_tokens": 100, "messages": HELLO, "stream": True}
    expected = direct.post("/anthropic/v1/messages", json=body)
    assert http.post("/anthropic/v1/messages", json=body).content == expected.content


def test_openai_cached_and_reasoning_tokens_are_traced_and_priced(openai_client, proxy):
    raw = openai_client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=HELLO, extra_headers={"x-fake-cached": "8", "x-fake-reasoning": "5"}
    )
    usage = raw.parse().usage
    assert usage is not None
    trace = proxy.trace(raw.headers["x-service-id"])
    assert (trace.prompt_tokens, trace.completion_tokens) == (usage.prompt_tokens, usage.completion_tokens)
    assert (trace.cached_tokens, trace.reasoning_tokens, trace.cache_write_tokens) == (8, 5, 0)
    plain = openai_client.chat.completions.with_raw_response.create(model="gpt-4o-mini", messages=HELLO)
    uncached = proxy.trace(plain.headers["x-service-id"])
    assert uncached.cached_tokens == 0 and uncached.cost > trace.cost


def test_anthropic_cache_reads_and_writes_are_parts_of_the_prompt(anthropic_client, proxy):
    raw = anthropic_client.messages.with_raw_response.create(
        model="claude-3-5-haiku-latest", max_tokens=100, messages=HELLO, extra_headers={"x-fake-cache-write": "7"}
    )
    raw.parse()
    trace = proxy.trace(raw.headers["x-service-id"])
    # 21 input + 4 cache reads + 7 cache writes: Anthropic's input_tokens leave both out.
    assert (trace.prompt_tokens, trace.cached_tokens, trace.cache_write_tokens) == (32, 4, 7)
    assert trace.completion_tokens == 9 and trace.cost is not None and not trace.unpriced
