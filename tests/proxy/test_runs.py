"""A proxied call joins a run: X-Service-Run-Id and X-Service-Parent-Id (issue 22), from any client and
from the Python SDK, which sets them on calls made through the proxy inside a `tracerelay.trace()` block."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import tracerelay
from tracerelay import instrument

from traces.models import Trace

HELLO = [{"role": "user", "content": "Hi"}]
CHAT = {"model": "gpt-4o-mini", "messages": HELLO}


def test_the_run_headers_put_the_call_in_that_run_under_that_parent(http, proxy) -> None:
    response = http.post(
        "/chat/completions", json=CHAT, headers={"X-Service-Run-Id": "run-42", "X-Service-Parent-Id": "trc_span-1"}
    )
    assert response.status_code == 200
    trace = proxy.trace(response.headers["x-service-id"])
    assert (trace.run_id, trace.parent_id, trace.kind) == ("run-42", "trc_span-1", "llm")
    assert trace.name == "chat gpt-4o-mini" and trace.cost and trace.cost > 0


def test_a_run_id_alone_makes_the_call_a_root_of_that_run(http, proxy) -> None:
    response = http.post("/embeddings", json={"model": "text-embedding-3-small", "input": "q"},
                         headers={"X-Service-Run-Id": "4bf92f3577b34da6a3ce929d0e0e4736"})  # fmt: skip
    trace = proxy.trace(response.headers["x-service-id"])
    assert (trace.run_id, trace.parent_id) == ("4bf92f3577b34da6a3ce929d0e0e4736", "")
    assert (trace.kind, trace.name) == ("embedding", "embeddings text-embedding-3-small")


def test_without_the_headers_a_call_is_a_run_of_its_own(http, proxy) -> None:
    trace = proxy.trace(http.post("/chat/completions", json=CHAT).headers["x-service-id"])
    assert (trace.run_id, trace.parent_id, trace.kind) == (trace.trace_id, "", "llm")


def test_a_bad_run_header_is_a_400_problem_and_nothing_is_called_or_stored(http, proxy, fake_upstream) -> None:
    response = http.post("/chat/completions", json=CHAT, headers={"X-Service-Parent-Id": "trc_span-1"})
    assert response.status_code == 400
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["detail"].startswith("X-Service-Parent-Id needs X-Service-Run-Id")
    assert fake_upstream.requests == []
    assert proxy.app.writer is not None and proxy.app.writer.flush()
    assert not Trace.objects.filter(trace_id=response.headers["x-service-id"]).exists()


@pytest.fixture
def sdk(proxy, key: str) -> Iterator[None]:
    """The Python SDK sending to the server under test (the proxy's server serves the REST API too)."""
    tracerelay.init(api_key=key, base_url=proxy.url, service_name="agent", max_retries=0)
    yield
    tracerelay.shutdown(timeout=5)
    instrument.uninstall()  # the other proxy tests use the same openai package, unwrapped


def test_the_sdk_puts_a_call_through_the_proxy_in_its_blocks_run(sdk, proxy, openai_client, team) -> None:
    with tracerelay.trace("answer", kind="agent") as root:
        with tracerelay.trace("lookup", kind="tool") as tool:
            openai_client.chat.completions.create(model="gpt-4o-mini", messages=HELLO)
        openai_client.embeddings.create(model="text-embedding-3-small", input="q")
    assert tracerelay.flush(timeout=30)
    assert proxy.app.writer is not None and proxy.app.writer.flush()
    assert tracerelay.stats()["rejected"] == 0

    spans = {t.name: t for t in Trace.objects.filter(team=team, run_id=root.run_id)}
    assert set(spans) == {"answer", "lookup", "chat gpt-4o-mini", "embeddings text-embedding-3-small"}
    tree = {name: (t.parent_id, t.kind, t.source == "proxy") for name, t in spans.items()}
    assert tree == {
        "answer": ("", "agent", False),  # the blocks, sent by the SDK
        "lookup": (root.id, "tool", False),
        "chat gpt-4o-mini": (tool.id, "llm", True),  # the calls, recorded once: by the proxy
        "embeddings text-embedding-3-small": (root.id, "embedding", True),
    }
    assert Trace.objects.filter(team=team).count() == 4
    assert spans["answer"].cost is None and spans["chat gpt-4o-mini"].cost
