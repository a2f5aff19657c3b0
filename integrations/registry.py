"""Which exporter class serves which platform. Modules load on first use, so importing the
registry (the router's rule validation does) costs nothing."""

from __future__ import annotations

from functools import cache

from django.utils.module_loading import import_string

from .exporters.base import Exporter
from .models import PLATFORM_ALIASES, Platform

PLATFORMS: tuple[str, ...] = tuple(Platform.values)

_EXPORTERS: dict[str, str] = {
    Platform.OTLP: "integrations.exporters.otlp.OtlpExporter",
    Platform.PHOENIX: "integrations.exporters.phoenix.PhoenixExporter",
    Platform.MLFLOW: "integrations.exporters.mlflow.MlflowExporter",
    Platform.LANGFUSE: "integrations.exporters.langfuse.LangfuseExporter",
    Platform.LANGSMITH: "integrations.exporters.langsmith.LangsmithExporter",
    Platform.HELICONE: "integrations.exporters.helicone.HeliconeExporter",
    Platform.DATADOG: "integrations.exporters.datadog.DatadogExporter",
    Platform.WEAVE: "integrations.exporters.weave.WeaveExporter",
    Platform.WEBHOOK: "integrations.exporters.webhook.WebhookExporter",
}


def canonical_platform(name: str) -> str | None:
    """``custom-webhook`` → ``webhook``; a canonical name → itself; anything else → None."""
    key = (name or "").strip().lower()
    if key in PLATFORM_ALIASES:
        return str(PLATFORM_ALIASES[key])
    return key if key in _EXPORTERS else None


def platform_names() -> frozenset[str]:
    """Every spelling a rule may use for a platform: canonical names and aliases."""
    return frozenset(PLATFORMS) | frozenset(PLATFORM_ALIASES)


@cache
def exporter_class(platform: str) -> type[Exporter]:
    """The exporter for a platform name or alias; `KeyError` for an unknown one."""
    canonical = canonical_platform(platform)
    if canonical is None:
        raise KeyError(f"unknown platform {platform!r}; known: {', '.join(PLATFORMS)}")
    cls: type[Exporter] = import_string(_EXPORTERS[canonical])
    return cls
