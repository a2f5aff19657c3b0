from __future__ import annotations

import hashlib
import logging
import secrets
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from config.problems import InvalidInput

from . import keys
from .models import ApiKey, AuditEvent, Environment, Invitation, Membership, Role, Team, UserToken
from .selectors import forget_key

log = logging.getLogger(__name__)


def team_create(*, name: str, owner: Any = None) -> Team:
    with transaction.atomic():
        team = Team.objects.create(name=name)
        if owner is not None:
            Membership.objects.create(user=owner, team=team, role=Role.OWNER)
            audit(team=team, actor=_actor(owner), action="team.create", target=name)
    return team


def team_create_unique(*, name: str, owner: Any) -> Team:
    """A team named ``name``, or ``name 2``, ``name 3``… when taken (team names are unique)."""
    base = name.strip()[:90] or "team"
    for n in range(1, 1000):
        candidate = base if n == 1 else f"{base} {n}"
        if Team.objects.filter(name__iexact=candidate).exists():
            continue
        try:
            return team_create(name=candidate, owner=owner)
        except IntegrityError:  # taken between the check and the insert
            continue
    raise InvalidInput({"name": ["Choose another team name."]})


def team_rename(*, team: Team, name: str, actor: Any) -> Team:
    """Team names are unique (case aside): the session, the team menu and invitations show them."""
    name = name.strip()
    if not name:
        raise InvalidInput({"name": ["Enter a team name."]})
    if Team.objects.filter(name__iexact=name).exclude(pk=team.pk).exists():
        raise InvalidInput({"name": ["Another team has this name. Choose another."]})
    before = team.name
    team.name = name
    try:
        with transaction.atomic():
            team.save(update_fields=["name"])
            audit(team=team, actor=_actor(actor), action="team.rename", target=name, data={"from": before})
    except IntegrityError:  # taken between the check and the update
        team.name = before
        raise InvalidInput({"name": ["Another team has this name. Choose another."]}) from None
    return team


def team_delete(*, team: Team, confirm: str, actor: Any) -> None:
    """Delete a team and everything in it (traces, deliveries, keys, members, its audit log), once
    its name was typed. Logged here: the team's own audit log goes with it."""
    if confirm.strip() != team.name:
        raise InvalidInput({"confirm": [f"Type {team.name} exactly to delete the team."]})
    log.warning("team %s (id %s) deleted by %s", team.name, team.pk, _actor(actor))
    with transaction.atomic():
        team.delete()


def user_signup(*, email: str, password: str, team_name: str | None = "") -> Any:
    """A new user (the e-mail is the username) who owns a new team, unless ``team_name`` is None."""
    email = email.strip().lower()
    User = get_user_model()
    with transaction.atomic():
        if User.objects.filter(username__iexact=email).exists():
            raise InvalidInput({"email": ["An account with this e-mail exists already. Log in instead."]})
        user = User.objects.create_user(username=email, email=email, password=password)
        if team_name is not None:
            team_create_unique(name=team_name or f"{email.split('@')[0]}'s team", owner=user)
    return user


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


def user_token_issue(*, user: Any, name: str = "") -> tuple[UserToken, str]:
    """A new token for ``user`` (after a log-in or sign-up). The raw token is returned once, never stored."""
    raw = keys.generate_user_token()
    token = UserToken.objects.create(
        user=user,
        name=name[:100],
        prefix=raw[:10],
        token_hash=keys.digest(raw),
        expires_at=timezone.now() + timedelta(seconds=settings.TRACERELAY_USER_TOKEN_TTL_S),
    )
    return token, raw


def user_token_revoke(*, token_id: int) -> None:
    UserToken.objects.filter(id=token_id, revoked_at__isnull=True).update(revoked_at=timezone.now())


def audit(
    *, team: Team | int, actor: str, action: str, target: str = "", data: dict[str, object] | None = None
) -> None:
    team_id = team if isinstance(team, int) else team.pk
    AuditEvent.objects.create(team_id=team_id, actor=actor, action=action, target=target, data=data or {})


def _actor(user: AbstractBaseUser | None) -> str:
    return f"user:{user.get_username()}" if user is not None else "cli"


# --- Members and invitations ------------------------------------------------------------------------


