"""Fixtures of the score tests."""

from __future__ import annotations

import pytest

from delivery import scores


@pytest.fixture
def published(monkeypatch):
    """Score deliveries handed to the broker, one list of ids per publish (nothing is queued)."""
    sent: list[list[int]] = []

    def fake(ids, *, countdown=None):
        sent.append(list(ids))
        return True

    monkeypatch.setattr(scores, "publish", fake)
    return sent
