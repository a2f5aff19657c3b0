"""Where a proxied call goes: the built-in OpenAI and Anthropic upstreams, or one of the team's own.

`ResolvedUpstream` is the plain, immutable form of an `Upstream` row (provider key decrypted) that the hot
path reads; `TeamUpstreams` is what the in-process cache holds per team.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

from config.crypto import decrypt_json

from .models import Upstream, UpstreamKind

log = logging.getLogger(__name__)

# Provider names stamped on traces when an OpenAI-compatible upstream names none (else the trace
# pipeline infers the provider from the model name).
KNOWN_HOSTS = {
    "api.openai.com": "openai",
    "api.groq.com": "groq",
    "openrouter.ai": "openrouter",
    "api.together.xyz": "together",
    "api.mistral.ai": "mistral",
    "api.deepseek.com": "deepseek",
    "api.fireworks.ai": "fireworks",
    "api.x.ai": "x-ai",
    "api.anthropic.com": "anthropic",
    "generativelanguage.googleapis.com": "google",
}
KIND_PROVIDERS: dict[str, str] = {UpstreamKind.ANTHROPIC: "anthropic", UpstreamKind.AZURE: "azure"}


@dataclass(frozen=True, slots=True)
class ResolvedUpstream:
    name: str
    kind: str
    base_url: str  # without a trailing slash: the proxied path is appended after "/"
    provider: str
    # Sent when the client brings no credentials of its own: (header, value), per the upstream's kind.
    auth_header: tuple[str, str] | None = None
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def is_anthropic(self) -> bool:
        return self.kind == UpstreamKind.ANTHROPIC


@dataclass(frozen=True, slots=True)
class TeamUpstreams:
    by_name: Mapping[str, ResolvedUpstream] = field(default_factory=dict)
    default: ResolvedUpstream | None = None  # for OpenAI-style paths
    anthropic_default: ResolvedUpstream | None = None  # for /proxy/anthropic/...


NO_UPSTREAMS = TeamUpstreams(by_name=MappingProxyType({}))


def builtin_targets(openai_base_url: str, anthropic_base_url: str) -> tuple[ResolvedUpstream, ResolvedUpstream]:
    return (
        ResolvedUpstream("openai", UpstreamKind.OPENAI, openai_base_url.rstrip("/"), "openai"),
        ResolvedUpstream("anthropic", UpstreamKind.ANTHROPIC, anthropic_base_url.rstrip("/"), "anthropic"),
    )


def auth_header(kind: str, key: str) -> tuple[str, str] | None:
    if not key:
        return None
    if kind == UpstreamKind.ANTHROPIC:
        return ("x-api-key", key)
    if kind == UpstreamKind.AZURE:
        return ("api-key", key)
    return ("authorization", f"Bearer {key}")


def stored_secrets(upstream: Upstream) -> dict[str, Any]:
    """``{"api_key": ..., "headers": {...}}``: the encrypted part of an upstream (see services.py)."""
    return decrypt_json(upstream.api_key) if upstream.api_key else {}


def target_for(upstream: Upstream) -> ResolvedUpstream:
    provider = upstream.provider or KIND_PROVIDERS.get(upstream.kind, "")
    if not provider:
        provider = KNOWN_HOSTS.get((urlsplit(upstream.base_url).hostname or "").lower(), "")
    try:
        secrets = stored_secrets(upstream)
    except ValueError:
        # Encrypted with a key no longer in TRACERELAY_FERNET_KEYS: usable with the client's own credentials.
        log.error("upstream %s (team %s): stored secrets cannot be decrypted", upstream.name, upstream.team_id)
        secrets = {}
    headers = {**(upstream.headers or {}), **(secrets.get("headers") or {})}
    return ResolvedUpstream(
        name=upstream.name,
        kind=upstream.kind,
        base_url=upstream.base_url.rstrip("/"),
        provider=provider,
        auth_header=auth_header(upstream.kind, str(secrets.get("api_key") or "")),
        headers=tuple((str(k).lower(), str(v)) for k, v in headers.items()),
    )


def load_team_upstreams(team_id: int) -> TeamUpstreams:
    """The team's upstreams (a database read: called from a thread, never on the event loop)."""
    rows = list(Upstream.objects.filter(team_id=team_id))
    if not rows:
        return NO_UPSTREAMS
    targets = {row.name: target_for(row) for row in rows}
    default = next((targets[r.name] for r in rows if r.is_default and r.kind != UpstreamKind.ANTHROPIC), None)
    anthropic = next((targets[r.name] for r in rows if r.is_default and r.kind == UpstreamKind.ANTHROPIC), None)
    return TeamUpstreams(by_name=MappingProxyType(targets), default=default, anthropic_default=anthropic)
