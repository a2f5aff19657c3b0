"""End-to-end fixtures: our own Redis, real Celery workers against the test database, and helpers
that drive the product through its API (integrations, rules, ingest) as a user would.

The test process and its workers share a Redis started here, never the shared one on 6379:
a worker must not pick up messages other people's tests published, and a test may stop this one.
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from delivery import outbox
from delivery.models import Delivery

from .processes import CeleryWorker, RedisServer


@pytest.fixture(scope="session")
def e2e_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("e2e")


@pytest.fixture(scope="session")
def redis_server(e2e_dir: Path) -> Iterator[RedisServer]:
    server = RedisServer(e2e_dir).start()
    yield server
    server.stop()


def _point_celery_at(url: str) -> None:
    from config.celery import app

    app.conf.broker_url = url
    app._pool = None  # the next publish opens a pool for the new URL
    if "amqp" in app.__dict__:
        app.__dict__["amqp"]._producer_pool = None


@pytest.fixture
def broker(redis_server: RedisServer, settings: Any) -> Iterator[RedisServer]:
    """Publish to (and cache in) our Redis for the duration of a test."""
    from config.celery import app

    before = app.conf.broker_url
    _point_celery_at(redis_server.url)
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["LOCATION"] = redis_server.url
    settings.CACHES = caches
    outbox._broker_down_until = 0.0
    yield redis_server
    _point_celery_at(before)
    outbox._broker_down_until = 0.0


@pytest.fixture
def worker_env(broker: RedisServer, e2e_dir: Path, transactional_db: None) -> dict[str, str]:
    from django.conf import settings
    from django.db import connection

    database = connection.settings_dict
    return {
        "DJANGO_SETTINGS_MODULE": "config.test_settings",
        # Same keys as this process, so the worker decrypts the integration secrets stored here.
        "SECRET_KEY": settings.SECRET_KEY,
        **(
            {"TRACERELAY_FERNET_KEYS": ",".join(settings.TRACERELAY_FERNET_KEYS)}
            if settings.TRACERELAY_FERNET_KEYS
            else {}
        ),
        "DATABASE_URL": f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}/{database['NAME']}",
        "REDIS_URL": broker.url,
        "CELERY_BROKER_URL": broker.url,
        "TRACERELAY_DATA_DIR": str(e2e_dir / "data"),
        "TRACERELAY_OUTBOX_SWEEP_INTERVAL_S": "1",
        "TRACERELAY_OUTBOX_SWEEP_GRACE_S": "1",
        "TRACERELAY_DELIVERY_CLAIM_TIMEOUT_S": "4",
        "TRACERELAY_BREAKER_FAILURES": "100",
        "PYTEST_XDIST_WORKER": os.environ.get("PYTEST_XDIST_WORKER", "main"),
        "PYTHONUNBUFFERED": "1",
    }


@pytest.fixture
def start_worker(worker_env: dict[str, str], e2e_dir: Path) -> Iterator[Callable[..., CeleryWorker]]:
    workers: list[CeleryWorker] = []

    def start(*, queues: str = "delivery", **env: str) -> CeleryWorker:
        worker = CeleryWorker(e2e_dir, {**worker_env, **env}, queues=queues).start()
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        worker.stop()


class Product:
    """The product driven through its API with a production key, as a user would."""

    def __init__(self, api: APIClient) -> None:
        self.api = api

    def integration(self, name: str, platform: str, config: dict[str, Any], **extra: Any) -> dict[str, Any]:
        body = {"name": name, "platform": platform, "config": config, **extra}
        response = self.api.post("/api/v1/integrations", body, format="json")
        assert response.status_code == 201, response.content
        return response.json()

    def webhook(self, name: str, url: str, *, attempts: int = 3, **extra: Any) -> dict[str, Any]:
        policy = {"max_attempts": attempts, "base_delay_s": 0.1, "max_delay_s": 1}
        return self.integration(name, "webhook", {"url": url}, retry_policy=policy, timeout_s=5, **extra)

    def rules(self, *rules: dict[str, Any]) -> dict[str, Any]:
        response = self.api.put("/api/v1/routing/rules", {"rules": list(rules)}, format="json")
        assert response.status_code == 200, response.content
        return response.json()

    def ingest(self, *traces: dict[str, Any]) -> list[str]:
        if len(traces) == 1:
            response = self.api.post("/api/v1/traces", traces[0], format="json")
            assert response.status_code == 201, response.content
            return [response.json()["id"]]
        response = self.api.post("/api/v1/traces/batch", {"traces": list(traces)}, format="json")
        assert response.status_code in (200, 201, 207), response.content
        body = response.json()
        items = body.get("results") or body.get("data") or body.get("traces")
        return [item["id"] for item in items]

    def deliveries(self, **params: Any) -> list[dict[str, Any]]:
        response = self.api.get("/api/v1/deliveries", {"limit": 500, **params})
        assert response.status_code == 200, response.content
        return response.json()["data"]


@pytest.fixture
def product(api: APIClient) -> Product:
    return Product(api)


def wait_for(predicate: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")


def statuses_by_destination(trace_id: str) -> dict[str, str]:
    rows = Delivery.objects.filter(trace__trace_id=trace_id).values_list("destination", "status")
    return dict(rows)


def trace(model: str = "gpt-4o", **fields: Any) -> dict[str, Any]:
    return {
        "model": model,
        "provider": "openai",
        "prompt_tokens": 12,
        "completion_tokens": 7,
        "latency_ms": 321,
        "input": {"messages": [{"role": "user", "content": "Say hello"}]},
        "output": {"choices": [{"message": {"role": "assistant", "content": "Hello!"}, "finish_reason": "stop"}]},
        **fields,
    }
