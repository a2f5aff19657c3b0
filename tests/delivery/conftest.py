"""Delivery fixtures: every destination scripted, and publishing captured.

Publishing is captured rather than sent to the shared Redis: a message carrying our row ids must
never reach a worker that someone else runs against another database.
"""

from __future__ import annotations

import copy
import uuid

import pytest

from delivery import engine, outbox

from .scripted import Script, ScriptedExporter


@pytest.fixture
def scripted(monkeypatch):
    """Every destination resolves to `ScriptedExporter`; ``scripted["name"]`` is that destination's script."""
    ScriptedExporter.scripts = {}
    monkeypatch.setattr(engine, "exporter_class", lambda platform: ScriptedExporter)

    class Scripts(dict):
        def __missing__(self, key: str) -> Script:
            return ScriptedExporter.scripts.setdefault(key, Script())

    return Scripts()


@pytest.fixture
def published(monkeypatch):
    """The ids `outbox.publish` was asked to send, with their countdowns."""
    sent: list[tuple[list[int], float | None]] = []

    def fake_publish(ids, *, countdown=None):
        sent.append((list(ids), countdown))
        return True

    monkeypatch.setattr(outbox, "publish", fake_publish)
    return sent


@pytest.fixture(autouse=True)
def _fresh_resolutions():
    engine.forget_resolved()
    yield
    engine.forget_resolved()


@pytest.fixture(autouse=True)
def _own_cache_namespace(settings):
    """Circuit breakers live in the shared Redis: give each test a key prefix of its own
    (never ``cache.clear()``, which would flush the database other people's tests use)."""
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["KEY_PREFIX"] = f"tr-test-delivery-{uuid.uuid4().hex[:12]}"
    settings.CACHES = caches
