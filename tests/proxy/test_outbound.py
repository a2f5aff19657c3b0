"""The proxy connects only to upstream addresses the URL guard checked, resolved where the
connection is made (`traces.proxy.outbound`): an upstream whose name answers a metadata or
link-local address after it was saved is refused at connect time (a traced 502), private
addresses follow TRACERELAY_ALLOW_PRIVATE_DESTINATIONS. DNS answers are scripted through
`urlguard.resolve_addresses`; each test uses a host name of its own, so no kept-alive connection
from another test is reused."""

from __future__ import annotations

import ipaddress
import uuid
from urllib.parse import urlsplit

import pytest
from django.test import override_settings

from integrations import urlguard
from traces.proxy import services

CHAT = {"model": "llama-3.1-8b-instant", "messages": [{"role": "user", "content": "Hi"}]}


@pytest.fixture(autouse=True)
def _fresh_resolutions():
    urlguard.forget_resolutions()
    yield
    urlguard.forget_resolutions()


class Dns:
    def __init__(self, monkeypatch, address: str) -> None:
        self.address = ipaddress.ip_address(address)
        self.asked: list[str] = []
        monkeypatch.setattr(urlguard, "resolve_addresses", self)

    def __call__(self, host: str) -> list:
        self.asked.append(host)
        return [self.address]

    def repoint(self, address: str) -> None:
        """The name now answers ``address``, and the cached answer has expired."""
        self.address = ipaddress.ip_address(address)
        urlguard.forget_resolutions()


def _upstream(team, fake_upstream, name: str) -> str:
    host = f"{name}-{uuid.uuid4().hex[:8]}.upstream.test"
    port = urlsplit(fake_upstream.url).port
    data = services.UpstreamInput(name=name, base_url=f"http://{host}:{port}/v1", provider="vllm")
    services.upstream_create(team_id=team.pk, data=data, actor="test")
    return host


def test_an_upstream_name_is_connected_to_through_the_guards_answer(http, proxy, team, fake_upstream, monkeypatch):
    dns = Dns(monkeypatch, "127.0.0.1")
    host = _upstream(team, fake_upstream, "vllm")

    response = http.post("/u/vllm/chat/completions", json=CHAT)

    assert response.status_code == 200
    assert fake_upstream.last().headers["host"].startswith(host)
    assert set(dns.asked) == {host}


@pytest.mark.parametrize("rebound", ["169.254.169.254", "fe80::1"])
def test_an_upstream_re_pointed_after_it_was_saved_is_refused_at_connect_time(
    http, proxy, team, fake_upstream, monkeypatch, rebound
):
    dns = Dns(monkeypatch, "127.0.0.1")
    _upstream(team, fake_upstream, "rebind")  # saved: the name answered loopback then
    dns.repoint(rebound)

    response = http.post("/u/rebind/chat/completions", json=CHAT)

    assert response.status_code == 502
    body = response.json()
    assert body["type"].endswith("/upstream-unreachable")
    assert "refused by the outbound address guard" in body["detail"]
    assert rebound in body["detail"]
    assert fake_upstream.requests == []
    trace = proxy.trace(response.headers["x-service-id"])
    assert trace.error_type == "upstream_unreachable"
    assert "refused by the outbound address guard" in trace.error_message


def test_a_private_upstream_is_allowed_by_default_and_refused_when_the_setting_closes_it(
    http, proxy, team, fake_upstream, monkeypatch
):
    Dns(monkeypatch, "127.0.0.1")
    _upstream(team, fake_upstream, "ollama")
    _upstream(team, fake_upstream, "ollama2")
    # A literal address never reaches a resolver: the connector checks it itself.
    literal = services.UpstreamInput(name="literal", base_url=f"http://127.0.0.2:{urlsplit(fake_upstream.url).port}/v1")
    services.upstream_create(team_id=team.pk, data=literal, actor="test")

    assert http.post("/u/ollama/chat/completions", json=CHAT).status_code == 200
    with override_settings(TRACERELAY_ALLOW_PRIVATE_DESTINATIONS=False):
        refused = [http.post(f"/u/{name}/chat/completions", json=CHAT) for name in ("ollama2", "literal")]

    assert [r.status_code for r in refused] == [502, 502]
    assert all("private, loopback or reserved address" in r.json()["detail"] for r in refused)
    assert len(fake_upstream.requests) == 1
