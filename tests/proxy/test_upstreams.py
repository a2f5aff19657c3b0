"""Choosing an upstream: the built-in ones, a team default, X-Service-Upstream, /u/<name>/; stored keys."""

from __future__ import annotations

import pytest

from config.crypto import encrypt_json
from traces.proxy import services
from traces.proxy.models import Upstream

HELLO = [{"role": "user", "content": "Hi"}]
CHAT = {"model": "llama-3.1-8b-instant", "messages": HELLO}


def _upstream(team, fake_upstream, name="groq", **fields) -> Upstream:
    data = services.UpstreamInput(name=name, base_url=fake_upstream.url + "/v1", **fields)
    return services.upstream_create(team_id=team.pk, data=data, actor="test")


@pytest.fixture
def groq(team, fake_upstream) -> Upstream:
    return _upstream(team, fake_upstream, provider="groq", api_key="gsk_team_key")


def test_the_header_chooses_a_named_upstream(http, proxy, fake_upstream, groq):
    response = http.post("/chat/completions", json=CHAT, headers={"X-Service-Upstream": "groq"})

    assert response.status_code == 200
    assert fake_upstream.last().path == "/v1/chat/completions"
    trace = proxy.trace(response.headers["x-service-id"])
    assert trace.provider == "groq"
    assert trace.metadata["proxy"]["upstream"] == "groq"


def test_the_path_prefix_chooses_a_named_upstream(openai_client, proxy, groq):
    client = openai_client.with_options(base_url=proxy.base_url + "/u/groq")
    raw = client.chat.completions.with_raw_response.create(**CHAT)

    trace = proxy.trace(raw.headers["x-service-id"])
    assert trace.provider == "groq"
    assert trace.metadata["proxy"]["path"] == "/chat/completions"


def test_the_team_default_serves_calls_that_name_no_upstream(http, proxy, team, fake_upstream):
    _upstream(team, fake_upstream, name="vllm", provider="vllm", is_default=True)

    trace = proxy.trace(http.post("/chat/completions", json=CHAT).headers["x-service-id"])

    assert trace.metadata["proxy"]["upstream"] == "vllm"


def test_the_team_anthropic_default_serves_the_anthropic_route(anthropic_client, proxy, team, fake_upstream):
    data = services.UpstreamInput(
        name="claude-eu", kind="anthropic", base_url=fake_upstream.url + "/anthropic", is_default=True
    )
    services.upstream_create(team_id=team.pk, data=data, actor="test")

    raw = anthropic_client.messages.with_raw_response.create(model="claude-x", max_tokens=5, messages=HELLO)

    trace = proxy.trace(raw.headers["x-service-id"])
    assert trace.metadata["proxy"]["upstream"] == "claude-eu"
    assert trace.provider == "anthropic"


@pytest.mark.parametrize("how", ["header", "path"])
def test_an_unknown_upstream_is_a_404_without_an_upstream_call(http, fake_upstream, how, other_team):
    # Another team's upstream of that name does not count.
    Upstream.objects.create(team=other_team, name="theirs", base_url=fake_upstream.url + "/v1")
    if how == "header":
        response = http.post("/chat/completions", json=CHAT, headers={"X-Service-Upstream": "theirs"})
    else:
        response = http.post("/u/theirs/chat/completions", json=CHAT)

    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["type"].endswith("/unknown-upstream")
    assert fake_upstream.requests == []


def test_the_stored_key_is_sent_when_the_client_sends_none(http, fake_upstream, groq):
    http.post("/u/groq/chat/completions", json=CHAT)
    assert fake_upstream.last().headers["Authorization"] == "Bearer gsk_team_key"

    http.post("/u/groq/chat/completions", json=CHAT, headers={"Authorization": "Bearer sk-mine"})
    assert fake_upstream.last().headers["Authorization"] == "Bearer sk-mine"


def test_stored_keys_use_each_kinds_header(http, fake_upstream, team):
    for name, kind, path in (("az", "azure", "/v1"), ("claude", "anthropic", "/anthropic")):
        data = services.UpstreamInput(name=name, kind=kind, base_url=fake_upstream.url + path, api_key=f"{name}-key")
        services.upstream_create(team_id=team.pk, data=data, actor="test")

    http.post("/u/az/chat/completions?api-version=2024-10-21", json=CHAT)
    assert fake_upstream.last().headers["api-key"] == "az-key"
    assert "Authorization" not in fake_upstream.last().headers
    http.post("/u/claude/v1/messages", json={"model": "claude-x", "max_tokens": 5, "messages": HELLO})
    assert fake_upstream.last().headers["x-api-key"] == "claude-key"


def test_an_azure_deployment_names_the_model_when_the_body_does_not(http, proxy, team, fake_upstream):
    data = services.UpstreamInput(name="az", kind="azure", base_url=fake_upstream.url)
    services.upstream_create(team_id=team.pk, data=data, actor="test")

    response = http.post("/u/az/openai/deployments/gpt-4o-prod/embeddings?api-version=2024-10-21", json={"input": "x"})

    assert fake_upstream.last().raw_path == "/openai/deployments/gpt-4o-prod/embeddings?api-version=2024-10-21"
    trace = proxy.trace(response.headers["x-service-id"])
    assert trace.model == "gpt-4o-prod"
    assert trace.provider == "azure"


def test_upstream_headers_are_added_and_the_clients_own_win(http, fake_upstream, team):
    data = services.UpstreamInput(
        name="router",
        base_url=fake_upstream.url + "/v1",
        headers={"HTTP-Referer": "https://example.com", "X-Title": "team app", "Authorization": "Bearer team"},
    )
    services.upstream_create(team_id=team.pk, data=data, actor="test")

    http.post("/u/router/chat/completions", json=CHAT, headers={"X-Title": "client app"})

    sent = fake_upstream.last().headers
    assert sent["HTTP-Referer"] == "https://example.com"
    assert sent["X-Title"] == "client app"
    assert sent["Authorization"] == "Bearer team"  # a credential header, kept encrypted at rest
    assert "Bearer team" not in str(Upstream.objects.get(name="router").headers)


def test_a_change_through_the_api_applies_at_once(api, http, fake_upstream, proxy):
    assert http.post("/u/fresh/chat/completions", json=CHAT).status_code == 404

    created = api.post(
        "/api/v1/upstreams", {"name": "fresh", "base_url": fake_upstream.url + "/v1", "provider": "x"}, format="json"
    )
    assert created.status_code == 201
    assert http.post("/u/fresh/chat/completions", json=CHAT).status_code == 200

    assert api.delete(f"/api/v1/upstreams/{created.json()['id']}").status_code == 204
    assert http.post("/u/fresh/chat/completions", json=CHAT).status_code == 404


def test_an_upstream_key_that_cannot_be_decrypted_does_not_break_the_others(http, team, fake_upstream, groq):
    # Defensive: rows written by hand (or with a rotated-away Fernet key) must not take the team down.
    Upstream.objects.filter(pk=groq.pk).update(api_key=encrypt_json({"api_key": "k"})[:-4] + "AAAA")

    assert http.post("/chat/completions", json=CHAT).status_code == 200
    assert http.post("/u/groq/chat/completions", json=CHAT).status_code == 200
    assert "Authorization" not in fake_upstream.last().headers  # no stored key to send
