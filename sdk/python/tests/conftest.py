"""Fixtures for the SDK's tests: a fake transport, a fake tracerelay server, a fake LLM upstream.

Each test ends with the SDK shut down and the provider libraries restored, so no other test (the
proxy's tests use the same openai and anthropic packages) ever runs through our wrappers.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import tracerelay
from fake_tracerelay import FakeTracerelay
from fake_transport import FakeTransport
from tracerelay import instrument

from tests.proxy.fake_upstream import FakeUpstream, FakeUpstreamServer


@pytest.fixture(autouse=True)
def _sdk_reset(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("TRACERELAY_API_KEY", raising=False)
    monkeypatch.delenv("TRACERELAY_BASE_URL", raising=False)
    yield
    tracerelay.shutdown(timeout=2)
    instrument.uninstall()


@pytest.fixture
def transport() -> FakeTransport:
    return FakeTransport()


@pytest.fixture
def server() -> Iterator[FakeTracerelay]:
    fake = FakeTracerelay()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeUpstream]:
    server = FakeUpstreamServer()
    state = server.start()
    yield state
    server.stop()
