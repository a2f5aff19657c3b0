"""The Python SDK delivering to a real tracerelay server under test (pytest-django's live server).

A real app (the real `openai` and `anthropic` SDKs against the fake upstream on loopback) with our
SDK added: its calls must be stored as traces, with gzip on or off (a server without gzip support
gets plain bodies: the SDK falls back), and a batch sent again must store nothing twice.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import anthropic
import openai
import pytest
import tracerelay
from tracerelay import instrument
from tracerelay._ids import new_trace_id
from tracerelay._ids import sample_point as sdk_sample_point
from tracerelay._transport import Transport

from routing.models import RoutingRule
from routing.router import sample_point as server_sample_point
from traces.models import Trace

from ..factories import ApiKeyFactory, IntegrationFactory, RoutingRuleFactory
from ..proxy.fake_upstream import CHAT_WORDS, FakeUpstream, FakeUpstreamServer

pytestmark = pytest.mark.django_db(transaction=True)
MESSAGES = [{"role": "user", "content": "hi"}]
WAIT = 120  # seconds: the deadline of a wait for the live server, never reached when all is well


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeUpstream]:
    server = FakeUpstreamServer()
    yield server.start()
    server.stop()


@pytest.fixture(autouse=True)
def _sdk_reset() -> Iterator[None]:
    yield
    tracerelay.shutdown(timeout=2)
    instrument.uninstall()


@pytest.mark.parametrize("compress", [True, False])
def test_an_instrumented_app_stores_its_calls_as_traces(live_server, upstream: FakeUpstream, compress: bool) -> None:
    key = ApiKeyFactory(environment="development")
    tracerelay.init(api_key=key._raw, base_url=live_server.url, service_name="shop", batch=True, compress=compress)
    client = openai.OpenAI(base_url=upstream.url + "/v1", api_key="sk", max_retries=0)
    claude = anthropic.Anthropic(base_url=upstream.url + "/anthropic", api_key="sk", max_retries=0)
    client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    list(client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True))
    claude.messages.create(model="claude-3-5-haiku-latest", max_tokens=16, messages=MESSAGES)
    with pytest.raises(openai.RateLimitError):
        client.chat.completions.create(model="error-429", messages=MESSAGES)
    with tracerelay.trace("checkout"):
        client.embeddings.create(model="text-embedding-3-small", input="x")

    assert tracerelay.flush(timeout=WAIT)
    stats = tracerelay.stats()
    assert (stats["sent"], stats["failed"], stats["rejected"]) == (6, 0, 0), stats
    assert Trace.objects.filter(team_id=key.team_id).count() == 6
    traces = {t.model: t for t in Trace.objects.filter(team_id=key.team_id)}
    assert all(t.service_name == "shop" and t.environment == "development" for t in traces.values())
    chat = Trace.objects.filter(team_id=key.team_id, model="gpt-4o-mini-2024-07-18").order_by("timestamp")
    plain, streamed = list(chat)
    assert plain.output == {"role": "assistant", "content": "".join(CHAT_WORDS)}
    assert streamed.output == {**plain.output, "finish_reason": "stop"}
    assert plain.input == {"model": "gpt-4o-mini", "messages": MESSAGES}
    assert streamed.completion_tokens == len(CHAT_WORDS) and not streamed.usage_estimated
    assert streamed.time_to_first_token_ms is not None and plain.time_to_first_token_ms is None
    assert plain.cost is not None and plain.provider == "openai"
    assert traces["claude-3-5-haiku-latest"].prompt_tokens == 25 and traces["claude-3-5-haiku-latest"].provider == (
        "anthropic"
    )
    limited = traces["error-429"]
    assert (limited.status, limited.error_type) == ("rate_limited", "RateLimitError")
    # the block is a structural span of the run, never a call
    span, embedding = Trace.objects.get(team_id=key.team_id, name="checkout"), traces["text-embedding-3-small"]
    assert span.kind not in ("llm", "embedding") and span.cost is None and not span.unpriced
    assert embedding.session_id == span.trace_id and embedding.metadata["parent_id"] == span.trace_id


def test_a_batch_sent_twice_is_stored_once(live_server) -> None:
    key = ApiKeyFactory()
    traces = [{"id": new_trace_id(), "model": "gpt-4o", "prompt_tokens": 1, "completion_tokens": 1} for _ in range(3)]
    body = json.dumps({"traces": traces}).encode()
    transport = Transport(live_server.url, key._raw, timeout=WAIT, compress=True)
    first = transport.request("POST", "/api/v1/traces/batch", body)
    again = transport.request("POST", "/api/v1/traces/batch", body)  # as after a lost answer
    assert first.status == again.status == 200
    assert (first.body["created"], again.body["created"], again.body["existing"]) == (3, 0, 3)
    assert Trace.objects.filter(team_id=key.team_id).count() == 3


def test_a_revoked_or_unknown_key_is_rejected_not_retried(live_server) -> None:
    tracerelay.init(api_key="tr_prod_notarealkey", base_url=live_server.url, instrument=False)
    with tracerelay.trace("x"):
        pass
    assert tracerelay.flush(timeout=WAIT)
    stats = tracerelay.stats()
    assert (stats["rejected"], stats["requests"], stats["sent"]) == (1, 1, 0)


def test_client_sampling_hashes_ids_exactly_as_the_server_does() -> None:
    for _ in range(200):
        trace_id = new_trace_id()
        assert sdk_sample_point(trace_id) == server_sample_point(trace_id)


ROUTING_RULES = [{"name": "shop errors", "conditions": {"error": True}, "destination": "webhook"}]


def _rules_outcome(timeout: float = WAIT) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = tracerelay.stats()["routing_rules"]
        if status != "pending":
            return status
        time.sleep(0.05)
    return tracerelay.stats()["routing_rules"]


@pytest.mark.parametrize("compress", [True, False])
def test_init_registers_the_services_routing_rules(live_server, compress: bool) -> None:
    key = ApiKeyFactory(environment="production")
    IntegrationFactory(team=key.team, name="hooks", platform="webhook")
    RoutingRuleFactory(team=key.team, name="team rule", priority=50)
    tracerelay.init(
        api_key=key._raw,
        base_url=live_server.url,
        service_name="shop/checkout",
        routing_rules=ROUTING_RULES,
        instrument=False,
        compress=compress,
    )
    assert _rules_outcome() == "registered"
    rules = {r.name: r.service for r in RoutingRule.objects.filter(team_id=key.team_id)}
    assert rules == {"team rule": "", "shop errors": "shop/checkout"}
    # Started again with other rules: the service's rules are replaced, the team's kept.
    tracerelay.shutdown(timeout=2)
    tracerelay.init(
        api_key=key._raw,
        base_url=live_server.url,
        service_name="shop/checkout",
        routing_rules=[{"name": "shop all", "destination": "webhook"}],
        instrument=False,
        compress=compress,
    )
    assert _rules_outcome() == "registered"
    rules = {r.name: r.service for r in RoutingRule.objects.filter(team_id=key.team_id)}
    assert rules == {"team rule": "", "shop all": "shop/checkout"}


def test_a_development_key_is_refused_with_a_warning_and_traces_still_flow(live_server, caplog) -> None:
    key = ApiKeyFactory(environment="development")
    tracerelay.init(
        api_key=key._raw, base_url=live_server.url, service_name="shop", routing_rules=ROUTING_RULES, instrument=False
    )
    with tracerelay.trace("checkout"):
        pass
    assert tracerelay.flush(timeout=WAIT)
    assert _rules_outcome() == "refused: 403"
    assert not RoutingRule.objects.filter(team_id=key.team_id).exists()
    assert Trace.objects.filter(team_id=key.team_id).count() == 1
    assert "may not change routing rules" in caplog.text
