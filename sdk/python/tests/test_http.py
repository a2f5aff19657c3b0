"""The SDK over real HTTP to a fake tracerelay server: gzip, an older server, Retry-After, routing rules,
and a server that is down while the application makes real `openai` calls."""

from __future__ import annotations

import gzip
import json
import logging
import time

import openai
import pytest
import tracerelay
from fake_tracerelay import BlackHole, FakeTracerelay, closed_port
from fake_transport import KEY
from tracerelay._transport import _retry_after

from tests.proxy.fake_upstream import CHAT_WORDS, FakeUpstream

MESSAGES = [{"role": "user", "content": "hi"}]


def spans(n: int) -> None:
    for i in range(n):
        with tracerelay.trace(f"job-{i}", input={"text": "lorem ipsum " * 20}):
            pass


def test_batches_are_gzipped_with_the_key_as_a_bearer_token(server: FakeTracerelay) -> None:
    tracerelay.init(api_key=KEY, base_url=server.url, batch=True, instrument=False)
    spans(20)
    assert tracerelay.flush(timeout=5)
    (request,) = server.received
    assert request.path == "/api/v1/traces/batch" and request.headers["content-encoding"] == "gzip"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["user-agent"].startswith("tracerelay-python/")
    assert len(json.loads(gzip.decompress(request.body))["traces"]) == 20
    assert tracerelay.stats()["sent"] == 20


def test_compress_false_sends_plain_json(server: FakeTracerelay) -> None:
    tracerelay.init(api_key=KEY, base_url=server.url, batch=True, compress=False, instrument=False)
    spans(20)
    assert tracerelay.flush(timeout=5)
    (request,) = server.received
    assert "content-encoding" not in request.headers and len(json.loads(request.body)["traces"]) == 20


def test_a_server_without_gzip_gets_plain_bodies_and_loses_nothing() -> None:
    old = FakeTracerelay(gzip_ok=False)
    try:
        tracerelay.init(api_key=KEY, base_url=old.url, batch=True, instrument=False)
        spans(20)
        assert tracerelay.flush(timeout=5)
        spans(20)
        assert tracerelay.flush(timeout=5)
        assert len(old.traces) == 40 and tracerelay.stats()["sent"] == 40
        assert [r.headers.get("content-encoding") for r in old.received] == [None, None]  # the 400 is not kept
    finally:
        old.stop()


def test_a_retry_after_from_the_server_is_waited_and_the_same_ids_are_sent(server: FakeTracerelay) -> None:
    server.script.append((503, {"Retry-After": "0.3"}, {"title": "Unavailable"}))
    tracerelay.init(api_key=KEY, base_url=server.url, batch=True, instrument=False)
    started = time.monotonic()
    spans(5)
    assert tracerelay.flush(timeout=5)
    assert time.monotonic() - started >= 0.3
    first, second = server.received
    assert first.data == second.data  # same ids: a retry stores nothing twice
    assert len(server.traces) == 5


def test_retry_after_reads_seconds_and_http_dates() -> None:
    assert _retry_after("2") == 2.0
    assert _retry_after("garbage") is None and _retry_after(None) is None
    soon = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 < (_retry_after(soon) or 0) <= 30


def test_routing_rules_are_put_for_the_service(server: FakeTracerelay) -> None:
    rules = [{"name": "errors", "condition": "status == 'error'", "destinations": [{"name": "langfuse"}]}]
    tracerelay.init(api_key=KEY, base_url=server.url, service_name="billing api", routing_rules=rules, instrument=False)
    assert tracerelay.flush(timeout=5)
    (request,) = server.received
    assert (request.method, request.path) == ("PUT", "/api/v1/routing/rules/services/billing%20api")
    assert request.data == {"rules": rules}
    assert tracerelay.stats()["routing_rules"] == "registered"


@pytest.mark.parametrize(
    ("status", "state", "warning"),
    [(403, "refused: 403", "may not change routing rules"), (404, "unsupported: 404", "too old")],
)
def test_routing_rules_refused_are_a_warning(
    server: FakeTracerelay, caplog: pytest.LogCaptureFixture, status: int, state: str, warning: str
) -> None:
    server.script.append((status, {}, {"title": "no"}))
    tracerelay.init(api_key=KEY, base_url=server.url, service_name="svc", routing_rules=[{"name": "r"}])
    spans(1)
    assert tracerelay.flush(timeout=5)
    assert tracerelay.stats()["routing_rules"] == state and warning in caplog.text
    assert len(server.traces) == 1  # traces flow regardless


def test_routing_rules_without_a_service_name_are_skipped(
    server: FakeTracerelay, caplog: pytest.LogCaptureFixture
) -> None:
    tracerelay.init(api_key=KEY, base_url=server.url, routing_rules=[{"name": "r"}], instrument=False)
    assert tracerelay.flush(timeout=5)
    assert server.received == [] and "service_name" in caplog.text


def test_with_the_service_down_the_app_runs_on_and_the_traces_are_counted_failed(
    upstream: FakeUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="tracerelay")
    tracerelay.init(api_key=KEY, base_url=f"http://127.0.0.1:{closed_port()}", batch=True)
    client = openai.OpenAI(base_url=upstream.url + "/v1", api_key="k", max_retries=0)
    replies = [client.chat.completions.create(model="m", messages=MESSAGES) for _ in range(10)]
    assert all(r.choices[0].message.content == "".join(CHAT_WORDS) for r in replies)
    # The connection is refused: the flush says so at once instead of waiting out its timeout, and
    # the traces stay queued (the worker keeps retrying them while the app runs).
    started = time.monotonic()
    assert tracerelay.flush(timeout=30) is False
    flushed = time.monotonic() - started
    stats = tracerelay.stats()
    assert (stats["failed"], stats["sent"], stats["captured"] + stats["queued"]) == (0, 0, 10)
    started = time.monotonic()
    assert tracerelay.shutdown(timeout=30) is False  # at exit: one attempt, refused, given up at once
    shut = time.monotonic() - started
    print(f"refused: flush answered in {flushed:.3f} s, shutdown in {shut:.3f} s (timeouts 30 s)")
    assert flushed < 5 and shut < 5
    stats = tracerelay.stats()
    assert (stats["failed"], stats["sent"], stats["dropped"], stats["queued"]) == (10, 0, 0, 0)
    assert len(caplog.records) == 1  # one line, not one per batch or per attempt
    assert "10 trace(s) not sent at exit" in caplog.text and "Connection refused" in caplog.text


def test_with_the_service_hanging_a_full_queue_drops_and_counts(upstream: FakeUpstream) -> None:
    with BlackHole() as hole:
        tracerelay.init(api_key=KEY, base_url=hole.url, max_queue_size=3, timeout=30)
        client = openai.OpenAI(base_url=upstream.url + "/v1", api_key="k", max_retries=0)
        client.chat.completions.create(model="m", messages=MESSAGES)
        assert hole.connected.wait(30)  # the worker took the first trace and waits on the server
        for _ in range(10):
            client.chat.completions.create(model="m", messages=MESSAGES)
        stats = tracerelay.stats()
        assert (stats["queued"], stats["dropped"]) == (3, 7)
        started = time.monotonic()
        assert tracerelay.shutdown(timeout=0.5) is False  # bounded, as at exit
        took = time.monotonic() - started
    print(f"black hole: shutdown(timeout=0.5) took {took:.3f} s")
    assert took < 0.5 + 1.5
    stats = tracerelay.stats()
    assert (stats["failed"], stats["queued"], stats["sent"]) == (4, 0, 0)  # the one in flight and the 3 queued
