"""Writes of integrations, and the connection test.

Secrets never leave this module in the clear except inside a `Target` for an exporter: the
config a caller sees is `public_config` (secrets masked), the row holds the public part in
``config`` and the secret part Fernet-encrypted in ``secrets``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import httpx
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.services import audit
from config import invalidation
from config.crypto import decrypt_json, encrypt_json, mask
from config.problems import InvalidInput

from .exporters.base import CheckResult, ConfigError, Target
from .exporters.configs import URL_KINDS, Field, is_sensitive_header, split_secrets
from .models import Integration, default_retry_policy
from .options.schema import clean_settings, split_settings
from .outbound import guarded_transport
from .registry import canonical_platform, exporter_class, platform_names
from .selectors import full_config, target_for
from .urlguard import ADDRESS_CHANGED, same_address

log = logging.getLogger(__name__)


class NameTaken(Exception):
    def __init__(self, name: str) -> None:
        super().__init__(f"This team already has an integration named {name!r}.")
        self.name = name


class InvalidIntegration(InvalidInput):
    """Field → messages, with config fields as ``config.<field>``."""


@dataclass(frozen=True)
class IntegrationInput:
    name: str
    platform: str
    config: Mapping[str, Any]
    default_tags: list[str]
    metadata_mapping: dict[str, str | None]
    timeout_s: float
    retry_policy: dict[str, Any]
    enabled: bool = True


def _fields(platform: str) -> tuple[Field, ...]:
    return tuple(getattr(exporter_class(platform), "fields", ()))


def clean_platform_config(platform: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """The platform's fields and the settings of every integration (`options.schema`), checked
    together: `InvalidIntegration` with every problem of both, as ``config.<field>``."""
    if not isinstance(config, Mapping):
        raise InvalidIntegration({"config": ["config must be an object"]})
    own, settings = split_settings(config)
    errors: dict[str, list[str]] = {}
    cleaned: dict[str, Any] = {}
    try:
        cleaned = exporter_class(platform).validate_config(own)
    except ConfigError as exc:
        errors.update(exc.errors)
    try:
        cleaned.update(clean_settings(settings, platform=platform))
    except ConfigError as exc:
        errors.update(exc.errors)
    if errors:
        raise InvalidIntegration({f"config.{k}" if k else "config": v for k, v in errors.items()})
    return cleaned


def _check_name(name: str, platform: str) -> None:
    """A name that is another platform's name would make rules ambiguous (names win)."""
    as_platform = canonical_platform(name) if name.lower() in platform_names() else None
    if as_platform is not None and as_platform != platform:
        raise InvalidIntegration({"name": [f"{name!r} names the {as_platform} platform; choose another name"]})


def _store_config(integration: Integration, cleaned: dict[str, Any]) -> None:
    public, secret = split_secrets(_fields(integration.platform), cleaned)
    integration.config = public
    integration.secrets = encrypt_json(secret)


def public_config(integration: Integration) -> dict[str, Any]:
    """The config as the API shows it: secrets and credential headers masked."""
    config = dict(integration.config or {})
    secrets = decrypt_json(integration.secrets)
    hidden_headers = secrets.pop("headers", None) or {}
    for key, value in secrets.items():
        config[key] = mask(str(value))
    if hidden_headers:
        config["headers"] = {**(config.get("headers") or {}), **{k: mask(str(v)) for k, v in hidden_headers.items()}}
    return config


def secrets_set(integration: Integration) -> list[str]:
    secrets = decrypt_json(integration.secrets)
    names = [k for k in secrets if k != "headers"]
    names += [f"headers.{h}" for h in secrets.get("headers") or {}]
    return sorted(names)


def _save(integration: Integration) -> None:
    try:
        with transaction.atomic():
            integration.save()
    except IntegrityError:
        raise NameTaken(integration.name)


def integration_create(*, team_id: int, data: IntegrationInput, actor: str) -> Integration:
    platform = canonical_platform(data.platform)
    if platform is None:
        raise InvalidIntegration({"platform": [f"unknown platform {data.platform!r}"]})
    _check_name(data.name, platform)
    cleaned = clean_platform_config(platform, data.config)
    if Integration.objects.filter(team_id=team_id, name=data.name).exists():
        raise NameTaken(data.name)
    integration = Integration(
        team_id=team_id,
        name=data.name,
        platform=platform,
        default_tags=list(data.default_tags),
        metadata_mapping=dict(data.metadata_mapping),
        timeout_s=data.timeout_s,
        retry_policy={**default_retry_policy(), **data.retry_policy},
        enabled=data.enabled,
    )
    _store_config(integration, cleaned)
    with transaction.atomic():
        _save(integration)
        audit(
            team=team_id,
            actor=actor,
            action="integration.create",
            target=integration.name,
            data={"id": integration.pk, "platform": platform, "secrets": secrets_set(integration)},
        )
        invalidation.publish(invalidation.INTEGRATIONS, team_id)  # delivery workers resolve names afresh
    return integration


