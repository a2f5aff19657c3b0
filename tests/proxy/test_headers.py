"""What the client sends beside the body: our X-Service-* headers, its credentials, everything else."""

from __future__ import annotations

import httpx

from tests.factories import ApiKeyFactory

HELLO = [{"role": "user", "content": "Hi"}]
CHAT = {"model": "gpt-4o-mini", "messages": HELLO}


def test_service_headers_become_trace_fields(http, proxy):
    response = http.post(
        "/chat/completions",
        json=CHAT,
        headers={
            "X-Service-Tags": "checkout, beta,,beta , ,x",
            "X-Service-Metadata": '{"env": "prod", "customer": {"id": 42}}',
            "X-Service-Session-Id": "sess-1",
            "X-Service-User-Id": "user-7",
            "X-Service-Environment": "staging",
        },
    )

    assert response.status_code == 200
    trace = proxy.trace(response.headers["x-service-id"])
    assert trace.tags == ["checkout", "beta", "x"]
    assert trace.metadata["env"] == "prod"
    assert trace.metadata["customer"] == {"id": 42}
    assert trace.session_id == "sess-1"
    assert trace.user_id == "user-7"
    assert trace.environment == "staging"


def test_the_key_environment_is_used_when_none_is_sent(proxy, team):
    key = ApiKeyFactory(team=team, environment="development")
    response = httpx.post(proxy.base_url + "/chat/completions", json=CHAT, headers={"X-Service-Key": key._raw})

    assert response.status_code == 200  # development and CI keys may use the proxy
    assert proxy.trace(response.headers["x-service-id"]).environment == "development"


def test_credentials_and_other_headers_go_upstream_untouched_and_ours_do_not(http, fake_upstream):
    http.post(
        "/chat/completions",
        json=CHAT,
        headers={
            "Authorization": "Bearer sk-the-clients-own",
            "OpenAI-Organization": "org-123",
            "User-Agent": "my-app/1.0",
            "X-Service-Tags": "a",
            "X-Service-Metadata": "{}",
        },
    )

    sent = fake_upstream.last().headers
    assert sent["Authorization"] == "Bearer sk-the-clients-own"
    assert sent["OpenAI-Organization"] == "org-123"
    assert sent["User-Agent"] == "my-app/1.0"
    assert not [name for name in sent if name.lower().startswith("x-service-")]


def test_every_response_carries_the_trace_id(http, proxy):
    ok = http.post("/chat/completions", json=CHAT)
    failed = http.post("/chat/completions", json={"model": "error-500", "messages": HELLO})
    listed = http.get("/models")

    ids = [r.headers["x-service-id"] for r in (ok, failed, listed)]
    assert len(set(ids)) == 3
    for trace_id in ids:
        assert proxy.trace(trace_id).trace_id == trace_id
