"""Writes of a team's proxy upstreams.

Secrets live encrypted in ``Upstream.api_key`` (`config.crypto`): the provider key and any header
whose name says it carries a credential (``Authorization``, ``api-key``…). ``Upstream.headers``
keeps only the harmless ones. After a change commits, every process's proxy forgets the team's
upstreams at once (the invalidation bus, config/invalidation.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction

from accounts.services import audit
from config import invalidation
from config.crypto import encrypt_json, mask
from config.problems import InvalidInput
from integrations.exporters.configs import is_sensitive_header
from integrations.urlguard import ADDRESS_CHANGED, same_address, url_refusal

from .models import Upstream, UpstreamKind
from .upstreams import stored_secrets

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,49}$")
HEADER_NAME_RE = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$")
MAX_HEADERS = 32
# Headers the proxy itself decides: hop-by-hop, computed from the request, or ours.
RESERVED_HEADERS = frozenset(
    {"host", "content-length", "connection", "transfer-encoding", "keep-alive", "upgrade", "te", "trailer"}
)


class UpstreamNameTaken(Exception):
    def __init__(self, name: str) -> None:
        super().__init__(f"This team already has an upstream named {name!r}.")


class InvalidUpstream(InvalidInput):
    pass


@dataclass(frozen=True)
class UpstreamInput:
    name: str
    base_url: str
    kind: str = UpstreamKind.OPENAI
    provider: str = ""
    api_key: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    is_default: bool = False


def public_headers(upstream: Upstream) -> dict[str, str]:
    """All the upstream's headers as the API shows them: credentials masked."""
    secret = stored_secrets(upstream).get("headers") or {}
    return {**(upstream.headers or {}), **{k: mask(str(v)) for k, v in secret.items()}}


def masked_key(upstream: Upstream) -> str | None:
    key = stored_secrets(upstream).get("api_key")
    return mask(str(key)) if key else None


def upstream_create(*, team_id: int, data: UpstreamInput, actor: str) -> Upstream:
    upstream = Upstream(team_id=team_id)
    _apply(upstream, data.__dict__)
    with transaction.atomic():
        _save(upstream)
        audit(team=team_id, actor=actor, action="upstream.create", target=upstream.name, data=_audit_data(upstream))
    _changed(team_id)
    return upstream


def upstream_update(*, upstream: Upstream, changes: Mapping[str, Any], actor: str) -> Upstream:
    """Apply a PATCH: ``changes`` holds only the fields sent. A key or credential header sent back
    in its masked form keeps its stored value; ``api_key: ""`` (or null) removes the key. A new
    ``base_url`` must come with every stored secret given again (`_apply`)."""
    before = upstream.base_url
    _apply(upstream, changes)
    moved = not same_address(before, upstream.base_url)
    with transaction.atomic():
        _save(upstream)
        audit(
            team=upstream.team_id,
            actor=actor,
            action="upstream.update",
            target=upstream.name,
            data={
                **_audit_data(upstream),
                "changed": sorted(changes),
                "address_changed": {"base_url": {"from": before, "to": upstream.base_url}} if moved else {},
            },
        )
    _changed(upstream.team_id)
    return upstream


def upstream_delete(*, upstream: Upstream, actor: str) -> None:
    team_id = upstream.team_id
    with transaction.atomic():
        upstream.delete()
        audit(team=team_id, actor=actor, action="upstream.delete", target=upstream.name)
    _changed(team_id)


def check_changes(upstream: Upstream, changes: Mapping[str, Any]) -> None:
    """Raise `InvalidUpstream` unless ``changes`` are valid for ``upstream`` (which they modify)."""
    _apply(upstream, changes)


