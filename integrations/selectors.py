"""Reads of integrations: resolving a routed destination to something an exporter can send to."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import QuerySet

from config.crypto import decrypt_json

from .exporters.base import Target
from .models import PLATFORM_ALIASES, Integration, Platform
from .registry import canonical_platform, exporter_class


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


def target_for(integration: Integration, *, extra_tags: tuple[str, ...] | list[str] = ()) -> Target:
    """The integration as an exporter sends to it: its own config (secrets decrypted), at its own
    address. Nothing a rule says changes where it sends or which credentials it sends."""
    return Target(
        platform=integration.platform,
        name=integration.name,
        config=full_config(integration),
        tags=_merged_tags(integration.default_tags or [], extra_tags),
        metadata_mapping=dict(integration.metadata_mapping or {}),
        timeout_s=float(integration.timeout_s),
    )


def ad_hoc_webhook(name: str, url: str, tags: tuple[str, ...] | list[str] = ()) -> Target:
    """A rule's own webhook URL: our JSON POSTed there and nothing of any integration's: no stored
    headers, no signing secret, no default tags or metadata mapping, the default timeout."""
    return Target(platform=Platform.WEBHOOK, name=name, config={"url": url, "headers": {}}, tags=_merged_tags((), tags))


def own_url(platform: str, config: Mapping[str, Any] | None) -> str | None:
    """Where a webhook integration sends (its config's ``url``, public); None for other platforms.
    The one URL a rule may name it with (`routing.destinations`), and resolution compares against."""
    url = (config or {}).get("url") if platform == Platform.WEBHOOK else None
    return str(url).strip() if url else None


def _merged_tags(first: Any, second: Any) -> tuple[str, ...]:
    return tuple(dict.fromkeys(str(t) for t in [*(first or ()), *(second or ())]))


def resolve_target(team_id: int, spec: Mapping[str, Any]) -> tuple[Integration | None, Target]:
    """A routed destination spec (``{"name", "tags", "url", ...}``) → (integration, target).

    A spec with a ``url`` on a webhook destination is an ad-hoc webhook to that URL
    (`ad_hoc_webhook`: nothing of an integration's), unless it names a webhook integration by its
    exact name together with that integration's own URL. So an integration is only ever called at
    its own address with its own credentials, whatever a rule says (and whatever an outbox row,
    fallback or replay written before rules were checked for this says); a ``url`` on any other
    platform's destination is never used.

    Otherwise the team's integration named ``spec["name"]`` wins; else the first enabled
    integration (oldest first) whose platform is that name (aliases resolved). Raises
    `LookupError` when nothing matches or the named integration is disabled.
    """
    name = str(spec.get("name") or "").strip()
    if not name:
        raise LookupError("the destination has no name")
    tags = tuple(spec.get("tags") or ())
    url = str(spec.get("url") or "").strip() or None

    named = Integration.objects.filter(team_id=team_id, name=name).first()
    webhook = canonical_platform(name) == Platform.WEBHOOK or (named is not None and named.platform == Platform.WEBHOOK)
    if url is not None and webhook and (named is None or own_url(named.platform, named.config) != url):
        return None, ad_hoc_webhook(name, url, tags)
    if named is not None:
        if not named.enabled:
            raise LookupError(f"integration {name!r} is disabled")
        return named, target_for(named, extra_tags=tags)

    platform = canonical_platform(name)
    if platform is not None:
        by_platform = (
            Integration.objects.filter(team_id=team_id, platform=platform, enabled=True).order_by("pk").first()
        )
        if by_platform is not None:
            return by_platform, target_for(by_platform, extra_tags=tags)
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


def trace_links(*, team_id: int, trace_id: str, run_id: str, integration_ids: list[int]) -> dict[int, tuple[str, str]]:
    """integration id → (the tool's label, where this trace opens there), for the integrations given
    whose exporter can build a link from their stored config (`Exporter.trace_url`); the others are
    left out. Read from the non-secret config only."""
    out: dict[int, tuple[str, str]] = {}
    for integration in Integration.objects.filter(team_id=team_id, pk__in=integration_ids):
        try:
            cls = exporter_class(integration.platform)
        except (KeyError, ImportError):
            continue
        url = cls.trace_url(integration.config or {}, team_id=team_id, trace_id=trace_id, run_id=run_id)
        if url:
            label = cls.label.removesuffix(" LLM Observability") or integration.get_platform_display()
            out[integration.pk] = (label, url)
    return out
