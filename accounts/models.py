from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from .roles import Abilities, Permission, Role, role_allows

__all__ = [
    "ApiKey",
    "AuditEvent",
    "Environment",
    "Invitation",
    "Membership",
    "Role",
    "Scope",
    "Team",
    "UserToken",
]


class Team(models.Model):
    name = models.CharField(max_length=100, unique=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "team"], name="membership_unique_user_team")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"

    @property
    def may(self) -> Abilities:
        """What this member may do (accounts.roles): ``membership.may.manage_keys``."""
        return Abilities(self.role)

    def allows(self, permission: Permission) -> bool:
        return role_allows(self.role, permission)


class Environment(models.TextChoices):
    PRODUCTION = "production"
    DEVELOPMENT = "development"
    CI = "ci"


class Scope(models.TextChoices):
    """What a key may do. The environment decides the set (DESIGN.md, API keys)."""

    INGEST = "ingest"
    TRACES_READ = "traces:read"
    ANALYTICS_READ = "analytics:read"
    RULES_READ = "rules:read"
    RULES_TEST = "rules:test"
    RULES_WRITE = "rules:write"
    INTEGRATIONS_READ = "integrations:read"
    INTEGRATIONS_WRITE = "integrations:write"
    DELIVERIES_READ = "deliveries:read"
    DELIVERIES_WRITE = "deliveries:write"
    PROXY = "proxy"
    PII_READ = "pii:read"
    PII_WRITE = "pii:write"
    REPORTS_READ = "reports:read"
    REPORTS_WRITE = "reports:write"
    ALERTS_READ = "alerts:read"
    ALERTS_WRITE = "alerts:write"
    DASHBOARDS_READ = "dashboards:read"
    DASHBOARDS_WRITE = "dashboards:write"
    PRICES_READ = "prices:read"
    PRICES_WRITE = "prices:write"


ENVIRONMENT_SCOPES: dict[str, frozenset[str]] = {
    Environment.PRODUCTION: frozenset(Scope.values),
    Environment.DEVELOPMENT: frozenset(
        {
            Scope.INGEST,
            Scope.TRACES_READ,
            Scope.ANALYTICS_READ,
            Scope.RULES_READ,
            Scope.RULES_TEST,
            Scope.INTEGRATIONS_READ,
            Scope.DELIVERIES_READ,
            Scope.PROXY,
            Scope.PII_READ,
            Scope.REPORTS_READ,
            Scope.ALERTS_READ,
            Scope.DASHBOARDS_READ,
            Scope.PRICES_READ,
        }
    ),
    Environment.CI: frozenset({Scope.INGEST, Scope.TRACES_READ, Scope.PROXY}),
}


# What a user token may do in a team it names (X-Team), by the user's role there: the API's scopes
# for the dashboard's permissions (accounts.roles). Never ingest or proxy: those take an API key.
PERMISSION_SCOPES: dict[Permission, frozenset[str]] = {
    Permission.READ: frozenset(
        {
            Scope.TRACES_READ,
            Scope.ANALYTICS_READ,
            Scope.RULES_READ,
            Scope.INTEGRATIONS_READ,
            Scope.DELIVERIES_READ,
            Scope.PII_READ,
            Scope.REPORTS_READ,
            Scope.ALERTS_READ,
            Scope.DASHBOARDS_READ,
            Scope.PRICES_READ,
        }
    ),
    Permission.SEND_TEST_TRACES: frozenset({Scope.RULES_TEST}),
    Permission.REPLAY_DELIVERIES: frozenset({Scope.DELIVERIES_WRITE}),
    Permission.MANAGE_RULES: frozenset({Scope.RULES_WRITE}),
    Permission.MANAGE_INTEGRATIONS: frozenset({Scope.INTEGRATIONS_WRITE, Scope.PII_WRITE}),
    Permission.MANAGE_KEYS: frozenset(),
    Permission.MANAGE_MEMBERS: frozenset(),
    Permission.RUN_REPORTS: frozenset(),  # (a run needs reports:write, which MANAGE_REPORTS gives)
    Permission.MANAGE_REPORTS: frozenset({Scope.REPORTS_WRITE}),
    Permission.MANAGE_ALERTS: frozenset({Scope.ALERTS_WRITE}),
    Permission.MANAGE_DASHBOARDS: frozenset({Scope.DASHBOARDS_WRITE}),
    Permission.MANAGE_PRICES: frozenset({Scope.PRICES_WRITE}),
}


def role_scopes(role: str) -> frozenset[str]:
    return frozenset().union(*(PERMISSION_SCOPES[p] for p in Permission if role_allows(role, p)))


class ApiKey(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100, blank=True)
    environment = models.CharField(max_length=12, choices=Environment.choices)
    prefix = models.CharField(max_length=24, help_text="The first characters, shown in lists.")
    key_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["team", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.environment}, {self.team})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    @property
    def scopes(self) -> frozenset[str]:
        return ENVIRONMENT_SCOPES[self.environment]


class AuditEvent(models.Model):
    """Who changed a rule, an integration, a key or a member, and what they sent."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="audit_events")
    actor = models.CharField(max_length=200, help_text="user:<username> or key:<prefix>")
    action = models.CharField(max_length=60)
    target = models.CharField(max_length=200, blank=True)
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["team", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor} {self.action} {self.target}"


class Invitation(models.Model):
    """An invitation to join a team, sent by e-mail as a link that works once and expires.

    Only a digest of the link's token is stored (like API keys): the link itself is the secret.
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    token_hash = models.CharField(max_length=64, unique=True)
    invited_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["team", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.email} to {self.team} ({self.role})"

    @property
    def is_pending(self) -> bool:
        return self.accepted_at is None and self.revoked_at is None and self.expires_at > timezone.now()


class UserToken(models.Model):
    """A person's token for the API (the CLI's `tracerelay login`): hashed like API keys, expiring,
    revocable. It acts for the user in any of their teams, with their role there (X-Team)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True, help_text="Where it was made, e.g. 'cli on laptop'.")
    prefix = models.CharField(max_length=24, help_text="The first characters, shown in lists.")
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["user", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and self.expires_at > timezone.now()