def _apply(upstream: Upstream, changes: Mapping[str, Any]) -> None:
    """Validate ``changes`` and set them on ``upstream``; `InvalidUpstream` with every problem.

    A stored secret only goes to the address it was saved with: when a saved upstream's
    ``base_url`` changes (cosmetic differences aside, `urlguard.same_address`), the provider key
    and each credential header it holds must be given again (a removed one needs nothing)."""
    errors: dict[str, list[str]] = {}
    before = upstream.base_url if upstream.pk else None
    if "name" in changes:
        name = str(changes["name"]).strip()
        if not NAME_RE.match(name):
            errors["name"] = ["1-50 characters of a-z 0-9 _ -, starting with a letter or digit."]
        upstream.name = name
    if "kind" in changes:
        if changes["kind"] not in UpstreamKind.values:
            errors["kind"] = [f"One of {', '.join(UpstreamKind.values)}."]
        upstream.kind = changes["kind"]
    if "base_url" in changes:
        url = str(changes["base_url"]).strip()
        refusal = url_refusal(url)
        if refusal:
            errors["base_url"] = [refusal]
        upstream.base_url = url
    if "provider" in changes:
        upstream.provider = str(changes["provider"] or "").strip().lower()
        if len(upstream.provider) > 64:
            errors["provider"] = ["At most 64 characters."]
    if "is_default" in changes:
        upstream.is_default = bool(changes["is_default"])

    secrets = stored_secrets(upstream)
    kept: list[str] = []  # stored secrets these changes keep without giving them
    if "api_key" in changes:
        key = (changes["api_key"] or "").strip()
        if not key:
            secrets.pop("api_key", None)
        elif secrets.get("api_key") and key == mask(str(secrets["api_key"])):
            kept.append("api_key")
        else:
            secrets["api_key"] = key
    elif secrets.get("api_key"):
        kept.append("api_key")
    if "headers" in changes:
        old = {k.lower(): v for k, v in (secrets.get("headers") or {}).items()}
        plain: dict[str, str] = {}
        hidden: dict[str, str] = {}
        headers = changes["headers"] or {}
        if not isinstance(headers, Mapping) or len(headers) > MAX_HEADERS:
            errors["headers"] = [f"An object of at most {MAX_HEADERS} header names to string values."]
            headers = {}
        for name, value in headers.items():
            lowered = str(name).lower()
            if not HEADER_NAME_RE.match(str(name)) or lowered in RESERVED_HEADERS or lowered.startswith("x-service-"):
                errors.setdefault("headers", []).append(f"{name!r} cannot be set on an upstream.")
            elif not isinstance(value, str) or "\r" in value or "\n" in value:
                errors.setdefault("headers", []).append(f"{name}: must be a string on one line.")
            elif is_sensitive_header(lowered):
                stored = old.get(lowered)
                if stored is not None and value == mask(str(stored)):
                    hidden[lowered] = stored
                    kept.append(f"headers.{lowered}")
                else:
                    hidden[lowered] = value
            else:
                plain[lowered] = value
        upstream.headers = plain
        if hidden:
            secrets["headers"] = hidden
        else:
            secrets.pop("headers", None)
    else:
        kept += [f"headers.{name}" for name in secrets.get("headers") or {}]
    if before is not None and not same_address(before, upstream.base_url):
        for name in kept:
            errors.setdefault(name, []).append(ADDRESS_CHANGED)
    if errors:
        raise InvalidUpstream(errors)
    upstream.api_key = encrypt_json(secrets)


def _save(upstream: Upstream) -> None:
    if upstream.is_default:
        # One default per family: OpenAI-style paths and /proxy/anthropic/ each have their own.
        family = Upstream.objects.filter(team_id=upstream.team_id, is_default=True).exclude(pk=upstream.pk)
        if upstream.kind == UpstreamKind.ANTHROPIC:
            family = family.filter(kind=UpstreamKind.ANTHROPIC)
        else:
            family = family.exclude(kind=UpstreamKind.ANTHROPIC)
        family.update(is_default=False)
    try:
        with transaction.atomic():
            upstream.save()
    except IntegrityError:
        raise UpstreamNameTaken(upstream.name)


def _audit_data(upstream: Upstream) -> dict[str, object]:
    return {
        "id": upstream.pk,
        "kind": upstream.kind,
        "base_url": upstream.base_url,
        "is_default": upstream.is_default,
        "api_key_set": bool(stored_secrets(upstream).get("api_key")),
    }


def _changed(team_id: int) -> None:
    invalidation.publish(invalidation.UPSTREAMS, team_id)