@dataclass(frozen=True)
class ConfigPatch:
    """A PATCH of ``config`` laid over the stored one (not yet cleaned).

    ``kept_secrets``: the stored secrets the patch keeps without giving them (left out, or sent back
    masked), as ``secretKey`` or ``headers.Authorization``; ``moved``: the address fields
    (`Field.is_address`) whose value changes, cosmetic differences aside (`urlguard.same_address`).
    """

    config: dict[str, Any]
    kept_secrets: tuple[str, ...]
    moved: tuple[str, ...]

    def secrets_to_give_again(self) -> dict[str, list[str]]:
        """The rule that keeps a stored secret with its address: when the address changes, every
        secret the patch kept must be given again in it (GitLab and GitHub ask the same)."""
        return {f"config.{name}": [ADDRESS_CHANGED] for name in self.kept_secrets} if self.moved else {}

    def without_kept_secrets(self) -> dict[str, Any]:
        """The config with only the secrets the patch gave: what may go to a new address."""
        config = dict(self.config)
        for name in self.kept_secrets:
            field, _, header = name.partition(".")
            if header:
                config[field] = {h: v for h, v in (config.get(field) or {}).items() if h.lower() != header.lower()}
            else:
                config.pop(field, None)
        return config


def config_patch(integration: Integration, patch: Mapping[str, Any]) -> ConfigPatch:
    """PATCH semantics for ``config``: keys given replace, ``null`` removes, keys left out stay;
    a secret (or credential header) left out or sent back as its masked form keeps its value."""
    fields = _fields(integration.platform)
    canonical = {spelling: f.name for f in fields for spelling in f.spellings()}
    secret_names = {f.name for f in fields if f.secret}
    current = full_config(integration)
    stored = decrypt_json(integration.secrets)
    merged = dict(current)
    given: set[str] = set()
    for key, value in patch.items():
        name = canonical.get(key, key)
        given.add(name)
        if value is None:
            merged.pop(name, None)
        elif name in secret_names and isinstance(value, str) and name in current and value == mask(str(current[name])):
            merged[name] = current[name]
            given.discard(name)  # sent back masked: kept, not given
        elif name == "headers" and isinstance(value, Mapping):
            old = {k.lower(): v for k, v in (current.get("headers") or {}).items()}
            merged["headers"] = {
                h: old[h.lower()]
                if is_sensitive_header(h) and h.lower() in old and v == mask(str(old[h.lower()]))
                else v
                for h, v in value.items()
            }
        else:
            if name != key:
                merged.pop(key, None)
            merged[name] = value
    kept = [name for name in stored if name != "headers" and name not in given and name in merged]
    patched_headers = _patch_headers(patch, canonical)
    for header, value in (stored.get("headers") or {}).items():
        if patched_headers is None:
            kept.append(f"headers.{header}")  # headers left out: all of them stay
        elif any(h.lower() == header.lower() and v == mask(str(value)) for h, v in patched_headers.items()):
            kept.append(f"headers.{header}")
    moved = tuple(f.name for f in fields if f.is_address and not _same_value(f, current, merged))
    return ConfigPatch(config=merged, kept_secrets=tuple(sorted(kept)), moved=moved)


def _patch_headers(patch: Mapping[str, Any], canonical: Mapping[str, str]) -> Mapping[str, Any] | None:
    """The ``headers`` a patch gives (an empty mapping when it removes them), or None when it leaves them out."""
    for key, value in patch.items():
        if canonical.get(key, key) == "headers":
            return value if isinstance(value, Mapping) else {}
    return None