def _token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def invitation_create(*, team: Team, email: str, role: str, invited_by: Any) -> tuple[Invitation, str]:
    """An invitation and its token (returned once; only its digest is stored)."""
    email = email.strip().lower()
    if role not in Role.values:
        raise InvalidInput({"role": [f"Choose one of {', '.join(Role.values)}."]})
    if Membership.objects.filter(team=team, user__username__iexact=email).exists():
        raise InvalidInput({"email": ["This person is a member of the team already."]})
    token = secrets.token_urlsafe(32)
    with transaction.atomic():
        # One live invitation per address: a new one replaces the old link.
        Invitation.objects.filter(team=team, email=email, accepted_at=None, revoked_at=None).update(
            revoked_at=timezone.now()
        )
        invitation = Invitation.objects.create(
            team=team,
            email=email,
            role=role,
            token_hash=_token_digest(token),
            invited_by=invited_by,
            expires_at=timezone.now() + timedelta(seconds=settings.TRACERELAY_INVITE_TTL_S),
        )
        audit(team=team, actor=_actor(invited_by), action="member.invite", target=email, data={"role": role})
    return invitation, token


def invitation_for_token(token: str) -> Invitation | None:
    return Invitation.objects.select_related("team").filter(token_hash=_token_digest(token)).first()


def invitation_accept(*, invitation: Invitation, user: Any) -> Membership:
    """Join the team. The link works once: a conditional UPDATE claims it, so two tabs never both do."""
    with transaction.atomic():
        claimed = Invitation.objects.filter(
            pk=invitation.pk, accepted_at=None, revoked_at=None, expires_at__gt=timezone.now()
        ).update(accepted_at=timezone.now(), accepted_by=user)
        if not claimed:
            raise InvalidInput({"": ["This invitation has been used, revoked or has expired. Ask for a new one."]})
        membership, created = Membership.objects.get_or_create(
            team=invitation.team, user=user, defaults={"role": invitation.role}
        )
        if created:
            audit(
                team=invitation.team,
                actor=_actor(user),
                action="member.join",
                target=user.get_username(),
                data={"role": invitation.role, "invited": invitation.email},
            )
    return membership


def invitation_revoke(*, invitation: Invitation, actor: Any) -> None:
    if Invitation.objects.filter(pk=invitation.pk, accepted_at=None, revoked_at=None).update(revoked_at=timezone.now()):
        audit(team=invitation.team, actor=_actor(actor), action="member.invite_revoke", target=invitation.email)


def membership_change_role(*, membership: Membership, role: str, actor: Any) -> Membership:
    if role not in Role.values:
        raise InvalidInput({"role": [f"Choose one of {', '.join(Role.values)}."]})
    with transaction.atomic():
        membership = _lock_team_owners(membership)
        if membership.role == role:
            return membership
        if membership.role == Role.OWNER and _owner_count(membership.team_id) == 1:
            raise InvalidInput({"role": ["The last owner cannot be demoted: make someone else owner first."]})
        old, membership.role = membership.role, role
        membership.save(update_fields=["role"])
        audit(
            team=membership.team_id,
            actor=_actor(actor),
            action="member.role",
            target=membership.user.get_username(),
            data={"from": old, "to": role},
        )
    return membership


def membership_remove(*, membership: Membership, actor: Any) -> None:
    """Remove a member (or leave, when ``actor`` is the member). A team always keeps an owner."""
    with transaction.atomic():
        membership = _lock_team_owners(membership)
        if membership.role == Role.OWNER and _owner_count(membership.team_id) == 1:
            raise InvalidInput({"": ["The last owner cannot leave or be removed: make someone else owner first."]})
        membership.delete()
        leaving = actor is not None and actor.pk == membership.user_id
        audit(
            team=membership.team_id,
            actor=_actor(actor),
            action="member.leave" if leaving else "member.remove",
            target=membership.user.get_username(),
            data={"role": membership.role},
        )


def _lock_team_owners(membership: Membership) -> Membership:
    """Lock the team's owner rows and re-read the membership: two owners demoting each other at
    once must not leave the team without one."""
    list(Membership.objects.select_for_update().filter(team_id=membership.team_id, role=Role.OWNER))
    return Membership.objects.select_for_update(of=("self",)).select_related("user").get(pk=membership.pk)


def _owner_count(team_id: int) -> int:
    return Membership.objects.filter(team_id=team_id, role=Role.OWNER).count()
