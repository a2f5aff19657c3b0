from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from . import keys
from .models import ApiKey, AuditEvent, Environment, Membership, Role, Team
from .selectors import forget_key


def team_create(*, name: str, owner: Any = None) -> Team:
    with transaction.atomic():
        team = Team.objects.create(name=name)
        if owner is not None:
            Membership.objects.create(user=owner, team=team, role=Role.OWNER)
    return team


def api_key_create(
    *, team: Team, environment: str, name: str = "", created_by: Any = None, actor: str = ""
) -> tuple[ApiKey, str]:
    """Make a key. The raw key is returned once and never stored."""
    if environment not in Environment.values:
        raise ValueError(f"environment must be one of {', '.join(Environment.values)}")
    raw = keys.generate(environment)
    with transaction.atomic():
        key = ApiKey.objects.create(
            team=team,
            environment=environment,
            name=name,
            prefix=keys.display_prefix(raw),
            key_hash=keys.digest(raw),
            created_by=created_by,
        )
        audit(
            team=team,
            actor=actor or _actor(created_by),
            action="api_key.create",
            target=key.prefix,
            data={"environment": environment, "name": name},
        )
    return key, raw


def api_key_revoke(*, key: ApiKey, actor: str = "") -> ApiKey:
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
        audit(team=key.team, actor=actor or "system", action="api_key.revoke", target=key.prefix)
    forget_key(key.key_hash)
    return key


def audit(
    *, team: Team | int, actor: str, action: str, target: str = "", data: dict[str, object] | None = None
) -> None:
    team_id = team if isinstance(team, int) else team.pk
    AuditEvent.objects.create(team_id=team_id, actor=actor, action=action, target=target, data=data or {})


def _actor(user: AbstractBaseUser | None) -> str:
    return f"user:{user.get_username()}" if user is not None else "cli"
