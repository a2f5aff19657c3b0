from __future__ import annotations

import time
from datetime import timedelta

from django.core.cache import cache
from django.utils import timezone

from config import invalidation

from . import keys
from .models import ApiKey, Membership, UserToken, role_scopes
from .principals import KeyPrincipal, TokenUser, UserPrincipal

KEY_CACHE_TTL = 60  # seconds; revocation deletes the entry, so this only bounds staleness across caches
# Each process also keeps principals a few seconds in memory: a Redis round trip per request is a
# tenth of the ingest path's cost. Revocation clears every process through the invalidation bus
# (config/invalidation.py); LOCAL_TTL bounds staleness only while the bus itself is down.
LOCAL_TTL = 5.0
LOCAL_MAX = 10_000
_local: dict[str, tuple[float, KeyPrincipal]] = {}
LAST_USED_RESOLUTION = timedelta(minutes=1)
_MISSING = "missing"


def _cache_key(digest: str) -> str:
    return f"apikey:{digest}"


def principal_for_key(raw: str) -> KeyPrincipal | None:
    """The principal for a raw key, or None for a malformed, unknown or revoked one.

    A malformed key (bad prefix or checksum) is refused before any cache or database look-up.
    """
    if keys.parse(raw) is None:
        return None
    digest = keys.digest(raw)
    now = time.monotonic()
    hit = _local.get(digest)
    if hit is not None and hit[0] > now:
        return hit[1]
    invalidation.ensure_listening()  # before the read: a revocation from now on reaches this process
    principal = _principal_from_shared_cache_or_db(digest)
    if principal is not None:
        if len(_local) >= LOCAL_MAX:
            _local.clear()
        _local[digest] = (now + LOCAL_TTL, principal)
    return principal


def principal_from_memory(raw: str) -> KeyPrincipal | None:
    """The principal when this process has it in memory (no I/O: safe on an event loop), else None."""
    hit = _local.get(keys.digest(raw)) if len(raw) < 64 else None
    return hit[1] if hit is not None and hit[0] > time.monotonic() else None


def _principal_from_shared_cache_or_db(digest: str) -> KeyPrincipal | None:
    cached = cache.get(_cache_key(digest))
    if cached == _MISSING:
        return None
    if cached is not None:
        return KeyPrincipal(**cached)
    key = (
        ApiKey.objects.filter(key_hash=digest, revoked_at__isnull=True)
        .only("id", "team_id", "environment", "prefix", "last_used_at")
        .first()
    )
    if key is None:
        cache.set(_cache_key(digest), _MISSING, 10)
        return None
    principal = KeyPrincipal(key.id, key.team_id, key.environment, key.prefix, key.scopes)
    cache.set(_cache_key(digest), _principal_dict(principal), KEY_CACHE_TTL)
    touch_last_used(key.id)
    return principal


def _principal_dict(p: KeyPrincipal) -> dict[str, object]:
    return {
        "key_id": p.key_id,
        "team_id": p.team_id,
        "environment": p.environment,
        "prefix": p.prefix,
        "scopes": p.scopes,
    }


def touch_last_used(key_id: int) -> None:
    """Record use at most once a minute per key: one cheap conditional UPDATE, no read."""
    now = timezone.now()
    if cache.add(f"apikey-used:{key_id}", 1, int(LAST_USED_RESOLUTION.total_seconds())):
        ApiKey.objects.filter(id=key_id).update(last_used_at=now)


def forget_key(digest: str) -> None:
    """After a revocation: out of the shared cache, and (on commit) out of every process's memory."""
    _local.pop(digest, None)
    cache.delete(_cache_key(digest))
    invalidation.publish(invalidation.API_KEYS, digest)


def _forget_local(digest: str | None) -> None:
    if digest is None:
        _local.clear()
    else:
        _local.pop(digest, None)


invalidation.subscribe(invalidation.API_KEYS, _forget_local)


# --- User tokens (the CLI) ------------------------------------------------------------------------
# Read from the database on every request, unlike keys: a person's few CLI calls are not a hot path,
# and `logout` (or a role change) then takes effect at once in every process.


def token_user(raw: str) -> TokenUser | None:
    """The person behind a raw user token, or None for a malformed, unknown, revoked or expired one."""
    if not keys.USER_TOKEN_RE.fullmatch(raw):
        return None
    now = timezone.now()
    token = (
        UserToken.objects.filter(token_hash=keys.digest(raw), revoked_at__isnull=True, expires_at__gt=now)
        .select_related("user")
        .only("id", "last_used_at", "user__id", "user__username", "user__is_active")
        .first()
    )
    if token is None or not token.user.is_active:
        return None
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        UserToken.objects.filter(id=token.id).update(last_used_at=now)
    return TokenUser(token.user.id, token.user.get_username(), token.id)


def user_principal(user: TokenUser, team_id: int) -> UserPrincipal | None:
    """``user`` acting in team ``team_id`` with their role's scopes; None when not a member."""
    role = Membership.objects.filter(user_id=user.user_id, team_id=team_id).values_list("role", flat=True).first()
    if role is None:
        return None
    return UserPrincipal(
        key_id=0,
        team_id=team_id,
        environment="",
        prefix=keys.USER_TOKEN_PREFIX,
        scopes=role_scopes(role),
        user_id=user.user_id,
        username=user.username,
        role=role,
        token_id=user.token_id,
    )


def user_memberships(user_id: int) -> list[Membership]:
    return list(Membership.objects.filter(user_id=user_id).select_related("team").order_by("team__name", "team_id"))


def user_token_get(token_id: int) -> UserToken | None:
    return UserToken.objects.filter(id=token_id).first()
