"""Dashboard fixtures: one user per role in `team` (owner, admin, member, viewer), an outsider who
owns another team, and a logged-in Django test client for any of them."""

from __future__ import annotations

import pytest
from django.test import Client

from accounts.access import SESSION_TEAM
from accounts.models import Role

from ..factories import MembershipFactory, UserFactory

# Users sign in with their e-mail as username (accounts.services.user_signup).


@pytest.fixture
def admin(team):
    return MembershipFactory(team=team, user=UserFactory(username="admin@example.com"), role=Role.ADMIN).user


@pytest.fixture
def viewer(team):
    return MembershipFactory(team=team, user=UserFactory(username="viewer@example.com"), role=Role.VIEWER).user


@pytest.fixture
def login(db):
    """``login(user)`` → a test client signed in as ``user`` (current team: ``team`` when given)."""

    def make(user, team=None) -> Client:
        client = Client()
        client.force_login(user)
        if team is not None:
            session = client.session
            session[SESSION_TEAM] = team.pk
            session.save()
        return client

    return make


@pytest.fixture
def as_role(login, team, owner, admin, member, viewer, outsider):
    """``as_role("viewer")`` → a client signed in as that role of ``team`` (or "outsider")."""
    users = {"owner": owner, "admin": admin, "member": member, "viewer": viewer, "outsider": outsider}
    return lambda role: login(users[role])


ROLES = ["owner", "admin", "member", "viewer"]
