from __future__ import annotations

import pytest

from debugmode import state


@pytest.fixture(autouse=True)
def _fresh_state():
    state.forget()
    yield
    state.forget()


@pytest.fixture
def debug_on(team, django_capture_on_commit_callbacks):
    """``debug_on()`` switches `team`'s debug mode on for an hour, as the settings page does."""
    from debugmode.services import debug_mode_enable

    def switch(duration: str = "1h"):
        with django_capture_on_commit_callbacks(execute=True):
            return debug_mode_enable(team_id=team.pk, duration=duration, actor="user:test")

    return switch


@pytest.fixture
def published(monkeypatch):
    """The ids `outbox.publish` was asked to send (never the shared broker: see tests/delivery)."""
    from delivery import outbox

    sent: list[list[int]] = []
    monkeypatch.setattr(outbox, "publish", lambda ids, *, countdown=None: sent.append(list(ids)) or True)
    return sent
