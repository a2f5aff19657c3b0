from __future__ import annotations

from django.db import models
from django.utils import timezone

from accounts.models import Team


class Platform(models.TextChoices):
    OTLP = "otlp", "OpenTelemetry (OTLP/HTTP)"
    PHOENIX = "phoenix", "Arize Phoenix"
    MLFLOW = "mlflow", "MLflow"
    LANGFUSE = "langfuse", "Langfuse"
    LANGSMITH = "langsmith", "LangSmith"
    HELICONE = "helicone", "Helicone"
    DATADOG = "datadog", "Datadog LLM Observability"
    WEAVE = "weave", "W&B Weave"
    WEBHOOK = "webhook", "Webhook"


# Rules may spell the webhook platform either way (interface spec 2.2).
PLATFORM_ALIASES = {"custom-webhook": Platform.WEBHOOK, "wandb": Platform.WEAVE, "opentelemetry": Platform.OTLP}


def default_retry_policy() -> dict[str, float]:
    return {"max_attempts": 8, "base_delay_s": 1.0, "max_delay_s": 300.0}


class Integration(models.Model):
    """A configured destination. Secrets live encrypted in ``secrets``; ``config`` holds the rest."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="integrations")
    name = models.CharField(max_length=100, help_text="Rules name integrations by this or by platform.")
    platform = models.CharField(max_length=20, choices=Platform.choices)
    config = models.JSONField(default=dict, blank=True)
    secrets = models.TextField(blank=True, help_text="Fernet token of a JSON object of secret fields.")
    default_tags = models.JSONField(default=list, blank=True)
    metadata_mapping = models.JSONField(default=dict, blank=True, help_text="our metadata key → destination key")
    timeout_s = models.FloatField(default=10.0)
    retry_policy = models.JSONField(default=default_retry_policy, blank=True)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="integration_unique_team_name")]

    def __str__(self) -> str:
        return f"{self.name} ({self.platform})"
