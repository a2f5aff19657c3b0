"""Routing fixtures: integrations for the team, and a clean per-process compiled-rules cache."""

from __future__ import annotations

import pytest

from routing import selectors
from tests.factories import IntegrationFactory


@pytest.fixture(autouse=True)
def _fresh_compiled_routing():
    selectors.forget_compiled_routing()
    yield
    selectors.forget_compiled_routing()


@pytest.fixture
def integrations(team):
    """langfuse, helicone and a webhook integration named 'audit-hook'."""
    return {
        "langfuse": IntegrationFactory(team=team, name="lf-prod", platform="langfuse", config={}),
        "helicone": IntegrationFactory(team=team, name="helicone-main", platform="helicone", config={}),
        "webhook": IntegrationFactory(team=team, name="audit-hook", platform="webhook"),
    }
