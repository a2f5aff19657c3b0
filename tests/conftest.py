"""Shared fixtures: the owner / member / outsider pattern, API clients per key environment, and the OpenAPI document."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.models import Role

from .factories import ApiKeyFactory, MembershipFactory, TeamFactory, UserFactory


@pytest.fixture
def team(db):
    return TeamFactory(name="alpha")


@pytest.fixture
def other_team(db):
    return TeamFactory(name="beta")


@pytest.fixture
def owner(team):
    return MembershipFactory(team=team, user=UserFactory(username="owner"), role=Role.OWNER).user


@pytest.fixture
def member(team):
    return MembershipFactory(team=team, user=UserFactory(username="member"), role=Role.MEMBER).user


@pytest.fixture
def outsider(other_team):
    return MembershipFactory(team=other_team, user=UserFactory(username="outsider"), role=Role.OWNER).user


def _client_for(key) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key._raw}")
    client.key = key  # type: ignore[attr-defined]
    return client


@pytest.fixture
def prod_key(team):
    return ApiKeyFactory(team=team, environment="production")


@pytest.fixture
def api(prod_key) -> APIClient:
    """A production key of `team`."""
    return _client_for(prod_key)


@pytest.fixture
def dev_api(team) -> APIClient:
    return _client_for(ApiKeyFactory(team=team, environment="development"))


@pytest.fixture
def ci_api(team) -> APIClient:
    return _client_for(ApiKeyFactory(team=team, environment="ci"))


@pytest.fixture
def other_api(other_team) -> APIClient:
    """A production key of another team: must never see `team`'s data."""
    return _client_for(ApiKeyFactory(team=other_team, environment="production"))


@pytest.fixture
def anon_api() -> APIClient:
    return APIClient()


@pytest.fixture(scope="session")
def schema() -> dict[str, Any]:
    """The OpenAPI document the API serves (drf-spectacular), made once per test process."""
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


@pytest.fixture(scope="session")
def components(schema) -> dict[str, Any]:
    return schema["components"]["schemas"]


@pytest.fixture
def no_team_prices(monkeypatch):
    """For tests of pricing's callers without a database: no team has prices of its own."""
    from traces import pricing
    from traces.prices.lookup import NO_PRICES

    monkeypatch.setattr(pricing, "team_prices", lambda team_id: NO_PRICES)
