"""The proxy's added latency reaches /metrics' histogram (config.metrics)."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

pytestmark = pytest.mark.django_db(transaction=True)


def test_each_proxied_call_observes_its_added_latency(http, proxy):
    def count() -> float:
        return REGISTRY.get_sample_value("tracerelay_proxy_added_latency_seconds_count") or 0.0

    before = count()
    body = b'{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]}'
    for _ in range(2):
        response = http.post("/chat/completions", content=body, headers={"content-type": "application/json"})
        assert response.status_code == 200
    assert count() == before + 2
    assert 0 < (REGISTRY.get_sample_value("tracerelay_proxy_added_latency_seconds_sum") or 0) < 60
