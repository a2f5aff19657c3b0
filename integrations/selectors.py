"""Reads of integrations: resolving a routed destination to something an exporter can send to."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import QuerySet

from config.crypto import decrypt_json

from .exporters.base import Target
from .models import PLATFORM_ALIASES, Integration, Platform
from .registry import canonical_platform


def integrations_for_team(team_id: int) -> QuerySet[Integration]:
    return Integration.objects.filter(team_id=team_id).order_by("name")


def integration_for_team(team_id: int, integration_id: int) -> Integration | None:
    return Integration.objects.filter(team_id=team_id, pk=integration_id).first()


def full_config(integration: Integration) -> dict[str, Any]:
    """The integration's config with its secrets decrypted back in (never for API output)."""
    config = dict(integration.config or {})
    secrets = decrypt_json(integration.secrets)
    secret_headers = secrets.pop("headers", None)
    config.update(secrets)
    if secret_headers:
        config["headers"] = {**(config.get("headers") or {}), **secret_headers}
    return config


def target_for(
    integration: Integration, *, extra_tags: tuple[str, ...] | list[str] = (), url: str | None = None
) -> Target:
    config = full_config(integration)
    if url and integration.platform == Platform.WEBHOOK:
        config["url"] = url
    return Target(
        platform=integration.platform,
        name=integration.name,
        config=config,
        tags=_merged_tags(integration.default_tags or [], extra_tags),
        metadata_mapping=dict(integration.metadata_mapping or {}),
        timeout_s=float(integration.timeout_s),
    )


def _merged_tags(first: Any, second: Any) -> tuple[str, ...]:
    return tuple(dict.fromkeys(str(t) for t in [*(first or ()), *(second or ())]))


def resolve_target(team_id: int, spec: Mapping[str, Any]) -> tuple[Integration | None, Target]:
    """A routed destination spec (``{"name", "tags", "url", ...}``) → (integration, target).

    The team's integration named ``spec["name"]`` wins; else the first enabled integration (oldest
    first) whose platform is that name (aliases resolved); else a ``webhook``/``custom-webhook``
    spec with a ``url`` becomes an ad-hoc webhook target. Raises `LookupError` when nothing
    matches or the named integration is disabled.
    """
    name = str(spec.get("name") or "").strip()
    if not name:
        raise LookupError("the destination has no name")
    tags = tuple(spec.get("tags") or ())
    url = spec.get("url") or None

    named = Integration.objects.filter(team_id=team_id, name=name).first()
    if named is not None:
        if not named.enabled:
            raise LookupError(f"integration {name!r} is disabled")
        return named, target_for(named, extra_tags=tags, url=url)

    platform = canonical_platform(name)
    if platform is not None:
        by_platform = (
            Integration.objects.filter(team_id=team_id, platform=platform, enabled=True).order_by("pk").first()
        )
        if by_platform is not None:
            return by_platform, target_for(by_platform, extra_tags=tags, url=url)
        if platform == Platform.WEBHOOK and url:
            return None, Target(
                platform=Platform.WEBHOOK,
                name=name,
                config={"url": str(url), "headers": {}},
                tags=_merged_tags((), tags),
            )
    raise LookupError(f"no enabled integration named or of platform {name!r}")


def integration_names_and_platforms(team_id: int) -> set[str]:
    """Every destination name a rule of this team may use: integration names, their platforms
    (with alias spellings), and ``webhook``/``custom-webhook`` (a rule may give a ``url``)."""
    names: set[str] = {"webhook", "custom-webhook"}
    for name, platform in Integration.objects.filter(team_id=team_id).values_list("name", "platform"):
        names.add(name)
        names.add(platform)
        names.update(alias for alias, target in PLATFORM_ALIASES.items() if target == platform)
    return names
