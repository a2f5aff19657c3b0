"""Shared fixtures: the owner / member / outsider pattern, and API clients per key environment."""

from __future__ import annotations

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
