"""An integration's settings end to end: the API, ingest, routing, the outbox, two real Celery
workers and webhook receivers on loopback (the issue's checks: a quota of 5 a minute with drop lets
5 through and records the rest, a transform is what the webhook receives, an integration limited to
staging gets no production trace, a 200 whose body carries errors is not delivered)."""

from __future__ import annotations

import pytest

from .conftest import trace, wait_for
from .sink import Answer, WebhookSink

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_quota_environments_transform_and_answers_through_real_workers(product, start_worker):
    with WebhookSink() as quota_sink, WebhookSink() as staging_sink, WebhookSink() as refusing_sink:
        product.integration(
            "budget",
            "webhook",
            {"url": quota_sink.url, "quota": {"max_per_minute": 5, "over_quota": "drop"}},
        )
        product.integration(
            "staging-only",
            "webhook",
            {
                "url": staging_sink.url,
                "environments": ["staging"],
                "transform": [
                    {"op": "drop", "path": "input"},
                    {"op": "truncate", "path": "output", "max_chars": 5},
                ],
            },
        )
        product.integration(
            "strict",
            "webhook",
            {"url": refusing_sink.url, "response_validation": {"json_path": "errors"}},
            retry_policy={"max_attempts": 1},
        )
        refusing_sink.default = Answer(200, body=b'{"errors": ["index is read-only"]}')
        product.rules({"name": "all", "condition": "true", "destinations": ["budget", "staging-only", "strict"]})
        # Two workers sharing the quota's counter in Redis. The test settings' cache prefix is per run
        # (else per process id): the workers are given one run id, as the processes of a deployment
        # share one prefix.
        start_worker(PYTEST_XDIST_TESTRUNUID="i24quota")
        start_worker(PYTEST_XDIST_TESTRUNUID="i24quota")

        production = product.ingest(*[trace(environment="production") for _ in range(6)])
        staging = product.ingest(*[trace(environment="staging", output="a long answer") for _ in range(2)])

        def settled(destination: str, count: int):
            rows = product.deliveries(destination=destination)
            done = [r for r in rows if r["status"] not in ("pending", "sending")]
            return rows if len(done) == count else None

        budget = wait_for(lambda: settled("budget", 8), timeout=90, what="the budget deliveries")
        staging_rows = wait_for(lambda: settled("staging-only", 8), timeout=90, what="staging-only")
        strict = wait_for(lambda: settled("strict", 8), timeout=90, what="strict")

    assert sorted(r["status"] for r in budget) == ["delivered"] * 5 + ["dropped"] * 3
    assert {r["reason"] for r in budget if r["status"] == "dropped"} == {"quota"}
    assert len(quota_sink.stored) == 5

    assert set(staging_sink.stored) == set(staging)
    for sent in staging_sink.stored.values():
        assert sent["input"] is None and sent["output"] == "a lon"
    by_trace = {r["trace_id"]: r for r in staging_rows}
    assert all(by_trace[t]["status"] == "dropped" and by_trace[t]["reason"] == "environment" for t in production)

    assert {r["status"] for r in strict} == {"dead"}
    assert all("index is read-only" in r["last_error"] for r in strict)