def _same_value(f: Field, before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    def value(config: Mapping[str, Any]) -> str | None:
        raw = config.get(f.name)
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            raw = f.default
        return None if raw is None else str(raw)

    first, second = value(before), value(after)
    if f.kind in URL_KINDS:
        return same_address(first, second)
    return (first or "").strip().lower() == (second or "").strip().lower()


def integration_update(*, integration: Integration, changes: Mapping[str, Any], actor: str) -> Integration:
    """Apply a PATCH. ``changes`` holds only the fields the client sent. A config whose address
    changes must give every stored secret again (`ConfigPatch.secrets_to_give_again`)."""
    if "platform" in changes and canonical_platform(str(changes["platform"])) != integration.platform:
        raise InvalidIntegration({"platform": ["the platform cannot change; create a new integration instead"]})
    before_secrets = decrypt_json(integration.secrets)
    before_config = dict(integration.config or {})
    changed: list[str] = []
    address_changed: dict[str, dict[str, Any]] = {}
    if "name" in changes and changes["name"] != integration.name:
        _check_name(changes["name"], integration.platform)
        if (
            Integration.objects.filter(team_id=integration.team_id, name=changes["name"])
            .exclude(pk=integration.pk)
            .exists()
        ):
            raise NameTaken(changes["name"])
        integration.name = changes["name"]
        changed.append("name")
    if "config" in changes:
        patch = config_patch(integration, changes["config"])
        cleaned = _cleaned_patch(integration.platform, patch)
        _store_config(integration, cleaned)
        changed.append("config")
        address_changed = {
            name: {"from": before_config.get(name), "to": integration.config.get(name)} for name in patch.moved
        }
    for key in ("default_tags", "metadata_mapping", "timeout_s", "enabled"):
        if key in changes:
            setattr(integration, key, changes[key])
            changed.append(key)
    if "retry_policy" in changes:
        policy = {**default_retry_policy(), **(integration.retry_policy or {}), **changes["retry_policy"]}
        if float(policy["max_delay_s"]) < float(policy["base_delay_s"]):
            raise InvalidIntegration({"retry_policy.max_delay_s": ["Must be at least base_delay_s."]})
        integration.retry_policy = policy
        changed.append("retry_policy")
    after_secrets = decrypt_json(integration.secrets)
    secrets_changed = sorted(
        k for k in set(before_secrets) | set(after_secrets) if before_secrets.get(k) != after_secrets.get(k)
    )
    integration.updated_at = timezone.now()
    with transaction.atomic():
        _save(integration)
        audit(
            team=integration.team_id,
            actor=actor,
            action="integration.update",
            target=integration.name,
            data={
                "id": integration.pk,
                "changed": changed,
                "secrets_changed": secrets_changed,
                "address_changed": address_changed,
            },
        )
        invalidation.publish(invalidation.INTEGRATIONS, integration.team_id)
    return integration


def _cleaned_patch(platform: str, patch: ConfigPatch) -> dict[str, Any]:
    """The patched config cleaned, or `InvalidIntegration` with every problem at once: the secrets
    to give again (first, so the problem's detail quotes one) and the config's own."""
    errors = patch.secrets_to_give_again()
    try:
        cleaned = clean_platform_config(platform, patch.config)
    except InvalidIntegration as exc:
        raise InvalidIntegration({**errors, **{k: errors.get(k, []) + v for k, v in exc.errors.items()}})
    if errors:
        raise InvalidIntegration(errors)
    return cleaned


def integration_delete(*, integration: Integration, actor: str) -> None:
    with transaction.atomic():
        audit(
            team=integration.team_id,
            actor=actor,
            action="integration.delete",
            target=integration.name,
            data={"id": integration.pk, "platform": integration.platform},
        )
        invalidation.publish(invalidation.INTEGRATIONS, integration.team_id)
        integration.delete()


def check_target(target: Target) -> CheckResult:
    """A real connection check against the destination (reachability and credentials)."""
    exporter_cls = exporter_class(target.platform)
    with httpx.Client(follow_redirects=False, transport=guarded_transport(limits=httpx.Limits())) as client:
        try:
            return exporter_cls(target, client).check()
        except Exception as exc:  # an exporter bug must still give the user an answer
            log.exception("connection check of %s failed unexpectedly", target.name)
            return CheckResult(ok=False, message=f"The check itself failed: {type(exc).__name__}: {exc}")


def integration_check(*, integration: Integration) -> CheckResult:
    return check_target(target_for(integration))


def config_check(*, platform: str, name: str, config: Mapping[str, Any], timeout_s: float) -> CheckResult:
    """Test a config before saving it (the add form's "Test connection", `POST /integrations/test`)."""
    canonical = canonical_platform(platform)
    if canonical is None:
        raise InvalidIntegration({"platform": [f"unknown platform {platform!r}"]})
    cleaned = clean_platform_config(canonical, config)
    return check_target(Target(platform=canonical, name=name or canonical, config=cleaned, timeout_s=timeout_s))


def edited_config_check(
    *, integration: Integration, patch: Mapping[str, Any], name: str, timeout_s: float
) -> CheckResult:
    """The edit form's "Test connection": the typed config over the stored one, not saved. At the
    stored address the stored secrets fill in what was left blank; at a changed address only the
    secrets typed are sent (a stored one never goes to an unsaved address), and a required one not
    typed is a form error asking for it."""
    merged = config_patch(integration, patch)
    if not merged.moved:
        return config_check(platform=integration.platform, name=name, config=merged.config, timeout_s=timeout_s)
    left_out = {f"config.{secret}" for secret in merged.kept_secrets}
    try:
        result = config_check(
            platform=integration.platform, name=name, config=merged.without_kept_secrets(), timeout_s=timeout_s
        )
    except InvalidIntegration as exc:
        raise InvalidIntegration({k: [ADDRESS_CHANGED] if k in left_out else v for k, v in exc.errors.items()})
    if not left_out:
        return result
    unsent = ", ".join(_secret_words(secret.removeprefix("config.")) for secret in sorted(left_out))
    note = f" Stored secrets not sent: the address changed ({unsent}); type them to test with them."
    return replace(result, message=result.message.rstrip() + note)


def _secret_words(name: str) -> str:
    """``headers.Authorization`` → "Authorization header"; a field's name as it is."""
    field, _, header = name.partition(".")
    return f"{header} header" if header else field
