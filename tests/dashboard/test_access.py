"""The role rules (accounts.roles), the view decorator and the data-driven navigation."""

from __future__ import annotations

import pytest

from accounts.nav import NAV, NavItem, nav_links
from accounts.roles import ROLE_PERMISSIONS, Permission, Role, role_allows

pytestmark = pytest.mark.django_db


def test_roles_nest():
    order = [Role.VIEWER, Role.MEMBER, Role.ADMIN, Role.OWNER]
    for lower, higher in zip(order, order[1:], strict=False):
        assert ROLE_PERMISSIONS[lower] < ROLE_PERMISSIONS[higher]


@pytest.mark.parametrize(
    "role,allowed",
    [
        (Role.VIEWER, {Permission.READ}),
        (
            Role.MEMBER,
            {
                Permission.READ,
                Permission.SEND_TEST_TRACES,
                Permission.REPLAY_DELIVERIES,
                Permission.RUN_REPORTS,
                Permission.MANAGE_DASHBOARDS,
            },
        ),
        (
            Role.ADMIN,
            {
                Permission.READ,
                Permission.SEND_TEST_TRACES,
                Permission.REPLAY_DELIVERIES,
                Permission.MANAGE_RULES,
                Permission.MANAGE_INTEGRATIONS,
                Permission.MANAGE_KEYS,
                Permission.RUN_REPORTS,
                Permission.MANAGE_REPORTS,
                Permission.MANAGE_ALERTS,
                Permission.MANAGE_DASHBOARDS,
                Permission.MANAGE_PRICES,
            },
        ),
        (Role.OWNER, set(Permission)),
    ],
)
def test_each_role_may_do_what_the_issue_says(role, allowed):
    assert {p for p in Permission if role_allows(role, p)} == allowed


def test_an_unknown_role_may_do_nothing():
    assert not role_allows("intern", Permission.READ)


def test_the_nav_shows_pages_that_exist_and_the_role_allows(monkeypatch, team, owner, viewer):
    from accounts.models import Membership

    monkeypatch.setattr(
        "accounts.nav.NAV",
        [*NAV, NavItem("Not built", "no-such-url"), NavItem("Keys admin", "settings-api-keys", Permission.MANAGE_KEYS)],
    )
    as_owner = Membership.objects.get(user=owner, team=team)
    as_viewer = Membership.objects.get(user=viewer, team=team)
    labels = [link.label for link in nav_links("/", as_owner, "main")]
    assert labels == [
        "Traces",
        "Runs",
        "Sessions",
        "Users",
        "Analytics",
        "Dashboards",
        "Routing",
        "Integrations",
        "Reports",
        "Alerts",
        "Keys admin",
    ]
    viewer_labels = [link.label for link in nav_links("/", as_viewer, "main")]
    assert viewer_labels == [
        "Traces",
        "Runs",
        "Sessions",
        "Users",
        "Analytics",
        "Dashboards",
        "Routing",
        "Integrations",
        "Reports",
        "Alerts",
    ]
    settings = nav_links("/settings/team", as_owner, "settings")
    assert [(link.label, link.active) for link in settings] == [
        ("API keys", False),
        ("Team", True),
        ("Privacy", False),
        ("Prices", False),
        ("Re-pricing", False),
        ("Advanced", False),
    ]


def test_the_top_bar_lists_the_nav(as_role):
    text = as_role("viewer").get("/settings/team").content.decode()
    assert 'href="/" ' in text or 'href="/">' in text
    assert 'aria-current="page">Settings</a>' in text
