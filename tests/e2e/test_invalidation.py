"""Changes reach every process at once (config/invalidation.py): two real uvicorn servers on one
database and Redis; a key revoked, and an upstream created, through one are seen by the other
within a second, on the API, the lean ingest path and the proxy."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from accounts.models import ApiKey
from accounts.services import api_key_revoke
from tests.factories import ApiKeyFactory, TeamFactory

from .processes import VENV_BIN, Process, free_port

pytestmark = pytest.mark.django_db(transaction=True)

PROPAGATION_S = 1.0


class Web(Process):
    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        self.port = free_port()
        argv = [str(VENV_BIN / "uvicorn"), "config.asgi:application", "--port", str(self.port), "--no-access-log"]
        super().__init__(f"web-{self.port}", argv, env=env, workdir=workdir)
        self.url = f"http://127.0.0.1:{self.port}"


@pytest.fixture
def two_servers(worker_env: dict[str, str], e2e_dir: Path, settings: Any, broker: Any) -> Iterator[tuple[Web, Web]]:
    from config import test_settings

    settings.REDIS_URL = broker.url  # this test process publishes where the servers listen...
    # ...on the channel named after the cache prefix, which test settings derive from the run id.
    env = {**worker_env, "PYTEST_XDIST_TESTRUNUID": test_settings._RUN}
    servers = [Web(e2e_dir, env).start() for _ in range(2)]
    try:
        for server in servers:
            server.wait_http(server.url + "/healthz", timeout=180)
        yield servers[0], servers[1]
    finally:
        for server in servers:
            server.stop()


def within(seconds: float, check: Callable[[], bool]) -> float:
    """When the first ``check()`` that held began (polling), failing once a check begun after ``seconds``
    still saw the old state. A check is several requests: on a loaded machine one can take longer than
    ``seconds`` by itself, which says nothing against the change having arrived in time."""
    started = time.monotonic()
    while True:
        began = time.monotonic() - started
        if check():
            return began
        if began > seconds:
            raise AssertionError(f"not within {seconds}s: a check begun at {began:.2f} s saw the old state")
        time.sleep(0.02)


def test_a_revoked_key_is_refused_by_every_process_within_a_second(two_servers: tuple[Web, Web]) -> None:
    key = ApiKeyFactory(team=TeamFactory(name="revoke"))
    bearer = {"Authorization": f"Bearer {key._raw}"}
    proxy_key = {"X-Service-Key": key._raw}
    for server in two_servers:  # every cache warm: the API's, the lean ingest's and the proxy's
        assert httpx.get(server.url + "/api/v1/traces", headers=bearer).status_code == 200
        assert httpx.post(server.url + "/api/v1/traces", json={"model": "m"}, headers=bearer).status_code == 201
        assert httpx.get(server.url + "/api/v1/proxy/u/nope/models", headers=proxy_key).status_code == 404

    api_key_revoke(key=ApiKey.objects.get(pk=key.pk), actor="test")

    def refused_everywhere() -> bool:
        return all(
            httpx.get(s.url + "/api/v1/traces", headers=bearer).status_code == 401
            and httpx.post(s.url + "/api/v1/traces", json={"model": "m"}, headers=bearer).status_code == 401
            and httpx.get(s.url + "/api/v1/proxy/u/nope/models", headers=proxy_key).status_code == 401
            for s in two_servers
        )

    within(PROPAGATION_S, refused_everywhere)


def test_an_upstream_created_through_one_process_is_used_by_the_other_at_once(
    two_servers: tuple[Web, Web],
) -> None:
    first, second = two_servers
    key = ApiKeyFactory(team=TeamFactory(name="upstreams"))
    headers = {"X-Service-Key": key._raw}
    path = "/api/v1/proxy/u/fresh/chat/completions"
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    # The second process has cached "this team has no upstream named fresh".
    missing = httpx.post(second.url + path, json=body, headers=headers)
    assert missing.status_code == 404 and "fresh" in missing.json()["detail"]

    closed_port = free_port()  # nothing listens there: a known upstream answers 502, not 404
    created = httpx.post(
        first.url + "/api/v1/upstreams",
        json={"name": "fresh", "base_url": f"http://127.0.0.1:{closed_port}/v1"},
        headers={"Authorization": f"Bearer {key._raw}"},
    )
    assert created.status_code == 201, created.text

    within(PROPAGATION_S, lambda: httpx.post(second.url + path, json=body, headers=headers).status_code == 502)
