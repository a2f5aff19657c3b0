"""What each team role may do in the dashboard: the one place these rules live.

Roles nest: a viewer reads (and downloads reports); a member also sends test traces, replays
deliveries, runs reports and edits the team's dashboards; an admin also manages rules,
integrations, API keys, reports, alerts and the team's prices; an owner also manages members. Views ask through
`accounts.access.team_view(Permission.X)`; templates through `membership.may.X` (see `Abilities`).
"""

from __future__ import annotations

from enum import StrEnum

from django.db import models


class Role(models.TextChoices):
    OWNER = "owner"
    ADMIN = "admin"
    MEMBER = "member"
    VIEWER = "viewer"


class Permission(StrEnum):
    READ = "read"
    SEND_TEST_TRACES = "send_test_traces"
    REPLAY_DELIVERIES = "replay_deliveries"
    MANAGE_RULES = "manage_rules"
    MANAGE_INTEGRATIONS = "manage_integrations"
    MANAGE_KEYS = "manage_keys"
    MANAGE_MEMBERS = "manage_members"
    RUN_REPORTS = "run_reports"
    MANAGE_REPORTS = "manage_reports"
    MANAGE_ALERTS = "manage_alerts"
    MANAGE_DASHBOARDS = "manage_dashboards"
    MANAGE_PRICES = "manage_prices"


_VIEWER = frozenset({Permission.READ})
_MEMBER = _VIEWER | {
    Permission.SEND_TEST_TRACES,
    Permission.REPLAY_DELIVERIES,
    Permission.RUN_REPORTS,
    Permission.MANAGE_DASHBOARDS,
}
_ADMIN = _MEMBER | {
    Permission.MANAGE_RULES,
    Permission.MANAGE_INTEGRATIONS,
    Permission.MANAGE_KEYS,
    Permission.MANAGE_REPORTS,
    Permission.MANAGE_ALERTS,
    Permission.MANAGE_PRICES,
}
_OWNER = _ADMIN | {Permission.MANAGE_MEMBERS}

ROLE_PERMISSIONS: dict[str, frozenset[Permission]] = {
    Role.VIEWER: _VIEWER,
    Role.MEMBER: _MEMBER,
    Role.ADMIN: _ADMIN,
    Role.OWNER: _OWNER,
}

ROLE_DESCRIPTIONS: dict[str, str] = {
    Role.VIEWER: "Reads traces, rules, integrations and keys.",
    Role.MEMBER: "Also sends test traces, replays deliveries, runs reports and edits dashboards.",
    Role.ADMIN: "Also manages rules, integrations, API keys, reports, alerts and prices.",
    Role.OWNER: "Also manages members and their roles.",
}


def role_allows(role: str, permission: Permission) -> bool:
    return permission in ROLE_PERMISSIONS.get(role, frozenset())


class Abilities:
    """`membership.may.manage_keys` in a template: True when the role allows it."""

    def __init__(self, role: str) -> None:
        self._granted = ROLE_PERMISSIONS.get(role, frozenset())

    def __getattr__(self, name: str) -> bool:
        try:
            return Permission(name) in self._granted
        except ValueError:
            raise AttributeError(name) from None
