"""Failures: bad keys and headers (refused before any upstream call), upstream errors, timeouts,
unreachable upstreams and clients that hang up. Each is answered clearly and, past the key, traced."""

from __future__ import annotations

import socket
import time

import httpx
import openai
import pytest

from accounts import keys
from accounts.services import api_key_revoke
from tests.factories import ApiKeyFactory
from traces.proxy.models import Upstream

from .conftest import READ_TIMEOUT

HELLO = [{"role": "user", "content": "Hi"}]
CHAT = {"model": "gpt-4o-mini", "messages": HELLO}


def _assert_problem(response: httpx.Response, status: int, slug: str) -> dict:
    assert response.status_code == status
    assert response.headers["content-type"] == "application/problem+json"
    assert response.headers["x-service-id"].startswith("trc_")
    body = response.json()
    assert body["status"] == status
    assert body["type"].endswith("/" + slug)
    assert body["title"] and body["detail"]
    return body


@pytest.mark.parametrize(
    "headers, slug",
    [
        ({}, "missing-key"),
        ({"X-Service-Key": "not-a-key"}, "invalid-key"),
        ({"X-Service-Key": "tr_prod_" + "A" * 36}, "invalid-key"),  # right shape, wrong checksum
        ({"X-Service-Key": keys.generate("production")}, "invalid-key"),  # well-formed, never issued
    ],
)
def test_a_missing_or_bad_key_is_refused_without_calling_upstream(proxy, fake_upstream, headers, slug):
    response = httpx.post(proxy.base_url + "/chat/completions", json=CHAT, headers=headers)

    _assert_problem(response, 401, slug)
    assert fake_upstream.requests == []


def test_a_revoked_key_is_refused(proxy, fake_upstream, team):
    key = ApiKeyFactory(team=team, environment="production")
    api_key_revoke(key=key)

    response = httpx.post(proxy.base_url + "/chat/completions", json=CHAT, headers={"X-Service-Key": key._raw})

    _assert_problem(response, 401, "invalid-key")
    assert fake_upstream.requests == []


def test_the_sdk_raises_authentication_error_for_a_bad_key(proxy, fake_upstream):
    client = openai.OpenAI(
        base_url=proxy.base_url, api_key="sk", default_headers={"X-Service-Key": "tr_prod_nope"}, max_retries=0
    )
    with pytest.raises(openai.AuthenticationError):
        client.chat.completions.create(model="gpt-4o-mini", messages=HELLO)
    assert fake_upstream.requests == []


@pytest.mark.parametrize(
    "headers, fragment",
    [
        ({"X-Service-Metadata": "{not json"}, "X-Service-Metadata must be a JSON object"),
        ({"X-Service-Metadata": '["a", "b"]'}, "X-Service-Metadata must be a JSON object"),
        # 64 keys a trace, of which the proxy keeps two for its own (`proxy`, `rate_limit`)
        ({"X-Service-Metadata": "{" + ",".join(f'"k{i}": {i}' for i in range(63)) + "}"}, "at most 62 keys"),
        ({"X-Service-Metadata": '{"proxy": {"upstream": "forged"}}'}, "'proxy' is written by tracerelay"),
        ({"X-Service-Metadata": '{"rate_limit": 1}'}, "'rate_limit' is written by tracerelay"),
        ({"X-Service-Tags": ",".join(f"t{i}" for i in range(51))}, "at most 50 tags"),
        ({"X-Service-Tags": "x" * 201}, "at most 200 characters"),
        ({"X-Service-Session-Id": "s" * 201}, "at most 200 characters"),
        ({"X-Service-Environment": "e" * 65}, "at most 64 characters"),
        ({"X-Service-Run-Id": "r" * 129}, "X-Service-Run-Id: at most 128 characters"),
        ({"X-Service-Run-Id": "runs/1"}, 'X-Service-Run-Id must be text without control characters or "/"'),
        ({"X-Service-Run-Id": ""}, "X-Service-Run-Id must not be empty"),
        ({"X-Service-Run-Id": "run-1", "X-Service-Parent-Id": "span 1"}, "X-Service-Parent-Id must be the id"),
        ({"X-Service-Run-Id": "run-1", "X-Service-Parent-Id": "p" * 129}, "X-Service-Parent-Id must be the id"),
        ({"X-Service-Parent-Id": "span-1"}, "X-Service-Parent-Id needs X-Service-Run-Id"),
    ],
)
def test_bad_service_headers_are_refused_without_calling_upstream(http, fake_upstream, headers, fragment):
    response = http.post("/chat/completions", json=CHAT, headers=headers)

    body = _assert_problem(response, 400, "invalid-header")
    assert fragment in body["detail"]
    assert fake_upstream.requests == []


def test_an_oversized_body_is_refused(http, proxy, fake_upstream):
    limit = proxy.app.settings.max_body_bytes
    proxy.app.settings.max_body_bytes = 1000
    try:
        response = http.post("/chat/completions", content=b"x" * 5000)
    finally:
        proxy.app.settings.max_body_bytes = limit
    _assert_problem(response, 413, "payload-too-large")
    assert fake_upstream.requests == []


def test_a_429_is_passed_on_and_traced_as_rate_limited(http, direct, proxy):
    body = {"model": "error-429", "messages": HELLO}
    expected = direct.post("/v1/chat/completions", json=body)

    response = http.post("/chat/completions", json=body)

    assert response.status_code == 429
    assert response.content == expected.content
    assert response.headers["retry-after"] == "1"
    assert response.headers["x-ratelimit-remaining-requests"] == "0"
    trace = proxy.trace(response.headers["x-service-id"])
    assert trace.status == "rate_limited"
    assert trace.error_type == "rate_limit_exceeded"
    assert trace.error_message == "Rate limit reached for requests"
    assert trace.metadata["rate_limit"] == {
        "x-ratelimit-limit-requests": "500",
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "120ms",
        "retry-after": "1",
    }
    assert (trace.prompt_tokens, trace.completion_tokens) == (0, 0)
    assert trace.metadata["proxy"]["status_code"] == 429


