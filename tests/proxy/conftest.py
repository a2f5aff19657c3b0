"""The proxy under test: config.asgi's real application served by uvicorn in a thread of this process.

In-process, so it shares settings and the pytest-django test database (each xdist worker has its
own) with the tests; the tests use `transactional_db` so what they create is committed and visible
to the server's threads. Upstreams are the fake in `fake_upstream.py`.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

import anthropic
import httpx
import openai
import pytest
import uvicorn

from traces.models import Trace
from traces.proxy.app import ProxyApp
from traces.proxy.conf import ProxySettings

from .fake_upstream import FakeUpstream, FakeUpstreamServer

READ_TIMEOUT = 1.5  # the proxy's upstream read timeout in these tests (the fake's "slow" waits longer)


@dataclass
class ProxyServer:
    url: str
    app: ProxyApp
    spool_dir: Path

    @property
    def base_url(self) -> str:
        return self.url + "/api/v1/proxy"

    def trace(self, trace_id: str) -> Trace:
        """The stored trace, once the background writer has written it.

        Polls: a call the client abandoned is handed to the writer only once the proxy has seen
        the disconnect, a moment after the client returned.
        """
        assert self.app.writer is not None
        deadline = time.monotonic() + 10
        while True:
            assert self.app.writer.flush()
            trace = Trace.objects.filter(trace_id=trace_id).first()
            if trace is not None or time.monotonic() > deadline:
                assert trace is not None, f"no trace {trace_id} was stored"
                return trace
            time.sleep(0.05)


@pytest.fixture(scope="session")
def fake_upstream() -> FakeUpstream:
    server = FakeUpstreamServer()
    state = server.start()
    yield state
    server.stop()


@pytest.fixture(scope="session")
def proxy_server(django_db_setup, fake_upstream, tmp_path_factory) -> ProxyServer:
    import config.asgi

    spool_dir = tmp_path_factory.mktemp("proxy-spool")
    app = config.asgi.proxy
    app.settings = replace(
        ProxySettings.from_django(),
        openai_base_url=fake_upstream.url + "/v1",
        anthropic_base_url=fake_upstream.url + "/anthropic",
        read_timeout=READ_TIMEOUT,
        connect_timeout=READ_TIMEOUT,
        writer_interval=0.01,
        spool_dir=spool_dir,
    )
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(
            config.asgi.application,
            loop="uvloop",
            http="httptools",
            lifespan="on",
            log_level="warning",
            access_log=False,
        )
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="proxy-under-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the proxy did not start"
        time.sleep(0.02)
    yield ProxyServer(url=f"http://127.0.0.1:{port}", app=app, spool_dir=spool_dir)
    server.should_exit = True
    thread.join(15)


@pytest.fixture
def proxy(proxy_server: ProxyServer, transactional_db, fake_upstream: FakeUpstream) -> ProxyServer:
    fake_upstream.clear()
    yield proxy_server
    # Everything a test sent is stored before its database is flushed.
    assert proxy_server.app.writer is not None and proxy_server.app.writer.flush()


@pytest.fixture
def key(prod_key) -> str:
    return prod_key._raw


@pytest.fixture
def http(proxy: ProxyServer, key: str) -> httpx.Client:
    """Plain HTTP to the proxy, with the key: for byte-level checks."""
    with httpx.Client(base_url=proxy.base_url, headers={"X-Service-Key": key}, timeout=10) as client:
        yield client


@pytest.fixture
def direct(fake_upstream: FakeUpstream) -> httpx.Client:
    """Plain HTTP straight to the fake upstream: what the client would get without the proxy."""
    with httpx.Client(base_url=fake_upstream.url, timeout=10) as client:
        yield client


@pytest.fixture
def openai_client(proxy: ProxyServer, key: str) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=proxy.base_url, api_key="sk-client-key", default_headers={"X-Service-Key": key}, max_retries=0
    )


@pytest.fixture
def anthropic_client(proxy: ProxyServer, key: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=proxy.base_url + "/anthropic",
        api_key="sk-ant-client-key",
        default_headers={"X-Service-Key": key},
        max_retries=0,
    )
