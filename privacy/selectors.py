"""Reads for PII policies, and the compiled form ingest and delivery apply.

`compiled_policy(team_id)` is meant for the hot path: each process keeps the compiled policy per
team and asks the shared cache for the team's policy version at most every ``max_age`` seconds
(default `RECHECK_SECONDS`; pass 0 to ask on every call, one cache GET). A PUT forgets this
process's copy at once and publishes the new version to the cache on commit; `forget(team_id)` is
the callback the invalidation bus (`config/invalidation.py`, topic `pii`) calls in every process.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from typing import Any

from django.apps import apps
from django.conf import settings

from config import invalidation
from config.teamcache import VersionedTeamCache

from .detection import BUILTIN_KINDS, compile_patterns
from .detection.custom import CustomPattern, PatternError
from .models import Mode, PiiPolicy
from .policy import REDACT, CompiledPolicy, transform_text

log = logging.getLogger(__name__)

RECHECK_SECONDS = 1.0
VERSION_TTL = 300  # seconds a team's policy version lives in the shared cache
MAX_TEAMS = 4096  # compiled policies kept per process


def pii_policy(team_id: int) -> PiiPolicy:
    """The team's policy; an unsaved version-0 "off" one when the team never stored one."""
    return PiiPolicy.objects.filter(team_id=team_id).first() or PiiPolicy(team_id=team_id, version=0)


def policy_as_dict(policy: PiiPolicy) -> dict[str, Any]:
    """The API's shape of a policy (`docs/privacy.md`)."""
    return {
        "stored": {"mode": policy.stored_mode},
        "destinations": {name: {"mode": mode} for name, mode in sorted((policy.destinations or {}).items())},
        "kinds": list(policy.kinds) if policy.kinds is not None else list(BUILTIN_KINDS),
        "custom_patterns": [{"name": p["name"], "regex": p["regex"]} for p in policy.custom_patterns or []],
    }


def scan_text(team_id: int, text: str) -> dict[str, Any]:
    """The "try it" scan (the API's `POST /pii/scan` and the settings page): findings with the
    team's kinds and custom patterns, and the text redacted."""
    from .detection import scan

    policy = compiled_policy(team_id, max_age=0)
    findings = scan(text, kinds=policy.kinds, custom=policy.custom)
    return {"findings": [f.as_dict() for f in findings], "redacted": transform_text(text, findings, REDACT)}


def integration_names(team_id: int) -> set[str]:
    """The team's integration names, looked up by model name: privacy must not import the
    integrations app (ingest and delivery import privacy)."""
    integration = apps.get_model("integrations", "Integration")
    return set(integration.objects.filter(team_id=team_id).values_list("name", flat=True))


def team_hash_key(team_id: int, salt: str) -> bytes:
    """The team's pseudonym key: HMAC of the server's SECRET_KEY over the team and its stored salt,
    so a database dump alone cannot recompute pseudonyms (an email's is easy to guess otherwise)."""
    message = f"tracerelay-pii:{team_id}:{salt}".encode()
    return hmac.new(settings.SECRET_KEY.encode(), message, hashlib.sha256).digest()


def compile_policy(policy: PiiPolicy) -> CompiledPolicy:
    """A stored policy → `CompiledPolicy`. A stored custom pattern that no longer compiles (a
    newer RE2 refusing it) is left out and logged rather than failing every ingest."""
    custom: list[CustomPattern] = []
    for item in policy.custom_patterns or []:
        try:
            custom.extend(compile_patterns([item]))
        except PatternError as exc:
            log.error("privacy: team %s custom pattern skipped: %s", policy.team_id, exc.message)
    return CompiledPolicy(
        team_id=policy.team_id,
        version=policy.version,
        stored=policy.stored_mode or Mode.OFF,
        destinations=dict(policy.destinations or {}),
        kinds=frozenset(policy.kinds) if policy.kinds is not None else None,
        custom=tuple(custom),
        hash_key=team_hash_key(policy.team_id, policy.hash_salt),
    )


# ---------------------------------------------------------------------------------------------
# The per-process cache (config/teamcache.py)


def stored_version(team_id: int) -> int:
    return int(PiiPolicy.objects.filter(team_id=team_id).values_list("version", flat=True).first() or 0)


def _load(team_id: int) -> tuple[int, CompiledPolicy]:
    compiled = compile_policy(pii_policy(team_id))
    return compiled.version, compiled


compiled_cache: VersionedTeamCache[int, CompiledPolicy] = VersionedTeamCache(
    name="pii-policy-version",
    topic=invalidation.PII_POLICIES,
    stored_version=stored_version,
    load=_load,
    recheck_seconds=RECHECK_SECONDS,
    version_ttl=VERSION_TTL,
    max_teams=MAX_TEAMS,
    decode=int,
)


def version_cache_key(team_id: int) -> str:
    return compiled_cache.version_key(team_id)


def current_version(team_id: int) -> int:
    return compiled_cache.current_version(team_id)


def compiled_policy(team_id: int, *, max_age: float = RECHECK_SECONDS) -> CompiledPolicy:
    """The team's compiled policy, rechecked against the shared cache when older than ``max_age``."""
    return compiled_cache.get(team_id, max_age=max_age)


def forget(team_id: int | None = None) -> None:
    """Drop this process's compiled policy (one team, or all): the next call recompiles."""
    compiled_cache.forget(team_id)


def publish_version(team_id: int) -> None:
    """After a commit that changed the policy: tell every process, through the cache (read by
    ingest on every request) and the invalidation bus (which drops the other processes' compiled
    copies at once, so delivery workers do not wait out `RECHECK_SECONDS`)."""
    compiled_cache.publish(team_id)