def test_the_sdk_sees_the_upstream_rate_limit(openai_client, proxy):
    with pytest.raises(openai.RateLimitError) as raised:
        openai_client.chat.completions.create(model="error-429", messages=HELLO)
    trace = proxy.trace(raised.value.response.headers["x-service-id"])
    assert trace.status == "rate_limited"


def test_an_anthropic_429_keeps_its_rate_limit_headers(anthropic_client, proxy):
    import anthropic

    with pytest.raises(anthropic.RateLimitError) as raised:
        anthropic_client.messages.create(model="error-429", max_tokens=10, messages=HELLO)
    trace = proxy.trace(raised.value.response.headers["x-service-id"])
    assert trace.status == "rate_limited"
    assert trace.error_type == "rate_limit_error"
    assert trace.metadata["rate_limit"]["anthropic-ratelimit-requests-remaining"] == "0"
    assert trace.metadata["rate_limit"]["retry-after"] == "2"


def test_an_upstream_500_is_passed_on_and_traced_as_an_error(openai_client, proxy):
    with pytest.raises(openai.InternalServerError) as raised:
        openai_client.chat.completions.create(model="error-500", messages=HELLO)

    trace = proxy.trace(raised.value.response.headers["x-service-id"])
    assert trace.status == "error"
    assert trace.error_type == "server_error"
    assert "error while processing" in trace.error_message
    assert trace.model == "error-500"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_upstream_is_a_traced_502(http, proxy, team):
    Upstream.objects.create(team=team, name="down", base_url=f"http://127.0.0.1:{_closed_port()}/v1")

    response = http.post("/u/down/chat/completions", json=CHAT)

    body = _assert_problem(response, 502, "upstream-unreachable")
    assert "down could not be reached" in body["detail"]
    trace = proxy.trace(response.headers["x-service-id"])
    assert trace.status == "error"
    assert trace.error_type == "upstream_unreachable"
    assert trace.model == "gpt-4o-mini"
    assert trace.input == CHAT
    assert (trace.prompt_tokens, trace.completion_tokens) == (0, 0)
    assert trace.metadata["proxy"]["upstream"] == "down"
    assert trace.metadata["proxy"]["status_code"] == 502


def test_a_silent_upstream_is_a_traced_504(http, proxy):
    started = time.monotonic()
    response = http.post("/chat/completions", json={"model": "slow", "messages": HELLO})

    _assert_problem(response, 504, "upstream-timeout")
    assert time.monotonic() - started < READ_TIMEOUT + 2
    trace = proxy.trace(response.headers["x-service-id"])
    assert trace.status == "error"
    assert trace.error_type == "upstream_timeout"
    assert trace.latency_ms >= READ_TIMEOUT * 1000


def test_an_upstream_that_stalls_mid_stream_ends_the_stream_with_an_error(openai_client, proxy):
    raw = openai_client.chat.completions.with_raw_response.create(model="stall-stream", messages=HELLO, stream=True)
    received = []
    with pytest.raises(openai.APIError) as raised:
        for chunk in raw.parse():
            received.extend(c.delta.content for c in chunk.choices)
    assert received == ["Hel"]
    assert "went silent" in str(raised.value)

    trace = proxy.trace(raw.headers["x-service-id"])
    assert trace.status == "error"
    assert trace.error_type == "upstream_timeout"
    assert trace.output == {"role": "assistant", "content": "Hel"}
    assert trace.time_to_first_token_ms is not None
    assert trace.usage_estimated  # no usage ever came: estimated, and flagged so


def test_a_client_that_hangs_up_mid_stream_cancels_the_upstream_call(http, proxy, fake_upstream):
    with http.stream(
        "POST", "/chat/completions", json={"model": "slow-stream", "messages": HELLO, "stream": True}
    ) as r:
        first = next(r.iter_raw())
        trace_id = r.headers["x-service-id"]
    assert b'"content":"Hel"' in first

    deadline = time.monotonic() + 5
    mine = "/v1/chat/completions slow-stream"
    while mine not in fake_upstream.aborted and time.monotonic() < deadline:
        time.sleep(0.02)
    # The fake would have streamed for 10 s more: the proxy closed its upstream connection.
    assert fake_upstream.aborted.count(mine) == 1

    trace = proxy.trace(trace_id)
    assert trace.status == "error"
    assert trace.error_type == "client_disconnected"
    assert trace.output == {"role": "assistant", "content": "Hel"}
    assert trace.latency_ms < 5000


def test_an_upstream_that_drops_mid_stream_ends_the_stream_with_an_error(openai_client, proxy):
    raw = openai_client.chat.completions.with_raw_response.create(model="drop-stream", messages=HELLO, stream=True)
    with pytest.raises(openai.APIError) as raised:
        list(raw.parse())
    assert "broke off" in str(raised.value)

    trace = proxy.trace(raw.headers["x-service-id"])
    assert trace.status == "error"
    assert trace.error_type == "upstream_disconnected"


def test_a_download_cut_short_is_not_passed_on_as_complete(http, proxy):
    with pytest.raises(httpx.RemoteProtocolError):
        with http.stream("GET", "/broken-download") as response:
            trace_id = response.headers["x-service-id"]
            b"".join(response.iter_bytes())

    trace = proxy.trace(trace_id)
    assert trace.status == "error"
    assert trace.error_type == "upstream_disconnected"
