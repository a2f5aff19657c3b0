from __future__ import annotations

from datetime import timedelta

from django.core.cache import cache
from django.db.models import QuerySet
from django.utils import timezone

from . import keys
from .models import ApiKey, Team
from .principals import KeyPrincipal

KEY_CACHE_TTL = 60  # seconds; revocation deletes the entry, so this only bounds staleness across caches
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
    cache.delete(_cache_key(digest))


def api_keys_for_team(team: Team) -> QuerySet[ApiKey]:
    return ApiKey.objects.filter(team=team).order_by("-created_at")
