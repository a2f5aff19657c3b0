"""A live server for the real OpenTelemetry SDK apps: config.asgi's application under uvicorn, in a
thread of this process (so it shares the test database; tests using it need `transactional_db`),
and the fake OpenAI upstream of the proxy's tests.

Lifespan is off: startup would start the proxy's writer, which the proxy's own live server (in
tests/proxy, maybe in the same session) owns; this endpoint needs none of it."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn

from tests.proxy.fake_upstream import FakeUpstream, FakeUpstreamServer


@pytest.fixture(scope="session")
def otlp_upstream() -> Iterator[FakeUpstream]:
    server = FakeUpstreamServer()
    yield server.start()
    server.stop()


@pytest.fixture(scope="session")
def live_url(django_db_setup) -> Iterator[str]:
    import config.asgi

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(config.asgi.application, lifespan="off", log_level="warning", access_log=False)
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="otlp-under-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(15)
